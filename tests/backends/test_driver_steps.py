"""What the driver-level backends share, tested without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.backends.driver_steps import kernel_scalar
from gpubench.errors import KernelLaunchError


@pytest.mark.parametrize("value", [np.int32(-3), np.uint32(3), np.int64(2**40), np.uint64(1),
                                   np.float32(1.5), np.float64(2.5)])  # fmt: skip
def test_a_kernel_scalar_keeps_its_c_type(value):
    scalar = kernel_scalar("k", value)
    assert scalar.dtype == value.dtype and scalar == value


@pytest.mark.parametrize("value", [np.float16(1), np.int8(1), np.bool_(True), "text"])
def test_a_scalar_of_another_type_is_refused_by_name(value):
    with pytest.raises(KernelLaunchError) as info:
        kernel_scalar("k", value)
    assert str(info.value) == (
        f"kernel 'k': argument of type {np.asarray(value).dtype} is not supported (use one of "
        "int32, uint32, int64, uint64, float32, float64)")  # fmt: skip


class _Graphs:
    """CudaGraphs' surface: capture records the iteration's calls instead of running them."""

    def __init__(self, fail: bool = False) -> None:
        self.fail, self.captured, self.launches = fail, 0, 0
        self.recorded: list[str] = []

    def capture(self, stream_handle, enqueue):
        self.captured += 1
        if self.fail:
            raise KernelLaunchError("stream capture failed: not capturable")
        return "graph"

    def launch(self, executable, stream_handle):
        assert executable == "graph"
        self.launches += 1


def _repeat_run(flag_after: int, graphs, max_iterations: int = 10):
    """run_repeat over a flag the 'kernels' clear at iteration `flag_after`."""
    from gpubench.backends.driver_steps import BoundRun, run_repeat
    from gpubench.model.steps import Repeat

    flag = np.array([1], np.uint32)
    calls = {"iteration": 0, "sync": 0}

    def iteration():
        calls["iteration"] += 1

    def sync():
        calls["sync"] += 1
        flag[0] = 0 if calls["sync"] >= flag_after else 1

    bound = BoundRun(ops=[])
    step = Repeat(body=(), flag="changed", max_iterations=max_iterations, label="relax")
    run_repeat(bound, step, iteration, sync, flag, graphs, 7)
    return bound, calls


def test_a_repeat_runs_each_iteration_as_one_captured_graph():
    graphs = _Graphs()
    bound, calls = _repeat_run(3, graphs)
    assert (graphs.captured, graphs.launches, calls) == (1, 3, {"iteration": 0, "sync": 3})
    assert (bound.record.iterations, bound.record.converged) == (3, True)
    # The next run of the same bound run launches the graph it has.
    assert list(bound.graphs.values()) == ["graph"]


def test_a_repeat_that_cannot_be_captured_runs_its_calls():
    graphs = _Graphs(fail=True)
    bound, calls = _repeat_run(4, graphs)
    assert (graphs.captured, graphs.launches, calls) == (1, 0, {"iteration": 4, "sync": 4})
    assert bound.record.iterations == 4 and list(bound.graphs.values()) == [None]


def test_a_repeat_without_graphs_runs_its_calls_and_reports_no_convergence():
    bound, calls = _repeat_run(99, None, max_iterations=5)
    assert calls == {"iteration": 5, "sync": 5}
    assert (bound.record.iterations, bound.record.converged) == (5, False)
    assert bound.record.unconverged == ["relax"]


def test_shared_memory_up_to_the_opt_in_limit_is_a_launch_the_device_can_run():
    from gpubench.backends.base import KernelAttributes
    from gpubench.backends.driver_steps import launch_problem, needs_opt_in
    from gpubench.model.steps import Launch
    from tests.fakes import FAKE_DEVICE  # 48 KB per block, 96 KB opted in

    attrs = KernelAttributes(registers_per_thread=32, static_shared_bytes=1024,
                             local_bytes_per_thread=0, max_threads_per_block=1024)  # fmt: skip

    def launch(dynamic: int) -> Launch:
        return Launch("k", (1, 1, 1), (128, 1, 1), (), shared_bytes=dynamic)

    at_default, past_default = launch(47 * 1024), launch(47 * 1024 + 1)
    at_opt_in, past_opt_in = launch(95 * 1024), launch(95 * 1024 + 1)
    assert [needs_opt_in(FAKE_DEVICE, attrs, x) for x in (at_default, past_default)] == [
        False, True]  # fmt: skip
    for fits in (at_default, past_default, at_opt_in):
        assert launch_problem(FAKE_DEVICE, lambda _: attrs, [fits]) is None
    assert launch_problem(FAKE_DEVICE, lambda _: attrs, [past_opt_in]) == (
        "k: needs 98305 bytes of shared memory per block; the device allows 98304 "
        "(49152 without opting in)")  # fmt: skip


def test_launch_limits_are_inclusive_and_each_names_its_axis():
    from gpubench.backends.base import KernelAttributes
    from gpubench.backends.driver_steps import launch_problem
    from gpubench.model.steps import Launch
    from tests.fakes import FAKE_DEVICE

    dev = FAKE_DEVICE.__class__(**{**FAKE_DEVICE.__dict__, "max_block_dims": (1024, 1024, 64),
                                   "max_grid_dims": (2**31 - 1, 65535, 65535)})  # fmt: skip
    per_kernel = {"k": KernelAttributes(registers_per_thread=32, static_shared_bytes=0,
                                        local_bytes_per_thread=0, max_threads_per_block=512)}  # fmt: skip

    def problem(grid, block):
        return launch_problem(dev, per_kernel.__getitem__, [Launch("k", grid, block, ())])

    assert problem((1, 65535, 65535), (512, 1, 1)) is None  # every limit reached, none passed
    assert problem((1, 1, 1), (8, 8, 8)) is None
    assert problem((1, 1, 1), (1, 8, 64)) is None  # the block's z limit reached
    assert problem((1, 1, 1), (1, 1, 65)) == "k: block dimension z=65 exceeds the device limit 64"
    assert problem((1, 65536, 1), (1, 1, 1)) == (
        "k: grid dimension y=65536 exceeds the device limit 65535")  # fmt: skip
    assert problem((1, 1, 1), (513, 1, 1)).startswith(
        "k: 513 threads per block; this kernel allows at most 512"
    )


def test_each_repeat_of_a_run_has_its_own_graph_and_their_iterations_add_up():
    from gpubench.backends.driver_steps import BoundRun, run_repeat
    from gpubench.model.steps import Repeat

    class Graphs(_Graphs):
        def capture(self, stream_handle, enqueue):
            assert stream_handle == 7 and callable(enqueue)
            self.captured += 1
            return f"graph {self.captured}"

        def launch(self, executable, stream_handle):
            assert stream_handle == 7
            self.recorded.append(executable)

    graphs, bound = Graphs(), BoundRun(ops=[])
    flag = np.array([0], np.uint32)  # the kernels changed nothing: one iteration each
    first = Repeat(body=(), flag="changed", max_iterations=5, label="same label")
    second = Repeat(body=(), flag="changed", max_iterations=5, label="same label")
    for step in (first, second, first):
        run_repeat(bound, step, lambda: None, lambda: None, flag, graphs, 7)
    assert graphs.captured == 2 and graphs.recorded == ["graph 1", "graph 2", "graph 1"]
    assert bound.record.iterations == 3


def test_an_unconverged_repeat_adds_its_iterations_to_the_run_s():
    from gpubench.backends.driver_steps import BoundRun, run_repeat
    from gpubench.model.steps import Repeat

    bound = BoundRun(ops=[])
    bound.record.iterations = 3  # an earlier Repeat of the run
    changed = np.array([1], np.uint32)  # the kernels always change something
    step = Repeat(body=(), flag="changed", max_iterations=4)
    run_repeat(bound, step, lambda: None, lambda: None, changed, None, 7)
    assert (bound.record.iterations, bound.record.converged) == (7, False)
    assert bound.record.unconverged == ["repeat on 'changed'"]


# The driver's answers for an H100 (CU_DEVICE_ATTRIBUTE_ names without the prefix; kHz clocks).
H100_ATTRIBUTES = {
    "CLOCK_RATE": 1_980_000, "MEMORY_CLOCK_RATE": 2_619_000, "MULTIPROCESSOR_COUNT": 132,
    "GLOBAL_MEMORY_BUS_WIDTH": 5120, "L2_CACHE_SIZE": 52_428_800,
    "MAX_SHARED_MEMORY_PER_BLOCK": 49_152, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232_448,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233_472, "MAX_REGISTERS_PER_MULTIPROCESSOR": 65_536,
    "MAX_REGISTERS_PER_BLOCK": 65_536, "MAX_THREADS_PER_BLOCK": 1024,
    "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "WARP_SIZE": 32,
    "MAX_BLOCKS_PER_MULTIPROCESSOR": 32, "MAX_BLOCK_DIM_X": 1024, "MAX_BLOCK_DIM_Y": 1024,
    "MAX_BLOCK_DIM_Z": 64, "MAX_GRID_DIM_X": 2**31 - 1, "MAX_GRID_DIM_Y": 65535,
    "MAX_GRID_DIM_Z": 65535,
}  # fmt: skip


def test_the_device_is_described_from_its_driver_attributes():
    from gpubench.backends.driver_steps import device_info
    from gpubench.model.device import DeviceInfo

    dev = device_info(H100_ATTRIBUTES.get, "NVIDIA H100", (9, 0), 85_045_788_672,
                      {"max_sm_clock_mhz": 1, "max_mem_clock_mhz": 1})  # fmt: skip
    assert dev == DeviceInfo(
        name="NVIDIA H100", compute_capability=(9, 0), sm_count=132, sm_clock_mhz=1980.0,
        memory_clock_mhz=2619.0, memory_bus_width_bits=5120, memory_bytes=85_045_788_672,
        l2_bytes=52_428_800, shared_per_block_bytes=49_152, shared_per_block_optin_bytes=232_448,
        shared_per_sm_bytes=233_472, registers_per_sm=65_536, registers_per_block=65_536,
        max_threads_per_block=1024, max_threads_per_sm=2048, warp_size=32, max_blocks_per_sm=32,
        max_block_dims=(1024, 1024, 64), max_grid_dims=(2**31 - 1, 65535, 65535),
    )  # fmt: skip


def test_attributes_the_driver_lacks_take_nvml_s_clocks_or_the_cuda_defaults():
    from gpubench.backends.driver_steps import device_info

    asked = []

    def nothing(name):
        asked.append(name)

    dev = device_info(nothing, "old GPU", (7, 0), 2**30,
                      {"max_sm_clock_mhz": 1530, "max_mem_clock_mhz": 877})  # fmt: skip
    assert set(asked) == set(H100_ATTRIBUTES)
    assert (dev.sm_clock_mhz, dev.memory_clock_mhz, dev.memory_bus_width_bits) == (1530, 877, None)
    assert (dev.sm_count, dev.l2_bytes, dev.shared_per_sm_bytes, dev.registers_per_sm,
            dev.registers_per_block) == (0, 0, 0, 0, 0)  # fmt: skip
    assert (dev.shared_per_block_bytes, dev.shared_per_block_optin_bytes) == (49_152, 49_152)
    assert (dev.max_threads_per_block, dev.max_threads_per_sm, dev.warp_size,
            dev.max_blocks_per_sm) == (1024, 2048, 32, 32)  # fmt: skip
    assert dev.max_block_dims == (None, None, None) and dev.max_grid_dims == (None, None, None)
    assert device_info(nothing, "no NVML", (7, 0), 2**30, {}).sm_clock_mhz is None


@pytest.mark.parametrize(
    ("step", "sizes", "nbytes"),
    [
        ({}, (64, 64), 64),
        ({"src_offset": 16}, (64, 64), 48),
        ({"nbytes": 8, "src_offset": 56, "dst_offset": 24}, (64, 32), 8),
        ({"src_offset": 64}, (64, 0), 0),
    ],
)  # fmt: skip
def test_a_copy_moves_all_of_its_source_past_the_offset_unless_told(step, sizes, nbytes):
    from gpubench.backends.driver_steps import copy_bytes
    from gpubench.model.steps import Copy

    assert copy_bytes(Copy("a", "b", **step), *sizes) == nbytes


@pytest.mark.parametrize(
    ("step", "sizes", "words"),
    [
        ({}, (64, 63), "64 bytes at offsets 0/0 do not fit the buffers (64/63 bytes)"),
        ({"nbytes": 8, "src_offset": 57}, (64, 64), "8 bytes at offsets 57/0"),
        ({"nbytes": 8, "dst_offset": 57}, (64, 64), "8 bytes at offsets 0/57"),
        ({"src_offset": 65}, (64, 64), "-1 bytes at offsets 65/0"),
        ({"nbytes": -1}, (64, 64), "-1 bytes at offsets 0/0"),
    ],
)  # fmt: skip
def test_a_copy_past_either_end_is_refused_with_its_sizes(step, sizes, words):
    from gpubench.backends.driver_steps import copy_bytes
    from gpubench.model.steps import Copy

    with pytest.raises(KernelLaunchError) as error:
        copy_bytes(Copy("a", "b", **step), *sizes)
    assert str(error.value).startswith(f"copy a→b: {words}")


def test_a_run_with_a_repeat_starts_each_enqueue_with_a_fresh_record():
    from gpubench.backends.driver_steps import BoundRun
    from gpubench.model.steps import RunRecord

    for has_repeat in (True, False):
        bound = BoundRun(ops=[], has_repeat=has_repeat)
        bound.record.iterations = 7
        bound.enqueue()
        assert bound.record.iterations == (0 if has_repeat else 7)
        assert isinstance(bound.record, RunRecord)

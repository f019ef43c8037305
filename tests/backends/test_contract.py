"""The backend contract (gpubench.backends.base.Backend), one set of tests for every backend:
the CPU stand-in here, PyCUDA and cuda.core on a GPU. A third backend (HIP, OpenCL) adds its
name to BACKENDS and passes these.

The kernels are named as the stand-in's Python kernels are (tests.fakes.KERNELS), with the
same effect, so every test means the same thing on every backend.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpubench.backends.driver_steps import STAGE_BYTES, STAGED_UPLOAD_FROM
from gpubench.errors import KernelCompileError, KernelLaunchError, OutOfMemory
from gpubench.model.benchmark import BufferRef, BufferSpec, Copy, Launch, Repeat
from gpubench.model.steps import LibraryCall

# out = 2 * x over n floats; one relaxation of count_down (every positive value goes down by
# one, and `changed` says whether any did).
SOURCE = r"""
extern "C" __global__ void good(float* out, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * x[i];
}

extern "C" __global__ void count_down(int* values, int* changed, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && values[i] > 0) { values[i] -= 1; *changed = 1; }
}

// out = 2 * x reversed, by one block through n floats of dynamic shared memory.
extern "C" __global__ void reversed_through_shared(float* out, const float* x, int n)
{
    extern __shared__ float staged[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) staged[i] = 2.0f * x[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = staged[n - 1 - i];
}
"""

BACKENDS = [
    "tests.fakes:FakeBackend",
    pytest.param("pycuda", marks=pytest.mark.gpu),
    pytest.param("cuda-core", marks=pytest.mark.gpu),
]
F32, I32 = np.dtype(np.float32), np.dtype(np.int32)
# One relaxation of count_down over 64 values in "v", with its flag in "flag".
COUNT_DOWN = Launch("count_down", (1, 1, 1), (64, 1, 1),
                    (BufferRef("v"), BufferRef("flag"), np.int32(64)))  # fmt: skip


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request):
    from gpubench import backends
    from tests.conftest import gpu_unavailable_reason

    name = request.param
    if name in backends.BUILT_IN and (reason := gpu_unavailable_reason(name)):
        pytest.skip(f"{name}: {reason}")
    return backends.load(0, name)


@pytest.fixture(scope="module")
def module(backend):
    return backend.load(backend.compile_binary(SOURCE, ["-DUNUSED=1"], []))


def alloc(backend, specs):
    return {name: backend.alloc(spec) for name, spec in specs.items()}


def free(backend, buffers):
    for buffer in buffers.values():
        backend.free(buffer)


def test_describes_its_device_and_itself(backend):
    dev = backend.device
    assert dev.sm_count > 0 and dev.l2_bytes > 0 and dev.compute_capability[0] >= 5
    assert dev.max_threads_per_block >= 1024 and dev.warp_size == 32
    env = backend.environment().to_dict()
    assert env["backend"]["name"] == backend.name and env["backend"]["version"]
    assert backend.compiler_id and backend.name in {"fake", "pycuda", "cuda-core"}
    free_bytes, total = backend.memory_info()
    assert 0 < free_bytes <= total
    assert backend.context_alive()


def test_the_gpu_is_named_and_its_clock_read(backend):
    if backend.name == "fake":
        pytest.skip("the stand-in has no clock")
    assert backend.device.name.startswith("NVIDIA"), backend.device.name
    assert backend.sm_clock_mhz() > 0


def test_hot_runs_use_cuda_graphs_unless_the_driver_has_none(backend, monkeypatch):
    if backend.name == "fake":
        pytest.skip("the stand-in has no driver")
    import importlib

    assert backend.graphs_available is True
    module = importlib.import_module(type(backend).__module__)

    def missing():
        raise OSError("libcuda.so.1: undefined symbol: cuGraphInstantiateWithFlags")

    monkeypatch.setattr(module, "CudaGraphs", missing)
    assert type(backend)(0).graphs_available is False


@pytest.mark.parametrize("location", ["device", "pinned", "pageable"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (1000, 3)])
def test_write_read_poison_zero_in_every_place(backend, location, shape):
    spec = BufferSpec(shape, F32, location=location)
    buffer = backend.alloc(spec)
    data = np.arange(spec.nbytes // 4, dtype=np.float32).reshape(shape) + 0.5
    backend.write(buffer, spec, data)
    assert np.array_equal(backend.read(buffer, spec), data)
    backend.poison(buffer, spec)  # all-ones bytes: NaN in floats, -1 in integers
    assert np.isnan(backend.read(buffer, spec)).all()
    assert (backend.read(buffer, BufferSpec(shape, I32, location=location)) == -1).all()
    backend.zero(buffer, spec)
    assert (backend.read(buffer, spec) == 0).all()
    if location == "device":
        assert backend.device_pointer(buffer) is None or backend.device_pointer(buffer) > 0
    else:
        assert backend.device_pointer(buffer) is None
    backend.free(buffer)


@pytest.mark.parametrize("location", ["device", "pinned", "pageable"])
def test_a_write_past_the_staged_upload_size_reads_back_whole(backend, location):
    """Large uploads go through page-locked stages in pieces: several full ones and a last
    piece that is not a whole stage, into every kind of buffer."""
    n = (STAGED_UPLOAD_FROM + 3 * STAGE_BYTES // 2 + 12) // 4
    spec = BufferSpec((n,), I32, location=location)
    buffer = backend.alloc(spec)
    data = np.arange(n, dtype=np.int32)
    backend.write(buffer, spec, data)
    assert np.array_equal(backend.read(buffer, spec), data)
    backend.free(buffer)


@pytest.mark.parametrize("n", [1, 255, 256, 1001])
def test_a_launch_computes_and_is_timed(backend, module, n):
    specs = {"out": BufferSpec((n,), F32), "x": BufferSpec((n,), F32)}
    buffers = alloc(backend, specs)
    x = np.linspace(-3, 3, n, dtype=np.float32)
    backend.write(buffers["x"], specs["x"], x)
    backend.poison(buffers["out"], specs["out"])
    launch = Launch("good", (-(-n // 256), 1, 1), (256, 1, 1),
                    (BufferRef("out"), BufferRef("x"), np.int32(n)))  # fmt: skip
    bound = backend.bind(module, [launch], buffers, specs)
    backend.run_checked(bound)
    assert np.array_equal(backend.read(buffers["out"], specs["out"]), 2 * x)
    assert 0 < backend.time_once_ms(bound, flush_l2=True) < 1000
    assert 0 < backend.time_once_ms(bound, flush_l2=False) < 1000
    assert 0 < backend.time_hot_ms(bound, 50) < 1000
    backend.release(bound)
    free(backend, buffers)


def test_hot_timing_through_a_cuda_graph_equals_the_plain_launches(backend, module):
    if not getattr(backend, "graphs_available", False):
        pytest.skip(f"{backend.name} has no CUDA graphs")
    specs = {"out": BufferSpec((256,), F32), "x": BufferSpec((256,), F32)}
    buffers = alloc(backend, specs)
    backend.write(buffers["x"], specs["x"], np.ones(256, np.float32))
    launch = Launch("good", (1, 1, 1), (256, 1, 1),
                    (BufferRef("out"), BufferRef("x"), np.int32(256)))  # fmt: skip
    bound = backend.bind(module, [launch], buffers, specs)
    per_run_graph = backend.time_hot_ms(bound, 200)
    per_run_plain = backend.time_hot_ms(bound, 200, use_graph=False)
    assert 200 in bound.graphs and 0 < per_run_graph < 0.1 and 0 < per_run_plain < 0.1
    assert (backend.read(buffers["out"], specs["out"]) == 2.0).all()
    backend.release(bound)
    assert not bound.graphs
    free(backend, buffers)


def test_a_launch_at_an_offset_and_a_scalar_of_each_type(backend, module):
    specs = {"out": BufferSpec((8,), F32), "x": BufferSpec((8,), F32)}
    buffers = alloc(backend, specs)
    backend.write(buffers["x"], specs["x"], np.arange(8, dtype=np.float32))
    backend.zero(buffers["out"], specs["out"])
    # Elements 4.. of both buffers, 4 of them.
    launch = Launch("good", (1, 1, 1), (32, 1, 1),
                    (BufferRef("out", offset=16), BufferRef("x", offset=16), np.int32(4)))  # fmt: skip
    backend.run_checked(backend.bind(module, [launch], buffers, specs))
    assert backend.read(buffers["out"], specs["out"]).tolist() == [0, 0, 0, 0, 8, 10, 12, 14]
    bad = Launch("good", (1, 1, 1), (32, 1, 1),
                 (BufferRef("out"), BufferRef("x"), np.float16(4)))  # fmt: skip
    if backend.name != "fake":  # the stand-in passes Python values through
        with pytest.raises(KernelLaunchError, match="float16"):
            backend.bind(module, [bad], buffers, specs)
    free(backend, buffers)


def test_launch_shapes_the_device_cannot_run_are_named(backend, module):
    args = (BufferRef("out"), BufferRef("x"), np.int32(1))
    assert backend.launch_problem(module, [Launch("good", (1, 1, 1), (256, 1, 1), args)]) is None
    too_big = Launch("good", (1, 1, 1), (1024, 2, 1), args)
    assert "2048 threads per block" in backend.launch_problem(module, [too_big])
    with pytest.raises(KernelLaunchError, match="nope"):
        module.attributes("nope")
    attrs = module.attributes("good")
    assert attrs.registers_per_thread > 0 and attrs.max_threads_per_block >= 256


def test_a_compile_error_carries_the_compilers_message(backend):
    source = SOURCE + '\nextern "C" __global__ void k() { oops; }\n'
    options = ["-DBROKEN=1", "-DUNUSED=2"]  # -DBROKEN=1: what makes the stand-in's fail
    with pytest.raises(KernelCompileError) as info:
        backend.compile_binary(source, options, [])
    assert "oops" in info.value.compiler_output and "error" in info.value.compiler_output
    compiler = "NVRTC" if backend.name == "cuda-core" else "nvcc"
    assert str(info.value) == f"{compiler} failed (-DBROKEN=1 -DUNUSED=2)"


def test_copies_in_every_direction_side_streams_and_a_timeline(backend):
    specs = {
        "pinned": BufferSpec((1000,), F32, location="pinned"),
        "pageable": BufferSpec((1000,), F32, location="pageable"),
        "d1": BufferSpec((1000,), F32),
        "d2": BufferSpec((1000,), F32),
        "back": BufferSpec((1000,), F32, location="pinned"),
    }
    buffers = alloc(backend, specs)
    data = np.arange(1000, dtype=np.float32)
    backend.write(buffers["pinned"], specs["pinned"], data)
    backend.write(buffers["pageable"], specs["pageable"], data[::-1].copy())
    backend.poison(buffers["back"], specs["back"])
    steps = [
        # Synchronous: the host waits, so everything issued later runs after it.
        Copy("pageable", "d2", nbytes=400, src_offset=400, dst_offset=0, synchronous=True),
        Copy("pinned", "d1", stream=1, label="in"),  # H2D on a side stream
        Copy("d1", "d2", nbytes=2000, src_offset=2000, dst_offset=2000, stream=1),  # D2D
        Copy("d2", "back", stream=1),  # D2H, joined into the timing stream at the end
    ]
    bound = backend.bind(None, steps, buffers, specs)
    backend.run_checked(bound)
    back = backend.read(buffers["back"], specs["back"])
    assert np.array_equal(back[:100], data[::-1][100:200])
    assert np.array_equal(back[500:], data[500:])
    spans = backend.timeline(bound)
    assert [(s["stream"], s["op"], s["label"]) for s in spans] == [
        (0, "H2D", ""), (1, "H2D", "in"), (1, "D2D", ""), (1, "D2H", "")]  # fmt: skip
    assert all(s["end_ms"] >= s["start_ms"] >= 0 for s in spans)
    assert backend.time_once_ms(bound, flush_l2=False) > 0
    free(backend, buffers)


def test_a_timeline_names_each_step_by_its_label_or_else_by_what_it_runs(backend, module):
    specs = {"out": BufferSpec((256,), F32), "x": BufferSpec((256,), F32),
             "v": BufferSpec((64,), I32), "flag": BufferSpec((1,), I32)}  # fmt: skip
    buffers = alloc(backend, specs)
    backend.write(buffers["x"], specs["x"], np.ones(256, np.float32))
    backend.write(buffers["v"], specs["v"], np.full(64, 2, np.int32))
    called = []
    args = (BufferRef("out"), BufferRef("x"), np.int32(256))
    steps = [
        Launch("good", (1, 1, 1), (256, 1, 1), args),
        LibraryCall("a library", lambda pointers, stream: called.append(sorted(pointers)), 1),
        LibraryCall("a library", lambda pointers, stream: None, label="named"),
        Launch("good", (1, 1, 1), (256, 1, 1), args, label="doubled"),
        Repeat((COUNT_DOWN,), "flag", 10),
        Repeat((COUNT_DOWN,), "flag", 10, label="relax"),
    ]
    spans = backend.timeline(backend.bind(module, steps, buffers, specs))
    assert [(s["stream"], s["op"], s["label"]) for s in spans] == [
        (0, "kernel", "good"), (1, "library", "a library"), (0, "library", "named"),
        (0, "kernel", "doubled"), (0, "repeat", "repeat"), (0, "repeat", "relax")]  # fmt: skip
    assert called == [["flag", "out", "v", "x"]]  # every device buffer, by name
    assert np.array_equal(backend.read(buffers["out"], specs["out"]), np.full(256, 2, np.float32))
    free(backend, buffers)


def test_runs_the_host_waits_on_are_never_captured_into_a_graph(backend, module):
    """A synchronous copy, a copy from or to pageable memory and a Repeat (its flag is read
    back every iteration) keep a run out of CUDA graphs; asynchronous copies do not."""
    if backend.name == "fake":
        pytest.skip("the stand-in has no CUDA graphs")
    specs = {"pinned": BufferSpec((64,), I32, location="pinned"), "v": BufferSpec((64,), I32),
             "pageable": BufferSpec((64,), I32, location="pageable"),
             "flag": BufferSpec((1,), I32)}  # fmt: skip
    buffers = alloc(backend, specs)
    cases = [
        ([Copy("pinned", "v"), Copy("v", "pinned", stream=1), COUNT_DOWN], True),
        ([Copy("pinned", "v", synchronous=True)], False),
        ([Copy("pageable", "v")], False),
        ([Copy("v", "pageable")], False),
        ([Repeat((COUNT_DOWN,), "flag", 3)], False),
    ]
    for steps, capturable in cases:
        assert backend.bind(module, steps, buffers, specs).capturable is capturable, steps
    free(backend, buffers)


def _driver_error(backend):
    """An error as this backend's driver raises it."""
    if backend.name == "pycuda":
        import pycuda.driver as cuda

        return cuda.LogicError("cuFuncSetAttribute failed: invalid argument")
    from gpubench.backends.cuda_core_backend import CudaError

    return CudaError("CUDA_ERROR_INVALID_VALUE")


def test_a_driver_error_in_a_run_is_a_launch_error_that_names_it(backend, module):
    """Checked and timed runs both report what the driver said, as a KernelLaunchError."""
    if backend.name == "fake":
        pytest.skip("the stand-in has no driver")
    error = _driver_error(backend)

    def fail(pointers, stream):
        raise error

    bound = backend.bind(module, [LibraryCall("failing", fail)], {}, {})
    words = f"{type(error).__name__}: {error}"
    with pytest.raises(KernelLaunchError) as raised:
        backend.run_checked(bound)
    assert str(raised.value) == words
    with pytest.raises(KernelLaunchError) as raised:
        backend.time_once_ms(bound, flush_l2=False)
    assert str(raised.value) == words
    assert backend.context_alive()


def test_an_opt_in_the_driver_refuses_is_named_with_the_kernel(backend, module, monkeypatch):
    if backend.name == "fake":
        pytest.skip("the stand-in has no driver")
    dev = backend.device
    n = (dev.shared_per_block_bytes + 8192) // 4
    specs = {"out": BufferSpec((n,), F32), "x": BufferSpec((n,), F32)}
    buffers = alloc(backend, specs)
    launch = Launch("reversed_through_shared", (1, 1, 1), (256, 1, 1),
                    (BufferRef("out"), BufferRef("x"), np.int32(n)), shared_bytes=n * 4)  # fmt: skip
    error = _driver_error(backend)

    def refuse(function, nbytes):
        raise error

    monkeypatch.setattr(backend, "_set_max_dynamic_shared", refuse)
    with pytest.raises(KernelLaunchError) as raised:
        backend.bind(module, [launch], buffers, specs)
    assert str(raised.value) == (f"kernel 'reversed_through_shared': cannot opt in to {n * 4} "
                                 f"bytes of shared memory: {error}")  # fmt: skip

    def bug(function, nbytes):
        raise ValueError("not the driver")

    monkeypatch.setattr(backend, "_set_max_dynamic_shared", bug)
    with pytest.raises(ValueError, match="not the driver"):  # a bug is not dressed as the driver
        backend.bind(module, [launch], buffers, specs)
    monkeypatch.undo()
    free(backend, buffers)


def test_a_launch_the_backend_cannot_make_is_named_with_its_kernel(backend, module):
    if backend.name == "fake":
        pytest.skip("the stand-in takes any Python value")
    specs = {"out": BufferSpec((4,), F32), "x": BufferSpec((4,), F32)}
    buffers = alloc(backend, specs)
    complex_scalar = Launch("good", (1, 1, 1), (4, 1, 1),
                            (BufferRef("out"), BufferRef("x"), np.complex64(4)))  # fmt: skip
    with pytest.raises(KernelLaunchError, match=r"^kernel 'good': argument of type complex64 "):
        backend.bind(module, [complex_scalar], buffers, specs)
    plain = Launch("good", (1, 1, 1), (4, 1, 1), (BufferRef("out"), BufferRef("x"), np.int32(4)))
    with pytest.raises(KernelLaunchError) as raised:
        backend.bind(None, [plain], buffers, specs)
    assert str(raised.value) == "kernel 'good': this suite compiles no kernels"
    free(backend, buffers)


def test_timing_flushes_l2_only_when_asked_and_release_destroys_every_graph(backend, module,
                                                                          monkeypatch):  # fmt: skip
    """A hot run's graph and a Repeat's iteration graph are made by timing and the check, and
    release hands every one back to the driver."""
    if backend.name == "fake" or not backend.graphs_available:
        pytest.skip("CUDA graphs only")
    specs = {"out": BufferSpec((256,), F32), "x": BufferSpec((256,), F32),
             "v": BufferSpec((64,), I32), "flag": BufferSpec((1,), I32)}  # fmt: skip
    buffers = alloc(backend, specs)
    flushes = []
    monkeypatch.setattr(backend, "_flush_l2_async", lambda: flushes.append(1))
    plain = backend.bind(module, [Launch("good", (1, 1, 1), (256, 1, 1),
                                         (BufferRef("out"), BufferRef("x"), np.int32(256)))],
                         buffers, specs)  # fmt: skip
    backend.time_once_ms(plain, flush_l2=False)
    assert flushes == []
    backend.time_once_ms(plain, flush_l2=True)
    assert flushes == [1]
    monkeypatch.undo()
    backend.time_hot_ms(plain, 4)
    repeat = backend.bind(module, [Repeat((COUNT_DOWN,), "flag", 5)], buffers, specs)
    backend.run_checked(repeat)
    graphs = [*plain.graphs.values(), *repeat.graphs.values()]
    assert len(graphs) == 2 and None not in graphs, (plain.graphs, repeat.graphs)
    destroyed, destroy = [], backend._graphs.destroy
    monkeypatch.setattr(backend._graphs, "destroy", lambda g: (destroyed.append(g), destroy(g)))
    backend.release(plain)
    backend.release(repeat)
    assert destroyed == graphs and not plain.graphs and not repeat.graphs
    monkeypatch.undo()
    free(backend, buffers)


# A dynamically indexed array cannot live in registers: the kernel needs local memory.
LOCAL_ARRAY = r"""
#include "twice.h"
extern "C" __global__ void indexed_scratch(float* out, int i)
{
    float scratch[64];
    for (int k = 0; k < 64; ++k) scratch[k] = TWICE(k * out[k]);
    out[0] = scratch[i & 63];
}
"""


def test_headers_come_from_the_include_dirs_and_attributes_from_the_build(backend, tmp_path):
    if backend.name == "fake":
        pytest.skip("the stand-in compiles nothing")
    (tmp_path / "twice.h").write_text("#define TWICE(x) (2.0f * (x))\n")
    built = backend.load(backend.compile_binary(LOCAL_ARRAY, [], [str(tmp_path)]))
    assert built.attributes("indexed_scratch").local_bytes_per_thread >= 64 * 4
    plain = backend.load(backend.compile_binary(SOURCE, ["-DUNUSED=3"], []))
    assert plain.attributes("good").local_bytes_per_thread == 0


def test_a_copy_past_a_buffers_end_is_refused(backend):
    if backend.name == "fake":
        pytest.skip("the stand-in copies NumPy slices")
    specs = {"a": BufferSpec((10,), F32), "b": BufferSpec((5,), F32)}
    buffers = alloc(backend, specs)
    with pytest.raises(KernelLaunchError, match="do not fit"):
        backend.bind(None, [Copy("a", "b")], buffers, specs)
    free(backend, buffers)


def test_restore_puts_the_saved_inputs_back(backend):
    for location in ("device", "pinned"):
        spec = BufferSpec((100,), F32, location=location)
        saved, live = backend.alloc(spec), backend.alloc(spec)
        backend.write(saved, spec, np.full(100, 3.0, np.float32))
        backend.poison(live, spec)
        backend.restore(live, saved, spec)
        assert (backend.read(live, spec) == 3.0).all()
        backend.free(saved)
        backend.free(live)


def test_work_that_is_not_the_gpus_is_refused_with_words(backend):
    """A restore between a device and a host buffer, and a copy from host to host."""
    if backend.name == "fake":
        pytest.skip("the stand-in copies anything")
    specs = {"d": BufferSpec((8,), F32), "h": BufferSpec((8,), F32, location="pinned"),
             "p": BufferSpec((8,), F32, location="pageable")}  # fmt: skip
    buffers = alloc(backend, specs)
    with pytest.raises(KernelLaunchError) as error:
        backend.restore(buffers["d"], buffers["h"], specs["d"])
    assert str(error.value) == "restore needs two buffers in the same place"
    with pytest.raises(KernelLaunchError) as error:
        backend.bind(None, [Copy("h", "p")], buffers, specs)
    assert str(error.value) == "copy h→p: host to host is no GPU work"
    free(backend, buffers)


def test_repeat_runs_until_the_flag_stays_clear_or_the_cap(backend, module):
    specs = {"v": BufferSpec((64,), I32), "flag": BufferSpec((1,), I32)}
    buffers = alloc(backend, specs)
    values = np.zeros(64, np.int32)
    values[[0, 63]] = [5, 3]
    backend.write(buffers["v"], specs["v"], values)
    body = (COUNT_DOWN,)
    bound = backend.bind(module, [Repeat(body, "flag", 100)], buffers, specs)
    record = backend.run_checked(bound)
    # Five relaxations change something; the sixth finds nothing left to do.
    assert record.iterations == 6 and record.converged
    assert (backend.read(buffers["v"], specs["v"]) == 0).all()
    backend.write(buffers["v"], specs["v"], np.full(64, 50, np.int32))
    capped = backend.bind(module, [Repeat(body, "flag", 10, label="relax")], buffers, specs)
    record = backend.run_checked(capped)
    assert record.iterations == 10 and not record.converged and record.unconverged == ["relax"]
    assert (backend.read(buffers["v"], specs["v"]) == 40).all()
    free(backend, buffers)


def test_an_impossible_allocation_is_out_of_memory(backend):
    """The size asked for, where, and the driver's own reason (out of memory)."""
    _, total = backend.memory_info()
    with pytest.raises(OutOfMemory) as error:
        backend.alloc(BufferSpec((4 * total,), np.dtype(np.uint8)))
    found = re.fullmatch(rf"cannot allocate {4 * total:,} bytes of device memory \((.+)\)",
                         str(error.value))  # fmt: skip
    assert found and re.search(r"out.of.memory", found[1], re.IGNORECASE), str(error.value)
    assert backend.context_alive()


def test_pageable_memory_that_cannot_be_had_is_out_of_memory_with_the_reason(backend,
                                                                            monkeypatch):  # fmt: skip
    if backend.name == "fake":
        pytest.skip("the stand-in's buffers are its own")

    def no_memory(*args, **kwargs):
        raise MemoryError("no room")

    with monkeypatch.context() as patch:
        patch.setattr(np, "empty", no_memory)
        with pytest.raises(OutOfMemory) as error:
            backend.alloc(BufferSpec((16,), F32, location="pageable"))
    assert str(error.value) == "cannot allocate 64 bytes of host memory (no room)"


def test_a_device_buffer_says_it_is_on_the_device(backend):
    buffer = backend.alloc(BufferSpec((16,), F32))
    try:
        assert buffer.location == "device"
    finally:
        backend.free(buffer)


STAMP = r"""
extern "C" __global__ void stamp(int* out) { out[threadIdx.x] = VALUE; }
"""


def test_two_builds_with_the_same_kernel_names_each_run_their_own_code(backend):
    """A suite's builds for two compile-time configurations share kernel names: loaded in one
    process (the first before the second, and both at once), each must run its own code."""
    if backend.name == "fake":
        pytest.skip("the stand-in's kernels are Python functions, not builds")
    spec = BufferSpec((32,), I32)
    out = backend.alloc(spec)
    launch = Launch("stamp", (1, 1, 1), (32, 1, 1), (BufferRef("out"),))
    first = backend.load(backend.compile_binary(STAMP, ["-DVALUE=1"], []))
    second = backend.load(backend.compile_binary(STAMP, ["-DVALUE=2"], []))
    for module, value in ((first, 1), (second, 2), (first, 1)):
        backend.poison(out, spec)
        backend.run_checked(backend.bind(module, [launch], {"out": out}, {"out": spec}))
        assert (backend.read(out, spec) == value).all()
    backend.free(out)


def test_dynamic_shared_memory_past_the_default_limit_is_opted_in(backend, module):
    """A launch asking for more dynamic shared memory than the default 48 KB per block, and
    no more than the device's opt-in limit, runs (the backend raises the kernel's limit);
    more than the opt-in limit is named before any launch."""
    dev = backend.device
    n = (dev.shared_per_block_bytes + 8192) // 4  # 8 KB past the default limit
    assert n * 4 <= dev.shared_per_block_optin_bytes
    specs = {"out": BufferSpec((n,), F32), "x": BufferSpec((n,), F32)}
    buffers = alloc(backend, specs)
    x = np.arange(n, dtype=np.float32)
    backend.write(buffers["x"], specs["x"], x)
    backend.poison(buffers["out"], specs["out"])
    args = (BufferRef("out"), BufferRef("x"), np.int32(n))
    launch = Launch("reversed_through_shared", (1, 1, 1), (256, 1, 1), args, shared_bytes=n * 4)
    assert backend.launch_problem(module, [launch]) is None
    backend.run_checked(backend.bind(module, [launch], buffers, specs))
    np.testing.assert_array_equal(backend.read(buffers["out"], specs["out"]), 2 * x[::-1])
    too_much = Launch("reversed_through_shared", (1, 1, 1), (256, 1, 1), args,
                      shared_bytes=dev.shared_per_block_optin_bytes + 4)  # fmt: skip
    assert "bytes of shared memory per block" in backend.launch_problem(module, [too_much])
    free(backend, buffers)


class Relaxations:
    """In-place relaxations of count_down over 64 values, each after a restore of its input
    (`before_each`): every run starts from the input, so the values end one step down."""

    def __init__(self, backend, module) -> None:
        spec, flag = BufferSpec((64,), I32), BufferSpec((1,), I32)
        specs = {"v": spec, "flag": flag}
        self.backend, self.spec, self.restores = backend, spec, 0
        self.buffers, self.pristine = alloc(backend, specs), backend.alloc(spec)
        self.values = np.arange(64, dtype=np.int32) % 7
        backend.write(self.pristine, spec, self.values)
        backend.zero(self.buffers["flag"], flag)
        self.bound = backend.bind(module, [COUNT_DOWN], self.buffers, specs)

    def before_each(self) -> None:
        self.restores += 1
        self.backend.restore(self.buffers["v"], self.pristine, self.spec)

    def one_step_down(self) -> bool:
        got = self.backend.read(self.buffers["v"], self.spec)
        return np.array_equal(got, np.maximum(self.values - 1, 0))

    def free(self) -> None:
        self.backend.release(self.bound)
        free(self.backend, self.buffers)
        self.backend.free(self.pristine)


def _each_its_own_interval(batch, samples: int) -> bool:
    inside = batch.span_ms is None or (  # the events around the batch hold its samples
        batch.span_ms >= sum(batch.samples_ms) + (batch.flush_ms or 0.0)
    )
    return (
        len(batch.samples_ms) == samples
        and all(0 < ms < 1000 for ms in batch.samples_ms)
        and inside
    )


@pytest.mark.parametrize("flush_l2", [False, True])
def test_a_batch_times_each_sample_with_its_restore_enqueued_before_it(backend, module, flush_l2):
    """Five in-place relaxations in one batch, each after a restore of its input: every run
    starts from the input (the values end one step down, not five) and is its own interval."""
    runs = Relaxations(backend, module)
    batch = backend.enqueue_cold_batch(runs.bound, flush_l2, 5, runs.before_each)()
    assert runs.restores == 5 and _each_its_own_interval(batch, 5)
    assert runs.one_step_down()
    runs.free()


def test_a_batch_enqueued_before_the_wait_for_the_one_in_flight_queues_behind_it(backend, module):
    """Three relaxations, and two more enqueued before the wait for the three: the second
    batch's restores and runs come after the first's on the timing stream, each sample its
    own interval between its own events."""
    runs = Relaxations(backend, module)
    first = backend.enqueue_cold_batch(runs.bound, True, 3, runs.before_each)
    second = backend.enqueue_cold_batch(runs.bound, True, 2, runs.before_each)
    assert _each_its_own_interval(first(), 3) and _each_its_own_interval(second(), 2)
    assert runs.restores == 5 and runs.one_step_down()
    runs.free()

"""The PyCUDA backend on a real GPU: properties, poison, timing, compile errors."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmark import BufferRef, BufferSpec, Copy, Launch, Repeat
from gpubench.errors import KernelCompileError

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void fill(float* out, int n, float value)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
"""


def test_device_properties_are_plausible(gpu_backend):
    dev = gpu_backend.device
    assert dev.sm_count > 0 and dev.l2_bytes > 0 and dev.compute_capability[0] >= 5
    assert dev.peak_bandwidth_gbps and dev.peak_bandwidth_gbps > 100
    env = gpu_backend.environment().to_dict()
    assert env["pycuda_version"] and env["cuda_driver_api_version"]


def test_poison_is_nan_for_floats(gpu_backend):
    for dtype in (np.float32, np.float64):
        spec = BufferSpec((7,), np.dtype(dtype))
        buf = gpu_backend.alloc(spec)
        gpu_backend.poison(buf, spec)
        assert np.isnan(gpu_backend.read(buf, spec)).all()
        gpu_backend.free(buf)


def test_launch_download_and_event_timing(gpu_backend):
    module = gpu_backend.compile(SOURCE, [], [])
    spec = BufferSpec((1000,), np.dtype(np.float32))
    buf = gpu_backend.alloc(spec)
    launch = Launch(
        "fill", (4, 1, 1), (256, 1, 1), (BufferRef("out"), np.int32(1000), np.float32(2.5))
    )
    bound = gpu_backend.bind(module, [launch], {"out": buf}, {"out": spec})
    gpu_backend.run_checked(bound)
    assert (gpu_backend.read(buf, spec) == 2.5).all()
    assert 0 < gpu_backend.time_once_ms(bound, flush_l2=True) < 100
    assert gpu_backend.launch_problem(module, [launch]) is None
    too_big = Launch("fill", (1, 1, 1), (1024, 2, 1), launch.args)
    assert "2048 threads per block" in gpu_backend.launch_problem(module, [too_big])
    too_wide = Launch("fill", (1, 1, 1), (2048, 1, 1), launch.args)
    assert "block dimension x=2048" in gpu_backend.launch_problem(module, [too_wide])
    gpu_backend.free(buf)


def test_compile_errors_carry_nvccs_message(gpu_backend):
    with pytest.raises(KernelCompileError) as info:
        gpu_backend.compile('extern "C" __global__ void k() { oops; }', ["-DX=1"], [])
    assert "oops" in info.value.compiler_output


def test_hot_timing_through_a_cuda_graph(gpu_backend):
    module = gpu_backend.compile(SOURCE, [], [])
    spec = BufferSpec((256,), np.dtype(np.float32))
    buf = gpu_backend.alloc(spec)
    launch = Launch(
        "fill", (1, 1, 1), (256, 1, 1), (BufferRef("out"), np.int32(256), np.float32(1.5))
    )
    bound = gpu_backend.bind(module, [launch], {"out": buf}, {"out": spec})
    assert gpu_backend.graphs_available
    per_run_graph = gpu_backend.time_hot_ms(bound, 200)
    per_run_plain = gpu_backend.time_hot_ms(bound, 200, use_graph=False)
    assert 200 in bound.graphs and 0 < per_run_graph < 0.1 and 0 < per_run_plain < 0.1
    assert (gpu_backend.read(buf, spec) == 1.5).all()
    gpu_backend.release(bound)
    assert not bound.graphs
    gpu_backend.free(buf)


def test_host_buffers_copies_in_every_direction_and_side_streams(gpu_backend):
    f32 = np.dtype(np.float32)
    specs = {
        "pinned": BufferSpec((1000,), f32, location="pinned"),
        "pageable": BufferSpec((1000,), f32, location="pageable"),
        "d1": BufferSpec((1000,), f32),
        "d2": BufferSpec((1000,), f32),
        "back": BufferSpec((1000,), f32, location="pinned"),
    }
    bufs = {name: gpu_backend.alloc(spec) for name, spec in specs.items()}
    data = np.arange(1000, dtype=np.float32)
    gpu_backend.write(bufs["pinned"], specs["pinned"], data)
    gpu_backend.write(bufs["pageable"], specs["pageable"], data[::-1].copy())
    gpu_backend.poison(bufs["back"], specs["back"])
    steps = [
        # Synchronous: the host waits, so everything issued later runs after it.
        Copy("pageable", "d2", nbytes=400, src_offset=400, dst_offset=0, synchronous=True),
        Copy("pinned", "d1", stream=1, label="in"),  # H2D on a side stream
        Copy("d1", "d2", nbytes=2000, src_offset=2000, dst_offset=2000, stream=1),  # D2D
        Copy("d2", "back", stream=1),  # D2H, joined into the timing stream at the end
    ]
    bound = gpu_backend.bind(None, steps, bufs, specs)
    gpu_backend.run_checked(bound)
    back = gpu_backend.read(bufs["back"], specs["back"])
    assert np.array_equal(back[:100], data[::-1][100:200])
    assert np.array_equal(back[500:], data[500:])
    spans = gpu_backend.timeline(bound)
    assert [(s["stream"], s["op"]) for s in spans] == [(0, "H2D"), (1, "H2D"), (1, "D2D"),
                                                       (1, "D2H")]  # fmt: skip
    assert all(s["end_ms"] >= s["start_ms"] >= 0 for s in spans)
    for buf in bufs.values():
        gpu_backend.free(buf)


REPEAT_SOURCE = r"""
extern "C" __global__ void dec(int* v, int* changed)
{
    if (threadIdx.x == 0 && *v > 0) { *v -= 1; *changed = 1; }
}
"""


def test_repeat_reads_the_flag_back_each_iteration(gpu_backend):
    module = gpu_backend.compile(REPEAT_SOURCE, [], [])
    i32 = np.dtype(np.int32)
    specs = {"v": BufferSpec((1,), i32), "flag": BufferSpec((1,), i32)}
    bufs = {name: gpu_backend.alloc(spec) for name, spec in specs.items()}
    gpu_backend.write(bufs["v"], specs["v"], np.array([5], np.int32))
    body = (Launch("dec", (1, 1, 1), (32, 1, 1), (BufferRef("v"), BufferRef("flag"))),)
    bound = gpu_backend.bind(module, [Repeat(body, "flag", 100)], bufs, specs)
    record = gpu_backend.run_checked(bound)
    assert record.iterations == 6 and record.converged
    assert gpu_backend.read(bufs["v"], specs["v"])[0] == 0
    gpu_backend.write(bufs["v"], specs["v"], np.array([50], np.int32))
    capped = gpu_backend.bind(module, [Repeat(body, "flag", 10)], bufs, specs)
    record = gpu_backend.run_checked(capped)
    assert record.iterations == 10 and not record.converged
    assert gpu_backend.time_once_ms(capped, flush_l2=False) > 0
    for buf in bufs.values():
        gpu_backend.free(buf)


def test_memory_info_and_an_impossible_allocation_is_out_of_memory(gpu_backend):
    from gpubench.errors import OutOfMemory

    free, total = gpu_backend.memory_info()
    assert 0 < free <= total
    with pytest.raises(OutOfMemory, match="device memory"):
        gpu_backend.alloc(BufferSpec((4 * total,), np.dtype(np.uint8)))
    env = gpu_backend.environment().to_dict()
    assert env["backend"]["name"] == "pycuda" and env["backend"]["version"]


def test_the_compiler_id_names_nvcc_and_the_architecture(gpu_backend):
    from gpubench.device import nvcc_version

    assert gpu_backend.compiler_id == f"nvcc {nvcc_version()} {gpu_backend.device.arch}"

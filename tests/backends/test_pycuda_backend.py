"""The PyCUDA backend on a real GPU: properties, poison, timing, compile errors."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmark import BufferRef, BufferSpec, Launch
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
        assert np.isnan(gpu_backend.download(buf, spec)).all()
        gpu_backend.free(buf)


def test_launch_download_and_event_timing(gpu_backend):
    module = gpu_backend.compile(SOURCE, [], [])
    spec = BufferSpec((1000,), np.dtype(np.float32))
    buf = gpu_backend.alloc(spec)
    launch = Launch(
        "fill", (4, 1, 1), (256, 1, 1), (BufferRef("out"), np.int32(1000), np.float32(2.5))
    )
    bound = gpu_backend.bind(module, [launch], {"out": buf})
    gpu_backend.run_checked(bound)
    assert (gpu_backend.download(buf, spec) == 2.5).all()
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
    bound = gpu_backend.bind(module, [launch], {"out": buf})
    assert gpu_backend.graphs_available
    per_run_graph = gpu_backend.time_hot_ms(bound, 200)
    per_run_plain = gpu_backend.time_hot_ms(bound, 200, use_graph=False)
    assert 200 in bound.graphs and 0 < per_run_graph < 0.1 and 0 < per_run_plain < 0.1
    assert (gpu_backend.download(buf, spec) == 1.5).all()
    gpu_backend.release(bound)
    assert not bound.graphs
    gpu_backend.free(buf)

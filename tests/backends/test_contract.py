"""The backend contract (gpubench.backends.base.Backend), one set of tests for every backend:
the CPU stand-in here, PyCUDA and cuda.core on a GPU. A third backend (HIP, OpenCL) adds its
name to BACKENDS and passes these.

The kernels are named as the stand-in's Python kernels are (tests.fakes.KERNELS), with the
same effect, so every test means the same thing on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmark import BufferRef, BufferSpec, Copy, Launch, Repeat
from gpubench.errors import KernelCompileError, KernelLaunchError, OutOfMemory

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
    options = ["-DBROKEN=1"]  # what makes the stand-in's compiler fail
    with pytest.raises(KernelCompileError) as info:
        backend.compile_binary(source, options, [])
    assert "oops" in info.value.compiler_output and "error" in info.value.compiler_output


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


def test_repeat_runs_until_the_flag_stays_clear_or_the_cap(backend, module):
    specs = {"v": BufferSpec((64,), I32), "flag": BufferSpec((1,), I32)}
    buffers = alloc(backend, specs)
    values = np.zeros(64, np.int32)
    values[[0, 63]] = [5, 3]
    backend.write(buffers["v"], specs["v"], values)
    body = (Launch("count_down", (1, 1, 1), (64, 1, 1),
                   (BufferRef("v"), BufferRef("flag"), np.int32(64))),)  # fmt: skip
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
    _, total = backend.memory_info()
    with pytest.raises(OutOfMemory, match="device memory"):
        backend.alloc(BufferSpec((4 * total,), np.dtype(np.uint8)))
    assert backend.context_alive()


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

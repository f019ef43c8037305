"""What only the PyCUDA backend has (the contract itself is tested for every backend in
test_contract.py): its versions, and nvcc in its compiler id."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def pycuda_backend():
    from gpubench import backends

    return backends.load(0, "pycuda")


def test_the_environment_names_pycuda_and_the_cuda_it_was_built_for(pycuda_backend):
    env = pycuda_backend.environment().to_dict()
    assert env["pycuda_version"] and env["pycuda_built_for_cuda"]
    assert env["backend"] == {"name": "pycuda", "version": env["pycuda_version"]}
    assert env["cuda_driver_api_version"]


def test_the_compiler_id_names_nvcc_and_the_architecture(pycuda_backend):
    from gpubench.device import nvcc_version

    assert pycuda_backend.compiler_id == f"nvcc {nvcc_version()} {pycuda_backend.device.arch}"


def test_the_environment_records_the_gpu_as_it_started(pycuda_backend):
    import re

    env = pycuda_backend.environment().to_dict()
    assert re.fullmatch(r"\d+\.\d+", env["cuda_driver_api_version"]), env
    assert env["gpu_uuid"].startswith("GPU-")
    for key in ("sm_clock_mhz_at_start", "temperature_c_at_start", "power_w_at_start"):
        assert isinstance(env[key], int | float) and env[key] > 0, (key, env[key])


def test_pycuda_times_hot_runs_through_cuda_graphs(pycuda_backend):
    assert pycuda_backend.graphs_available


def test_each_buffer_is_where_it_was_asked_for(pycuda_backend):
    import numpy as np

    from gpubench.benchmark import BufferSpec

    spec = BufferSpec((16,), np.dtype(np.float32), location="pinned")
    pinned = pycuda_backend.alloc(spec)
    pageable = pycuda_backend.alloc(BufferSpec((16,), np.dtype(np.float32), location="pageable"))
    try:
        assert pinned.location == "pinned" and pinned.host.base is not None  # the driver's
        assert pageable.location == "pageable" and pageable.host.base is None  # NumPy's own
    finally:
        pycuda_backend.free(pinned)
        pycuda_backend.free(pageable)


def test_page_locked_memory_that_cannot_be_had_is_out_of_memory_with_the_reason(
    pycuda_backend, monkeypatch
):
    import numpy as np
    import pycuda.driver as cuda

    from gpubench.backends import pycuda_backend as module
    from gpubench.benchmark import BufferSpec
    from gpubench.errors import OutOfMemory

    def refuse(*args, **kwargs):
        raise cuda.MemoryError("the driver said no")

    monkeypatch.setattr(module.cuda, "pagelocked_empty", refuse)
    spec = BufferSpec((16,), np.dtype(np.float32), location="pinned")
    with pytest.raises(OutOfMemory) as error:
        pycuda_backend.alloc(spec)
    assert str(error.value) == ("cannot allocate 64 bytes of page-locked host memory "
                                "(the driver said no)")  # fmt: skip


def test_free_gives_device_and_page_locked_memory_back_at_once(pycuda_backend):
    """Page-locked memory is scarce: free hands it back to the driver then, not when the
    garbage collector gets to it; every buffer is left empty."""
    import numpy as np

    from gpubench.benchmark import BufferSpec

    f32, freed = np.dtype(np.float32), []
    device = pycuda_backend.alloc(BufferSpec((16,), f32))
    pinned = pycuda_backend.alloc(BufferSpec((16,), f32, location="pinned"))
    pageable = pycuda_backend.alloc(BufferSpec((16,), f32, location="pageable"))

    class Recorded:  # in front of the driver's allocation: records the free, then does it
        def __init__(self, what, allocation):
            self.what, self.allocation = what, allocation

        def free(self):
            freed.append(self.what)
            self.allocation.free()

    device.device = Recorded("device", device.device)
    page_locked = Recorded("page-locked", pinned.host.base)

    class PinnedView(np.ndarray):
        base = property(lambda self: page_locked)

    pinned.host = pinned.host.view(PinnedView)
    for buffer in (device, pinned, pageable):
        pycuda_backend.free(buffer)
    assert freed == ["device", "page-locked"]
    assert all(b.device is None and b.host is None for b in (device, pinned, pageable))


def test_nvcc_builds_for_this_gpu_from_the_include_dirs_outside_pycudas_cache(pycuda_backend,
                                                                               monkeypatch):  # fmt: skip
    """gpubench keeps its own compile cache (kernels.CompileCache): PyCUDA's is off."""
    import pycuda.compiler

    calls = []
    monkeypatch.setattr(pycuda.compiler, "compile",
                        lambda source, **kwargs: calls.append(kwargs) or b"cubin")  # fmt: skip
    assert pycuda_backend.compile_binary("src", ["-DX=1"], ["inc"]) == b"cubin"
    assert calls == [{"options": ["-DX=1"], "arch": pycuda_backend.device.arch,
                      "no_extern_c": True, "include_dirs": ["inc"], "cache_dir": False}]  # fmt: skip


def test_a_failed_compile_without_nvcc_output_carries_the_error_itself(pycuda_backend,
                                                                        monkeypatch):  # fmt: skip
    import pycuda.compiler
    import pycuda.driver as cuda

    from gpubench.errors import KernelCompileError

    error = cuda.CompileError("nvcc was not found", "nvcc --cubin kernel.cu")

    def fail(source, **kwargs):
        raise error

    monkeypatch.setattr(pycuda.compiler, "compile", fail)
    with pytest.raises(KernelCompileError) as raised:
        pycuda_backend.compile_binary("src", ["-DX=1", "-DY=2"], [])
    assert str(raised.value) == "nvcc failed (-DX=1 -DY=2)"
    assert raised.value.compiler_output == str(error)

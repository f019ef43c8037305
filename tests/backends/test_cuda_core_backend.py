"""The cuda-core backend's compiles: two builds of one source that differ only in their
options are two binaries (the driver's compute cache, keyed by the compiled code, once gave
back the first for both; the backend gives each build's code a variable named after its
options)."""

from __future__ import annotations

import uuid

import pytest


@pytest.mark.gpu
def test_fast_math_and_plain_builds_of_one_source_differ_with_a_driver():
    """With the driver loaded (where its cache lives): a fresh source compiled with
    --use_fast_math first, then plain, gives two different cubins in either order."""
    pytest.importorskip("cuda.core")
    from gpubench.backends.cuda_core_backend import compile_cubin

    for first, second in ((["--use_fast_math"], []), ([], ["--use_fast_math"])):
        name = f"k_{uuid.uuid4().hex}"  # a source no cache has seen
        source = f'extern "C" __global__ void {name}(float* o, float x) {{ o[0] = sinf(x); }}\n'
        a = compile_cubin(source, first, [], "sm_90")
        b = compile_cubin(source, second, [], "sm_90")
        assert a != b


def test_an_option_nvrtc_refuses_is_a_compile_error_that_carries_nvrtc_s_words():
    """Needs NVRTC only (no GPU)."""
    pytest.importorskip("cuda.core")
    from gpubench.backends.cuda_core_backend import compile_cubin
    from gpubench.errors import KernelCompileError

    try:
        compile_cubin('extern "C" __global__ void k() {}\n', ["--std=c++99"], [], "sm_90")
    except KernelCompileError as error:
        assert str(error) == "NVRTC failed (--std=c++99)"
        assert "invalid value for --std" in (error.compiler_output or "")
    except Exception as exc:  # no NVRTC library on this machine
        pytest.skip(f"NVRTC unavailable: {exc}")
    else:
        pytest.fail("NVRTC accepted --std=c++99")


@pytest.fixture(scope="module")
def cuda_core_backend():
    from gpubench import backends
    from tests.conftest import gpu_unavailable_reason

    if reason := gpu_unavailable_reason("cuda-core"):
        pytest.skip(reason)
    return backends.load(0, "cuda-core")


@pytest.mark.gpu
def test_a_failing_driver_call_is_named_by_the_driver(cuda_core_backend):
    from cuda.bindings import driver

    from gpubench.backends.cuda_core_backend import CudaError, _check

    with pytest.raises(CudaError) as error:
        _check(driver.cuDeviceGet(10**6))
    assert str(error.value) == "CUDA_ERROR_INVALID_DEVICE"


@pytest.mark.gpu
def test_the_environment_records_the_gpu_as_it_started(cuda_core_backend):
    import re

    env = cuda_core_backend.environment().to_dict()
    assert re.fullmatch(r"\d+\.\d+", env["cuda_driver_api_version"]), env
    assert env["gpu_uuid"].startswith("GPU-")
    assert env["device"]["memory_bytes"] > 1 << 30
    assert cuda_core_backend.sm_clock_mhz() > 0  # read through NVML


@pytest.mark.gpu
def test_each_buffer_is_where_it_was_asked_for(cuda_core_backend):
    import numpy as np

    from gpubench.benchmark import BufferSpec

    pinned = cuda_core_backend.alloc(BufferSpec((16,), np.dtype(np.float32), location="pinned"))
    pageable = cuda_core_backend.alloc(BufferSpec((16,), np.dtype(np.float32),
                                                  location="pageable"))  # fmt: skip
    try:
        assert pinned.location == "pinned" and pinned.pinned_address is not None
        assert pageable.location == "pageable" and pageable.pinned_address is None
    finally:
        cuda_core_backend.free(pinned)
        cuda_core_backend.free(pageable)


def test_options_that_nvrtc_refuses_before_compiling_carry_its_words(monkeypatch):
    """Where NVRTC refuses the program itself (its options, before any compile)."""
    pytest.importorskip("cuda.core")
    from gpubench.backends import cuda_core_backend
    from gpubench.errors import KernelCompileError

    def refuse(*args):
        raise ValueError("option --std=c++99 is not recognised")

    monkeypatch.setattr(cuda_core_backend, "Program", refuse)
    with pytest.raises(KernelCompileError) as error:
        cuda_core_backend.compile_cubin('extern "C" __global__ void k() {}\n',
                                        ["--std=c++99", "-DX=1"], [], "sm_90")  # fmt: skip
    assert str(error.value) == "NVRTC failed (--std=c++99 -DX=1)"
    assert error.value.compiler_output == "option --std=c++99 is not recognised"


@pytest.mark.gpu
def test_a_status_the_driver_cannot_name_is_named_by_its_number(cuda_core_backend,
                                                                  monkeypatch):  # fmt: skip
    from cuda.bindings import driver

    from gpubench.backends import cuda_core_backend as module

    status = driver.CUresult.CUDA_ERROR_INVALID_VALUE
    monkeypatch.setattr(module.driver, "cuGetErrorName", lambda status: (status, None))
    with pytest.raises(module.CudaError) as error:
        module._check((status,))
    assert str(error.value) == str(status)


@pytest.mark.gpu
def test_page_locked_memory_that_cannot_be_had_is_out_of_memory_with_the_reason(
    cuda_core_backend, monkeypatch
):
    import numpy as np

    from gpubench.backends import cuda_core_backend as module
    from gpubench.benchmark import BufferSpec
    from gpubench.errors import OutOfMemory

    def refuse(nbytes):
        raise module.CudaError("CUDA_ERROR_OUT_OF_MEMORY")

    monkeypatch.setattr(module, "_pinned", refuse)
    with pytest.raises(OutOfMemory) as error:
        cuda_core_backend.alloc(BufferSpec((16,), np.dtype(np.float32), location="pinned"))
    assert str(error.value) == ("cannot allocate 64 bytes of page-locked host memory "
                                "(CUDA_ERROR_OUT_OF_MEMORY)")  # fmt: skip


@pytest.mark.gpu
def test_free_gives_device_and_page_locked_memory_back_at_once(cuda_core_backend, monkeypatch):
    """Page-locked memory is scarce: free hands it back to the driver then, not at exit;
    every buffer is left empty."""
    import numpy as np

    from gpubench.backends import cuda_core_backend as module
    from gpubench.benchmark import BufferSpec

    real, freed = module.driver, []

    class Recorded:  # in front of the driver: records the frees, then does them
        def __getattr__(self, name):
            return getattr(real, name)

        def cuMemFree(self, address):
            freed.append(("device", address))
            return real.cuMemFree(address)

        def cuMemFreeHost(self, address):
            freed.append(("page-locked", address))
            return real.cuMemFreeHost(address)

    buffers = [cuda_core_backend.alloc(BufferSpec((16,), np.dtype(np.float32), location=where))
               for where in ("device", "pinned", "pageable")]  # fmt: skip
    expected = [("device", buffers[0].device), ("page-locked", buffers[1].pinned_address)]
    monkeypatch.setattr(module, "driver", Recorded())
    for buffer in buffers:
        cuda_core_backend.free(buffer)
    monkeypatch.undo()
    assert freed == expected
    assert all(b.device is None and b.host is None and b.pinned_address is None for b in buffers)


@pytest.mark.gpu
def test_a_binary_the_driver_cannot_load_is_a_launch_error_with_its_words(cuda_core_backend):
    from gpubench.errors import KernelLaunchError

    with pytest.raises(KernelLaunchError) as error:
        cuda_core_backend.load(b"not a cubin")
    assert str(error.value).startswith("cannot load the compiled module: CUDA_ERROR_")


def test_nvrtc_that_cannot_be_loaded_says_how_to_install_it(monkeypatch):
    pytest.importorskip("cuda.core")
    from types import SimpleNamespace

    from gpubench.backends import cuda_core_backend
    from gpubench.errors import EnvironmentProblem

    def missing():
        raise OSError("libnvrtc.so.13: cannot open shared object file")

    monkeypatch.setattr(cuda_core_backend, "nvrtc", SimpleNamespace(nvrtcVersion=missing))
    with pytest.raises(EnvironmentProblem) as error:
        cuda_core_backend.CudaCoreBackend._read_nvrtc_version()
    assert str(error.value) == (
        "NVRTC is not available (libnvrtc.so.13: cannot open shared object file): install it "
        "with pip install nvidia-cuda-nvrtc (or gpubench[cuda-core]), or use a CUDA toolkit's "
        "libnvrtc"
    )
    monkeypatch.setattr(cuda_core_backend, "nvrtc",
                        SimpleNamespace(nvrtcVersion=lambda: (0, 13, 0)))  # fmt: skip
    assert cuda_core_backend.CudaCoreBackend._read_nvrtc_version() == (13, 0)

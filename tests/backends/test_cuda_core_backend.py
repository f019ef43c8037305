"""The cuda-core backend's compiles: two builds of one source that differ only in their
options are two binaries (the driver's compute cache, keyed by the compiled code, once gave
back the first for both; the backend gives each build's code a variable named after its
options)."""

from __future__ import annotations

import ctypes
import uuid
from types import SimpleNamespace

import numpy as np
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

    from gpubench.model.benchmark import BufferSpec

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
    from gpubench.errors import OutOfMemory
    from gpubench.model.benchmark import BufferSpec

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
    from gpubench.model.benchmark import BufferSpec

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
        "with pip install nvidia-cuda-nvrtc (or gpubench-studies[cuda-core]), or use a CUDA toolkit's "
        "libnvrtc"
    )
    monkeypatch.setattr(cuda_core_backend, "nvrtc",
                        SimpleNamespace(nvrtcVersion=lambda: (0, 13, 0)))  # fmt: skip
    assert cuda_core_backend.CudaCoreBackend._read_nvrtc_version() == (13, 0)


# -- on a stand-in driver (no GPU): what each call is asked to do --------------------------
class Driver:
    """cuda-bindings' driver module as the backend calls it: each call is recorded and
    answers success, or what `answers` says (a tuple, or a function of the call's arguments);
    the enumerations are the real ones."""

    def __init__(self, **answers):
        from cuda.bindings import driver

        self.real, self.calls = driver, []
        self.answers = {"cuGetErrorName": lambda status: ok(status.name.encode()), **answers}

    def __getattr__(self, name):
        if name.startswith("CU"):
            return getattr(self.real, name)

        def call(*args):
            self.calls.append((name, *args))
            answer = self.answers.get(name, (self.real.CUresult.CUDA_SUCCESS,))
            return answer(*args) if callable(answer) else answer

        return call


@pytest.fixture
def module(monkeypatch):
    """The backend's module with a stand-in driver (module.driver) and no GPU."""
    pytest.importorskip("cuda.core")
    from gpubench.backends import cuda_core_backend

    monkeypatch.setattr(cuda_core_backend, "driver", Driver())
    return cuda_core_backend


def ok(*values):
    from cuda.bindings import driver

    return (driver.CUresult.CUDA_SUCCESS, *values)


def bare(module, **attributes):
    """A CudaCoreBackend that never started, with only the attributes a test gives it."""
    backend = module.CudaCoreBackend.__new__(module.CudaCoreBackend)
    backend.__dict__.update(attributes)
    return backend


class Stream:
    def __init__(self, handle, log=None):
        self.handle, self.log = handle, log if log is not None else []

    def sync(self):
        self.log.append(("sync", self.handle))


def test_a_driver_that_cannot_start_is_an_environment_problem_with_its_reason(module):
    from gpubench.errors import EnvironmentProblem

    def missing(flags):
        raise RuntimeError("libcuda.so.1 not found")

    for answer, reason in ((missing, "libcuda.so.1 not found"),
                           ((module.driver.CUresult.CUDA_ERROR_NO_DEVICE,), "CUDA_ERROR_NO_DEVICE")):  # fmt: skip
        module.driver.answers["cuInit"] = answer
        with pytest.raises(EnvironmentProblem) as error:
            module.CudaCoreBackend(0)
        assert str(error.value) == (f"the CUDA driver could not start ({reason}): check that an "
                                    "NVIDIA GPU and its driver are present (nvidia-smi)")  # fmt: skip


def test_a_machine_without_the_gpu_asked_for_says_how_many_it_has(module):
    from gpubench.errors import EnvironmentProblem

    module.driver.answers["cuDeviceGetCount"] = ok(0)
    with pytest.raises(EnvironmentProblem) as error:
        module.CudaCoreBackend()
    assert str(error.value) == "no CUDA GPU found: run gpubench on a machine with an NVIDIA GPU"
    module.driver.answers["cuDeviceGetCount"] = ok(2)
    for index in (2, -1):
        with pytest.raises(EnvironmentProblem) as error:
            module.CudaCoreBackend(index)
        assert str(error.value) == f"device {index} does not exist (this machine has 2)"


def test_the_device_asked_for_is_the_one_opened(module, monkeypatch):
    class Started(Exception):
        pass

    opened = []

    class Device:
        def __init__(self, index):
            opened.append(index)

        def set_current(self):
            raise Started  # enough: the rest needs a GPU

    monkeypatch.setattr(module, "Device", Device)
    module.driver.answers.update(cuDeviceGetCount=ok(2), cuDeviceGet=lambda i: ok(f"CUdevice {i}"))
    for index in (0, 1):
        with pytest.raises(Started):
            module.CudaCoreBackend(index)
    with pytest.raises(Started):
        module.CudaCoreBackend()  # device 0 unless told
    assert opened == [0, 1, 0]
    backend = bare(module)
    monkeypatch.setattr(Device, "set_current", lambda self: None)
    backend._start_device(1)
    assert backend._cu_device == "CUdevice 1" and opened[-1] == 1


def test_a_device_attribute_the_driver_lacks_or_refuses_is_none(module):
    backend = bare(module, _cu_device="CUdevice 0")
    module.driver.answers["cuDeviceGetAttribute"] = ok(2048)
    assert backend._attr("MAX_THREADS_PER_MULTIPROCESSOR") == 2048
    attribute = module.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
    assert module.driver.calls == [("cuDeviceGetAttribute", attribute, "CUdevice 0")]
    assert backend._attr("NO_SUCH_ATTRIBUTE") is None
    module.driver.answers["cuDeviceGetAttribute"] = (
        module.driver.CUresult.CUDA_ERROR_INVALID_VALUE, 0)  # fmt: skip
    assert backend._attr("MAX_THREADS_PER_MULTIPROCESSOR") is None


def test_the_l2_flush_writes_all_of_l2_on_the_timing_stream_with_a_new_value(module):
    """Each flush writes an L2-sized buffer (allocated once) with a value other than the last
    one's, so no line of it can stay valid in L2, on the timing stream."""
    backend = bare(module, device=SimpleNamespace(l2_bytes=50 * 2**20), _flush_buffer=None,
                   _flush_value=0, _stream=Stream(7))  # fmt: skip
    module.driver.answers["cuMemAlloc"] = ok(0xB000)
    for _ in range(3):
        backend._flush_l2_async()
    calls = module.driver.calls
    assert calls[0] == ("cuMemAlloc", 50 * 2**20)
    writes = calls[1:]
    assert [(name, buffer, count, stream) for name, buffer, _, count, stream in writes] == [
        ("cuMemsetD32Async", 0xB000, 50 * 2**18, 7)] * 3  # fmt: skip
    assert all(type(count) is int for *_, count, _ in writes)
    values = [value for _, _, value, _, _ in writes]
    assert values[0] != values[1] != values[2], values


def host_buffer(module, nbytes):
    return module._Buffer("pinned", nbytes, host=np.arange(nbytes, dtype=np.uint8))


@pytest.mark.parametrize("synchronous", [False, True])
def test_a_copy_moves_its_bytes_between_its_offsets_on_its_stream(module, synchronous):
    from gpubench.model.steps import Copy

    buffers = {"d": module._Buffer("device", 64, device=0xD000),
               "e": module._Buffer("device", 64, device=0xE000),
               "h": host_buffer(module, 64)}  # fmt: skip
    backend, stream = bare(module), Stream(9)
    h = buffers["h"].host.ctypes.data
    expected = {("h", "d"): ("H2D", "cuMemcpyHtoD", 0xD000 + 8, h + 4, 16),
                ("d", "h"): ("D2H", "cuMemcpyDtoH", h + 8, 0xD000 + 4, 16),
                ("d", "e"): ("D2D", "cuMemcpyDtoD", 0xE000 + 8, 0xD000 + 4, 16)}  # fmt: skip
    for (src, dst), (op, call, *args) in expected.items():
        step = Copy(src, dst, nbytes=16, src_offset=4, dst_offset=8, synchronous=synchronous)
        module.driver.calls.clear()
        kind, run = backend._copy_call(step, buffers, stream)
        run()
        assert kind == op
        if synchronous:
            assert module.driver.calls == [(call, *args)]
        else:
            assert module.driver.calls == [(call + "Async", *args, 9)]


def test_restore_copies_device_inputs_on_the_timing_stream_and_host_ones_after_it(module):
    log = []
    backend = bare(module, _stream=Stream(5, log))
    spec = SimpleNamespace(nbytes=12)
    dst, src = module._Buffer("device", 16, device=0xA0), module._Buffer("device", 16, device=0xB0)
    backend.restore(dst, src, spec)
    assert module.driver.calls == [("cuMemcpyDtoDAsync", 0xA0, 0xB0, 12, 5)]
    dst, src = host_buffer(module, 16), host_buffer(module, 16)
    dst.host[:] = 0
    backend.restore(dst, src, spec)
    assert log == [("sync", 5)]
    assert dst.host.tolist() == [*range(12), 0, 0, 0, 0]


def test_the_context_probe_gives_back_what_it_took(module):
    module.driver.answers["cuMemAlloc"] = ok(0xC0)
    assert bare(module).context_alive() is True
    assert module.driver.calls == [("cuCtxSynchronize",), ("cuMemAlloc", 4), ("cuMemFree", 0xC0)]
    module.driver.answers["cuCtxSynchronize"] = (module.driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,)
    assert bare(module).context_alive() is False


def test_at_exit_the_flush_buffer_and_the_page_locked_memory_go_back(module):
    log = []
    backend = bare(module, _stream=Stream(3, log), _flush_buffer=0xF0, _stage_addresses=[1, 2],
                   _flag_address=9)  # fmt: skip
    backend._close()
    assert log == [("sync", 3)]
    assert module.driver.calls == [("cuMemFree", 0xF0), ("cuMemFreeHost", 1),
                                   ("cuMemFreeHost", 2), ("cuMemFreeHost", 9)]  # fmt: skip
    module.driver.calls.clear()
    backend._flush_buffer = None
    backend._close()
    assert [c[0] for c in module.driver.calls] == ["cuMemFreeHost"] * 3

    def gone(*args):
        raise RuntimeError("the context is gone")

    module.driver.answers["cuMemFreeHost"] = gone
    backend._close()  # at exit a context may be gone: nothing to report then


def test_large_uploads_go_through_page_locked_slots_on_streams_that_wait_for_the_default(
    module, monkeypatch
):
    from gpubench.backends.driver_steps import STAGE_BYTES, STAGES

    log, made = [], []

    def pinned(nbytes):
        return 0x100 + len(made), np.zeros(nbytes, np.uint8)

    def create_stream(options):
        made.append(options)
        return Stream(20 + len(made), log)

    def copy(to, source, nbytes, handle):  # what the copy engine would read, at the call
        arrived.append(ctypes.string_at(source, nbytes))
        return ok()

    arrived = []
    monkeypatch.setattr(module, "_pinned", pinned)
    module.driver.answers["cuMemcpyHtoDAsync"] = copy
    backend = bare(module, _stage=None, _device=SimpleNamespace(create_stream=create_stream))
    flat = np.resize(np.arange(251, dtype=np.uint8), 2 * STAGE_BYTES + 5)
    backend._staged_upload(0xD0, flat)
    assert b"".join(arrived) == flat.tobytes()
    assert [o.nonblocking for o in made] == [False] * STAGES  # see _ORDERED
    assert backend._stage_addresses == [0x100] * STAGES
    copies = [(to, nbytes, handle) for _, to, _, nbytes, handle in module.driver.calls]
    assert copies == [(0xD0, STAGE_BYTES, 21), (0xD0 + STAGE_BYTES, STAGE_BYTES, 22),
                      (0xD0 + 2 * STAGE_BYTES, 5, 23)]  # fmt: skip
    assert log[-STAGES:] == [("sync", 21), ("sync", 22), ("sync", 23)]  # all done on return


def test_side_streams_wait_for_the_default_stream_too(module):
    made = []
    backend = bare(module, _device=SimpleNamespace(create_stream=lambda options: made.append(
        options)))  # fmt: skip
    backend._new_stream()
    assert made == [module._ORDERED] and module._ORDERED.nonblocking is False


def test_nvrtc_s_log_is_cut_out_of_cuda_cores_message():
    pytest.importorskip("cuda.core")
    from gpubench.backends.cuda_core_backend import _nvrtc_log

    message = "NVRTC_ERROR_COMPILATION: compilation log:\n\n  k.cu(2): error: compilation log: x \n"
    assert _nvrtc_log(message) == "k.cu(2): error: compilation log: x"
    assert _nvrtc_log("NVRTC_ERROR_OUT_OF_MEMORY") == "NVRTC_ERROR_OUT_OF_MEMORY"


def test_a_package_that_is_not_installed_has_an_unknown_version():
    pytest.importorskip("cuda.core")
    from importlib.metadata import version

    from gpubench.backends.cuda_core_backend import _package_version

    assert _package_version("numpy") == version("numpy")
    assert _package_version("no-such-distribution-for-gpubench") == "unknown"


def test_driver_errors_are_the_drivers_as_either_library_reports_them():
    pytest.importorskip("cuda.core")
    from gpubench.backends.cuda_core_backend import CudaError, _driver_errors

    cuda_core_error = type("CUDAError", (RuntimeError,), {})
    assert _driver_errors(CudaError("CUDA_ERROR_ILLEGAL_ADDRESS"))
    assert _driver_errors(cuda_core_error("CUDA_ERROR_LAUNCH_FAILED"))
    assert not _driver_errors(RuntimeError("a bug"))


def test_the_environment_names_cuda_core_its_bindings_nvrtc_and_the_drivers_cuda(module):
    from importlib.metadata import version

    module.driver.answers["cuDriverGetVersion"] = ok(12090)
    backend = bare(module, _nvrtc_version=(13, 0), _nvml_handle=None,
                   device=SimpleNamespace(to_dict=lambda: {"name": "H100"}))  # fmt: skip
    env = backend.environment()
    assert env.backend == {"name": "cuda-core", "version": version("cuda-core"),
                           "cuda_bindings": version("cuda-bindings"), "compiler": "NVRTC 13.0"}  # fmt: skip
    assert env.cuda_driver_api_version == "12.9" and env.device == {"name": "H100"}

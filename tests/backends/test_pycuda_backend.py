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
    from gpubench.model.device import nvcc_version

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

    from gpubench.model.benchmark import BufferSpec

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
    from gpubench.errors import OutOfMemory
    from gpubench.model.benchmark import BufferSpec

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

    from gpubench.model.benchmark import BufferSpec

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


def test_the_l2_flush_writes_all_of_l2_on_the_timing_stream_with_a_new_value(pycuda_backend,
                                                                             monkeypatch):  # fmt: skip
    """Each flush writes an L2-sized buffer with a value other than the last one's, so no
    line of it can stay valid in L2, queued on the timing stream before the timed launches."""
    import pycuda.driver as cuda

    from gpubench.backends import pycuda_backend as module

    writes = []
    monkeypatch.setattr(module.cuda, "memset_d32_async",
                        lambda buffer, value, count, stream: writes.append((value, count, stream)))  # fmt: skip
    for _ in range(3):
        pycuda_backend._flush_l2_async()
    monkeypatch.undo()
    values = [value for value, _, _ in writes]
    assert values[0] != values[1] != values[2], values
    words = pycuda_backend.device.l2_bytes // 4
    assert all(count == words and stream is pycuda_backend._stream for _, count, stream in writes)
    assert isinstance(pycuda_backend._stream, cuda.Stream)


def test_a_driver_that_cannot_start_or_a_gpu_that_is_not_there_is_named(monkeypatch):
    import pycuda.driver as cuda

    from gpubench.backends.pycuda_backend import PyCudaBackend
    from gpubench.errors import EnvironmentProblem

    def fail():
        raise cuda.Error("cuInit failed: no CUDA-capable device is detected")

    monkeypatch.setattr(cuda, "init", fail)
    with pytest.raises(EnvironmentProblem) as error:
        PyCudaBackend(0)
    assert str(error.value) == (
        "the CUDA driver could not start (cuInit failed: no CUDA-capable device is detected): "
        "check that an NVIDIA GPU and its driver are present (nvidia-smi)"
    )
    monkeypatch.setattr(cuda, "init", lambda: None)
    monkeypatch.setattr(cuda.Device, "count", staticmethod(lambda: 0))
    with pytest.raises(EnvironmentProblem) as error:
        PyCudaBackend()
    assert str(error.value) == "no CUDA GPU found: run gpubench on a machine with an NVIDIA GPU"
    monkeypatch.setattr(cuda.Device, "count", staticmethod(lambda: 2))
    for index in (2, -1):
        with pytest.raises(EnvironmentProblem) as error:
            PyCudaBackend(index)
        assert str(error.value) == f"device {index} does not exist (this machine has 2)"


def test_the_device_asked_for_is_the_one_opened(monkeypatch):
    from gpubench.backends import pycuda_backend as module

    class Opened(Exception):
        pass

    def device(index):
        raise Opened(index)

    device.count = lambda: 2
    monkeypatch.setattr(module.cuda, "Device", device)
    opened = []
    for args in ((1,), (0,), ()):  # device 0 unless told
        with pytest.raises(Opened) as raised:
            module.PyCudaBackend(*args)
        opened.append(raised.value.args[0])
    assert opened == [1, 0, 0]


def test_a_device_attribute_the_driver_lacks_is_none(pycuda_backend):
    assert pycuda_backend._attr("NO_SUCH_ATTRIBUTE") is None
    assert pycuda_backend._attr("WARP_SIZE") == 32


def test_the_environment_names_the_cuda_pycuda_was_built_for(pycuda_backend):
    import pycuda.driver as cuda

    env = pycuda_backend.environment().to_dict()
    assert env["pycuda_built_for_cuda"] == ".".join(str(v) for v in cuda.get_version())
    assert env["device"] == pycuda_backend.device.to_dict()


@pytest.mark.parametrize("synchronous", [False, True])
def test_a_copy_moves_its_bytes_between_its_offsets_on_its_stream(pycuda_backend, synchronous):
    """The call each Copy step becomes: which memcpy, between which addresses, how many bytes,
    and (asynchronous) on the step's own stream."""
    import numpy as np
    import pycuda.driver as cuda

    from gpubench.model.benchmark import BufferSpec
    from gpubench.model.steps import Copy

    specs = {"d": BufferSpec((16,), np.dtype(np.float32)),
             "e": BufferSpec((16,), np.dtype(np.float32)),
             "h": BufferSpec((16,), np.dtype(np.float32), location="pinned")}  # fmt: skip
    buffers = {name: pycuda_backend.alloc(spec) for name, spec in specs.items()}
    d, e, h = (buffers[n] for n in "deh")
    stream = cuda.Stream()
    try:
        for src, dst, op, calls, to, frm in (
            ("h", "d", "H2D", (cuda.memcpy_htod, cuda.memcpy_htod_async), d.pointer + 8,
             h.host.ctypes.data + 4),
            ("d", "h", "D2H", (cuda.memcpy_dtoh, cuda.memcpy_dtoh_async), h.host.ctypes.data + 8,
             d.pointer + 4),
            ("d", "e", "D2D", (cuda.memcpy_dtod, cuda.memcpy_dtod_async), e.pointer + 8,
             d.pointer + 4),
        ):  # fmt: skip
            step = Copy(src, dst, nbytes=16, src_offset=4, dst_offset=8, synchronous=synchronous)
            kind, run = pycuda_backend._copy_call(step, buffers, stream)
            assert kind == op
            *args, last = run.args
            if synchronous:
                assert run.func is calls[0]
                args.append(last)
            else:
                assert run.func is calls[1] and last is stream
            ends = [a if isinstance(a, int) else (a.ctypes.data, a.nbytes) for a in args]
            host = (to, 16) if op == "D2H" else (frm, 16)
            expected = {"H2D": [to, host], "D2H": [host, frm], "D2D": [to, frm, 16]}[op]
            assert ends == expected
    finally:
        for buffer in buffers.values():
            pycuda_backend.free(buffer)


def test_restore_and_timing_events_use_the_stream_they_are_given(pycuda_backend, monkeypatch):
    from gpubench.backends import pycuda_backend as module

    copies, recorded = [], []
    monkeypatch.setattr(module.cuda, "memcpy_dtod_async", lambda *args: copies.append(args))

    class Event:
        def record(self, stream=None):
            recorded.append(stream)

    monkeypatch.setattr(module.cuda, "Event", Event)
    src, dst = module._Buffer("device", 8, device=0xA0), module._Buffer("device", 8, device=0xB0)
    pycuda_backend.restore(dst, src, type("Spec", (), {"nbytes": 8})())
    assert copies == [(0xB0, 0xA0, 8, pycuda_backend._stream)]
    side = object()
    assert isinstance(pycuda_backend._timing_event_on(side), Event)
    pycuda_backend._record(Event(), side)
    assert recorded == [side, side]


def test_the_context_probe_gives_back_what_it_took_and_a_broken_context_is_dead(pycuda_backend,
                                                                                 monkeypatch):  # fmt: skip
    from gpubench.backends import pycuda_backend as module

    real, log = module.cuda.mem_alloc, []

    class Probe:
        def __init__(self, nbytes):
            self.memory = real(nbytes)
            log.append(("alloc", nbytes))

        def free(self):
            self.memory.free()
            log.append("free")

    monkeypatch.setattr(module.cuda, "mem_alloc", Probe)
    assert pycuda_backend.context_alive() is True
    assert log == [("alloc", 4), "free"]

    def broken():
        raise module.cuda.LaunchError("cuCtxSynchronize failed: an illegal memory access")

    monkeypatch.setattr(module.cuda.Context, "synchronize", staticmethod(broken))
    assert pycuda_backend.context_alive() is False


def test_at_exit_the_flush_buffer_the_slots_and_the_flag_go_back(monkeypatch):
    import pycuda.tools

    from gpubench.backends import pycuda_backend as module

    log = []

    class Held:
        def __init__(self, name):
            self.name, self.base = name, self

        def free(self):
            log.append(self.name)

        def pop(self):
            log.append("pop " + self.name)

    monkeypatch.setattr(pycuda.tools, "clear_context_caches", lambda: log.append("caches"))
    backend = module.PyCudaBackend.__new__(module.PyCudaBackend)
    backend.__dict__.update(_flush_buffer=Held("flush"), _stage=[Held("slot 0"), Held("slot 1")],
                            _flag_host=Held("flag"), _context=Held("context"))  # fmt: skip
    backend._close()
    assert log == ["flush", "slot 0", "slot 1", "flag", "pop context", "caches"]
    log.clear()
    backend._flush_buffer, backend._stage = None, None
    backend._close()
    assert log == ["flag", "pop context", "caches"]

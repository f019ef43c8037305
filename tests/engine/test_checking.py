"""Where outputs are checked: the reference made once per point and computation, the host path
where outputs are not on a device (or CuPy is missing), the device path otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.engine import checking
from gpubench.model.benchmark import BufferSpec, Tolerance
from gpubench.model.phases import PhaseClock
from tests.fakes import FakeBackend


def test_the_reference_is_made_once_per_computation_and_timed_as_the_points():
    clock = PhaseClock()
    checker = checking.Checker(FakeBackend(), clock)
    calls = []

    def make():
        calls.append(1)
        return {"out": np.arange(4.0)}

    checker.make("scale", make)
    checker.make("scale", make)
    assert len(calls) == 1 and checker.has("scale") and not checker.has("other")
    assert set(clock.seconds) == {"reference"}


def test_outputs_not_on_a_device_are_downloaded_and_checked_on_the_host():
    backend = FakeBackend()
    spec = BufferSpec((4,), np.dtype(np.float32))
    buffer = backend.alloc(spec)
    backend.write(buffer, spec, np.array([0, 1, 2, 4], np.float32))
    checker = checking.Checker(backend, PhaseClock())
    checker.set("scale", {"out": np.arange(4.0)})
    clock = PhaseClock()
    verdict = checker.check("scale", {"out": (buffer, spec)}, {"out": Tolerance()}, clock, "check")
    assert (verdict.passed, verdict.checked_on, verdict.worst_index, verdict.wrong) == (
        False, "host", [3], 1)  # fmt: skip
    assert set(clock.seconds) == {"check", "downloads"}


def test_gpubench_check_host_switches_the_device_path_off(monkeypatch):
    monkeypatch.setenv("GPUBENCH_CHECK", "host")
    monkeypatch.setattr(checking, "_cupy", None)
    assert checking.cupy_module() is None
    monkeypatch.setattr(checking, "_cupy", None)


@pytest.mark.gpu
def test_device_outputs_are_checked_on_the_device_against_one_upload(gpu_backend):
    pytest.importorskip("cupy")
    spec = BufferSpec((1000,), np.dtype(np.float32))
    buffer = gpu_backend.alloc(spec)
    try:
        values = np.arange(1000, dtype=np.float32)
        values[999] = -1
        gpu_backend.write(buffer, spec, values)
        point_clock = PhaseClock()
        checker = checking.Checker(gpu_backend, point_clock)
        checker.set("c", {"out": np.arange(1000.0)})
        for phase in ("check", "recheck"):
            clock = PhaseClock()
            v = checker.check("c", {"out": (buffer, spec)}, {"out": Tolerance()}, clock, phase)
            assert (v.passed, v.checked_on, v.worst_index, v.got, v.expected) == (
                False, "device", [999], -1.0, 999.0)  # fmt: skip
            assert set(clock.seconds) == {phase}  # no downloads
        assert list(point_clock.seconds) == ["reference_upload"]
        assert len(checker._buffers) == 1 and checker.device_bytes() == 8000  # one upload
        checker.release()
        assert checker.device_bytes() == 0 and checker._buffers == {}
    finally:
        gpu_backend.free(buffer)


def _device_check(gpu_backend, out_dtype, reference_dtype, monkeypatch=None, free=None):
    """One check of a 100-element output against a reference of `reference_dtype`."""
    pytest.importorskip("cupy")
    spec = BufferSpec((100,), np.dtype(out_dtype))
    buffer = gpu_backend.alloc(spec)
    try:
        gpu_backend.write(buffer, spec, np.arange(100).astype(out_dtype))
        point_clock = PhaseClock()
        checker = checking.Checker(gpu_backend, point_clock)
        checker.set("c", {"out": np.arange(100).astype(reference_dtype)})
        if free is not None:
            monkeypatch.setattr(gpu_backend, "memory_info", lambda: (free, 2**34))
        clock = PhaseClock()
        verdict = checker.check("c", {"out": (buffer, spec)}, {"out": Tolerance()}, clock, "check")
        uploaded = checker.device_bytes()
        checker.release()
        return verdict, uploaded, point_clock
    finally:
        gpu_backend.free(buffer)


@pytest.mark.gpu
@pytest.mark.parametrize(("out_dtype", "reference_dtype"),
                         [(np.float16, np.float64), (np.float32, np.float16)])  # fmt: skip
def test_a_type_the_device_check_lacks_on_either_side_is_checked_on_the_host(
    gpu_backend, out_dtype, reference_dtype
):  # fmt: skip
    verdict, uploaded, point_clock = _device_check(gpu_backend, out_dtype, reference_dtype)
    assert verdict.passed and verdict.checked_on == "host" and uploaded == 0
    assert "reference_upload" not in point_clock.seconds


@pytest.mark.gpu
def test_a_reference_without_room_on_the_device_is_checked_on_the_host(gpu_backend, monkeypatch):
    verdict, uploaded, _ = _device_check(gpu_backend, np.float32, np.float64)
    assert verdict.checked_on == "device" and uploaded == 800  # with room: on the device
    verdict, uploaded, point_clock = _device_check(gpu_backend, np.float32, np.float64,
                                                   monkeypatch, free=1000)  # fmt: skip
    assert verdict.passed and verdict.checked_on == "host" and uploaded == 0
    assert "reference_upload" not in point_clock.seconds


@pytest.mark.gpu
def test_release_gives_cupy_s_cached_blocks_back_to_the_device(gpu_backend):
    cupy = pytest.importorskip("cupy")
    assert checking.cupy_module() is cupy
    pool = cupy.get_default_memory_pool()
    scratch = cupy.zeros(1 << 20, dtype=cupy.float32)
    del scratch  # its 4 MiB stay cached in CuPy's pool
    assert pool.total_bytes() - pool.used_bytes() >= 4 << 20
    checking.Checker(gpu_backend, PhaseClock()).release()
    assert pool.total_bytes() == pool.used_bytes()


class FakeCupy:
    """Enough of CuPy for the import check: a runtime that counts devices, or fails to."""

    def __init__(self, devices: int | None) -> None:
        def count() -> int:
            if devices is None:
                raise RuntimeError("no CUDA runtime")
            return devices

        runtime = type("Runtime", (), {"getDeviceCount": staticmethod(count)})
        self.cuda = type("Cuda", (), {"runtime": runtime})


@pytest.mark.parametrize(
    ("setting", "devices", "found"),
    [("", 1, True), ("device", 1, True), ("host", 1, False), ("HOST", 1, False),
     ("", None, False)],
)  # fmt: skip
def test_cupy_is_used_where_it_imports_and_counts_a_device_unless_check_is_host(
    monkeypatch, setting, devices, found
):
    import sys

    fake = FakeCupy(devices)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(checking, "_cupy", None)
    monkeypatch.setenv("GPUBENCH_CHECK", setting)
    assert checking.cupy_module() is (fake if found else None)
    monkeypatch.setitem(sys.modules, "cupy", FakeCupy(1))  # imported once: the first answer stays
    assert checking.cupy_module() is (fake if found else None)


def test_without_the_variable_cupy_is_tried(monkeypatch):
    import sys

    fake = FakeCupy(2)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(checking, "_cupy", None)
    monkeypatch.delenv("GPUBENCH_CHECK", raising=False)
    assert checking.cupy_module() is fake


def test_a_new_reference_replaces_the_old_one_and_frees_its_device_copy():
    # A reference variant's outputs at a later configuration of a shared problem: the device
    # copy of the earlier answer must not be checked against.
    backend = FakeBackend()
    spec = BufferSpec((4,), np.dtype(np.float32))
    buffer = backend.alloc(spec)
    checker = checking.Checker(backend, PhaseClock())
    checker.adopt("scale", {"out": np.zeros(4)}, ({"out": "stale view"}, [buffer]))
    live = backend.live_buffers
    checker.set("scale", {"out": np.arange(4.0)})
    assert backend.live_buffers == live - 1  # the old device copy freed
    assert "scale" not in checker._device and checker.host["scale"]["out"][3] == 3.0
    checker.set("other", {"out": np.ones(2)})  # nothing on the device before: nothing freed
    assert backend.live_buffers == live - 1

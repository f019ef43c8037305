"""A worker's GPU opened while it imports: the count begun before the pin, CUDA started on the
pinned GPU through the driver library, the hold given back once the backend has its own, and
nothing said where there is no driver (the backend says it)."""

from __future__ import annotations

import pytest

from gpubench import backends
from gpubench.engine import devices, opening


class FakeDriver:
    """The driver library's four calls, recorded; `fail` names a call that returns an error."""

    def __init__(self, fail: str = "") -> None:
        self.calls: list[tuple] = []
        self.fail = fail

    def _call(self, name, *args):
        self.calls.append((name, *args))
        return 100 if name == self.fail else 0

    def cuInit(self, flags):
        return self._call("cuInit", flags)

    def cuDeviceGet(self, device, ordinal):
        device._obj.value = 7  # the handle CUDA gives the one visible GPU
        return self._call("cuDeviceGet", ordinal)

    def cuDevicePrimaryCtxRetain(self, context, device):
        return self._call("cuDevicePrimaryCtxRetain", device.value)

    def cuDevicePrimaryCtxRelease_v2(self, device):
        return self._call("cuDevicePrimaryCtxRelease_v2", device.value)


@pytest.fixture
def driver(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(opening.ctypes, "CDLL", lambda name: fake)
    monkeypatch.setattr(opening, "_opening", opening._Opening())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # undone after the test, whatever pin writes
    return fake


def test_the_backends_that_open_a_primary_context_are_the_built_in_ones():
    assert set(opening.OPENS_PRIMARY_CONTEXT) == set(backends.BUILT_IN)
    assert opening.DEFAULT_BACKEND == backends.DEFAULT


def test_cuda_starts_on_the_pinned_gpu_and_the_hold_is_given_back(driver, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,GPU-x,6")
    opening.begin(1, "cuda-core")
    assert opening.host_count() == 3  # counted before the pin left one GPU visible
    assert devices.visible_devices() == ["GPU-x"]
    opening.finish()
    assert driver.calls == [
        ("cuInit", 0),
        ("cuDeviceGet", 0),
        ("cuDevicePrimaryCtxRetain", 7),
        ("cuDevicePrimaryCtxRelease_v2", 7),
    ]
    opening.finish()  # once only
    assert len(driver.calls) == 4


@pytest.mark.parametrize("fail", ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"])
def test_a_driver_that_refuses_leaves_nothing_held_and_says_nothing(driver, monkeypatch, fail):
    driver.fail = fail
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    opening.begin(0, None)
    opening.finish()
    names = [call[0] for call in driver.calls]
    assert names[-1] == fail and "cuDevicePrimaryCtxRelease_v2" not in names


def test_no_driver_library_is_silent(monkeypatch):
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(opening.ctypes, "CDLL", missing)
    monkeypatch.setattr(opening, "_opening", opening._Opening())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    opening.begin(0, "pycuda")
    opening.finish()
    assert opening._opening.retained is None


@pytest.mark.parametrize("choice", ["tests.fakes:FakeBackend", None])
def test_another_backend_or_a_missing_device_opens_nothing_and_still_counts(
    driver, monkeypatch, choice
):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    index = 0 if choice else 5  # choice None: the environment's backend, a device not there
    opening.begin(index, choice)
    opening.finish()
    assert driver.calls == [] and opening.host_count() == 2
    assert devices.visible_devices() == ["4", "5"]  # not pinned: the backend pins, or refuses


def test_without_a_beginning_the_count_is_taken_when_asked(monkeypatch):
    monkeypatch.setattr(opening, "_opening", opening._Opening())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")
    assert opening.host_count() == 2

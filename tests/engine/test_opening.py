"""A worker's GPU opened while it imports: the count begun before the pin, CUDA started on the
pinned GPU through the driver library, the hold given back once the backend has its own, and
nothing said where there is no driver (the backend says it)."""

from __future__ import annotations

import os
import subprocess
import sys

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
        self.visible_at_init = os.environ.get("CUDA_VISIBLE_DEVICES")
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
    monkeypatch.setattr(devices, "_pinned", None)
    monkeypatch.delenv("GPUBENCH_BACKEND", raising=False)
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
    assert driver.visible_at_init == "GPU-x"  # pinned before CUDA started
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


@pytest.mark.parametrize(("index", "choice"), [(0, "tests.fakes:FakeBackend"), (5, "pycuda")])
def test_another_backend_or_a_missing_device_opens_nothing_and_still_counts(
    driver, monkeypatch, index, choice
):
    """A backend of the user's is given the index; a device not visible is the backend's to
    refuse, with its message: neither is pinned here, nor is CUDA started."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    opening.begin(index, choice)
    opening.finish()
    assert driver.calls == [] and opening.host_count() == 2
    assert devices.visible_devices() == ["4", "5"]


def test_the_environment_s_backend_is_the_one_opened_for(driver, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    opening.begin(1, None)
    opening.finish()
    assert driver.calls == [] and devices.visible_devices() == ["4", "5"]
    monkeypatch.setenv("GPUBENCH_BACKEND", "cuda-core")
    opening.begin(1, None)
    opening.finish()
    assert driver.visible_at_init == "5" and len(driver.calls) == 4


def test_opening_stays_light():
    """It runs before the worker's imports: no NumPy, no CUDA bindings of its own."""
    code = (
        "import sys, gpubench.engine.opening; "
        "print(sorted(m for m in ('numpy', 'pycuda', 'cuda', 'cupy', 'pynvml') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]"]


def test_without_a_beginning_the_count_is_taken_when_asked(monkeypatch):
    monkeypatch.setattr(opening, "_opening", opening._Opening())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")
    assert opening.host_count() == 2

"""Which GPUs: --devices parsed, the visible ones, the count without CUDA."""

import pytest

from gpubench.engine.devices import count_devices, parse_devices, visible_devices


@pytest.mark.parametrize(
    ("text", "expected"),
    [("all", "all"), ("0", [0]), ("0,2,3", [0, 2, 3]), (" 1 , 0 ", [1, 0])],
)
def test_device_lists_parse(text, expected):
    assert parse_devices(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "name at least one device"),
     ("a,b", "expected 'all' or device indices such as 0,1,3; got 'a,b'"),
     ("0,0", "a device is named twice: '0,0'"),
     ("-1", "device indices are from 0 to 2147483647; got '-1'"),
     ("0,2147483648", "device indices are from 0 to 2147483647; got '0,2147483648'"),
     ("1" * 100_000, "expected 'all' or device indices such as 0,1,3; got "
      f"'{'1' * 27}...{'1' * 28}'")],
)  # fmt: skip
def test_bad_device_lists_are_refused(text, message):
    with pytest.raises(ValueError) as error:
        parse_devices(text)
    assert str(error.value) == message


@pytest.mark.parametrize(("value", "entries"), [
    (None, None), ("", []), ("3", ["3"]), (" 0, 2,,3 ", ["0", "2", "3"]),
    ("GPU-a,MIG-b", ["GPU-a", "MIG-b"]),
])  # fmt: skip
def test_the_visible_devices_are_cuda_visible_devices_entries(monkeypatch, value, entries):
    from tests.envvars import set_or_unset

    set_or_unset(monkeypatch, "CUDA_VISIBLE_DEVICES", value)
    assert visible_devices() == entries


def test_the_device_count_comes_from_the_visible_devices_else_nvml(monkeypatch):
    import sys
    from types import SimpleNamespace

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    assert count_devices() == 2
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    nvml = SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 3.0)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert count_devices() == 3
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: unknown
    assert count_devices() is None


def test_the_count_begun_reads_the_visible_devices_before_a_pin(monkeypatch):
    from gpubench.engine import devices

    monkeypatch.setattr(devices, "_pinned", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,4,5")
    later = devices.count_devices_later(visible_devices())
    devices.pin(2)
    assert later() == 3 and visible_devices() == ["5"]
    devices.pin(2)  # pinned already: the one visible GPU is not taken for a list
    assert visible_devices() == ["5"]


def test_the_count_begun_asks_nvml_on_a_thread_where_nothing_is_visible(monkeypatch):
    import threading

    from gpubench.engine import devices

    asked_on = []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(
        devices, "_nvml_count", lambda: asked_on.append(threading.current_thread().name) or 6
    )
    assert devices.count_devices_later(None)() == 6
    assert asked_on == ["gpubench-count-gpus"]


@pytest.mark.parametrize(("visible", "index", "pinned"), [(None, 3, "3"), ("7,GPU-a", 1, "GPU-a")])
def test_a_pin_leaves_the_one_gpu_visible(monkeypatch, visible, index, pinned):
    from gpubench.engine import devices
    from tests.envvars import set_or_unset

    monkeypatch.setattr(devices, "_pinned", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # undone after the test
    set_or_unset(monkeypatch, "CUDA_VISIBLE_DEVICES", visible)
    devices.pin(index)
    assert visible_devices() == [pinned]


def test_a_pin_to_a_device_not_visible_is_refused_and_changes_nothing(monkeypatch):
    from gpubench.engine import devices

    monkeypatch.setattr(devices, "_pinned", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    with pytest.raises(ValueError) as info:
        devices.pin(2)
    assert str(info.value) == "device 2 does not exist (CUDA_VISIBLE_DEVICES='4,5' shows 2)"
    assert visible_devices() == ["4", "5"]

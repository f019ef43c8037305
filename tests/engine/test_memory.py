"""The memory preflight's arithmetic and messages."""

from __future__ import annotations

import pytest

from gpubench.engine import memory


def test_a_need_past_what_is_free_names_both():
    need = memory.Need(device=3 * 2**30, host=0, what="the inputs")
    reason = memory.shortfall(need, device_free=2 * 2**30, host_free=None)
    assert reason == "needs 3.0 GiB of device memory for the inputs; 2.0 GiB is free"
    host = memory.Need(device=0, host=150 * 2**30, what="the inputs")
    assert "150.0 GiB of host memory" in memory.shortfall(host, None, 100 * 2**30)


def test_what_fits_passes_and_unknowns_are_not_refused():
    assert memory.shortfall(memory.Need(2**20, 2**20, "x"), 2**31, 2**31) is None
    assert memory.shortfall(memory.Need(2**40, 2**40, "x"), None, None) is None
    # The device keeps headroom for the context and library workspaces.
    tight = memory.Need(device=2**30 - memory.DEVICE_HEADROOM_BYTES + 1, what="x")
    assert memory.shortfall(tight, 2**30, None)


def test_host_memory_is_read_and_sizes_are_human():
    available = memory.host_available_bytes()
    assert available is None or available > 0
    assert memory.human(512) == "512 bytes" and memory.human(3 * 2**20) == "3.0 MiB"


def test_the_host_preflight_keeps_its_headroom():
    free = 100 * 2**30
    within = memory.Need(host=int(free * memory.HOST_HEADROOM_FRACTION), what="x")
    beyond = memory.Need(host=int(free * memory.HOST_HEADROOM_FRACTION) + 2**20, what="x")
    assert memory.shortfall(within, None, free) is None
    assert "of host memory" in memory.shortfall(beyond, None, free)
    # The whole of what is free is not enough: 10% stays for everything else.
    assert memory.shortfall(memory.Need(host=free - 1, what="x"), None, free) is not None


def test_the_device_preflight_keeps_its_headroom():
    free = 8 * 2**30
    fits = memory.Need(device=free - memory.DEVICE_HEADROOM_BYTES, what="x")
    assert memory.shortfall(fits, free, None) is None
    assert memory.shortfall(memory.Need(device=free - memory.DEVICE_HEADROOM_BYTES + 1, what="x"),
                            free, None) is not None  # fmt: skip


@pytest.mark.parametrize(("nbytes", "text"), [
    (0, "0 bytes"), (1023, "1023 bytes"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (2**20 - 1, "1,024.0 KiB"), (2**20, "1.0 MiB"), (2**30, "1.0 GiB"), (5 * 2**40, "5,120.0 GiB"),
])  # fmt: skip
def test_sizes_are_named_in_the_largest_unit_they_fill(nbytes, text):
    assert memory.human(nbytes) == text


def test_host_memory_is_memavailable_then_the_free_pages(monkeypatch):
    import builtins
    import io

    real_open = builtins.open

    def fake_meminfo(text):
        def opener(path, *args, **kwargs):
            if path == "/proc/meminfo":
                return io.StringIO(text)
            return real_open(path, *args, **kwargs)

        return opener

    monkeypatch.setattr(
        builtins, "open", fake_meminfo("MemTotal: 99 kB\nMemAvailable:    12345 kB\n")
    )
    assert memory.host_available_bytes() == 12345 * 1024
    pages = {"SC_AVPHYS_PAGES": 7, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(memory.os, "sysconf", lambda name: pages[name])
    monkeypatch.setattr(builtins, "open", fake_meminfo("MemTotal: 99 kB\n"))  # no MemAvailable
    assert memory.host_available_bytes() == 7 * 4096
    monkeypatch.setattr(builtins, "open", fake_meminfo("MemAvailable: lots kB\n"))
    assert memory.host_available_bytes() == 7 * 4096


def test_device_headroom_applies_even_when_free_memory_is_below_it():
    headroom = memory.DEVICE_HEADROOM_BYTES
    assert memory.shortfall(memory.Need(device=1), headroom, None) is not None
    assert memory.shortfall(memory.Need(device=1), headroom + 1, None) is None
    assert memory.shortfall(memory.Need(device=0), 0, None) is None
    assert memory.shortfall(memory.Need(device=0), headroom - 1, None) is None

"""The host's CPUs this process may use."""

import os

from gpubench import host


def test_the_cpus_are_the_process_s_affinity(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert host.usable_cpus() == 3


def test_without_affinity_the_machine_s_count_else_one(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 12)
    assert host.usable_cpus() == 12
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert host.usable_cpus() == 1


def test_an_affinity_the_os_will_not_give_falls_back_to_the_count(monkeypatch):
    def refuse(pid):
        raise OSError("not permitted")

    monkeypatch.setattr(os, "sched_getaffinity", refuse, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 7)
    assert host.usable_cpus() == 7

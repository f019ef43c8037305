"""The observers a caller plugs into a sweep: made from the output plan and the log's header,
entered while the points run and left after, even when Ctrl-C comes; the results collected."""

from __future__ import annotations

from types import SimpleNamespace

from gpubench.engine.observed_run import run_observed
from gpubench.model.results import ResultSet


class Following:
    def __init__(self, events: list) -> None:
        self.events = events

    def __enter__(self):
        self.events.append("entered")
        return self

    def __exit__(self, *exc):
        self.events.append("left")

    def started(self, total):
        self.events.append(("started", total))

    def finished(self, result):
        self.events.append(("finished", result))

    def point_finished(self, results):
        self.events.append(("point", results))


class Runner:
    def __init__(self, interrupt: bool = False) -> None:
        self.observers: list = []
        self.interrupt = interrupt

    def run(self, plan, previous):
        for observer in self.observers:
            observer.started(2)
            observer.finished("r1")
        if self.interrupt:
            raise KeyboardInterrupt
        for observer in self.observers:
            observer.finished("r2")
            observer.point_finished(["r1", "r2"])


def _observed(interrupt: bool):
    events, made_with = [], []
    files = SimpleNamespace(log=None, progress=True)
    plan = SimpleNamespace(files=files, run="RUN", previous=[])
    result_set = ResultSet(suite="s", environment={}, spec={})

    def follow(files_given, header):
        made_with.append((files_given, header))
        return Following(events)

    interrupted = run_observed(
        Runner(interrupt), plan, result_set, {"h": 1}, [follow, lambda f, h: None]
    )
    return interrupted, events, made_with, result_set, files


def test_a_caller_s_observer_is_made_entered_follows_and_is_left():
    interrupted, events, made_with, result_set, files = _observed(interrupt=False)
    assert interrupted is False and made_with == [(files, {"h": 1})]
    assert events == [
        "entered",
        ("started", 2),
        ("finished", "r1"),
        ("finished", "r2"),
        ("point", ["r1", "r2"]),
        "left",
    ]
    assert result_set.results == ["r1", "r2"]  # collected whatever the caller plugs in


def test_an_interrupt_leaves_the_observers_and_keeps_what_finished(monkeypatch):
    from gpubench.engine import interrupts

    monkeypatch.setattr(interrupts, "ignore_interrupts", lambda: None)
    interrupted, events, _, result_set, _ = _observed(interrupt=True)
    assert interrupted is True
    assert events == ["entered", ("started", 2), ("finished", "r1"), "left"]
    assert result_set.results == ["r1"]

"""What the driver-API backends share (gpubench.backends.driver_backend), on a stand-in that
records every driver call instead of making it: which stream each call goes to, when a run
is captured into a CUDA graph and when it is not, how a timeline is taken, and how NVML's
readings reach the results. The real backends run the same code in the GPU tests."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpubench.backends import driver_backend
from gpubench.backends.driver_backend import DriverBackend
from gpubench.backends.driver_steps import BoundRun, Op, driver_api_version
from gpubench.errors import KernelLaunchError


class DriverFailure(Exception):
    """What the stand-in's driver raises."""


class Event:
    def __init__(self, stream: str, at: float) -> None:
        self.stream, self.at = stream, at


class Graphs:
    """CUDA graphs that record their captures and launches; a capture can be refused."""

    def __init__(self, log: list, refuse: bool = False) -> None:
        self.log, self.refuse, self.made = log, refuse, 0

    def capture(self, handle, enqueue):
        self.log.append(("capture", handle))
        if self.refuse:
            raise KernelLaunchError("the driver refused the capture")
        enqueue()
        self.made += 1
        return f"graph{self.made}"

    def launch(self, executable, handle):
        self.log.append(("launch", executable, handle))

    def destroy(self, executable):
        self.log.append(("destroy", executable))


class Recording(DriverBackend):
    """Streams are names ("S0" the timing stream), handles 100 + their number, and time is
    a clock that every recorded event moves on by one millisecond."""

    def __init__(self, graphs: bool = True, refuse_capture: bool = False) -> None:
        self.log: list = []
        self.clock = 0.0
        self.device = SimpleNamespace(l2_bytes=4096, to_dict=lambda: {"name": "stand-in"})
        self._stream = "S0"
        self._side_streams = {}
        self._start, self._end = Event("S0", 0), Event("S0", 0)
        self._graphs = Graphs(self.log, refuse_capture) if graphs else None
        self._flag_host = None
        self._nvml_handle = "nvml-handle"

    def _new_stream(self):
        return f"S{len(self._side_streams) + 1}"

    def _handle(self, stream):
        return 100 + int(stream[1:])

    def _new_event(self):
        return Event("", 0)

    def _new_timing_event(self):
        self.log.append(("new event",))
        return Event("", 0)

    def _record(self, event, stream):
        self.clock += 1
        event.stream, event.at = stream, self.clock
        self.log.append(("record", stream))

    def _timing_event_on(self, stream):
        event = Event("", 0)
        self._record(event, stream)
        return event

    def _wait(self, stream, event):
        self.log.append(("wait", stream, event.stream))

    def _sync(self, stream):
        self.log.append(("sync", stream))

    def _sync_event(self, event):
        self.log.append(("sync event", event.stream))

    def _elapsed_ms(self, start, end):
        return end.at - start.at

    def _is_driver_error(self, exc):
        return isinstance(exc, DriverFailure)

    def _flush_l2_async(self):
        self.log.append(("flush", self._stream))


def a_run(backend: Recording, streams=(0,), capturable: bool = True) -> BoundRun:
    """One op per stream in `streams`; each call logs ("op", its stream)."""
    ops = [Op(s, "kernel", f"k{s}", lambda s=s: backend.log.append(("op", s))) for s in streams]
    bound = BoundRun(ops=ops, capturable=capturable)
    bound.calls = [op.call for op in ops]
    return bound


def test_hot_runs_are_captured_once_per_run_count_and_launched_on_the_timing_stream():
    backend = Recording()
    bound = a_run(backend)
    backend.time_hot_ms(bound, 3)
    assert backend.log == [("capture", 100), ("op", 0), ("op", 0), ("op", 0),
                           ("record", "S0"), ("launch", "graph1", 100), ("record", "S0"),
                           ("sync event", "S0")]  # fmt: skip
    backend.log.clear()
    backend.time_hot_ms(bound, 3)  # the same run count: the same graph, no new capture
    assert backend.log == [("record", "S0"), ("launch", "graph1", 100), ("record", "S0"),
                           ("sync event", "S0")]  # fmt: skip
    backend.time_hot_ms(bound, 5)
    assert bound.graphs == {3: "graph1", 5: "graph2"}
    backend.release(bound)
    assert backend.log[-2:] == [("destroy", "graph1"), ("destroy", "graph2")]
    assert bound.graphs == {}


def test_hot_time_is_per_run():
    backend = Recording()
    backend.clock = 10.0
    # Two events, one millisecond apart on the stand-in's clock, around four runs.
    assert backend.time_hot_ms(a_run(backend), 4) == 0.25
    assert backend.time_hot_ms(a_run(backend, capturable=False), 4) == 0.25


@pytest.mark.parametrize(
    ("why", "graphs", "capturable", "use_graph"),
    [
        ("a run the host must wait on", True, False, True),
        ("graphs not asked for", True, True, False),
        ("no graphs in this driver", False, True, True),
    ],
)
def test_hot_runs_are_plain_launches_without_a_graph(why, graphs, capturable, use_graph):
    backend = Recording(graphs=graphs)
    bound = a_run(backend, capturable=capturable)
    backend.time_hot_ms(bound, 2, use_graph=use_graph)
    assert backend.log == [("record", "S0"), ("op", 0), ("op", 0), ("record", "S0"),
                           ("sync event", "S0")], why  # fmt: skip
    assert bound.graphs == {}


def test_a_capture_the_driver_refuses_leaves_plain_launches():
    backend = Recording(refuse_capture=True)
    bound = a_run(backend)
    backend.time_hot_ms(bound, 2)
    assert backend.log == [("capture", 100), ("record", "S0"), ("op", 0), ("op", 0),
                           ("record", "S0"), ("sync event", "S0")]  # fmt: skip
    assert bound.graphs == {}


def test_a_cold_sample_flushes_l2_only_when_asked():
    backend = Recording()
    backend.time_once_ms(a_run(backend), flush_l2=True)
    assert backend.log[0] == ("flush", "S0")
    backend.log.clear()
    backend.time_once_ms(a_run(backend), flush_l2=False)
    assert ("flush", "S0") not in backend.log


def test_a_batch_gives_each_sample_its_own_events_and_flush_and_waits_once():
    backend = Recording()
    bound = a_run(backend)
    batch = backend.enqueue_cold_batch(bound, True, 2, lambda: backend.log.append(("before",)))()
    sample = [
        ("before",),
        ("record", "S0"),
        ("flush", "S0"),
        ("record", "S0"),
        ("op", 0),
        ("record", "S0"),
    ]
    assert backend.log == [("new event",)] * 7 + [
        ("record", "S0"),
        *sample,
        *sample,
        ("sync event", "S0"),
    ]
    # Events at 1 (the batch opens), 2 (before the flush), 3 and 4 (the interval), 5, 6, 7.
    assert (batch.samples_ms, batch.span_ms, batch.flush_ms) == ([1.0, 1.0], 6.0, 2.0)
    backend.log.clear()
    again = backend.enqueue_cold_batch(bound, False, 2, lambda: None)()
    assert ("new event",) not in backend.log and ("flush", "S0") not in backend.log
    assert (again.samples_ms, again.span_ms, again.flush_ms) == ([1.0, 1.0], 4.0, 0.0)


def test_a_driver_failure_in_a_batch_is_a_launch_error():
    backend = Recording()

    def fail():
        raise DriverFailure("CUDA_ERROR_LAUNCH_FAILED")

    bound = BoundRun(ops=[Op(0, "kernel", "k", fail)], calls=[fail])
    with pytest.raises(KernelLaunchError, match="CUDA_ERROR_LAUNCH_FAILED"):
        backend.enqueue_cold_batch(bound, False, 3, lambda: None)()


def test_a_batch_enqueued_behind_one_in_flight_has_events_of_its_own():
    """Two flushed samples (7 events), then one unflushed (4 events: one unused) before the
    first batch is waited for: events shared between them would give the first batch the
    second's times."""
    backend = Recording()
    bound = a_run(backend)
    first = backend.enqueue_cold_batch(bound, True, 2, lambda: None)
    second = backend.enqueue_cold_batch(bound, False, 1, lambda: None)
    assert backend.log.count(("new event",)) == 11 and ("sync event", "S0") not in backend.log
    batch = first()
    assert (batch.samples_ms, batch.span_ms, batch.flush_ms) == ([1.0, 1.0], 6.0, 2.0)
    # Events at 8 (the batch opens), 9 and 10 (the interval).
    batch = second()
    assert (batch.samples_ms, batch.span_ms, batch.flush_ms) == ([1.0], 2.0, 0.0)
    backend.log.clear()
    backend.enqueue_cold_batch(bound, True, 1, lambda: None)()  # the events back, reused
    backend.enqueue_cold_batch(bound, True, 2, lambda: None)()
    assert ("new event",) not in backend.log


def _failing() -> BoundRun:
    def fail():
        raise DriverFailure("CUDA_ERROR_LAUNCH_FAILED")

    return BoundRun(ops=[Op(0, "kernel", "k", fail)], calls=[fail])


def test_a_driver_failure_behind_a_batch_in_flight_leaves_nothing_running():
    backend = Recording()
    first = backend.enqueue_cold_batch(a_run(backend), False, 1, lambda: None)
    with pytest.raises(KernelLaunchError, match="CUDA_ERROR_LAUNCH_FAILED"):
        backend.enqueue_cold_batch(_failing(), False, 2, lambda: None)
    assert backend.log[-1] == ("sync", "S0")  # the timing stream waited for, both batches
    assert first().samples_ms == [1.0]


def test_a_driver_failure_in_a_batchs_wait_is_a_launch_error_with_nothing_left_running():
    backend = Recording()
    wait = backend.enqueue_cold_batch(a_run(backend), True, 2, lambda: None)

    def fail(event):
        raise DriverFailure("CUDA_ERROR_ILLEGAL_ADDRESS")

    backend._sync_event = fail
    with pytest.raises(KernelLaunchError, match=r"^DriverFailure: CUDA_ERROR_ILLEGAL_ADDRESS$"):
        wait()
    assert backend.log[-1] == ("sync", "S0")
    backend.log.clear()
    backend.enqueue_cold_batch(a_run(backend), True, 2, lambda: None)  # its events free again
    assert ("new event",) not in backend.log


def test_a_timeline_marks_each_step_on_its_own_stream():
    backend = Recording()
    bound = backend.bind(None, [], {}, {})
    bound.ops = a_run(backend, streams=(0, 2)).ops
    assert backend.timeline(bound) == [
        {"stream": 0, "op": "kernel", "label": "k0", "start_ms": 1.0, "end_ms": 2.0},
        {"stream": 2, "op": "kernel", "label": "k2", "start_ms": 3.0, "end_ms": 4.0},
    ]
    assert backend.log == [("record", "S0"), ("record", "S0"), ("op", 0), ("record", "S0"),
                           ("record", "S1"), ("op", 2), ("record", "S1"), ("sync", "S0")]  # fmt: skip


@pytest.mark.parametrize("what", ["timeline", "time_once_ms", "run_checked"])
def test_a_driver_failure_is_a_launch_error_with_the_drivers_words(what):
    backend = Recording()

    def fail():
        raise DriverFailure("CUDA_ERROR_ILLEGAL_ADDRESS")

    bound = BoundRun(ops=[Op(0, "kernel", "k", fail)], calls=[fail])
    args = {"timeline": (), "time_once_ms": (False,), "run_checked": ()}[what]
    with pytest.raises(KernelLaunchError) as error:
        getattr(backend, what)(bound, *args)
    assert str(error.value) == "DriverFailure: CUDA_ERROR_ILLEGAL_ADDRESS"


def test_a_failure_that_is_not_the_drivers_is_raised_as_it_is():
    backend = Recording()

    def fail():
        raise ValueError("a bug")

    bound = BoundRun(ops=[Op(0, "kernel", "k", fail)], calls=[fail])
    for what in ("timeline", "run_checked"):
        with pytest.raises(ValueError, match=r"^a bug$"):
            getattr(backend, what)(bound)


NVML = {"uuid": "GPU-1234", "driver": "580.1", "sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980,
        "temperature_c": 41, "power_w": 71.5}  # fmt: skip


def test_readings_are_the_clock_temperature_and_power_of_this_gpu_now(monkeypatch):
    backend, asked = Recording(), []
    monkeypatch.setattr(driver_backend.nvml, "readings", lambda h: asked.append(h) or NVML)
    assert backend.readings() == {"sm_clock_mhz": 1980, "temperature_c": 41, "power_w": 71.5}
    assert asked == ["nvml-handle"]


def test_the_sm_clock_is_read_through_nvml_where_there_is_nvml(monkeypatch):
    backend = Recording()
    monkeypatch.setattr(driver_backend.nvml, "sm_clock", lambda h: 1755.0 if h else 0.0)
    assert backend.sm_clock_mhz() == 1755.0
    backend._nvml_handle = None
    assert backend.sm_clock_mhz() is None


def test_the_environment_names_the_backend_the_device_the_driver_and_the_gpus_state(monkeypatch):
    backend, asked = Recording(), []
    monkeypatch.setattr(driver_backend.nvml, "readings", lambda h: asked.append(h) or NVML)
    env = backend._environment({"name": "stand-in", "version": "1"}, 12040)
    assert asked == ["nvml-handle"]
    assert env.backend == {"name": "stand-in", "version": "1"}
    assert env.device == {"name": "stand-in"}
    assert (env.gpu_uuid, env.driver_version, env.cuda_driver_api_version) == (
        "GPU-1234", "580.1", "12.4")  # fmt: skip
    assert (env.sm_clock_mhz_at_start, env.temperature_c_at_start, env.power_w_at_start) == (
        1980, 41, 71.5)  # fmt: skip


def test_without_nvml_the_environment_leaves_the_gpus_state_unknown(monkeypatch):
    backend = Recording()
    monkeypatch.setattr(driver_backend.nvml, "readings", lambda h: {})
    env = backend._environment({"name": "stand-in"}, 13000)
    assert env.gpu_uuid is env.driver_version is env.sm_clock_mhz_at_start is None
    assert env.cuda_driver_api_version == "13.0"


@pytest.mark.parametrize(
    ("api", "version"),
    [(13000, "13.0"), (12040, "12.4"), (12090, "12.9"), (11080, "11.8"), (13010, "13.1")],
)
def test_the_drivers_cuda_version_is_read_as_major_and_minor(api, version):
    assert driver_api_version(api) == version

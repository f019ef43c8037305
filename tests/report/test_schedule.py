from gpubench.model.phases import SPAN
from gpubench.model.results import Result, Status
from gpubench.report import schedule

T0 = 1_000_000.0  # the sweep's start, wall-clock seconds


def spanned(n, variant, device, point_start, start, end, compile_s=0.0, samples=0, mean_ms=0.0):
    return Result(
        suite="s",
        variant=variant,
        point={"n": n},
        status=Status.OK,
        device={"index": device, "uuid": f"GPU-{device}", "name": "H"},
        summary={"samples": samples, "mean_ms": mean_ms, "runs_per_sample": 1} if samples else None,
        phases={
            "point": {"compile": compile_s},
            SPAN: {"point_start": T0 + point_start, "start": T0 + start, "end": T0 + end},
        },
    )


def test_each_gpu_s_start_up_work_and_idle_time_come_from_the_spans():
    results = [
        # GPU 0: point 1 from 2.0 s (waited 0.5 s for its build), two variants; point 2 after
        # a 0.25 s gap.
        spanned(1, "a", 0, 2.0, 2.0, 3.0, compile_s=0.5, samples=100, mean_ms=2.0),
        spanned(1, "b", 0, 2.0, 3.0, 3.5, compile_s=0.5, samples=50, mean_ms=4.0),
        spanned(2, "a", 0, 3.75, 3.75, 5.0),
        # GPU 1: one point, done at 9.0 s; the sweep's last result.
        spanned(3, "a", 1, 4.0, 4.0, 9.0),
    ]
    first, second = schedule.schedules(results, T0)
    assert first == schedule.DeviceSchedule(
        device="GPU 0",
        points=2,
        first_start_s=2.0,
        last_end_s=5.0,
        working_s=2.75,
        compile_wait_s=0.5,
        timed_gpu_s=0.4,
        idle_at_end_s=4.0,
    )
    assert first.between_points_s == 0.25
    assert (second.points, second.first_start_s, second.working_s, second.idle_at_end_s) == (
        1,
        4.0,
        5.0,
        0.0,
    )
    lines = schedule.schedule_lines(results, T0)
    assert lines[0] == (
        "GPU 0: 2 point(s); started its first at 2.00 s; working 2.75 s (waiting for builds "
        "500 ms, timed runs 400 ms); idle between points 250 ms, at the end 4.00 s"
    )
    assert lines[1].startswith("GPU 1: 1 point(s); started its first at 4.00 s; working 5.00 s")


def test_results_without_spans_make_no_schedule():
    bare = Result(suite="s", variant="v", point={"n": 1}, status=Status.OK, phases={})
    assert schedule.schedules([bare], T0) == []
    assert schedule.schedule_lines([], T0) == []


def test_the_gpus_of_a_cluster_all_numbered_0_are_told_apart_by_their_uuid():
    a = spanned(1, "a", 0, 1.0, 1.0, 2.0)
    b = spanned(2, "a", 0, 1.0, 1.0, 3.0)
    b.device = {"index": 0, "uuid": "GPU-1234abcd-other", "name": "H"}
    first, second = schedule.schedules([a, b], T0)
    assert (first.device, first.points) == ("GPU 0 (GPU-0)", 1)
    assert (second.device, second.points) == ("GPU 0 (cd-other)", 1)

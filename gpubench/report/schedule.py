"""Each GPU's part of a sweep (`--verbose`): when it began its first point, how long it worked
on points, and where it stood idle (starting up, between points, at the end while another GPU
finished). Read from the results' spans (gpubench.model.phases.SPAN); renders data only."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpubench.model.phases import SPAN
from gpubench.model.results import Result, point_key
from gpubench.report.phases import seconds_text, timed_gpu_seconds


@dataclass(frozen=True)
class DeviceSchedule:
    """One GPU's share of a sweep, in seconds from the sweep's start."""

    device: str
    points: int
    first_start_s: float  # the first point began: start-up before it
    last_end_s: float
    working_s: float  # spans of its results: a point's inputs, checks and timing
    compile_wait_s: float  # of which waiting for a build
    timed_gpu_s: float  # of which the GPU inside timed samples
    idle_at_end_s: float  # after its last result, until the sweep's last result

    @property
    def between_points_s(self) -> float:
        return max(0.0, self.last_end_s - self.first_start_s - self.working_s)


def _device_key(result: Result) -> tuple[str, str]:
    """(the GPU itself, its label): by UUID where known, since the workers of a cluster each
    number their one GPU 0."""
    device = result.device or {}
    index = device.get("index")
    label = f"GPU {index}" if index is not None else "the GPU"
    return str(device.get("uuid") or label), label


def _labels(keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Each GPU's label, with its UUID's tail where two GPUs would read the same."""
    counts: dict[str, int] = defaultdict(int)
    for _, label in keys:
        counts[label] += 1
    return {key: key[1] if counts[key[1]] == 1 else f"{key[1]} ({key[0][-8:]})" for key in keys}


def schedules(results: list[Result], started_at: float) -> list[DeviceSchedule]:
    """Per GPU, from the results that carry a span (this run's; `started_at`: the sweep's start
    as wall-clock seconds)."""
    spanned = [r for r in results if SPAN in r.phases]
    if not spanned:
        return []
    by_device: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for result in spanned:
        by_device[_device_key(result)].append(result)
    labels = _labels(list(by_device))
    sweep_end = max(r.phases[SPAN]["end"] for r in spanned) - started_at
    out = []
    for key, group in sorted(by_device.items(), key=lambda item: labels[item[0]]):
        device = labels[key]
        last_of_point = {point_key(r.point): r for r in group}
        out.append(
            DeviceSchedule(
                device=device,
                points=len(last_of_point),
                first_start_s=min(r.phases[SPAN]["point_start"] for r in group) - started_at,
                last_end_s=max(r.phases[SPAN]["end"] for r in group) - started_at,
                working_s=sum(r.phases[SPAN]["end"] - r.phases[SPAN]["start"] for r in group),
                compile_wait_s=sum(
                    r.phases.get("point", {}).get("compile", 0.0) for r in last_of_point.values()
                ),
                timed_gpu_s=sum(timed_gpu_seconds(r) for r in group),
                idle_at_end_s=sweep_end - (max(r.phases[SPAN]["end"] for r in group) - started_at),
            )
        )
    return out


def schedule_lines(results: list[Result], started_at: float) -> list[str]:
    """One line per GPU: start-up, work (compile waits, timed GPU), idle between points and
    at the end."""
    return [
        f"{s.device}: {s.points} point(s); started its first at {seconds_text(s.first_start_s)}; "
        f"working {seconds_text(s.working_s)} (waiting for builds {seconds_text(s.compile_wait_s)}, "
        f"timed runs {seconds_text(s.timed_gpu_s)}); idle between points "
        f"{seconds_text(s.between_points_s)}, at the end {seconds_text(s.idle_at_end_s)}"
        for s in schedules(results, started_at)
    ]

"""The engine's notices (gpubench.model.notices) in words, one line each, as the command line
prints them."""

from __future__ import annotations

from gpubench.model import notices


def text(notice: notices.Notice) -> str:
    match notice:
        case notices.BackendChosen(backend):
            return f"note: PyCUDA is not installed; using the {backend} backend (cuda.core, NVRTC)"
        case notices.LogKept(path):
            return f"the earlier log is kept as {path}"
        case notices.SweepStarting():
            return _starting(notice)
        case notices.Compiled(report):
            return (
                f"compiled {report['configurations']} configuration(s) in "
                f"{report['seconds']:.1f} s: {report['compiled']} new, {report['cached']} "
                f"cached, {report['failed']} failed ({report['workers']} in parallel)"
            )
        case notices.CompileStopped(error):
            return (
                f"note: compiling in the background stopped ({error}); each point compiled its "
                "own build"
            )
        case notices.RanAgain(variants, point, reason):
            at = ", ".join(f"{k}={v}" for k, v in point.items())
            were = "was" if len(variants) == 1 else "were"
            return (
                f"note: {', '.join(variants)} at {at} {were} run once more on a fresh worker: "
                f"{reason}"
            )
        case notices.NoProfiler():
            return (
                "--profile: ncu (Nsight Compute) is not on PATH; results have no profiler metrics"
            )
        case notices.ProfileFailed(variant, point, error):
            return f"--profile: {variant} at {point}: {error}"
        case notices.LeftOutOfSearch(variants):
            named = ", ".join(f"{v} (computes {c})" for v, c in sorted(variants.items()))
            return f"note: left out of the search, not what the baseline computes: {named}"
        case notices.TuningObjective(objective, noun):
            return (
                f"note: --objective {objective}: each configuration's energy is measured "
                f"(--energy), and none is pruned on time: a configuration slow in time may "
                f"still win by its {noun}"
            )
    return str(notice)


def _starting(notice: notices.SweepStarting) -> str:
    """The sweep's first line: the GPU, the points and variants, a resumption."""
    dev, devices = notice.device, notice.devices
    peak = dev.get("peak_bandwidth_gbps")
    names = sorted({str(d.get("name")) for d in devices})
    on = f" · on {len(devices)} GPUs" + (f" of {len(names)} models" if len(names) > 1 else "")
    return (
        f"{dev['name']} ({dev['arch']}, {dev['sm_count']} SMs, peak DRAM "
        f"{f'{peak:,.0f} GB/s' if peak else 'unknown'}) · {notice.points} point(s) × "
        f"{notice.variants} variant(s)"
        + (on if len(devices) > 1 else "")
        + (
            f" · resuming: {notice.resumed} result(s) already in {notice.log}"
            if notice.resumed
            else ""
        )
    )

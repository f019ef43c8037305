"""The engine's notices in words: each kind, exactly as the command line prints it."""

from __future__ import annotations

from gpubench.model import notices
from gpubench.report.notices import text


def test_every_notice_in_words():
    report = {"configurations": 82, "seconds": 14.04, "compiled": 80, "cached": 1, "failed": 1}
    assert [
        text(notices.BackendChosen("cuda-core")),
        text(notices.LogKept("results/x.1.jsonl")),
        text(notices.Compiled({**report, "workers": 32})),
        text(notices.CompileStopped("OSError: disk full")),
        text(notices.RanAgain(["a", "b"], {"n": 10, "tag": "x"}, "killed by signal 9")),
        text(notices.RanAgain(["a"], {"n": 10}, "the worker died")),
        text(notices.NoProfiler()),
        text(notices.ProfileFailed("naive", {"size": 64}, "ncu: [red] no")),
        text(notices.LeftOutOfSearch({"copy": "copy", "ceiling": "ones"})),
    ] == [
        "note: PyCUDA is not installed; using the cuda-core backend (cuda.core, NVRTC)",
        "the earlier log is kept as results/x.1.jsonl",
        "compiled 82 configuration(s) in 14.0 s: 80 new, 1 cached, 1 failed (32 in parallel)",
        "note: compiling in the background stopped (OSError: disk full); each point compiled "
        "its own build",
        "note: a, b at n=10, tag=x were run once more on a fresh worker: killed by signal 9",
        "note: a at n=10 was run once more on a fresh worker: the worker died",
        "--profile: ncu (Nsight Compute) is not on PATH; results have no profiler metrics",
        "--profile: naive at {'size': 64}: ncu: [red] no",
        "note: left out of the search, not what the baseline computes: ceiling (computes "
        "ones), copy (computes copy)",
    ]


def test_the_sweep_s_first_line_names_the_gpus_and_a_resumption():
    dev = {"name": "G", "arch": "sm_90", "sm_count": 4, "peak_bandwidth_gbps": 3352.3}
    one = notices.SweepStarting(dev, [], points=2, variants=3)
    assert text(one) == "G (sm_90, 4 SMs, peak DRAM 3,352 GB/s) · 2 point(s) × 3 variant(s)"
    two = notices.SweepStarting(dev, [{"name": "G"}, {"name": "H"}], 2, 3, resumed=5, log="r.jsonl")
    assert text(two) == (
        "G (sm_90, 4 SMs, peak DRAM 3,352 GB/s) · 2 point(s) × 3 variant(s) · on 2 GPUs of 2 "
        "models · resuming: 5 result(s) already in r.jsonl"
    )

"""`--profile`: each verified kernel variant runs once more under Nsight Compute (`ncu`), and
its hardware counters become metrics of its result: DRAM bytes, sectors per request,
shared-memory bank conflicts, branch uniformity, achieved occupancy, instructions and the
kernel time with clocks left unlocked.

The profiled run is a one-point, one-variant sweep in a child process with no warm-up and one
sample, so it makes exactly PROFILED_RUNS runs of the variant (the checked run, the timed
sample, the check after timing); every counter is summed over all their kernel launches and
divided by that number. The figures describe one run, as the timing does.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpubench.model.metrics import (
    BANK_CONFLICTS,
    BRANCH_UNIFORMITY,
    DRAM_BYTES,
    INSTRUCTIONS,
    LOAD_SECTORS,
    NCU_TIME,
    OCCUPANCY,
    STORE_SECTORS,
)
from gpubench.model.notices import NoProfiler, Notice, ProfileFailed

PROFILED_RUNS = 3
TIMEOUT_S = 600

# Counters summed over launches, and percentages weighted by each launch's duration.
SUMMED = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed.sum",
)
WEIGHTED = (
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)

# ncu's unit names (base units with --print-units base, spelled differently across versions:
# "nsecond", "ns", "nsec"; "byte", "B", "Kbyte", "KB") → bytes and milliseconds.
BYTE_SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
TIME_SCALE = {"n": 1e-6, "u": 1e-3, "m": 1.0, "": 1e3}


def unit_scale(unit: str) -> float:
    """The factor to bytes or milliseconds for one of ncu's units; 1 for any other (sectors,
    requests, percent, instructions)."""
    unit = unit.strip()
    for suffix in ("second", "sec", "s"):
        prefix = unit[: -len(suffix)] if unit.endswith(suffix) else None
        if prefix is not None and prefix in TIME_SCALE:
            return TIME_SCALE[prefix]
    for suffix in ("byte", "B"):
        prefix = unit[: -len(suffix)] if unit.endswith(suffix) else None
        if prefix is not None and prefix in BYTE_SCALE:
            return BYTE_SCALE[prefix]
    return 1.0


class ProfileError(Exception):
    """A profiled run that gave no counters: the message says why."""


@dataclass
class ProfiledLaunch:
    """One kernel launch ncu profiled, and its counters."""

    kernel: str
    values: dict[str, float] = field(default_factory=dict)


def parse_csv(text: str) -> list[ProfiledLaunch]:
    """ncu --csv output → one ProfiledLaunch per kernel launch, values in base units (bytes,
    milliseconds, percent). Lines that are not CSV (ncu's ==PROF== notes, the program's own
    output) are skipped."""
    rows = [line for line in text.splitlines() if line.startswith('"')]
    if not rows:
        return []
    reader = csv.DictReader(io.StringIO("\n".join(rows)))
    launches: dict[str, ProfiledLaunch] = {}
    for row in reader:
        if not row.get("ID") or not row.get("Metric Name"):
            continue
        launch = launches.setdefault(row["ID"], ProfiledLaunch(row.get("Kernel Name", "")))
        raw = (row.get("Metric Value") or "").replace(",", "")
        try:
            value = float(raw)
        except ValueError:
            continue
        launch.values[row["Metric Name"]] = value * unit_scale(row.get("Metric Unit") or "")
    return list(launches.values())


def summarise(launches: list[ProfiledLaunch], runs: int = PROFILED_RUNS) -> dict[str, float]:
    """The metrics of one run from the launches of `runs` identical runs."""
    if not launches:
        raise ProfileError("ncu profiled no kernel launch")
    total = {name: sum(launch.values.get(name, 0.0) for launch in launches) for name in SUMMED}
    duration = total["gpu__time_duration.sum"]
    out: dict[str, float] = {
        NCU_TIME.key: duration / runs,
        DRAM_BYTES.key: (total["dram__bytes_read.sum"] + total["dram__bytes_write.sum"]) / runs,
        INSTRUCTIONS.key: total["smsp__inst_executed.sum"] / runs,
    }
    ratios = (
        (
            LOAD_SECTORS,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        ),
        (
            STORE_SECTORS,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        ),
    )
    for metric, sectors, requests in ratios:
        if total[requests]:
            out[metric.key] = total[sectors] / total[requests]
    conflicts = (
        total["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
        + total["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]
    )
    out[BANK_CONFLICTS.key] = conflicts / runs
    for metric, name in ((BRANCH_UNIFORMITY, WEIGHTED[0]), (OCCUPANCY, WEIGHTED[1])):
        weighted = [
            (launch.values[name], launch.values.get("gpu__time_duration.sum", 0.0))
            for launch in launches
            if name in launch.values
        ]
        weight = sum(w for _, w in weighted)
        if weighted:
            out[metric.key] = (
                sum(v * w for v, w in weighted) / weight
                if weight
                else sum(v for v, _ in weighted) / len(weighted)
            )
    return out


def one_point_sweep(spec: dict[str, Any], point: dict[str, Any], variant: str) -> dict[str, Any]:
    """A sweep file that runs `variant` once at `point`: no warm-up, one sample."""
    return {
        "suite": spec.get("suite_ref") or spec["suite"],
        "variants": [variant],
        "baseline": variant,
        "params": {name: value for name, value in point.items() if value is not None},
        "timing": {"warmup": 0, "min_samples": 1, "max_samples": 1, "min_time_s": 0},
    }


def command(ncu: str, sweep_file: str, log: str, device: int) -> list[str]:
    return [
        ncu,
        "--csv",
        "--print-units",
        "base",
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--metrics",
        ",".join(SUMMED + WEIGHTED),
        sys.executable,
        "-m",
        "gpubench",
        "sweep",
        sweep_file,
        "--jsonl",
        log,
        "--force",
        "--device",
        str(device),
    ]


def profile_one(
    ncu: str,
    spec: dict[str, Any],
    point: dict[str, Any],
    variant: str,
    device: int,
    backend: str | None = None,
) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="gpubench-profile-") as tmp:
        sweep_file = os.path.join(tmp, "point.yaml")
        Path(sweep_file).write_text(yaml.safe_dump(one_point_sweep(spec, point, variant)))
        # The checks run on the host there: ncu sums every kernel launch of the child, and the
        # device check's own kernels (gpubench.engine.verify_device) must not count as the variant's.
        env = {**os.environ, "GPUBENCH_CHECK": "host"}
        if backend:  # the run's backend, which an option chose, not the environment
            env["GPUBENCH_BACKEND"] = backend
        try:
            done = subprocess.run(
                command(ncu, sweep_file, os.path.join(tmp, "log.jsonl"), device),
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
                env=env,
            )
        except subprocess.TimeoutExpired:
            raise ProfileError(f"ncu took more than {TIMEOUT_S} s") from None
    launches = parse_csv(done.stdout)
    if not launches:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise ProfileError(f"ncu gave no counters (exit {done.returncode}): {last[0][:200]}")
    return summarise(launches)


def profile_results(
    spec: dict[str, Any],
    results: Iterable[Any],
    kernel_variants: set[str],
    device: int,
    note: Callable[[Notice], None],
    backend: str | None = None,
) -> None:
    """Adds the counters to every measured result of a kernel variant, in place, each profiled
    on `backend` (None: the child's own choice). Without ncu: one line (to `note`), and the
    results stay as they are."""
    ncu = shutil.which("ncu")
    if ncu is None:
        note(NoProfiler())
        return
    for result in results:
        # Only results that launched kernels of their own (a cudaMemcpy variant has none).
        if (
            not result.status.is_measured
            or result.variant not in kernel_variants
            or not result.kernel_attributes
        ):
            continue
        try:
            counters = profile_one(ncu, spec, result.point, result.variant, device, backend)
            result.metrics.update(counters)
        except (ProfileError, OSError) as exc:
            # ncu's own text may hold brackets: printed as it is, never read as rich markup.
            note(ProfileFailed(result.variant, result.point, str(exc)))


def profile_plan(plan: Any, result_set: Any, device: int, note: Callable[[Notice], None]) -> None:
    """`--profile` for a measured sweep (a planning.SweepPlan): every measured result of a
    kernel variant gets its counters, on the plan's backend."""
    kernel_variants = {v.name for v in plan.bench.variants if v.kind == "kernel"}
    profile_results(plan.record, result_set.results, kernel_variants, device, note, plan.backend)

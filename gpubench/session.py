"""One run of a sweep, from a validated spec to saved results: the worker, the compile step,
the results log, resuming, interruption and the exit code."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpubench import backends, kernels, registry, results
from gpubench.config import SweepSpec
from gpubench.errors import EXIT_FAILED_POINTS, EXIT_INTERRUPTED, EXIT_OK, ConfigError
from gpubench.report.progress import ProgressObserver
from gpubench.report.table import results_table
from gpubench.runner import Plan, point_key
from gpubench.worker import DEFAULT_BACKEND, IsolatedRunner, WorkerSpec


@dataclass(frozen=True)
class Outputs:
    json: str | None = None
    csv: str | None = None
    jsonl: str | None = None
    resume: str | None = None
    force: bool = False
    progress: bool = False
    # None: no timeline; "": record and print it; a path: also draw it there (PNG).
    timeline: str | None = None


def fingerprint(
    spec: SweepSpec, points: list[dict[str, Any]], environment: dict[str, Any]
) -> dict[str, Any]:
    """What must not change between a run and its resumption."""
    bench = registry.get(spec.suite_ref or spec.suite)
    return {
        "suite": spec.suite,
        "kernel_source_sha256": kernels.source_digest(bench),
        "gpu_name": environment.get("device", {}).get("name"),
        "gpu_uuid": environment.get("gpu_uuid"),
        "points": sorted(point_key(p) for p in points),
        "variants": list(spec.variants),
        "baseline": spec.baseline,
        "timing": spec.timing.to_dict(),
    }


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(before) | set(now)):
        if before.get(key) != now.get(key):
            if key == "points":
                gone = set(before.get(key) or []) - set(now.get(key) or [])
                new = set(now.get(key) or []) - set(before.get(key) or [])
                out.append(f"points: {len(gone)} no longer in the sweep, {len(new)} new")
            else:
                out.append(f"{key}: {before.get(key)!r} in the log, {now.get(key)!r} now")
    return out


def execute(spec: SweepSpec, outputs: Outputs, device: int, console: Any, err: Any) -> int:
    bench = registry.get(spec.suite_ref or spec.suite)
    points = spec.points(bench)
    json_path = outputs.json or spec.outputs.json
    csv_path = outputs.csv or spec.outputs.csv
    jsonl_path = outputs.resume or outputs.jsonl or spec.outputs.jsonl

    previous_header: dict[str, Any] = {}
    previous: list[results.Result] = []
    if outputs.resume:
        if not Path(outputs.resume).is_file():
            raise ConfigError("no such results log to resume from", source=outputs.resume)
        previous_header, previous = results.load_jsonl(outputs.resume)

    worker_spec = WorkerSpec.for_suite(spec.suite_ref or spec.suite, device)
    if worker_spec.backend == DEFAULT_BACKEND:
        backends.preflight()
    runner = IsolatedRunner(worker_spec)
    environment = runner.start()
    try:
        stamp = fingerprint(spec, points, environment)
        if outputs.resume:
            changed = differences(previous_header.get("fingerprint", {}), stamp)
            if changed and not outputs.force:
                raise ConfigError(
                    "the sweep, the kernel source or the GPU differ from the log; "
                    "use --force to resume anyway: " + "; ".join(changed),
                    source=outputs.resume,
                )
        dev = environment["device"]
        peak = dev.get("peak_bandwidth_gbps")
        err.print(
            f"{dev['name']} ({dev['arch']}, {dev['sm_count']} SMs, peak DRAM "
            f"{f'{peak:,.0f} GB/s' if peak else 'unknown'}) · {len(points)} point(s) × "
            f"{len(spec.variants)} variant(s)"
            + (
                f" · resuming: {len(previous)} result(s) already in {outputs.resume}"
                if previous
                else ""
            ),
            highlight=False,
        )
        report = runner.precompile(points)
        err.print(
            f"compiled {report['configurations']} configuration(s) in {report['seconds']:.1f} s: "
            f"{report['compiled']} new, {report['cached']} cached, {report['failed']} failed "
            f"({report['workers']} in parallel)",
            highlight=False,
        )
        result_set = results.ResultSet(
            suite=bench.name, environment=environment, spec=spec.to_dict(), compile_report=report
        )
        result_set.results.extend(previous)
        log = None
        if jsonl_path:
            log = results.JsonLinesLog(jsonl_path, header={"fingerprint": stamp},
                                       append=bool(outputs.resume))  # fmt: skip

        class Collect:
            def started(self, total: int) -> None: ...

            def finished(self, result: results.Result) -> None:
                result_set.results.append(result)

        runner.observers = [Collect(), *([log] if log else [])]
        plan = Plan(bench, points, spec.variants, spec.baseline, spec.timing,
                    timeline=outputs.timeline is not None)  # fmt: skip
        interrupted = False
        try:
            if outputs.progress and sys.stderr.isatty():
                with ProgressObserver(err) as bar:
                    runner.observers.append(bar)
                    runner.run(plan, previous)
            else:
                runner.run(plan, previous)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if log:
                log.close()
    finally:
        end = runner.close()
    result_set.environment["end"] = end
    result_set.environment["worker_restarts"] = runner.restarts
    order = {point_key(p): i for i, p in enumerate(points)}
    variant_order = {v: i for i, v in enumerate(spec.variants)}
    result_set.results.sort(
        key=lambda r: (order.get(point_key(r.point), 0), variant_order.get(r.variant, 0))
    )
    if result_set.results:
        console.print(
            results_table(
                result_set.results,
                title=bench.name,
                show_resources=bench.show_resources,
                extra_columns=bench.extra_columns,
            )
        )
        if outputs.timeline is not None:
            from gpubench.report import timeline

            timeline.show(result_set.results, console, outputs.timeline or None)
    saved = []
    if json_path:
        saved.append(str(results.save_json(result_set, json_path)))
    if csv_path:
        saved.append(str(results.save_csv(result_set, csv_path)))
    if jsonl_path:
        saved.append(jsonl_path)
    if saved:
        err.print(f"results: {', '.join(saved)}", highlight=False)
    if interrupted:
        err.print(f"interrupted: kept {len(result_set.results)} finished result(s)")
        return EXIT_INTERRUPTED
    failures = result_set.failures
    if failures:
        err.print(f"[bold red]{len(failures)} of {len(result_set.results)} result(s) failed[/]")
        return EXIT_FAILED_POINTS
    return EXIT_OK

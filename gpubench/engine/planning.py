"""A sweep's spec worked out once, before any worker starts: this shard's points and the order
they run in, where the results go, the earlier log a resumption continues, what that log must
match, and the record kept with the results. From here on the engine reads the plan, never
the spec again (the suite was loaded and the points expanded and checked when the sweep file
was read: gpubench.load.config)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

from gpubench import backends
from gpubench.engine import kernels
from gpubench.engine.input_sets import by_problem
from gpubench.engine.runner import Plan
from gpubench.errors import ConfigError, EnvironmentProblem
from gpubench.load.config import SweepSpec
from gpubench.model.benchmark import Benchmark, Point
from gpubench.model.notices import BackendChosen, LogKept, Notice, SweepStarting
from gpubench.model.results import Result, ResultSet, load_jsonl, point_key
from gpubench.store import outputs


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep measures and where it keeps it.

    `points` are this shard's in the sweep's order (the table's); `run` holds them in the
    order they run (the configurations of one problem together, so that they share its inputs
    and references). `record` is the spec as kept with the results; what a resumption must
    match is `fingerprint`, once the workers have said which GPUs they hold."""

    bench: Benchmark
    suite: str  # how a worker finds the suite again: its name, or its file's path
    backend: str
    points: list[Point]
    run: Plan
    files: outputs.OutputPlan
    record: dict[str, Any]
    previous_header: dict[str, Any]
    previous: list[Result]
    shard: tuple[int, int] | None = None
    notes: tuple[Notice, ...] = ()  # for the caller to show: the backend chosen, a kept log

    def fingerprint(self, environment: dict[str, Any]) -> dict[str, Any]:
        """What must not change between a run and its resumption, the GPUs included."""
        stamp = fingerprint(identity(self.bench, self.record, self.points), environment)
        if self.shard:
            stamp["shard"] = f"{self.shard[0]}/{self.shard[1]}"
        return stamp

    @property
    def to_compile(self) -> Plan:
        """The run without the points a resumed log holds every result of: their builds are
        not needed."""
        done = {(point_key(r.point), r.variant) for r in self.previous}
        left = [
            p
            for p in self.run.points
            if any((point_key(p), v) not in done for v in self.run.variants)
        ]
        return replace(self.run, points=left) if done else self.run

    def checked_fingerprint(self, environment: dict[str, Any]) -> dict[str, Any]:
        """The fingerprint, after checking that a resumed log was written by the same sweep,
        source and GPU (or --force says go on)."""
        stamp = self.fingerprint(environment)
        if self.files.resume:
            check_resumable(self.previous_header, stamp, self.files)
        self.check_energy(environment)
        return stamp

    def check_energy(self, environment: dict[str, Any]) -> None:
        """--energy on a GPU whose energy counter cannot be read stops before the first
        point, in one line, rather than leaving every result without its energy."""
        if self.run.policy.energy and environment.get("energy_counter") is False:
            name = (environment.get("device") or {}).get("name") or "this GPU"
            raise EnvironmentProblem(
                f"--energy needs NVML's total-energy counter, which {name} does not offer "
                "here (Volta or later, and the nvidia-ml-py package); run without --energy "
                "(tune: with --objective time)"
            )

    def starting(self, environment: dict[str, Any]) -> SweepStarting:
        """The sweep's first notice: the GPUs the workers hold, the points and variants, and
        what a resumed log already holds."""
        return SweepStarting(
            device=environment["device"],
            devices=environment.get("devices") or [],
            points=len(self.points),
            variants=len(self.run.variants),
            resumed=len(self.previous),
            log=self.files.log,
        )

    def result_set(self, environment: dict[str, Any], compile_report: dict[str, Any]) -> ResultSet:
        """The results to come, after those of the resumed log."""
        result_set = ResultSet(
            suite=self.bench.name,
            environment=environment,
            spec=self.record,
            compile_report=compile_report,
        )
        result_set.results.extend(self.previous)
        return result_set

    def log_header(self, stamp: dict[str, Any], environment: dict[str, Any]) -> dict[str, Any]:
        """The results log's first line: what a resumption checks, and the record."""
        return {
            "fingerprint": stamp,
            "run_seed": self.run.run_seed,
            "suite": self.bench.name,
            "spec": self.record,
            "environment": environment,
        }


def plan_sweep(
    spec: SweepSpec,
    request: outputs.OutputRequest,
    shard: tuple[int, int] | None = None,
    backend_choice: str | None = None,
    local: bool = True,
) -> SweepPlan:
    """The plan, with every mistake of the command found before the machine is asked (a usage
    error is exit 2 on any machine), then the backend's preflight (`backend_choice`: --backend;
    None: GPUBENCH_BACKEND or the default; `local`: the workers run on this host)."""
    points = shard_points(spec.points(), shard, spec.source)
    kernels.check_settings()
    previous_header, previous = load_jsonl(request.resume) if request.resume else ({}, [])
    outputs.plan(spec, request, dry=True)
    backend = backends.selected(backend_choice)
    backends.preflight(backend, local=local, source=backends.source_of(backend_choice))
    files = outputs.plan(spec, request)
    bench = spec.bench
    run = Plan(
        bench,
        by_problem(bench, points, spec.tuned),
        spec.variants,
        spec.baseline,
        spec.timing,
        timeline=files.timeline is not None,
        tuned=spec.tuned,
        run_seed=_run_seed(previous_header),
    )
    return SweepPlan(
        bench=bench,
        suite=spec.suite_ref or spec.suite,
        backend=backend,
        points=points,
        run=run,
        files=files,
        record=spec.to_dict(),
        previous_header=previous_header,
        previous=previous,
        shard=shard,
        notes=(
            *([BackendChosen(backend)] if backends.chosen_automatically(backend_choice) else []),
            *([LogKept(str(files.kept))] if files.kept else []),
        ),
    )


def _run_seed(previous_header: dict[str, Any]) -> int:
    """A new seed for a new run; a resumed run's own, so the problems it had begun are
    measured on the same data after the resumption."""
    seed = previous_header.get("run_seed")
    if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**63:
        return seed
    return secrets.randbits(63)


def shard_points(points: list[Point], shard: tuple[int, int] | None, source: str) -> list[Point]:
    """Every N-th point from the I-th (0-based): the shards of N jobs cover the sweep once."""
    if shard is None:
        return points
    index, count = shard
    mine = points[index::count]
    if not mine:
        raise ConfigError(
            f"shard {index}/{count} has no points (the sweep has {len(points)})",
            source=source,
            key="--shard",
        )
    return mine


def identity(bench: Benchmark, record: dict[str, Any], points: list[Point]) -> dict[str, Any]:
    """What must not change between a run and its resumption, the GPU aside: the suite, its
    kernel source and declarations, the points, the variants and the timing policy (`record`:
    the spec as kept with the results, SweepSpec.to_dict)."""
    declarations = bench.declaration_digest()
    return {
        "suite": record["suite"],
        "kernel_source_sha256": kernels.source_digest(bench),
        **({"declarations_sha256": declarations} if declarations else {}),
        "points": sorted(point_key(p) for p in points),
        "variants": list(record["variants"]),
        "baseline": record["baseline"],
        "timing": record["timing"],
    }


def fingerprint(identity: dict[str, Any], environment: dict[str, Any]) -> dict[str, Any]:
    """The identity with the GPU the workers found (all of them, for a sweep over several)."""
    devices = environment.get("devices") or []
    return {
        **identity,
        "gpu_name": environment.get("device", {}).get("name"),
        "gpu_uuid": environment.get("gpu_uuid"),
        # A sweep over several GPUs resumes on the same ones.
        **({"gpu_uuids": sorted(str(d.get("uuid")) for d in devices)} if len(devices) > 1 else {}),
    }


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What changed between a log's fingerprint and this run's, one phrase per key."""
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


def check_resumable(
    header: dict[str, Any], stamp: dict[str, Any], files: outputs.OutputPlan
) -> None:
    """A resumed log (its `header`) was written by the same sweep, source and GPU as this run
    (its fingerprint, `stamp`), or --force says go on."""
    changed = differences(header.get("fingerprint", {}), stamp)
    if changed and not files.force:
        raise ConfigError(
            "the sweep, the kernel source or the GPU differ from the log; "
            "use --force to resume anyway: " + "; ".join(changed),
            source=files.log,
        )

"""Run points in this process: compile, allocate, check against the reference, time,
summarize. (gpubench.worker runs this same code in a worker process, for isolation.)

Per point the order is fixed: fresh random inputs → for each variant: poisoned outputs, one
checked run, verification, and only then timing. A failure becomes a Result with a status
and a reason, and the sweep goes on.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from gpubench import metrics, timing, verify
from gpubench.benchmark import Benchmark, Launch, Point, Program
from gpubench.errors import KernelCompileError, KernelLaunchError
from gpubench.kernels import CompileCache
from gpubench.results import Result, Status, Verification
from gpubench.stats import summarize


class Observer(Protocol):
    def started(self, total: int) -> None: ...

    def finished(self, result: Result) -> None: ...


@dataclass(frozen=True)
class Plan:
    bench: Benchmark
    points: list[Point]
    variants: tuple[str, ...]
    baseline: str
    policy: timing.TimingPolicy
    # Record one run's per-operation spans for suites whose steps can (streams).
    timeline: bool = False

    @property
    def flush_l2(self) -> bool:
        if self.policy.mode == "hot":
            return False
        if self.policy.flush_l2 is None:
            return self.bench.memory_bound
        return self.policy.flush_l2

    @property
    def size(self) -> int:
        return len(self.points) * len(self.variants)


def point_key(point: Point) -> str:
    """A stable identity for a point (resume and grouping compare these)."""
    return json.dumps(point, sort_keys=True, default=str)


def _compiler_excerpt(output: str, limit: int = 12) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()] or lines
    return "\n".join(errors[:limit])


class Runner:
    def __init__(self, backend: Any, observers: Iterable[Observer] = ()) -> None:
        self.backend = backend
        self.observers = list(observers)
        self.modules = CompileCache(backend)

    def run(self, plan: Plan) -> list[Result]:
        for observer in self.observers:
            observer.started(plan.size)
        results: list[Result] = []
        for point in plan.points:
            point_results = self.run_point(plan, point, plan.variants)
            finish_point(plan, point_results)
            for result in point_results:
                results.append(result)
                for observer in self.observers:
                    observer.finished(result)
        return results

    def run_point(
        self,
        plan: Plan,
        point: Point,
        variants: Iterable[str],
        on_start: Callable[[str], None] | None = None,
        on_result: Callable[[Result], None] | None = None,
    ) -> list[Result]:
        """Every variant of one point; stops early once a variant has crashed the context."""
        bench = plan.bench
        variants = list(variants)

        def result(variant: str, status: Status, reason: str = "", **extra: Any) -> Result:
            return Result(
                suite=bench.name, variant=variant, point=dict(point), status=status,
                reason=reason, baseline=plan.baseline, **extra,
            )  # fmt: skip

        out: list[Result] = []

        def emit(r: Result) -> None:
            out.append(r)
            if on_result:
                on_result(r)

        try:
            module = self.modules.get(bench, point)
        except KernelCompileError as exc:
            reason = f"{exc}\n{_compiler_excerpt(exc.compiler_output)}"
            for v in variants:
                emit(result(v, Status.COMPILE_FAILED, reason))
            return out

        seed = secrets.randbits(63)
        host_inputs = bench.inputs(point, np.random.default_rng(seed))
        device_inputs = {name: self.backend.upload(array) for name, array in host_inputs.items()}
        references: dict[str, dict[str, np.ndarray]] = {}
        try:
            for variant in variants:
                if on_start:
                    on_start(variant)
                outcome = self._run_variant(plan, point, variant, module, host_inputs,
                                            device_inputs, references)  # fmt: skip
                emit(result(variant, seed=seed, **outcome))
                if outcome["status"] is Status.CRASHED:
                    break  # the context is gone: nothing else can run in this process
        finally:
            if not out or out[-1].status is not Status.CRASHED:
                for buffer in device_inputs.values():
                    self.backend.free(buffer)
        return out

    def _failed_launch(
        self, exc: KernelLaunchError, attributes: dict[str, Any], when: str = ""
    ) -> dict[str, Any]:
        # A sticky error (illegal address, misaligned address, illegal instruction, unspecified
        # launch failure) leaves the context unusable: that is a crash, not a refused launch.
        # We ask the context itself rather than matching error text.
        status = Status.LAUNCH_FAILED if self.backend.context_alive() else Status.CRASHED
        return {"status": status, "reason": f"{when}{exc}", "kernel_attributes": attributes}

    def _run_variant(
        self,
        plan: Plan,
        point: Point,
        variant: str,
        module: Any,
        host_inputs: dict[str, np.ndarray],
        device_inputs: dict[str, Any],
        references: dict[str, dict[str, np.ndarray]],
    ) -> dict[str, Any]:
        bench, backend = plan.bench, self.backend
        missing = bench.unavailable(variant)
        if missing:
            return {"status": Status.SKIPPED, "reason": missing}
        skip = bench.skip_reason(variant, point)
        if skip:
            return {"status": Status.SKIPPED, "reason": skip}
        if bench.variant(variant).kind == "host":
            return self._run_host_variant(plan, point, variant, host_inputs, references)
        steps = bench.launches(variant, point, backend.device)
        kernel_launches = [step for step in steps if isinstance(step, Launch)]
        programs = [step for step in steps if isinstance(step, Program)]
        try:
            attributes = self._attributes(module, kernel_launches)
        except KernelLaunchError as exc:
            return {"status": Status.LAUNCH_FAILED, "reason": str(exc)}
        problem = backend.launch_problem(module, kernel_launches)
        if problem:
            return {"status": Status.SKIPPED, "reason": problem, "kernel_attributes": attributes}

        output_specs = bench.outputs(variant, point)
        scratch_specs = bench.scratch(variant, point, backend.device)
        all_specs = {**output_specs, **scratch_specs}
        owned = {name: backend.alloc(spec) for name, spec in all_specs.items()}
        crashed = False
        try:
            for name, spec in all_specs.items():
                if spec.zeroed:
                    backend.zero(owned[name], spec)
                else:
                    backend.poison(owned[name], spec)
            bound = backend.bind(module, steps, {**device_inputs, **owned}, host_inputs)
            try:
                backend.run_checked(bound)
            except KernelLaunchError as exc:
                failed = self._failed_launch(exc, attributes)
                crashed = failed["status"] is Status.CRASHED
                return failed
            got = {name: backend.download(owned[name], spec) for name, spec in output_specs.items()}
            for program in programs:
                if hasattr(program.body, "host_outputs"):
                    got.update(program.body.host_outputs())
            verdict = self._verify(plan, point, variant, got, host_inputs, references)
            del got
            if not verdict.passed:
                return {"status": Status.INCORRECT, "reason": verdict.message,
                        "verification": verdict, "kernel_attributes": attributes}  # fmt: skip
            try:
                measurement = self._measure(plan, bound)
                spans = []
                if plan.timeline:
                    for program in programs:
                        if hasattr(program.body, "timeline"):
                            spans.extend(program.body.timeline())
            except KernelLaunchError as exc:
                failed = self._failed_launch(exc, attributes, "while timing: ")
                crashed = failed["status"] is Status.CRASHED
                return failed
        finally:
            if not crashed:
                for buffer in owned.values():
                    backend.free(buffer)
                for program in programs:
                    if hasattr(program.body, "close"):
                        program.body.close()
        outcome = self._timed(plan, point, variant, measurement, verdict, attributes)
        outcome["timeline"] = spans
        return outcome

    def _attributes(self, module: Any, launches: list[Launch]) -> dict[str, Any]:
        """Registers, shared memory, spills and theoretical occupancy of each kernel."""
        attributes: dict[str, Any] = {}
        for launch in launches:
            if launch.kernel in attributes:
                continue
            attrs = module.attributes(launch.kernel)
            record = attrs.to_dict()
            occupancy, limiter = metrics.theoretical_occupancy(
                launch.threads_per_block, attrs.registers_per_thread,
                attrs.static_shared_bytes + launch.shared_bytes, self.backend.device,
            )  # fmt: skip
            record.update(threads_per_block=launch.threads_per_block,
                          occupancy=occupancy, occupancy_limited_by=limiter)  # fmt: skip
            attributes[launch.kernel] = record
        return attributes

    def _measure(self, plan: Plan, bound: Any) -> timing.Measurement:
        backend, policy = self.backend, plan.policy
        clock = getattr(backend, "sm_clock_mhz", None)
        throttle = {"clock_mhz": clock, "max_clock_mhz": backend.device.sm_clock_mhz}
        if policy.mode == "hot":
            try:
                one_run = min(backend.time_hot_ms(bound, 1) for _ in range(3))
                runs = timing.hot_runs_per_sample(one_run, policy)
                return timing.measure(lambda: backend.time_hot_ms(bound, runs), policy,
                                      runs_per_sample=runs, **throttle)  # fmt: skip
            finally:
                release = getattr(backend, "release", None)
                if release and backend.context_alive():
                    release(bound)
        return timing.measure(
            lambda: backend.time_once_ms(bound, plan.flush_l2), policy, **throttle
        )

    def _verify(self, plan: Plan, point: Point, variant: str, got: dict[str, np.ndarray],
                host_inputs: dict[str, np.ndarray],
                references: dict[str, dict[str, np.ndarray]]) -> Verification:  # fmt: skip
        bench = plan.bench
        computes = bench.variant(variant).computes
        if computes not in references:
            references[computes] = bench.reference(computes, point, host_inputs)
        tolerance = bench.tolerance(variant, point, self.backend.device)
        return verify.check_outputs(got, references[computes], tolerance)

    def _run_host_variant(self, plan: Plan, point: Point, variant: str,
                          host_inputs: dict[str, np.ndarray],
                          references: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:  # fmt: skip
        """A CPU reference variant: synchronous work, so the host clock is the right timer."""
        run_once = lambda: plan.bench.host_run(variant, point, host_inputs)  # noqa: E731
        verdict = self._verify(plan, point, variant, run_once(), host_inputs, references)
        if not verdict.passed:
            return {"status": Status.INCORRECT, "reason": verdict.message, "verification": verdict}
        measurement = timing.measure(lambda: timing.host_time_once_ms(run_once), plan.policy)
        return self._timed(plan, point, variant, measurement, verdict, {})

    def _timed(self, plan: Plan, point: Point, variant: str, measurement: timing.Measurement,
               verdict: Verification, attributes: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        summary = summarize(measurement.samples_ms).to_dict()
        summary["discarded"] = measurement.discarded
        summary["runs_per_sample"] = measurement.runs_per_sample
        values = work_metrics(plan.bench, variant, point, summary["median_ms"], self.backend.device)
        cgma = plan.bench.cgma(variant, point)
        if cgma is not None:
            values["cgma"] = cgma
        return {
            "status": Status.OK if measurement.converged else Status.UNSTABLE,
            "summary": summary,
            "converged": measurement.converged,
            "metrics": values,
            "verification": verdict,
            "kernel_attributes": attributes,
        }


def work_metrics(
    bench: Benchmark, variant: str, point: Point, time_ms: float, device: Any
) -> dict[str, float | None]:
    work = bench.work(variant, point)
    values: dict[str, float | None] = {"time_ms": time_ms}
    if work.bytes_moved:
        gbps = metrics.bandwidth_gbps(work.bytes_moved, time_ms)
        values["gbps"] = gbps
        values["pct_peak_bw"] = metrics.percent_of(gbps, device.peak_bandwidth_gbps)
    if work.flops:
        gflops = metrics.gflops(work.flops, time_ms)
        values["gflops"] = gflops
        values["pct_peak_flops"] = metrics.percent_of(gflops, device.peak_fp32_gflops)
    if work.elements:
        values["gelem_per_s"] = work.elements / (time_ms * 1e-3) / 1e9
    return values


def finish_point(plan: Plan, results: list[Result]) -> None:
    """The metrics that compare the variants of one point, once all of them are in."""
    add_relative_metrics(results, plan.baseline, plan.bench.vendor_reference)
    plan.bench.point_metrics(results)


def add_relative_metrics(results: list[Result], baseline: str, vendor: str | None) -> None:
    """Speedup versus the baseline and % of the vendor library at the same point; only
    between verified, measured results."""

    def measured(name: str | None) -> Result | None:
        return next((r for r in results if r.variant == name and r.status.is_measured), None)

    base, reference = measured(baseline), measured(vendor)
    for r in results:
        if not r.status.is_measured or not r.median_ms:
            continue
        if base is not None:
            r.metrics["speedup"] = metrics.speedup(base.median_ms, r.median_ms)
        if reference is not None:
            r.metrics["pct_of_vendor"] = 100.0 * metrics.speedup(reference.median_ms, r.median_ms)

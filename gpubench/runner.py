"""Run points in this process: compile, allocate, check against the reference, time,
summarize. (gpubench.worker runs this same code in a worker process, for isolation.)

Per point the order is fixed: memory preflight → fresh random inputs → for each variant:
its Case, buffers (outputs poisoned, in-out buffers filled from their input), one checked
run, verification, and only then timing; in-out buffers are restored from the pristine input
before every timed run, outside the timed region; after the last sample the outputs are
poisoned again and one more run is checked, so a kernel that is right only on its first
launch is caught. A failure becomes a Result with a status and a reason; the sweep goes on.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from gpubench import memory, metrics, timing, verify
from gpubench.benchmark import Benchmark, BufferSpec, Case, Point, Tolerance
from gpubench.errors import KernelCompileError, KernelLaunchError, OutOfMemory, PointError
from gpubench.kernels import CompileCache
from gpubench.results import Result, Status, Verification, point_key
from gpubench.stats import summarize
from gpubench.steps import RunRecord, has_repeat, kernel_launches


class Observer(Protocol):
    """Follows a run: how many results to expect, each result the moment it finishes, and the
    point's results again once the metrics that compare its variants are in."""

    def started(self, total: int) -> None: ...

    def finished(self, result: Result) -> None: ...

    def point_finished(self, results: list[Result]) -> None: ...


@dataclass(frozen=True)
class Plan:
    bench: Benchmark
    points: list[Point]
    variants: tuple[str, ...]
    baseline: str
    policy: timing.TimingPolicy
    # Record one run's per-step spans (`--timeline`).
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


def _compiler_excerpt(output: str, limit: int = 12) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()] or lines
    return "\n".join(errors[:limit])


@dataclass
class _Placements:
    """The point's inputs where variants want them (device, pinned or pageable), each made
    once per point on first use and freed when the point ends."""

    backend: Any
    inputs: dict[str, np.ndarray]
    made: dict[tuple[str, str], tuple[Any, BufferSpec]] = field(default_factory=dict)

    def spec(self, name: str, location: str) -> BufferSpec:
        return BufferSpec.like(self.inputs[name], location)

    def missing_bytes(self, wanted: Iterable[tuple[str, str]]) -> tuple[int, int]:
        """(device, host) bytes the placements not yet made would take."""
        device = host = 0
        for name, location in wanted:
            if (name, location) not in self.made:
                size = self.inputs[name].nbytes
                device += size if location == "device" else 0
                host += size if location != "device" else 0
        return device, host

    def get(self, name: str, location: str) -> Any:
        key = (name, location)
        if key not in self.made:
            spec = self.spec(name, location)
            buffer = self.backend.alloc(spec)
            try:
                self.backend.write(buffer, spec, self.inputs[name])
            except Exception:
                self.backend.free(buffer)
                raise
            self.made[key] = (buffer, spec)
        return self.made[key][0]

    def free(self) -> None:
        for buffer, _ in self.made.values():
            self.backend.free(buffer)
        self.made.clear()


class Runner:
    def __init__(self, backend: Any, observers: Iterable[Observer] = ()) -> None:
        self.backend = backend
        self.observers = list(observers)
        self.modules = CompileCache(backend)

    def run(self, plan: Plan) -> list[Result]:
        for observer in self.observers:
            observer.started(plan.size)
        results: list[Result] = []

        def emit(result: Result) -> None:
            results.append(result)
            for observer in self.observers:
                observer.finished(result)

        for point in plan.points:
            point_results = self.run_point(plan, point, plan.variants, on_result=emit)
            finish_point(plan, point_results)
            for observer in self.observers:
                observer.point_finished(point_results)
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
        out: list[Result] = []

        def emit(variant: str, status: Status, reason: str = "", **extra: Any) -> None:
            result = Result(suite=bench.name, variant=variant, point=dict(point),
                            status=status, reason=reason, baseline=plan.baseline, **extra)  # fmt: skip
            out.append(result)
            if on_result:
                on_result(result)

        try:
            module = self.modules.get(bench, point)
        except KernelCompileError as exc:
            reason = f"{exc}\n{_compiler_excerpt(exc.compiler_output)}"
            for v in variants:
                emit(v, Status.COMPILE_FAILED, reason)
            return out

        too_big = self._inputs_do_not_fit(bench, point)
        seed = secrets.randbits(63)
        inputs: dict[str, np.ndarray] = {}
        if not too_big:
            try:
                inputs = bench.inputs(point, np.random.default_rng(seed))
            except MemoryError:
                too_big = "the host ran out of memory making the inputs"
            except PointError as exc:
                for v in variants:
                    emit(v, Status.LAUNCH_FAILED, f"cannot make the inputs: {exc}")
                return out
        if too_big:
            for v in variants:
                emit(v, Status.SKIPPED, too_big)
            return out

        placements = _Placements(self.backend, inputs)
        references: dict[str, dict[str, np.ndarray]] = {}
        crashed = False
        try:
            for variant in variants:
                if on_start:
                    on_start(variant)
                try:
                    outcome = self._run_variant(plan, point, variant, module, placements,
                                                references)  # fmt: skip
                except (OutOfMemory, MemoryError) as exc:
                    # What the preflight could not foresee: a clean result, never a crash.
                    outcome = {"status": Status.SKIPPED, "reason": f"out of memory: {exc}"}
                except PointError as exc:
                    outcome = {"status": Status.LAUNCH_FAILED,
                               "reason": f"the suite cannot run this point: {exc}"}  # fmt: skip
                emit(variant, seed=seed, **outcome)
                if outcome["status"] is Status.CRASHED:
                    crashed = True
                    break  # the context is gone: nothing else can run in this process
        finally:
            if not crashed:
                placements.free()
        return out

    # -- memory preflight ---------------------------------------------------------------------
    def _inputs_do_not_fit(self, bench: Benchmark, point: Point) -> str | None:
        specs = bench.input_specs(point)
        if not specs:
            return None
        total = sum(spec.nbytes for spec in specs.values())
        device = sum(spec.nbytes for spec in specs.values() if not spec.on_host)
        free_device, _ = self.backend.memory_info()
        need = memory.Need(device=device, host=total, what="the inputs")
        return memory.shortfall(need, free_device, memory.host_available_bytes())

    def _variant_does_not_fit(self, plan: Plan, case: Case, placements: _Placements,
                              wanted: dict[str, str], references_ready: bool) -> str | None:  # fmt: skip
        own = {**case.outputs, **case.scratch}
        device, host = placements.missing_bytes(wanted.items())
        device += sum(s.nbytes for s in own.values() if not s.on_host)
        host += sum(s.nbytes for s in own.values() if s.on_host)
        # Downloads of the outputs, and the float64 reference if not made yet.
        host += sum(s.nbytes for s in case.outputs.values())
        if not references_ready:
            host += sum(8 * s.nbytes // np.dtype(s.dtype).itemsize for s in case.outputs.values())
        if plan.flush_l2:
            device += self.backend.device.l2_bytes
        free_device, _ = self.backend.memory_info()
        need = memory.Need(device=device, host=host, what="this variant's buffers")
        return memory.shortfall(need, free_device, memory.host_available_bytes())

    # -- one variant ----------------------------------------------------------------------------
    def _failed_launch(
        self, exc: KernelLaunchError, attributes: dict[str, Any], when: str = ""
    ) -> dict[str, Any]:
        # A sticky error (illegal address, misaligned address, illegal instruction, unspecified
        # launch failure) leaves the context unusable: that is a crash, not a refused launch.
        # We ask the context itself rather than matching error text.
        status = Status.LAUNCH_FAILED if self.backend.context_alive() else Status.CRASHED
        return {"status": status, "reason": f"{when}{exc}", "kernel_attributes": attributes}

    def _run_variant(self, plan: Plan, point: Point, variant: str, module: Any,
                     placements: _Placements,
                     references: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:  # fmt: skip
        bench, backend = plan.bench, self.backend
        missing = bench.unavailable(variant)
        if missing:
            return {"status": Status.SKIPPED, "reason": missing}
        inputs = placements.inputs
        case = bench.case(variant, point, backend.device, inputs)
        problems = case.problems(inputs)
        if problems:
            return {"status": Status.LAUNCH_FAILED,
                    "reason": f"the suite declares {variant!r} wrongly: " + "; ".join(problems)}  # fmt: skip
        if case.skip:
            return {"status": Status.SKIPPED, "reason": case.skip}
        if bench.variant(variant).kind == "host":
            return self._run_host_variant(plan, point, variant, case, inputs, references)
        if plan.policy.mode == "hot" and has_repeat(case.steps):
            return {"status": Status.SKIPPED, "reason": "hot mode repeats whole runs back to "
                    "back, and a run that iterates to convergence starts from the previous "
                    "run's answer: use cold mode"}  # fmt: skip
        launches = kernel_launches(case.steps)
        try:
            attributes = self._attributes(module, launches)
        except KernelLaunchError as exc:
            return {"status": Status.LAUNCH_FAILED, "reason": str(exc)}
        problem = backend.launch_problem(module, launches) if launches else None
        if problem:
            return {"status": Status.SKIPPED, "reason": problem, "kernel_attributes": attributes}

        inout = {n: s for n, s in case.outputs.items() if s.init == "input"}
        wanted = {name: case.input_locations.get(name, "device") for name in inputs
                  if name not in inout}  # fmt: skip
        wanted_pristine = {name: spec.location for name, spec in inout.items()}
        computes = bench.variant(variant).computes
        too_big = self._variant_does_not_fit(
            plan, case, placements, {**wanted, **wanted_pristine}, computes in references
        )
        if too_big:
            return {"status": Status.SKIPPED, "reason": too_big, "kernel_attributes": attributes}

        own_specs = {**case.outputs, **case.scratch}
        owned: dict[str, Any] = {}
        crashed = False
        bound = None
        try:
            for name, spec in own_specs.items():
                owned[name] = backend.alloc(spec)
            buffers = {name: placements.get(name, where) for name, where in wanted.items()}
            pristine = {
                name: placements.get(name, where) for name, where in wanted_pristine.items()
            }
            specs = {name: placements.spec(name, where) for name, where in wanted.items()}
            specs.update(own_specs)
            buffers.update(owned)

            def prepare(first: bool) -> None:
                """Outputs poisoned and in-out buffers filled from their input; on the first
                run also scratch poisoned or zeroed. (Before the re-check after timing,
                scratch stays as the timed runs left it: a kernel must leave its zeroed
                scratch at zero, and one that does not is caught there.)"""
                for name, spec in own_specs.items():
                    if spec.init == "input":
                        backend.restore(owned[name], pristine[name], spec)
                    elif name in case.outputs or first:
                        if spec.init == "zero":
                            backend.zero(owned[name], spec)
                        else:
                            backend.poison(owned[name], spec)

            def restore_inout() -> None:
                for name, spec in inout.items():
                    backend.restore(owned[name], pristine[name], spec)

            prepare(first=True)
            bound = backend.bind(module, case.steps, buffers, specs)
            try:
                record = backend.run_checked(bound)
            except KernelLaunchError as exc:
                failed = self._failed_launch(exc, attributes)
                crashed = failed["status"] is Status.CRASHED
                return failed
            # What the checked run recorded: Repeat iterations, the suite's device counters.
            record_metrics = {"iterations": record.iterations} if has_repeat(case.steps) else {}
            for name in case.read_back:
                record.read_back[name] = backend.read(owned[name], own_specs[name])
            if case.run_metrics is not None:
                record_metrics.update(case.run_metrics(record))
            if not record.converged:
                return {"status": Status.INCORRECT, "kernel_attributes": attributes,
                        "reason": f"did not converge: {', '.join(record.unconverged)} still "
                        f"changing after {record.iterations} iterations (max_iterations)",
                        "metrics": record_metrics}  # fmt: skip
            unverified = self._unverified(plan, variant, references)
            if variant == bench.reference_variant:
                # Its outputs are the answer the other variants are checked against (and
                # its own run after timing must reproduce them).
                references[computes] = {
                    name: _as_reference(backend.read(owned[name], spec))
                    for name, spec in case.outputs.items()
                }
            if unverified:
                verdict = Verification(passed=True, message=unverified)
            else:
                verdict = self._check(plan, point, variant, case, owned, inputs, references,
                                      record)  # fmt: skip
            if not verdict.passed:
                return {"status": Status.INCORRECT, "reason": verdict.message, "metrics": record_metrics,
                        "verification": verdict, "kernel_attributes": attributes}  # fmt: skip
            try:
                measurement = self._measure(plan, bound, restore_inout)
                # What was timed is checked again: outputs poisoned, one more run.
                prepare(first=False)
                after = backend.run_checked(bound)
                if unverified and variant != bench.reference_variant:
                    recheck = verdict
                else:
                    recheck = self._check(plan, point, variant, case, owned, inputs,
                                          references, after)  # fmt: skip
                if not recheck.passed or not after.converged:
                    why = recheck.message or "did not converge"
                    return {"status": Status.INCORRECT, "verification": recheck,
                            "kernel_attributes": attributes, "metrics": record_metrics,
                            "reason": f"right on the checked run, wrong on a run after "
                            f"{measurement.runs} timed runs: {why}"}  # fmt: skip
                spans: list[dict[str, Any]] = []
                if plan.timeline:
                    restore_inout()
                    spans = backend.timeline(bound)
            except KernelLaunchError as exc:
                failed = self._failed_launch(exc, attributes, "while timing: ")
                crashed = failed["status"] is Status.CRASHED
                return failed
        finally:
            if not crashed:
                if bound is not None:
                    backend.release(bound)
                for buffer in owned.values():
                    backend.free(buffer)
        work = case.work_for(record)
        outcome = self._timed(plan, variant, measurement, verdict, attributes, work, case.cgma)
        outcome["metrics"].update(record_metrics)
        outcome["timeline"] = spans
        if unverified:
            outcome["status"] = Status.UNVERIFIED
            outcome["reason"] = unverified
        return outcome

    def _unverified(self, plan: Plan, variant: str,
                    references: dict[str, dict[str, np.ndarray]]) -> str | None:  # fmt: skip
        """Why this variant's outputs cannot be checked, or None when they can."""
        bench = plan.bench
        if variant == bench.reference_variant:
            return "the reference: the other variants are checked against its outputs"
        if bench.reference_variant and bench.variant(variant).computes not in references:
            return (f"not checked: the reference variant {bench.reference_variant!r} produced "
                    "no outputs at this point")  # fmt: skip
        if not bench.has_reference():
            return "no reference: the outputs were not checked"
        return None

    def _check(self, plan: Plan, point: Point, variant: str, case: Case, owned: dict[str, Any],
               inputs: dict[str, np.ndarray], references: dict[str, dict[str, np.ndarray]],
               record: RunRecord) -> Verification:  # fmt: skip
        got = {name: self.backend.read(owned[name], spec) for name, spec in case.outputs.items()}
        return self._verify(plan, point, variant, case, got, inputs, references, record)

    def _attributes(self, module: Any, launches: list[Any]) -> dict[str, Any]:
        """Registers, shared memory, spills and theoretical occupancy of each kernel."""
        attributes: dict[str, Any] = {}
        for launch in launches:
            if launch.kernel in attributes:
                continue
            if module is None:
                raise KernelLaunchError(f"kernel {launch.kernel!r}: the suite compiles no kernels")
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

    def _measure(
        self, plan: Plan, bound: Any, before_each: Callable[[], None]
    ) -> timing.Measurement:
        backend, policy = self.backend, plan.policy
        throttle = {"clock_mhz": backend.sm_clock_mhz,
                    "max_clock_mhz": backend.device.sm_clock_mhz}  # fmt: skip
        if policy.mode == "hot":

            def hot(runs: int) -> float:
                before_each()
                return backend.time_hot_ms(bound, runs)

            one_run = min(hot(1) for _ in range(3))
            runs = timing.hot_runs_per_sample(one_run, policy)
            return timing.measure(lambda: hot(runs), policy, runs_per_sample=runs, **throttle)

        def cold() -> float:
            before_each()  # in-out buffers back to the input: outside the timed interval
            return backend.time_once_ms(bound, plan.flush_l2)

        return timing.measure(cold, policy, **throttle)

    def _verify(self, plan: Plan, point: Point, variant: str, case: Case,
                got: dict[str, np.ndarray], inputs: dict[str, np.ndarray],
                references: dict[str, dict[str, np.ndarray]],
                record: RunRecord | None = None) -> Verification:  # fmt: skip
        bench = plan.bench
        computes = bench.variant(variant).computes
        if computes not in references:
            try:
                references[computes] = bench.reference(computes, point, inputs)
            except PointError as exc:
                return Verification(passed=False, message=f"no reference to check against: {exc}")
        expected = references[computes]
        tolerance: dict[str, Tolerance] = {
            name: case.tolerance_for(got[name].dtype if name in got else np.float64, record, name)
            for name in expected
        }
        return verify.check_outputs(got, expected, tolerance)

    def _run_host_variant(self, plan: Plan, point: Point, variant: str, case: Case,
                          inputs: dict[str, np.ndarray],
                          references: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:  # fmt: skip
        """A CPU reference variant: synchronous work, so the host clock is the right timer."""
        last: dict[str, dict[str, np.ndarray]] = {}

        def run_once() -> None:
            last["outputs"] = plan.bench.host_run(variant, point, inputs)

        run_once()
        verdict = self._verify(plan, point, variant, case, last["outputs"], inputs, references)
        if not verdict.passed:
            return {"status": Status.INCORRECT, "reason": verdict.message, "verification": verdict}
        measurement = timing.measure(lambda: timing.host_time_once_ms(run_once), plan.policy)
        recheck = self._verify(plan, point, variant, case, last["outputs"], inputs, references)
        if not recheck.passed:
            return {"status": Status.INCORRECT, "verification": recheck,
                    "reason": f"right on the checked run, wrong after timing: {recheck.message}"}  # fmt: skip
        return self._timed(plan, variant, measurement, verdict, {}, case.work_for(None), case.cgma)

    def _timed(self, plan: Plan, variant: str, measurement: timing.Measurement,
               verdict: Verification, attributes: dict[str, Any], work: Any,
               cgma: float | None) -> dict[str, Any]:  # fmt: skip
        summary = summarize(measurement.samples_ms).to_dict()
        summary["discarded"] = measurement.discarded
        summary["runs_per_sample"] = measurement.runs_per_sample
        device = self.backend.device
        values = metrics.work_metrics(work.bytes_moved, work.flops, work.elements,
                                      summary["median_ms"], device.peak_bandwidth_gbps,
                                      device.peak_fp32_gflops)  # fmt: skip
        if cgma is not None:
            values[metrics.CGMA.key] = cgma
        return {
            "status": Status.OK if measurement.converged else Status.UNSTABLE,
            "summary": summary,
            "converged": measurement.converged,
            "metrics": values,
            "verification": verdict,
            "kernel_attributes": attributes,
            "work": work.to_dict(),
        }


def _as_reference(array: np.ndarray) -> np.ndarray:
    """A variant's output as a reference: float64 for floating outputs, like NumPy's."""
    if np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float64)
    return array


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
            r.metrics[metrics.SPEEDUP.key] = metrics.speedup(base.median_ms, r.median_ms)
        if reference is not None:
            r.metrics[metrics.PCT_OF_VENDOR.key] = 100.0 * metrics.speedup(
                reference.median_ms, r.median_ms
            )


__all__ = ["Observer", "Plan", "RunRecord", "Runner", "add_relative_metrics", "finish_point",
           "point_key"]  # fmt: skip

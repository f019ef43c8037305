"""One variant at one point, as named stages: plan, prepare, checked run, verify, measure,
re-check, assemble.

The order is the product's promise: outputs poisoned, one checked run, verification, and only
then timing; in-out buffers are restored from the pristine input before every timed run,
outside the timed region; after the last sample the outputs are poisoned again and one more
run is checked, so a kernel that is right only on its first launch is caught. Each stage
either hands on to the next or stops the variant with an outcome (a status and a reason);
each records its host time in the variant's PhaseClock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpubench import memory, metrics, timing, verify
from gpubench.benchmark import BufferSpec, Case, Point, Tolerance
from gpubench.checking import Checker
from gpubench.errors import KernelLaunchError, PointError
from gpubench.phases import PhaseClock
from gpubench.results import Status, Verification
from gpubench.stats import summarize
from gpubench.steps import (
    LibraryCall,
    RunRecord,
    flatten,
    has_repeat,
    kernel_launches,
    referenced_buffers,
)

Outcome = dict[str, Any]


class Stop(Exception):
    """A stage ends the variant with this outcome."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.get("reason", ""))
        self.outcome = outcome


@dataclass
class Placements:
    """The point's inputs where variants want them (device, pinned or pageable), each made
    once per point on first use and freed when the point ends."""

    backend: Any
    inputs: dict[str, np.ndarray]
    clock: PhaseClock
    made: dict[tuple[str, str], tuple[Any, BufferSpec]] = field(default_factory=dict)

    def spec(self, name: str, location: str) -> BufferSpec:
        return BufferSpec.like(self.inputs[name], location)

    def missing_bytes(self, wanted: dict[str, str]) -> tuple[int, int]:
        """(device, host) bytes the placements not yet made would take."""
        device = host = 0
        for name, location in wanted.items():
            if (name, location) not in self.made:
                size = self.inputs[name].nbytes
                device += size if location == "device" else 0
                host += size if location != "device" else 0
        return device, host

    def get(self, name: str, location: str) -> Any:
        key = (name, location)
        if key not in self.made:
            spec = self.spec(name, location)
            with self.clock.phase("uploads"):
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


@dataclass
class PointState:
    """What the variants of one point share: inputs, their placements, the references."""

    point: Point
    seed: int
    inputs: dict[str, np.ndarray]
    placements: Placements
    checker: Checker


@dataclass
class VariantRun:
    """The stages of one variant; `run()` drives them and always frees what it allocated."""

    plan: Any  # runner.Plan
    state: PointState
    variant: str
    module: Any
    backend: Any
    clock: PhaseClock = field(default_factory=PhaseClock)
    case: Case | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    own: dict[str, BufferSpec] = field(default_factory=dict)
    owned: dict[str, Any] = field(default_factory=dict)
    pristine: dict[str, Any] = field(default_factory=dict)
    bound: Any = None
    record_metrics: dict[str, Any] = field(default_factory=dict)
    crashed: bool = False
    # From the first timed run on, a failed launch is reported "while timing".
    timing_started: bool = False

    @property
    def bench(self) -> Any:
        return self.plan.bench

    @property
    def computes(self) -> str:
        return self.bench.variant(self.variant).computes

    def run(self) -> Outcome:
        try:
            self.plan_case()
            if self.bench.variant(self.variant).kind == "host":
                return run_host_variant(self)
            self.plan_launch()
            try:
                self.prepare()
                record = self.checked_run()
                verdict, unverified = self.verify(record)
                measurement = self.measure()
                self.recheck(verdict, unverified, measurement)
                spans = self.timeline()
            except KernelLaunchError as exc:
                return self.failed_launch(exc, "while timing: " if self.timing_started else "")
            finally:
                self.free()
            return self.assemble(record, verdict, unverified, measurement, spans)
        except Stop as stop:
            return stop.outcome

    # -- plan: can this variant run here at all? ----------------------------------------------
    def plan_case(self) -> None:
        bench, variant, inputs = self.bench, self.variant, self.state.inputs
        missing = bench.unavailable(variant)
        if missing:
            raise Stop({"status": Status.SKIPPED, "reason": missing})
        self.case = bench.case(variant, self.state.point, self.backend.device, inputs)
        problems = self.case.problems(inputs)
        if problems:
            raise Stop({"status": Status.LAUNCH_FAILED, "reason": f"the suite declares "
                        f"{variant!r} wrongly: " + "; ".join(problems)})  # fmt: skip
        if self.case.skip:
            raise Stop({"status": Status.SKIPPED, "reason": self.case.skip})

    def plan_launch(self) -> None:
        case, backend = self.case, self.backend
        assert case is not None
        if self.plan.policy.mode == "hot" and has_repeat(case.steps):
            raise Stop({"status": Status.SKIPPED, "reason": "hot mode repeats whole runs back "
                        "to back, and a run that iterates to convergence starts from the "
                        "previous run's answer: use cold mode"})  # fmt: skip
        launches = kernel_launches(case.steps)
        try:
            self.attributes = kernel_attributes(self.module, launches, backend.device)
        except KernelLaunchError as exc:
            raise Stop({"status": Status.LAUNCH_FAILED, "reason": str(exc)}) from None
        problem = backend.launch_problem(self.module, launches) if launches else None
        too_big = problem or self.does_not_fit()
        if too_big:
            raise Stop({"status": Status.SKIPPED, "reason": too_big,
                        "kernel_attributes": self.attributes})  # fmt: skip

    def wanted(self) -> tuple[dict[str, str], dict[str, str]]:
        """Where each input must be ({name: location}), and the pristine copies of the
        in-out buffers (restored from before every run)."""
        case = self.case
        assert case is not None
        inout = {n: s for n, s in case.outputs.items() if s.init == "input"}
        # Only the inputs its steps use (a library call is handed every buffer): a point's
        # inputs may serve other variants, or the host alone (sssp's CSR for SciPy).
        used = referenced_buffers(case.steps)
        every = any(isinstance(step, LibraryCall) for step in flatten(case.steps))
        wanted = {name: case.input_locations.get(name, "device") for name in self.state.inputs
                  if name not in inout and (every or name in used)}  # fmt: skip
        return wanted, {name: spec.location for name, spec in inout.items()}

    def does_not_fit(self) -> str | None:
        case, placements, checker = self.case, self.state.placements, self.state.checker
        assert case is not None
        wanted, pristine = self.wanted()
        own = {**case.outputs, **case.scratch}
        device, host = placements.missing_bytes({**wanted, **pristine})
        device += sum(s.nbytes for s in own.values() if not s.on_host)
        host += sum(s.nbytes for s in own.values() if s.on_host)
        # Downloads of the outputs, and the float64 reference if not made yet.
        host += sum(s.nbytes for s in case.outputs.values())
        if not checker.has(self.computes):
            host += sum(8 * s.nbytes // np.dtype(s.dtype).itemsize for s in case.outputs.values())
        if self.plan.flush_l2:
            device += self.backend.device.l2_bytes
        need = memory.Need(device=device, host=host, what="this variant's buffers")
        free_device, _ = self.backend.memory_info()
        too_big = memory.shortfall(need, free_device, memory.host_available_bytes())
        if (
            too_big
            and checker.device_bytes()
            and not memory.shortfall(
                need, free_device + checker.device_bytes(), memory.host_available_bytes()
            )
        ):
            checker.release()  # the device copies of the references make way; host check
            return None
        return too_big

    # -- prepare: buffers allocated, inputs placed, outputs poisoned ---------------------------
    def prepare(self) -> None:
        case, backend, placements = self.case, self.backend, self.state.placements
        assert case is not None
        wanted, wanted_pristine = self.wanted()
        # Inputs placed first: their uploads are the point's phase, not this variant's.
        buffers = {name: placements.get(name, where) for name, where in wanted.items()}
        self.pristine = {name: placements.get(name, where)
                         for name, where in wanted_pristine.items()}  # fmt: skip
        with self.clock.phase("prepare"):
            self.own = {**case.outputs, **case.scratch}
            for name, spec in self.own.items():
                self.owned[name] = backend.alloc(spec)
            specs = {name: placements.spec(name, where) for name, where in wanted.items()}
            specs.update(self.own)
            buffers.update(self.owned)
            self.poison(first=True)
            self.bound = backend.bind(self.module, case.steps, buffers, specs)

    def poison(self, first: bool) -> None:
        """Outputs poisoned and in-out buffers filled from their input; on the first run also
        scratch poisoned or zeroed. (Before the re-check after timing, scratch stays as the
        timed runs left it: a kernel must leave its zeroed scratch at zero, and one that does
        not is caught there.)"""
        case, backend = self.case, self.backend
        assert case is not None
        for name, spec in self.own.items():
            if spec.init == "input":
                backend.restore(self.owned[name], self.pristine[name], spec)
            elif name in case.outputs or first:
                if spec.init == "zero":
                    backend.zero(self.owned[name], spec)
                else:
                    backend.poison(self.owned[name], spec)

    def restore_inout(self) -> None:
        for name, spec in self.own.items():
            if spec.init == "input":
                self.backend.restore(self.owned[name], self.pristine[name], spec)

    # -- checked run ---------------------------------------------------------------------------
    def checked_run(self) -> RunRecord:
        case, backend = self.case, self.backend
        assert case is not None
        with self.clock.phase("checked_run"):
            try:
                record = backend.run_checked(self.bound)
            except KernelLaunchError as exc:
                raise Stop(self.failed_launch(exc)) from None
            # What the checked run recorded: Repeat iterations, the suite's device counters.
            if has_repeat(case.steps):
                self.record_metrics["iterations"] = record.iterations
            for name in case.read_back:
                record.read_back[name] = backend.read(self.owned[name], self.own[name])
            if case.run_metrics is not None:
                self.record_metrics.update(case.run_metrics(record))
        if not record.converged:
            raise Stop({"status": Status.INCORRECT, "kernel_attributes": self.attributes,
                        "reason": f"did not converge: {', '.join(record.unconverged)} still "
                        f"changing after {record.iterations} iterations (max_iterations)",
                        "metrics": self.record_metrics})  # fmt: skip
        return record

    # -- verify ---------------------------------------------------------------------------------
    def verify(self, record: RunRecord) -> tuple[Verification, str | None]:
        bench, case, checker = self.bench, self.case, self.state.checker
        assert case is not None
        unverified = unverified_reason(bench, self.variant, checker)
        if self.variant == bench.reference_variant:
            # Its outputs are the answer the other variants are checked against (and its
            # own run after timing must reproduce them).
            with self.clock.phase("downloads"):
                checker.set(self.computes, {
                    name: as_reference(self.backend.read(self.owned[name], spec))
                    for name, spec in case.outputs.items()
                })  # fmt: skip
        if unverified:
            return Verification(passed=True, message=unverified), unverified
        verdict = self.check(record, "check")
        if not verdict.passed:
            raise Stop({"status": Status.INCORRECT, "reason": verdict.message,
                        "metrics": self.record_metrics, "verification": verdict,
                        "kernel_attributes": self.attributes})  # fmt: skip
        return verdict, None

    def check(self, record: RunRecord, phase: str) -> Verification:
        case, checker = self.case, self.state.checker
        assert case is not None
        try:
            checker.make(self.computes, lambda: self.bench.reference(
                self.computes, self.state.point, self.state.inputs))  # fmt: skip
        except PointError as exc:
            return Verification(passed=False, message=f"no reference to check against: {exc}")
        outputs = {name: (self.owned[name], spec) for name, spec in case.outputs.items()}
        dtypes = {name: spec.dtype for name, spec in case.outputs.items()}
        tolerance = tolerances(case, checker.host[self.computes], dtypes, record)
        return checker.check(self.computes, outputs, tolerance, self.clock, phase)

    # -- measure and re-check -------------------------------------------------------------------
    def measure(self) -> timing.Measurement:
        self.timing_started = True
        with self.clock.phase("timing"):
            return measure(self.backend, self.plan, self.bound, self.restore_inout)

    def recheck(self, verdict: Verification, unverified: str | None,
                measurement: timing.Measurement) -> None:  # fmt: skip
        """What was timed is checked again: outputs poisoned, one more run."""
        with self.clock.phase("recheck"):
            self.poison(first=False)
            after = self.backend.run_checked(self.bound)
        if unverified and self.variant != self.bench.reference_variant:
            recheck = verdict
        else:  # the reference variant too: its second run must reproduce its first
            recheck = self.check(after, "recheck")
        if not recheck.passed or not after.converged:
            why = recheck.message or "did not converge"
            raise Stop({"status": Status.INCORRECT, "verification": recheck,
                        "kernel_attributes": self.attributes, "metrics": self.record_metrics,
                        "reason": f"right on the checked run, wrong on a run after "
                        f"{measurement.runs} timed runs: {why}"})  # fmt: skip

    def timeline(self) -> list[dict[str, Any]]:
        if not self.plan.timeline:
            return []
        self.restore_inout()
        return self.backend.timeline(self.bound)

    # -- assemble and clean up ------------------------------------------------------------------
    def assemble(self, record: RunRecord, verdict: Verification, unverified: str | None,
                 measurement: timing.Measurement, spans: list[dict[str, Any]]) -> Outcome:  # fmt: skip
        assert self.case is not None
        outcome = timed_outcome(self.backend.device, measurement, verdict, self.attributes,
                                self.case.work_for(record), self.case.cgma)  # fmt: skip
        outcome["metrics"].update(self.record_metrics)
        outcome["timeline"] = spans
        if unverified:
            outcome["status"] = Status.UNVERIFIED
            outcome["reason"] = unverified
        return outcome

    def failed_launch(self, exc: KernelLaunchError, when: str = "") -> Outcome:
        # A sticky error (illegal address, misaligned address, illegal instruction, unspecified
        # launch failure) leaves the context unusable: that is a crash, not a refused launch.
        # We ask the context itself rather than matching error text.
        alive = self.backend.context_alive()
        self.crashed = not alive
        status = Status.LAUNCH_FAILED if alive else Status.CRASHED
        return {"status": status, "reason": f"{when}{exc}", "kernel_attributes": self.attributes}

    def free(self) -> None:
        if self.crashed:
            return  # the context is gone: every free would fail
        if self.bound is not None:
            self.backend.release(self.bound)
        for buffer in self.owned.values():
            self.backend.free(buffer)
        self.owned.clear()


def unverified_reason(bench: Any, variant: str, checker: Checker) -> str | None:
    """Why this variant's outputs cannot be checked, or None when they can."""
    if variant == bench.reference_variant:
        return "the reference: the other variants are checked against its outputs"
    if bench.reference_variant and not checker.has(bench.variant(variant).computes):
        return (f"not checked: the reference variant {bench.reference_variant!r} produced "
                "no outputs at this point")  # fmt: skip
    if not bench.has_reference():
        return "no reference: the outputs were not checked"
    return None


def tolerances(case: Case, expected: dict[str, np.ndarray], dtypes: dict[str, Any],
               record: RunRecord | None) -> dict[str, Tolerance]:  # fmt: skip
    """Each output's tolerance, from the type the variant produced it in."""
    return {name: case.tolerance_for(np.dtype(dtypes.get(name, np.float64)), record, name)
            for name in expected}  # fmt: skip


def as_reference(array: np.ndarray) -> np.ndarray:
    """A variant's output as a reference: float64 for floating outputs, like NumPy's."""
    if np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float64)
    return array


def kernel_attributes(module: Any, launches: list[Any], device: Any) -> dict[str, Any]:
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
            attrs.static_shared_bytes + launch.shared_bytes, device,
        )  # fmt: skip
        record.update(threads_per_block=launch.threads_per_block,
                      occupancy=occupancy, occupancy_limited_by=limiter)  # fmt: skip
        attributes[launch.kernel] = record
    return attributes


def measure(backend: Any, plan: Any, bound: Any,
            before_each: Callable[[], None]) -> timing.Measurement:  # fmt: skip
    policy = plan.policy
    throttle = {"clock_mhz": backend.sm_clock_mhz, "max_clock_mhz": backend.device.sm_clock_mhz}
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


def run_host_variant(run: VariantRun) -> Outcome:
    """A CPU reference variant: synchronous work, so the host clock is the right timer."""
    plan, state, case = run.plan, run.state, run.case
    assert case is not None
    last: dict[str, dict[str, np.ndarray]] = {}

    def run_once() -> None:
        last["outputs"] = plan.bench.host_run(run.variant, state.point, state.inputs)

    def check(phase: str) -> Verification:
        try:
            state.checker.make(run.computes, lambda: plan.bench.reference(
                run.computes, state.point, state.inputs))  # fmt: skip
        except PointError as exc:
            return Verification(passed=False, message=f"no reference to check against: {exc}")
        expected = state.checker.host[run.computes]
        with run.clock.phase(phase):
            got = last["outputs"]
            dtypes = {name: array.dtype for name, array in got.items()}
            return verify.check_outputs(got, expected, tolerances(case, expected, dtypes, None))

    with run.clock.phase("checked_run"):
        run_once()
    verdict = check("check")
    if not verdict.passed:
        return {"status": Status.INCORRECT, "reason": verdict.message, "verification": verdict}
    with run.clock.phase("timing"):
        measurement = timing.measure(lambda: timing.host_time_once_ms(run_once), plan.policy)
    recheck = check("recheck")
    if not recheck.passed:
        return {"status": Status.INCORRECT, "verification": recheck,
                "reason": f"right on the checked run, wrong after timing: {recheck.message}"}  # fmt: skip
    return timed_outcome(run.backend.device, measurement, verdict, {}, case.work_for(None),
                         case.cgma)  # fmt: skip


def timed_outcome(device: Any, measurement: timing.Measurement, verdict: Verification,
                  attributes: dict[str, Any], work: Any, cgma: float | None) -> Outcome:  # fmt: skip
    summary = summarize(measurement.samples_ms).to_dict()
    summary["discarded"] = measurement.discarded
    summary["runs_per_sample"] = measurement.runs_per_sample
    summary["clock_mhz"] = measurement.clock_mhz
    summary["clock_capped"] = measurement.clock_capped
    values = metrics.work_metrics(work.bytes_moved, work.flops, work.elements,
                                  summary["median_ms"], device.peak_bandwidth_gbps,
                                  device.peak_fp32_gflops, getattr(work, "level", "dram"),
                                  getattr(work, "precision", "fp32"))  # fmt: skip
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

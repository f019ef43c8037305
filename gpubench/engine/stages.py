"""One variant at one point, as named stages: plan, prepare, checked run, verify, measure
(with audits), re-check, assemble.

The order is the product's promise: outputs poisoned, one checked run, verification, and only
then timing; in-out buffers are restored from the pristine input before every timed run,
outside the timed region. The kernel is untrusted, so what is timed is checked too: timed runs
the kernel cannot tell from the others are audited (outputs poisoned before, checked after,
the device found idle); after the last sample the inputs must hold what was uploaded, and two
more runs are checked with the outputs left as the previous run wrote them, first on the
point's second input set in the same buffers, then on the first again; a result faster than
the hardware can go is `implausible` (gpubench.engine.audit). Each stage either hands on to the next
or stops the variant with an outcome (a status and a reason); each records its host time in
the variant's PhaseClock.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench.engine import audit, input_sets, memory, verify
from gpubench.engine.checking import Checker
from gpubench.engine.energy import measure_energy, window_verdict
from gpubench.engine.input_sets import (
    FIRST,
    SECOND,
    EarlierSet,
    FreshInputs,
    InputSets,
    fresh_key,
    other,
)
from gpubench.errors import KernelLaunchError, PointError
from gpubench.model import metrics, timing
from gpubench.model.benchmark import BufferSpec, Case, Point, Tolerance
from gpubench.model.energy import energy_metrics
from gpubench.model.phases import TIMING_LOOP, PhaseClock
from gpubench.model.results import Status, Verification
from gpubench.model.stats import summarize
from gpubench.model.steps import (
    LibraryCall,
    RunRecord,
    flatten,
    has_repeat,
    kernel_launches,
    referenced_buffers,
)

if TYPE_CHECKING:
    from gpubench.backends.base import Backend

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

    backend: Backend
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
    """What the variants of one point share: inputs (two sets), their placements, the
    references."""

    point: Point
    seed: int
    inputs: dict[str, np.ndarray]
    placements: Placements
    checker: Checker
    sets: InputSets
    bench: Any = None

    @classmethod
    def make(
        cls,
        plan: Any,
        point: Point,
        seed: int,
        inputs: dict[str, np.ndarray],
        backend: Backend,
        clock: PhaseClock,
        earlier: EarlierSet | None = None,
    ) -> PointState:
        """The point's state, its second set the earlier point's first where that one is
        handed over and fits, else made on a thread."""
        placements = Placements(backend, inputs, clock)
        bench = plan.bench
        device = [v for v in plan.variants if bench.variant(v).kind != "host"]
        computes = sorted({bench.variant(v).computes for v in device})
        if not bench.has_reference() or bench.reference_variant or not device:
            computes = []  # checked against a variant's own outputs, or not at all
        if earlier is not None and not earlier.matches(inputs):
            earlier.free_device(backend)
            earlier = None
        fresh = FreshInputs(bench, point, seed, computes, inputs, earlier)
        checker = Checker(backend, clock)
        for key, (host, on_device) in (earlier.references if earlier else {}).items():
            checker.adopt(fresh_key(key), host, on_device)
        if earlier is not None:
            earlier.references.clear()  # the checker owns them now
        sets = InputSets(backend, placements, fresh, clock)
        return cls(point, seed, inputs, placements, checker, sets, bench)

    def counted_on(self, clock: PhaseClock) -> None:
        """Host work done for this state from now on (uploads, references, the second set's
        placements) is counted on `clock`: that of a point that took the state over."""
        self.placements.clock = clock
        self.checker.point_clock = clock
        self.sets.clock = clock
        if self.sets.second is not None:
            self.sets.second.clock = clock

    def hand_over(self) -> EarlierSet:
        """This point's first set for the next point (its second), everything else freed."""
        references = {
            key: self.checker.hand_over(key)
            for key in list(self.checker.host)
            if not key.endswith(f"@{SECOND}")
        }
        earlier = EarlierSet(
            dict(self.point), self.inputs, references, self.sets.hand_over_copies()
        )
        self.free()
        return earlier

    def free(self) -> None:
        self.sets.free()
        self.placements.free()
        self.checker.release()


@dataclass
class VariantRun:
    """The stages of one variant; `run()` drives them and always frees what it allocated."""

    plan: Any  # runner.Plan
    state: PointState
    variant: str
    module: Any
    backend: Backend
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
    # The variant's inputs and in-out outputs ({name: location}), and which input set their
    # buffers hold now.
    inputs_used: dict[str, str] = field(default_factory=dict)
    inout_sources: dict[str, str] = field(default_factory=dict)
    current: str = FIRST
    # Why the timing cannot stand though every check passed (work left running, a timing
    # that depends on whether the inputs changed), or None.
    implausible: str | None = None

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
                measurement = self.measure(unverified)
                reading = self.measure_energy(unverified, measurement, record)
                self.recheck(unverified, measurement)
                spans = self.timeline()
            except KernelLaunchError as exc:
                return self.failed_launch(exc, "while timing: " if self.timing_started else "")
            finally:
                self.free()
            return self.assemble(record, verdict, unverified, measurement, spans, reading)
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
            raise Stop(
                {
                    "status": Status.LAUNCH_FAILED,
                    "reason": f"the suite declares {variant!r} wrongly: " + "; ".join(problems),
                }
            )
        if self.case.skip:
            raise Stop({"status": Status.SKIPPED, "reason": self.case.skip})

    def plan_launch(self) -> None:
        case, backend = self.case, self.backend
        assert case is not None
        if self.plan.policy.mode == "hot" and has_repeat(case.steps):
            raise Stop(
                {
                    "status": Status.SKIPPED,
                    "reason": "hot mode repeats whole runs back "
                    "to back, and a run that iterates to convergence starts from the "
                    "previous run's answer: use cold mode",
                }
            )
        launches = kernel_launches(case.steps)
        try:
            self.attributes = kernel_attributes(self.module, launches, backend.device)
        except KernelLaunchError as exc:
            raise Stop({"status": Status.LAUNCH_FAILED, "reason": str(exc)}) from None
        problem = backend.launch_problem(self.module, launches) if launches else None
        too_big = problem or self.does_not_fit()
        if too_big:
            raise Stop(
                {"status": Status.SKIPPED, "reason": too_big, "kernel_attributes": self.attributes}
            )

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
        wanted = {
            name: case.input_locations.get(name, "device")
            for name in self.state.inputs
            if name not in inout and (every or name in used)
        }
        return wanted, {name: spec.location for name, spec in inout.items()}

    def does_not_fit(self) -> str | None:
        case, placements, checker = self.case, self.state.placements, self.state.checker
        assert case is not None
        wanted, pristine = self.wanted()
        own = {**case.outputs, **case.scratch}
        device, host = placements.missing_bytes({**wanted, **pristine})
        device += sum(s.nbytes for s in own.values() if not s.on_host)
        host += sum(s.nbytes for s in own.values() if s.on_host)
        # Downloads of the outputs, and the float64 references (both sets) if not made yet.
        host += sum(s.nbytes for s in case.outputs.values())
        if not checker.has(self.computes):
            host += 2 * sum(
                8 * s.nbytes // np.dtype(s.dtype).itemsize for s in case.outputs.values()
            )
        if self.plan.flush_l2:
            device += self.backend.device.l2_bytes
        need = memory.Need(device=device, host=host, what="this variant's buffers")
        sets = self.state.sets
        if sets.use_copies and not input_sets.copies_fit(self.backend, sets, wanted, need):
            sets.use_copies = False  # the second set and a's copy are written from the host
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
        self.inputs_used, self.inout_sources = wanted, wanted_pristine
        self.state.sets.ready(wanted)
        self.pristine = {
            name: placements.get(name, where) for name, where in wanted_pristine.items()
        }
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

    def stale_outputs(self) -> None:
        """Before a re-check: in-out outputs restored and zero-initialised ones zeroed, as the
        contract says; every other output left as the previous run wrote it (a kernel that
        skips work when its output already holds values is wrong on new inputs)."""
        case = self.case
        assert case is not None
        for name, spec in case.outputs.items():
            if spec.init == "input":
                self.backend.restore(self.owned[name], self.pristine[name], spec)
            elif spec.init == "zero":
                self.backend.zero(self.owned[name], spec)

    def switch_to(self, which: str) -> None:
        """Input set `which` into the bound input buffers, and the in-out outputs' source."""
        sets = self.state.sets
        sets.load(which, self.inputs_used)
        self.pristine = {
            name: sets.pristine(which, name, where) for name, where in self.inout_sources.items()
        }
        self.current = which

    def inputs_intact(self, when: str) -> None:
        """Every input buffer still holds the set loaded into it, bit for bit."""
        with self.clock.phase("inputs_check"):
            written = self.state.sets.written(self.current, self.inputs_used)
        if written:
            raise Stop(
                {
                    "status": Status.INCORRECT,
                    "kernel_attributes": self.attributes,
                    "metrics": self.record_metrics,
                    "reason": f"wrote its inputs: {', '.join(written)} no longer hold "
                    f"what was uploaded ({when})",
                }
            )

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
            raise Stop(
                {
                    "status": Status.INCORRECT,
                    "kernel_attributes": self.attributes,
                    "reason": f"did not converge: {', '.join(record.unconverged)} still "
                    f"changing after {record.iterations} iterations (max_iterations)",
                    "metrics": self.record_metrics,
                }
            )
        return record

    # -- verify ---------------------------------------------------------------------------------
    def verify(self, record: RunRecord) -> tuple[Verification, str | None]:
        bench, case, checker = self.bench, self.case, self.state.checker
        assert case is not None
        unverified = unverified_reason(bench, self.variant, checker)
        if self.variant == bench.reference_variant:
            # Its outputs are the answer the other variants are checked against (and its
            # own run after timing must reproduce them).
            self.keep_as_reference(self.computes)
        if unverified:
            return Verification(passed=True, message=unverified), unverified
        verdict = self.check(record, "check")
        if not verdict.passed:
            self.inputs_intact("after the checked run")  # the likelier cause, if it is one
            raise Stop(
                {
                    "status": Status.INCORRECT,
                    "reason": verdict.message,
                    "metrics": self.record_metrics,
                    "verification": verdict,
                    "kernel_attributes": self.attributes,
                }
            )
        return verdict, None

    def keep_as_reference(self, key: str) -> None:
        """This run's outputs as the reference under `key` (the reference variant's)."""
        assert self.case is not None
        with self.clock.phase("downloads"):
            self.state.checker.set(
                key,
                {
                    name: as_reference(self.backend.read(self.owned[name], spec))
                    for name, spec in self.case.outputs.items()
                },
            )

    def check(self, record: RunRecord, phase: str, which: str = FIRST) -> Verification:
        """The outputs against the reference of input set `which`."""
        case, checker, state = self.case, self.state.checker, self.state
        assert case is not None
        key = self.computes if which == FIRST else fresh_key(self.computes)
        if which == FIRST:
            make = partial(self.bench.reference, self.computes, state.point, state.inputs)
        else:
            make = partial(state.sets.fresh.reference, self.computes)
        try:
            checker.make(key, make)
        except PointError as exc:
            return Verification(passed=False, message=f"no reference to check against: {exc}")
        outputs = {name: (self.owned[name], spec) for name, spec in case.outputs.items()}
        dtypes = {name: spec.dtype for name, spec in case.outputs.items()}
        tolerance = tolerances(case, checker.host[key], dtypes, record)
        return checker.check(key, outputs, tolerance, self.clock, phase)

    def checkable(self, which: str) -> bool:
        """Whether input set `which` has a reference: always, but where the suite checks
        against a variant's outputs and that variant has not run on the set yet."""
        if not self.bench.reference_variant:
            return True
        return self.state.checker.has(self.computes if which == FIRST else fresh_key(self.computes))

    # -- measure and re-check -------------------------------------------------------------------
    def measure(self, unverified: str | None) -> timing.Measurement:
        self.timing_started = True
        policy = self.plan.policy
        checks = not unverified or self.variant == self.bench.reference_variant
        sampler = AuditedSampler(
            self, audit.schedule(policy), checks, policy.untrusted, policy.warmup
        )
        self.backend.reset_persisting_l2()  # no L2 set-aside left by an earlier run
        assert self.case is not None
        if policy.untrusted or any(isinstance(s, LibraryCall) for s in flatten(self.case.steps)):
            with self.clock.phase("fresh_wait"):
                self.state.sets.fresh.wait()
        if policy.untrusted:  # its loads before every timed run would hide a write
            self.inputs_intact("after the checked run")
        before = dict(self.clock.seconds)
        with self.clock.phase("timing"):
            measurement = measure(
                self.backend,
                self.plan,
                self.bound,
                sampler.before,
                sampler.after,
                sampler.batch_size,
                sampler.may_overlap,
            )
        # The audits' host time is theirs, not the timing loop's: their checks recorded their
        # own phases inside it; the rest (poison, loads, the idle wait) is "audit".
        nested = sum(
            seconds - before.get(name, 0.0)
            for name, seconds in self.clock.seconds.items()
            if name != "timing"
        )
        self.clock.add("timing", -sampler.seconds)
        self.clock.add("audit", sampler.seconds - nested)
        if measurement.loop is not None:
            self.clock.parts[TIMING_LOOP] = measurement.loop.parts()
        self.implausible = sampler.repeat_effect()
        return measurement

    def measure_energy(
        self, unverified: str | None, measurement: timing.Measurement, record: RunRecord
    ) -> dict[str, Any] | None:
        """The energy of one run where asked (`timing.energy`), for a verified variant whose
        timing can stand: a reading, or {"missing": why}. Before the re-check, so the window's
        runs are re-checked with the timed ones; a window faster than the hardware allows
        makes the result implausible."""
        policy, case = self.plan.policy, self.case
        if not policy.energy or unverified or measurement.gave_up or self.implausible:
            return None
        assert case is not None
        run_ms = statistics.median(measurement.samples_ms)
        work, device = case.work_for(record), self.backend.device
        if audit.speed_of_light(work, run_ms, device, len(kernel_launches(case.steps))):
            return None  # implausible already (assemble says why): no window for it
        meter = self.backend.energy_meter()
        if meter is None:
            return {"missing": "this GPU has no energy counter gpubench can read (NVML)"}
        with self.clock.phase("energy"):
            got = measure_energy(
                self.backend,
                meter,
                self.bound,
                run_ms,
                policy.energy_window_s,
                self.restore_inout,
                one_at_a_time=has_repeat(case.steps),
            )
        if isinstance(got, str):
            return {"missing": got}
        self.implausible, withheld = window_verdict(got, run_ms, work, device, self.plan.flush_l2)
        return {"missing": withheld} if withheld else got.to_dict()

    def recheck(self, unverified: str | None, measurement: timing.Measurement) -> None:
        """What was timed is checked again. The inputs must still hold what was uploaded; then
        two runs with the outputs left as the previous run wrote them: the other input set in
        the same buffers, then the set that was timed."""
        self.inputs_intact(f"after {measurement.runs} timed runs")
        reference = self.variant == self.bench.reference_variant
        timed = self.current
        for which in (other(timed), timed):
            with self.clock.phase("recheck"):
                self.switch_to(which)
                if reference and which == SECOND and not self.checkable(SECOND):
                    self.poison(first=False)  # its outputs become the others' reference
                else:
                    self.stale_outputs()
                after = self.backend.run_checked(self.bound)
            if (
                reference
                and which == SECOND
                and not self.state.checker.has(fresh_key(self.computes))
            ):
                self.keep_as_reference(fresh_key(self.computes))
                continue
            if (unverified and not reference) or not self.checkable(which):
                continue
            verdict = self.check(after, "recheck", which)
            if not verdict.passed or not after.converged:
                self.inputs_intact("after the re-check")
                self.fail_recheck(which, verdict, measurement)
        # No comparison after the re-checks: the next variant's inputs are loaded afresh from
        # the pristine copies (a D2D copy costs less than a comparison).

    def fail_recheck(
        self, which: str, verdict: Verification, measurement: timing.Measurement
    ) -> None:
        why = verdict.message if not verdict.passed else "did not converge"
        sets = self.state.sets
        where = "on " + (sets.fresh.describe() if which == SECOND else "the first inputs again")
        raise Stop(
            {
                "status": Status.INCORRECT,
                "verification": verdict,
                "kernel_attributes": self.attributes,
                "metrics": self.record_metrics,
                "reason": f"right on the checked run, wrong on a run after "
                f"{measurement.runs} timed runs ({where}, outputs left as the previous "
                f"run wrote them): {why}",
            }
        )

    def timeline(self) -> list[dict[str, Any]]:
        if not self.plan.timeline:
            return []
        self.restore_inout()
        return self.backend.timeline(self.bound)

    # -- assemble and clean up ------------------------------------------------------------------
    def assemble(
        self,
        record: RunRecord,
        verdict: Verification,
        unverified: str | None,
        measurement: timing.Measurement,
        spans: list[dict[str, Any]],
        reading: dict[str, Any] | None = None,
    ) -> Outcome:
        assert self.case is not None
        work = self.case.work_for(record)
        outcome = timed_outcome(
            self.backend.device, measurement, verdict, self.attributes, work, self.case.cgma
        )
        outcome["metrics"].update(self.record_metrics)
        outcome["timeline"] = spans
        if unverified:
            outcome["status"] = Status.UNVERIFIED
            outcome["reason"] = unverified
        launches = len(kernel_launches(self.case.steps))
        impossible = audit.speed_of_light(
            work, outcome["summary"]["median_ms"], self.backend.device, launches
        )
        if impossible:
            outcome["status"] = Status.IMPLAUSIBLE
            outcome["reason"] = f"faster than the hardware allows: {impossible}"
        elif self.implausible:
            outcome["status"] = Status.IMPLAUSIBLE
            outcome["reason"] = self.implausible
        elif measurement.gave_up:
            outcome["status"] = Status.PRUNED
            outcome["reason"] = gave_up_reason(measurement, self.plan.give_up_above_ms)
        # Energy stands where the time does: beside a verified time that can be ranked.
        if reading is not None and outcome["status"] in (Status.OK, Status.UNSTABLE):
            outcome["energy"] = reading
            if "missing" not in reading:
                outcome["metrics"].update(energy_metrics(reading, work.to_dict()))
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


def gave_up_reason(measurement: timing.Measurement, bar_ms: float | None) -> str:
    """Why timing stopped early, with the evidence: the samples, the fastest, the bar."""
    fastest = min(measurement.samples_ms)
    return (
        f"timing stopped after {len(measurement.samples_ms)} samples: the fastest, "
        f"{fastest:.4g} ms, is slower than the tuning run's bar of {bar_ms or 0:.4g} ms "
        "(the best so far plus its margin); verified, not ranked"
    )


def unverified_reason(bench: Any, variant: str, checker: Checker) -> str | None:
    """Why this variant's outputs cannot be checked, or None when they can."""
    if variant == bench.reference_variant:
        return "the reference: the other variants are checked against its outputs"
    if bench.reference_variant and not checker.has(bench.variant(variant).computes):
        return (
            f"not checked: the reference variant {bench.reference_variant!r} produced "
            "no outputs at this point"
        )
    if not bench.has_reference():
        return "no reference: the outputs were not checked"
    return None


def tolerances(
    case: Case, expected: dict[str, np.ndarray], dtypes: dict[str, Any], record: RunRecord | None
) -> dict[str, Tolerance]:
    """Each output's tolerance, from the type the variant produced it in."""
    return {
        name: case.tolerance_for(np.dtype(dtypes.get(name, np.float64)), record, name)
        for name in expected
    }


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
            launch.threads_per_block,
            attrs.registers_per_thread,
            attrs.static_shared_bytes + launch.shared_bytes,
            device,
        )
        record.update(
            threads_per_block=launch.threads_per_block,
            occupancy=occupancy,
            occupancy_limited_by=limiter,
        )
        attributes[launch.kernel] = record
    return attributes


def measure(
    backend: Backend,
    plan: Any,
    bound: Any,
    before_each: Callable[[], None],
    after_each: Callable[[float], None],
    batch_size: Callable[[int], int] = lambda wanted: 1,
    may_overlap: Callable[[int], bool] = lambda wanted: False,
) -> timing.Measurement:
    """The timing loop; `before_each` and `after_each` (given the interval's GPU ms) run
    around every timed interval, outside it. Cold samples run in batches
    (timing.measure_batches) where they are flushed: `batch_size(n)` says how many of the next
    n calls may share one (1 by default); `before_each` runs before each sample of a batch is
    enqueued, `after_each` for each of them once the batch has ended. `may_overlap(n)` says
    whether those calls may be enqueued while the batch before them still runs (timing.Ahead;
    never by default): `before_each` may then run for them before `after_each` for that one."""
    throttle = {"clock_mhz": backend.sm_clock_mhz, "max_clock_mhz": backend.device.sm_clock_mhz}
    if plan.policy.mode == "hot":
        return _measure_hot(backend, plan, bound, before_each, after_each, throttle)

    def start(wanted: int) -> Callable[[], timing.Batch]:
        # before_each restores in-out buffers before each sample: outside its interval
        wait = backend.enqueue_cold_batch(bound, plan.flush_l2, batch_size(wanted), before_each)

        def ended() -> timing.Batch:
            batch = wait()
            for elapsed in batch.samples_ms:
                after_each(elapsed)
            return batch

        return ended

    # Only flushed samples share a batch or go ahead: the flush keeps the GPU busy while the
    # host enqueues each sample's run. Without it the first of a batch (or one enqueued after
    # a wait) would hold the host's enqueue time in its interval and the rest (or one enqueued
    # behind a running batch) would not: one measurement, two distributions. Unflushed, every
    # batch is of one (the loop asks for no more than max_batch): its short path.
    ahead = timing.Ahead(start, may_overlap) if plan.flush_l2 else None
    most = timing.NOISE_CHECK_EVERY if plan.flush_l2 else 1
    return timing.measure_batches(
        lambda wanted: start(wanted)(),
        plan.policy,
        max_batch=most,
        give_up_above_ms=plan.give_up_above_ms,
        ahead=ahead,
        **throttle,
    )


def _measure_hot(
    backend: Backend,
    plan: Any,
    bound: Any,
    before_each: Callable[[], None],
    after_each: Callable[[float], None],
    throttle: dict[str, Any],
) -> timing.Measurement:
    """Hot samples, one at a time (timing.measure): N back-to-back runs each, N chosen from
    the fastest of three single runs."""

    def hot(runs: int) -> float:
        before_each()
        per_run = backend.time_hot_ms(bound, runs)
        after_each(per_run * runs)
        return per_run

    one_run = min(hot(1) for _ in range(3))
    runs = timing.hot_runs_per_sample(one_run, plan.policy)
    return timing.measure(
        lambda: hot(runs),
        plan.policy,
        runs_per_sample=runs,
        give_up_above_ms=plan.give_up_above_ms,
        **throttle,
    )


# Untrusted mode: the share of timed runs after which the inputs are compared with the set
# loaded (at random; every run's inputs are loaded afresh before it, so a write shows only
# in the run that made it).
UNTRUSTED_INPUT_CHECKS = 0.25


@dataclass
class AuditedSampler:
    """Around each call of the timing loop, outside the timed interval: in-out buffers
    restored; on audited calls the outputs poisoned before and, after, the device found idle
    and the outputs checked; in untrusted mode the input set drawn at random before every
    call and the inputs compared after it.

    Calls run in batches (`batch_size`): `before` runs as each call is enqueued, `after`
    for each once its batch has ended; a batch may be enqueued while the one before it still
    runs (`may_overlap`), never next to an audited call. So an audited call is a batch of its
    own: its poison is written with nothing of an earlier call still running, and its outputs
    are checked before anything else is enqueued. Untrusted mode's loads and comparisons are
    host work between runs: batches of one, each waited for before the next."""

    run: VariantRun
    schedule: audit.AuditSchedule
    checks: bool
    untrusted: bool
    warmup: int
    calls: int = 0  # calls ended (after them)
    enqueued: int = 0  # calls begun (before them)
    seconds: float = 0.0
    switched: bool = False
    # GPU ms of the samples after warm-up, by whether the input set changed before them.
    by_change: dict[bool, list[float]] = field(default_factory=lambda: {True: [], False: []})
    draw: random.Random = field(default_factory=random.SystemRandom)
    # Untrusted mode: whether the next calls change the set, two of each in every four, in an
    # order drawn from the OS's randomness (both kinds are sampled; neither is predictable).
    switches: list[bool] = field(default_factory=list)

    def batch_size(self, wanted: int) -> int:
        """How many of the next `wanted` calls may run in one batch: up to the next audited
        call, which runs alone; one at a time in untrusted mode."""
        call, schedule = self.enqueued, self.schedule
        if self.untrusted or schedule.every or schedule.audits(call):
            return 1
        to_audit = [later - call for later in schedule.chosen if later > call]
        return max(1, min([wanted, *to_audit]))

    def may_overlap(self, wanted: int) -> bool:
        """Whether the next calls (as many as `batch_size(wanted)`) may be enqueued while the
        batch before them still runs: not in untrusted mode (host work between runs), nor
        where either batch holds an audited call (nothing else may be in flight when its
        outputs are poisoned, nor be enqueued before they are checked)."""
        if self.untrusted or self.schedule.every:
            return False
        last = self.enqueued + self.batch_size(wanted)
        return not any(self.schedule.audits(call) for call in range(self.calls, last))

    def before(self) -> None:
        started = time.perf_counter()
        run = self.run
        audited = self.schedule.audits(self.enqueued)
        self.enqueued += 1
        if self.untrusted and run.checkable(SECOND):
            if not self.switches:
                self.switches = [True, True, False, False]
                self.draw.shuffle(self.switches)
            self.switched = self.switches.pop()
            which = other(run.current) if self.switched else run.current
            run.switch_to(which)  # written every time: the same cost whether it changed or not
        if audited:
            run.poison(first=False)
        else:
            run.restore_inout()
        self.seconds += time.perf_counter() - started

    def after(self, elapsed_ms: float) -> None:
        call, run = self.calls, self.run
        self.calls += 1
        if self.untrusted and call >= self.warmup:
            self.by_change[self.switched].append(elapsed_ms)
        if not self.schedule.audits(call):
            return
        started = time.perf_counter()
        waited_ms = _device_wait_ms(run.backend)  # the device idle: the outputs are final
        if self.checks and run.checkable(run.current):
            self._check_audited_run(call)
        # Only after the audited run's own outputs were checked: confirming a long wait runs
        # the kernel once more, over them.
        left_running = self._work_left_running(waited_ms, elapsed_ms)
        if left_running:
            raise Stop(
                {
                    "status": Status.IMPLAUSIBLE,
                    "reason": left_running,
                    "kernel_attributes": run.attributes,
                }
            )
        if self.untrusted and self.draw.random() < UNTRUSTED_INPUT_CHECKS:
            run.inputs_intact(f"after timed run {call + 1}")
        self.seconds += time.perf_counter() - started

    def _check_audited_run(self, call: int) -> None:
        """The audited run's outputs against the reference (poisoned before it)."""
        run = self.run
        verdict = run.check(run.bound.record, "audit", run.current)
        if not verdict.passed:
            run.inputs_intact(f"after timed run {call + 1}")
            raise Stop(
                {
                    "status": Status.INCORRECT,
                    "verification": verdict,
                    "kernel_attributes": run.attributes,
                    "metrics": run.record_metrics,
                    "reason": f"right on the checked run, wrong on timed run "
                    f"{call + 1} (outputs poisoned before it, checked after it): "
                    f"{verdict.message}",
                }
            )

    def repeat_effect(self) -> str | None:
        return audit.repeat_effect(self.by_change[True], self.by_change[False])

    def _work_left_running(self, first: float, elapsed_ms: float) -> str | None:
        """Why work was left running past this audited run's end event (`first`: the wait
        for the device to be idle after it), or None. The wait is read on the host clock,
        which a loaded host can stall (27 ms seen with an honest kernel on a shared H100
        host, 2026-11-28): a long wait is confirmed on one more run, outputs poisoned before
        it as for the audit, and only two in a row count."""
        run = self.run
        reason = audit.work_left_running(first, elapsed_ms)
        if reason is None:
            return None
        run.poison(first=False)
        again_ms = run.backend.time_once_ms(run.bound, run.plan.flush_l2)
        second = _device_wait_ms(run.backend)
        confirmed = audit.work_left_running(second, again_ms)
        return None if confirmed is None else f"{reason}, and {second:.2f} ms after the next"


def _device_wait_ms(backend: Backend) -> float:
    """How long a device-wide synchronize took, on the host clock."""
    started = time.perf_counter()
    backend.synchronize_device()
    return (time.perf_counter() - started) * 1e3


def run_host_variant(run: VariantRun) -> Outcome:
    """A CPU reference variant: synchronous work, so the host clock is the right timer."""
    plan, state, case = run.plan, run.state, run.case
    assert case is not None
    last: dict[str, dict[str, np.ndarray]] = {}

    def run_once() -> None:
        last["outputs"] = plan.bench.host_run(run.variant, state.point, state.inputs)

    def check(phase: str) -> Verification:
        try:
            state.checker.make(
                run.computes, lambda: plan.bench.reference(run.computes, state.point, state.inputs)
            )
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
    with run.clock.phase("fresh_wait"):
        state.sets.fresh.wait()  # the second set's thread would share the CPU being timed
    with run.clock.phase("timing"):
        measurement = timing.measure(lambda: timing.host_time_once_ms(run_once), plan.policy)
    recheck = check("recheck")
    if not recheck.passed:
        return {
            "status": Status.INCORRECT,
            "verification": recheck,
            "reason": f"right on the checked run, wrong after timing: {recheck.message}",
        }
    return timed_outcome(
        run.backend.device, measurement, verdict, {}, case.work_for(None), case.cgma
    )


def timed_outcome(
    device: Any,
    measurement: timing.Measurement,
    verdict: Verification,
    attributes: dict[str, Any],
    work: Any,
    cgma: float | None,
) -> Outcome:
    summary = summarize(measurement.samples_ms).to_dict()
    summary["discarded"] = measurement.discarded
    summary["runs_per_sample"] = measurement.runs_per_sample
    summary["clock_mhz"] = measurement.clock_mhz
    summary["clock_capped"] = measurement.clock_capped
    values = metrics.work_metrics(
        work.bytes_moved,
        work.flops,
        work.elements,
        summary["median_ms"],
        device.peak_bandwidth_gbps,
        device.peak_fp32_gflops,
        getattr(work, "level", "dram"),
        getattr(work, "precision", "fp32"),
    )
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

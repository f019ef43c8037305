"""A point's two input sets: the first, which every variant is checked and timed on, and a
second whose answer is known too; and the loader that puts either set into the very buffers
the variants are bound to.

The second set is what a kernel that caches its output, memoises by input address, or skips
outputs that already hold values gets wrong. Where the point before posed the same problem (it
differed only in compile-time parameters, which the reference does not read), it costs
nothing: that point's first set is handed over with its reference, its pristine device copies
and its device reference. Otherwise it is made on a thread while the GPU times the first set:
the first set with a few values of each floating-point array changed at random places (a memo
keyed by a few input values returns the first set's answer there), or, where no array is
floating-point (indices, offsets: values that must stay consistent), a fresh set from the
suite's own `inputs`. Untrusted mode always makes one. Seeds of made sets derive from the
point's, so a result's recorded seed reproduces them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench.engine import memory
from gpubench.engine.randoms import ParallelRandom
from gpubench.errors import PointError
from gpubench.model.benchmark import BufferSpec
from gpubench.model.phases import PhaseClock

if TYPE_CHECKING:
    from gpubench.backends.base import Backend

FIRST, SECOND = "a", "b"
# Which set a buffer holds when a kernel wrote it: neither.
WRITTEN = "written"
_SALT = 0x9E3779B97F4A7C15


def fresh_seed(seed: int) -> int:
    """The second set's seed, derived from the point's (documented, so it reproduces)."""
    return (seed ^ _SALT) & (2**63 - 1)


def other(which: str) -> str:
    return SECOND if which == FIRST else FIRST


# Values changed in each floating-point input array of the near copy: one per NEAR_SHARE
# elements, at least one and at most NEAR_CHANGES. Few, so that a memo keyed by k of n
# positions is likely to miss the change (it sees it with a chance of about k/n per changed
# value); more than one in large arrays, so that laziness in part of the output shows too.
NEAR_CHANGES = 16
NEAR_SHARE = 4096


def near_copy(
    first: dict[str, np.ndarray],
    rng: np.random.Generator,
    fresh: Callable[[], dict[str, np.ndarray]],
) -> dict[str, np.ndarray] | None:
    """The first set with a few values of each floating-point array replaced by values from
    other places of the same array (the suite's own distribution and domain), or, where those
    are equal to the old ones (a constant array, a single value), by the values at the same
    places of a fresh set (`fresh()`, made only then); None when no array is floating-point.
    Other arrays are the first set's, unchanged and shared."""
    near, changed, made = dict(first), False, None
    for name, array in first.items():
        if not np.issubdtype(array.dtype, np.floating) or not array.size:
            continue
        copy = np.array(array, copy=True, order="C")
        flat = copy.reshape(-1)
        count = max(1, min(NEAR_CHANGES, flat.size // NEAR_SHARE))
        places = rng.choice(flat.size, size=count, replace=False)
        donors = flat[rng.integers(0, flat.size, size=count)]
        same = donors.view(_unsigned(flat.dtype)) == flat[places].view(_unsigned(flat.dtype))
        if same.any():
            made = made if made is not None else fresh()
            other_array = made.get(name)
            if other_array is not None and other_array.shape == array.shape:
                donors[same] = np.ascontiguousarray(other_array).reshape(-1)[places[same]]
        flat[places] = donors
        near[name], changed = copy, True
    return near if changed else None


# Unsigned integers by item size: arrays compared bit for bit through them.
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _unsigned(dtype: Any) -> Any:
    return _UNSIGNED[np.dtype(dtype).itemsize]


@dataclass
class EarlierSet:
    """The previous point's first set, handed over as this point's second: its host arrays
    and references, and (where they stayed on the device) its pristine copies and device
    references, owned by whoever holds this."""

    point: dict[str, Any]
    inputs: dict[str, np.ndarray]
    # computes -> (host reference, device reference: (views, buffers) or None)
    references: dict[str, tuple[dict[str, np.ndarray], Any]]
    copies: dict[tuple[str, str], tuple[Any, BufferSpec]]

    def matches(self, inputs: dict[str, np.ndarray]) -> bool:
        """Whether it can stand in for `inputs`: the same arrays, shapes and types."""
        return inputs.keys() == self.inputs.keys() and all(
            a.shape == self.inputs[n].shape and a.dtype == self.inputs[n].dtype
            for n, a in inputs.items()
        )

    def free_device(self, backend: Backend) -> None:
        """Give its device memory back (the copies, the device references); the host arrays
        remain, to be uploaded where needed."""
        for buffer, _ in self.copies.values():
            backend.free(buffer)
        self.copies.clear()
        for computes, (host, device) in list(self.references.items()):
            if device is not None:
                for buffer in device[1]:
                    backend.free(buffer)
            self.references[computes] = (host, None)


def same_problem(
    bench: Any, earlier: dict[str, Any], point: dict[str, Any], tuned: tuple[str, ...] = ()
) -> bool:
    """Whether two points of `bench` pose the same problem: they differ in compile-time
    parameters only (or in the run-time ones a sweep file names as configuration, `tuned`),
    and the reference reads none of those."""
    reads = bench.reference_params
    if reads is None:
        return False
    differ = {k for k in earlier.keys() | point.keys() if earlier.get(k) != point.get(k)}
    configurable = _configurable(bench, tuned)
    return differ <= configurable and not differ & set(reads)


def _configurable(bench: Any, tuned: tuple[str, ...]) -> set[str]:
    """The parameters that may tell configurations of one problem apart: the compile-time
    ones, and the run-time ones a sweep file names as configuration."""
    return {p.name for p in bench.params if p.compile_time} | set(tuned)


def problem_key(
    bench: Any, point: dict[str, Any], tuned: tuple[str, ...] = ()
) -> tuple[Any, ...] | None:
    """What points that share a whole problem (inputs, references, device copies) agree on:
    the point without its configuration, the compile-time parameters (and the run-time ones
    a sweep file names, `tuned`) that neither the reference nor the inputs read; None where
    the suite cannot say which those are (every point a problem of its own)."""
    reads, made_from = bench.reference_params, bench.input_params
    if reads is None or made_from is None:
        return None
    configuration = _configurable(bench, tuned) - set(reads) - set(made_from)
    return tuple(sorted((k, repr(v)) for k, v in point.items() if k not in configuration))


def problem_seed(
    bench: Any, point: dict[str, Any], tuned: tuple[str, ...], run_seed: int
) -> int | None:
    """The seed of a point's first input set where the run has a seed and the suite says what
    the point's problem is: derived from both, so every worker of the run (on every GPU)
    draws the same inputs for the same problem and a new run draws new ones; None where the
    suite cannot say (its points draw their own)."""
    key = problem_key(bench, point, tuned)
    if key is None:
        return None
    text = repr((run_seed, bench.name, key)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") & (2**63 - 1)


def shares_problem(
    bench: Any, earlier: dict[str, Any], point: dict[str, Any], tuned: tuple[str, ...] = ()
) -> bool:
    """Whether `point` may take `earlier`'s whole state: the same problem_key, one known."""
    key = problem_key(bench, point, tuned)
    return key is not None and key == problem_key(bench, earlier, tuned)


def input_bytes(bench: Any, point: dict[str, Any]) -> int:
    """The bytes of a point's inputs, where the suite can say (0 where it cannot): how big a
    point is, for the orders that put the big ones first."""
    try:
        specs = bench.input_specs(point) or {}
    except Exception:  # a suite that cannot say: no size, the sweep's order
        return 0
    return sum(spec.nbytes for spec in specs.values())


def by_problem(
    bench: Any, points: list[dict[str, Any]], tuned: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The points in the order to run them: those of one problem together, so that
    consecutive configurations share its inputs and references; the biggest problems first
    (by their inputs' bytes; equal sizes where their first point was), and the sweep's order
    within a problem.

    Biggest first because the first problem waits for the compile of every configuration it
    runs: the more GPU work it holds, the more of the compiles run hidden behind it (a tuning
    sweep's configurations at its largest size first, the small sizes from builds that are
    ready)."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for index, point in enumerate(points):
        key = problem_key(bench, point, tuned)
        groups.setdefault(index if key is None else key, []).append(point)
    ordered = sorted(groups.values(), key=lambda group: input_bytes(bench, group[0]), reverse=True)
    return [point for group in ordered for point in group]


def shapes_match(specs: dict[str, BufferSpec] | None, inputs: dict[str, np.ndarray]) -> bool:
    """Whether arrays made for one point have the shapes and types another point declares
    (a suite whose inputs depend on a compile-time parameter gets fresh ones)."""
    return (
        bool(specs)
        and specs.keys() == inputs.keys()
        and all(
            tuple(spec.shape) == inputs[name].shape and np.dtype(spec.dtype) == inputs[name].dtype
            for name, spec in specs.items()
        )
    )


class FreshInputs:
    """The second set of inputs and the references of the computations named: handed over
    from the point before, or made on a thread from the moment the first set exists (a near
    copy of the first where it has floating-point arrays, else a fresh set)."""

    def __init__(
        self,
        bench: Any,
        point: Any,
        seed: int,
        computes: Iterable[str],
        first: dict[str, np.ndarray],
        earlier: EarlierSet | None = None,
    ) -> None:
        self.seconds = 0.0
        # "earlier" (the previous point's), "near" (the first with a few values changed) or
        # "fresh", once known.
        self.kind = ""
        self.earlier = earlier
        self._first = first
        self._bench, self._point, self._seed = bench, point, seed
        self._computes = list(computes)
        self._inputs: dict[str, np.ndarray] | None = None
        self._references: dict[str, dict[str, np.ndarray]] = {}
        self._failures: dict[str, BaseException] = {}
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._make, name="gpubench-fresh-inputs", daemon=True
        )
        if earlier is not None:
            self.kind, self._inputs = "earlier", earlier.inputs
            self._references = {c: host for c, (host, _) in earlier.references.items()}
            return
        self._thread.start()

    def _make(self) -> None:
        started = time.perf_counter()
        try:
            seed = fresh_seed(self._seed)

            def fresh() -> dict[str, np.ndarray]:
                return self._bench.inputs(self._point, ParallelRandom(seed))

            near = near_copy(self._first, np.random.default_rng(seed), fresh)
            self.kind, self._inputs = ("near", near) if near is not None else ("fresh", fresh())
            del near
            for computes in self._computes:
                try:
                    self._references[computes] = self._bench.reference(
                        computes, self._point, self._inputs
                    )
                except Exception as exc:  # made again where it is asked for
                    self._failures[computes] = exc
        except BaseException as exc:  # MemoryError, PointError: reported by inputs()
            self._error = exc
        finally:
            self.seconds = time.perf_counter() - started

    def wait(self) -> None:
        """Until the thread is done: before timing anything whose timed interval runs Python
        (a library call's enqueue, a CPU variant), which the thread would slow down."""
        if self._thread.is_alive():
            self._thread.join()

    def inputs(self) -> dict[str, np.ndarray]:
        """The second set; PointError when it could not be made."""
        self.wait()
        if self._error is not None or self._inputs is None:
            raise PointError(f"cannot make the second input set: {self._error!r}")
        return self._inputs

    def reference(self, computes: str) -> dict[str, np.ndarray]:
        """The second set's reference for `computes` (made now if the thread did not)."""
        inputs = self.inputs()
        # One the thread could not make is made here, now that the variant's case exists (a
        # suite may keep what its reference needs from `case`).
        self._failures.pop(computes, None)
        if computes not in self._references:
            self._references[computes] = self._bench.reference(computes, self._point, inputs)
        return self._references[computes]

    def describe(self) -> str:
        """The second set in words, for a re-check's reason."""
        self.wait()
        if self.kind == "earlier":
            return "the previous point's inputs in the same buffers"
        if self.kind == "near":
            return (
                "the same inputs with a few values of each floating-point array changed, "
                "in the same buffers"
            )
        return "fresh inputs in the same buffers"

    def close(self) -> None:
        self.wait()
        self._inputs = None
        self._first = {}
        self._references.clear()


def fresh_key(computes: str) -> str:
    """The checker's key for the second set's reference of `computes`."""
    return f"{computes}@{SECOND}"


@dataclass
class InputSets:
    """Which set each input buffer holds, the sets' device copies, and the loads between them.

    Set a lives in the placements the variants are bound to; a pristine copy of it and set b
    lie beside them (where device memory allows; else they are written from the host, and
    compared after a download)."""

    backend: Backend
    first: Any  # stages.Placements of set a
    fresh: FreshInputs
    clock: PhaseClock
    use_copies: bool = True
    second: Any = None  # stages.Placements of set b, made on first use
    copies: dict[tuple[str, str], tuple[Any, BufferSpec]] = field(default_factory=dict)
    holding: dict[tuple[str, str], str] = field(default_factory=dict)

    def extra_device_bytes(self, wanted: dict[str, str]) -> int:
        """Device bytes the copies of these inputs would still take (a's copy and b)."""
        missing = [
            name
            for name, where in wanted.items()
            if where == "device" and (name, where) not in self.copies
        ]
        return 2 * sum(self.first.inputs[name].nbytes for name in missing)

    def ready(self, wanted: dict[str, str]) -> None:
        """Set a in every buffer named ({name: location}), and its pristine copies made
        before any kernel runs on them."""
        for name, where in wanted.items():
            key = (name, where)
            buffer = self.first.get(name, where)
            if self.use_copies and key not in self.copies:
                spec = self.first.spec(name, where)
                with self.clock.phase("uploads"):
                    copy = self.backend.alloc(spec)
                    self.copies[key] = (copy, spec)
                    self.backend.restore(copy, buffer, spec)
            if self.holding.get(key, FIRST) != FIRST:
                self._write(FIRST, name, where, buffer)
            # Unknown until a check after the variant's runs finds set a intact: a variant that
            # stops early (or writes its inputs) leaves the next one a reload.
            self.holding[key] = WRITTEN

    def load(self, which: str, wanted: dict[str, str]) -> None:
        """Set `which` into the bound input buffers (outside any timed interval)."""
        for name, where in wanted.items():
            self._write(which, name, where, self.first.get(name, where))
            self.holding[(name, where)] = WRITTEN  # known again only once checked

    def pristine(self, which: str, name: str, where: str) -> Any:
        """A buffer holding input `name` of set `which`, never bound to a kernel (the source
        of an in-out output's initial values)."""
        earlier = self.fresh.earlier
        if which == FIRST or self._shared(name):
            return self.first.get(name, where)
        if earlier is not None and (name, where) in earlier.copies:
            return earlier.copies[(name, where)][0]
        return self._second().get(name, where)

    def _shared(self, name: str) -> bool:
        """Whether the second set holds the first set's very array for `name` (a near copy
        leaves non-floating arrays as they are)."""
        return self.fresh.inputs()[name] is self.first.inputs[name]

    def written(self, which: str, wanted: dict[str, str]) -> list[str]:
        """The inputs whose buffers no longer hold set `which` ("name (k of n elements)");
        the others are known to hold it."""
        found = []
        self.backend.synchronize_device()  # the loads are queued on the timing stream: once
        for name, where in wanted.items():
            spec = self.first.spec(name, where)
            differ = self._differing(which, name, where, spec)
            if differ:
                found.append(f"{name!r} ({differ:,} of {int(np.prod(spec.shape)):,} elements)")
            self.holding[(name, where)] = WRITTEN if differ else which
        return found

    def free(self) -> None:
        for buffer, _ in self.copies.values():
            self.backend.free(buffer)
        self.copies.clear()
        if self.second is not None:
            self.second.free()
        if self.fresh.earlier is not None:
            self.fresh.earlier.free_device(self.backend)
        self.fresh.close()

    def hand_over_copies(self) -> dict[tuple[str, str], tuple[Any, BufferSpec]]:
        """Set a's pristine device copies, given up (the next point's second set)."""
        copies, self.copies = self.copies, {}
        return copies

    # -- the set's values: a device copy where there is one, else the host arrays -------------
    def _second(self) -> Any:
        if self.second is None:
            inputs = self.fresh.inputs()
            self.clock.add("fresh_inputs", self.fresh.seconds)
            self.second = type(self.first)(self.backend, inputs, self.clock)
        return self.second

    def _source(self, which: str, name: str, where: str) -> Any | None:
        earlier = self.fresh.earlier
        if which == SECOND and earlier is not None and (name, where) in earlier.copies:
            return earlier.copies[(name, where)][0]
        if which == SECOND and self.use_copies and not self._shared(name):
            return self._second().get(name, where)
        copy = self.copies.get((name, where))
        return copy[0] if copy is not None else None

    def _host(self, which: str, name: str) -> np.ndarray:
        return self.first.inputs[name] if which == FIRST else self.fresh.inputs()[name]

    def _write(self, which: str, name: str, where: str, buffer: Any) -> None:
        spec = self.first.spec(name, where)
        source = self._source(which, name, where)
        if source is not None:
            self.backend.restore(buffer, source, spec)
        else:
            self.backend.write(buffer, spec, self._host(which, name))

    def _differing(self, which: str, name: str, where: str, spec: BufferSpec) -> int:
        """Elements of the bound buffer that differ, bit for bit, from set `which`."""
        buffer = self.first.get(name, where)
        source = self._source(which, name, where)
        if source is not None:
            on_device = _device_count_differing(self.backend, buffer, source, spec)
            if on_device is not None:
                return on_device
        got = self.backend.read(buffer, spec)
        return _count_differing(got, self._host(which, name))


def _bits(array: Any, dtype: Any) -> Any:
    """The array as unsigned integers of its item size (NaN equals itself bit for bit)."""
    unsigned = _UNSIGNED.get(np.dtype(dtype).itemsize)
    if unsigned is None:
        return array.reshape(-1).view(np.uint8)
    return array.reshape(-1).view(unsigned)


def _count_differing(got: np.ndarray, expected: np.ndarray) -> int:
    expected = np.ascontiguousarray(expected)
    differ = _bits(got, got.dtype) != _bits(expected, expected.dtype)
    if expected.dtype.itemsize not in (1, 2, 4, 8):
        return int(np.count_nonzero(differ.reshape(-1, expected.dtype.itemsize).any(axis=1)))
    return int(np.count_nonzero(differ))


def _device_count_differing(
    backend: Backend, buffer: Any, source: Any, spec: BufferSpec
) -> int | None:
    """The count compared on the GPU through CuPy, or None where it cannot be."""
    from gpubench.engine.checking import cupy_module, device_view
    from gpubench.engine.verify_device import count_differing

    left, right = backend.device_pointer(buffer), backend.device_pointer(source)
    cupy = cupy_module() if left is not None and right is not None else None
    if cupy is None or np.dtype(spec.dtype).itemsize not in (1, 2, 4, 8) or not spec.nbytes:
        return None
    flat = BufferSpec((int(np.prod(spec.shape)),), spec.dtype)
    a = _bits(device_view(cupy, left, flat), spec.dtype)
    b = _bits(device_view(cupy, right, flat), spec.dtype)
    return count_differing(cupy, a, b)


def copies_fit(backend: Backend, sets: InputSets, wanted: dict[str, str], need: Any) -> bool:
    """Whether the variant's buffers and the sets' device copies fit together."""
    extra = sets.extra_device_bytes(wanted)
    if not extra:
        return True
    free, _ = backend.memory_info()
    more = memory.Need(
        device=need.device + extra,
        host=need.host,
        what=f"{need.what} and the input sets' device copies",
    )
    return not memory.shortfall(more, free, memory.host_available_bytes())

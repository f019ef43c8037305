"""A tuning space: the points and variants of a sweep split into problems and configurations.

A problem is what the inputs and the reference read (a size, a dtype: gpubench.engine.input_sets
problem_key says which parameters those are); a configuration is the rest (compile-time
choices and the variant), which change only how fast the answer comes. Tuning finds the best
configuration of each problem, so each problem is searched on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpubench.errors import ConfigError

# The name under which a configuration holds its variant, beside its parameters.
VARIANT = "variant"


@dataclass
class Problem:
    """One problem's configurations, in the sweep's order."""

    # The parameters that make the problem (size=4096, dtype=float32, ...).
    fixed: dict[str, Any]
    # Each configuration: parameter name (and VARIANT) -> value.
    configurations: list[dict[str, Any]]
    # The whole (point, variant) of each configuration, what a recorded result is found by.
    entries: list[tuple[dict[str, Any], str]]
    label: str = ""
    # The parameters whose values differ among the configurations, each with its values in
    # order: the dimensions a strategy searches along.
    axes: dict[str, list[Any]] = field(default_factory=dict)

    def coordinates(self) -> list[tuple[int, ...]]:
        """Each configuration as the positions of its values along the axes."""
        where = {name: {token(v): i for i, v in enumerate(vs)} for name, vs in self.axes.items()}
        return [
            tuple(where[name][token(c[name])] for name in self.axes) for c in self.configurations
        ]

    def describe(self, index: int) -> str:
        """A configuration as `name=value` of the parameters that vary (all, where none do)."""
        configuration = self.configurations[index]
        names = list(self.axes) or list(configuration)
        return ", ".join(f"{name}={configuration[name]}" for name in names)


@dataclass
class Space:
    suite: str
    problems: list[Problem]
    # Variants left out because they compute something else than the problem's product
    # (transpose's copy, the ceiling): variant -> what it computes.
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(len(problem.configurations) for problem in self.problems)


def token(value: Any) -> str:
    """A value as a key that tells 1 from 1.0 from '1' and from True."""
    return f"{type(value).__name__}:{value!r}"


def sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return (1, token(value))
    return (0, value)


def _axes(configurations: list[dict[str, Any]]) -> dict[str, list[Any]]:
    axes: dict[str, list[Any]] = {}
    for name in configurations[0] if configurations else {}:
        distinct = {token(c[name]): c[name] for c in configurations}
        if len(distinct) > 1:
            axes[name] = sorted(distinct.values(), key=sort_key)
    return axes


def configuration_names(bench: Any, point: dict[str, Any], tuned: tuple[str, ...] = ()) -> set[str]:
    """The parameters of `point` that are configuration rather than problem: those its
    problem key leaves out (or, for a suite that cannot say, its compile-time parameters),
    and the run-time ones the sweep file names (`tune: configuration:`)."""
    from gpubench.engine.input_sets import problem_key

    key = problem_key(bench, point, tuned)
    if key is None:
        found = {p.name for p in bench.params if p.compile_time} & set(point)
    else:
        found = set(point) - {name for name, _ in key}
    return found | (set(tuned) & set(point))


def build(
    suite: str,
    entries: list[tuple[dict[str, Any], str]],
    source: str,
    split: Callable[[dict[str, Any]], set[str]],
    reference_variant: str | None = None,
) -> Space:
    """The space of these (point, variant) entries, one problem per distinct problem (the
    parameters `split` does not call configuration), each where its first entry was; a
    ConfigError where a problem has a single configuration. A kernel file's reference
    variant is left out: it is what the others are checked against, not a candidate."""
    groups: dict[str, Problem] = {}
    for point, variant in entries:
        if variant == reference_variant and any(v != variant for _, v in entries):
            continue
        names = split(point)
        fixed = {k: v for k, v in point.items() if k not in names}
        configuration = {k: v for k, v in point.items() if k in names} | {VARIANT: variant}
        key = repr(sorted((k, token(v)) for k, v in fixed.items()))
        problem = groups.setdefault(key, Problem(fixed, [], []))
        problem.configurations.append(configuration)
        problem.entries.append((point, variant))
    problems = list(groups.values())
    for problem in problems:
        problem.axes = _axes(problem.configurations)
    _label(problems)
    for problem in problems:
        if len(problem.configurations) < 2:
            raise ConfigError(
                f"the problem {problem.label} has a single configuration "
                f"({problem.describe(0)}): nothing to tune",
                source=source,
            )
    return Space(suite, problems)


def _label(problems: list[Problem]) -> None:
    """Each problem named by the parameters that tell it from the others (the one problem by
    all of its own)."""
    if len(problems) == 1:
        only = problems[0]
        words = [f"{name}={value}" for name, value in only.fixed.items()]
        only.label = ", ".join(words) or "(the one problem)"
        return
    differing = [
        name for name in problems[0].fixed if len({token(p.fixed.get(name)) for p in problems}) > 1
    ]
    for problem in problems:
        problem.label = ", ".join(f"{name}={problem.fixed.get(name)}" for name in differing)


def of_suite(
    bench: Any,
    entries: list[tuple[dict[str, Any], str]],
    source: str,
    baseline: str | None = None,
    tuned: tuple[str, ...] = (),
) -> Space:
    """The space of entries of a suite: its problems as gpubench.engine.input_sets sees them
    (with the run-time parameters `tuned` as configuration), of the variants that compute
    what the baseline computes (the sweep's, else the suite's)."""
    answers, left_out = _same_product(bench, entries, baseline)
    space = build(
        bench.name,
        answers,
        source,
        lambda point: configuration_names(bench, point, tuned),
        getattr(bench, "reference_variant", None),
    )
    space.left_out = left_out
    return space


def _same_product(
    bench: Any, entries: list[tuple[dict[str, Any], str]], baseline: str | None
) -> tuple[list[tuple[dict[str, Any], str]], dict[str, str]]:
    """The entries whose variant computes the baseline's product, and the variants left out
    with what they compute: a copy is no way to transpose, however fast."""
    variants = {variant for _, variant in entries}
    chosen = baseline or getattr(bench, "baseline", None)
    if chosen not in variants:
        chosen = entries[0][1] if entries else None
    if chosen is None or not hasattr(bench, "variant"):
        return entries, {}
    product = bench.variant(chosen).computes
    left_out = {v: bench.variant(v).computes for v in variants}
    left_out = {v: computes for v, computes in left_out.items() if computes != product}
    return [entry for entry in entries if entry[1] not in left_out], left_out


def sweep_entries(spec: Any, bench: Any) -> list[tuple[dict[str, Any], str]]:
    """A sweep file's (point, variant) entries: its points (parameters, zips and constraints
    applied) times its variants."""
    return [(point, variant) for point in spec.points(bench) for variant in spec.variants]

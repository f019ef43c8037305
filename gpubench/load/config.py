"""YAML sweep file → a validated SweepSpec. Every error names the file, the key and the value.

Nothing here touches the GPU: a config is fully checked before any device work starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError, did_you_mean, quote
from gpubench.formats.yaml_file import MAX_FILE_BYTES, parse_yaml, read_document
from gpubench.load import registry
from gpubench.model import sweep
from gpubench.model.benchmark import Benchmark, Point
from gpubench.model.results import HISTORY_DEFAULT_PATH
from gpubench.model.timing import TimingPolicy

__all__ = [
    "MAX_FILE_BYTES",
    "SweepSpec",
    "load",
    "parse_yaml",
    "read_document",
    "spec_from_mapping",
]

TOP_LEVEL_KEYS = (
    "suite", "kernel", "description", "variants", "baseline", "params", "zip", "constraints",
    "timing", "outputs", "history", "tune",
)  # fmt: skip
OUTPUT_KEYS = ("json", "csv", "jsonl", "history")


@dataclass(frozen=True)
class Outputs:
    json: str | None = None
    csv: str | None = None
    jsonl: str | None = None
    # The history store every run of this sweep file is appended to (gpubench history).
    history: str | None = None


@dataclass
class SweepSpec:
    suite: str
    source: str
    variants: tuple[str, ...]
    baseline: str
    axes: dict[str, list[Any]]
    zipped: list[dict[str, list[Any]]] = field(default_factory=list)
    constraints: list[sweep.Constraint] = field(default_factory=list)
    timing: TimingPolicy = field(default_factory=TimingPolicy)
    outputs: Outputs = field(default_factory=Outputs)
    description: str = ""
    # How to find the suite again (in a worker process): its name, or its .py file's path.
    suite_ref: str = ""
    # Run-time parameters `gpubench tune` searches as configuration (`tune: configuration:`),
    # beside the compile-time ones neither the reference nor the inputs read.
    tuned: tuple[str, ...] = ()
    # The suite, loaded once when the file was read (the engine never looks it up again).
    bench: Benchmark | None = field(default=None, repr=False, compare=False)
    _points: list[Point] | None = field(default=None, repr=False, compare=False)

    def points(self, bench: Benchmark | None = None) -> list[Point]:
        """The sweep's points, expanded and validated once, when the file is read (a dry run
        of 10^6 points must not pay for it twice)."""
        if self._points is None:
            self._points = self._expand(bench or self.bench)
        return self._points

    def _expand(self, bench: Benchmark) -> list[Point]:
        try:
            points = sweep.expand(bench, self.axes, self.zipped, self.constraints)
        except sweep.ConstraintError as exc:
            raise ConfigError(str(exc), source=self.source, key="constraints") from None
        except sweep.DroppedValue as exc:
            raise ConfigError(str(exc), source=self.source, key=f"params.{exc.name}") from None
        except sweep.TooManyPoints as exc:
            raise ConfigError(str(exc), source=self.source, key="params") from None
        if not points:
            raise ConfigError(
                "the sweep is empty: the constraints rule out every combination of params",
                source=self.source,
                key="constraints",
            )
        found = bench.validate_points(points)
        if found:
            index, problem = found
            raise ConfigError(
                f"{problem}, at the point {_fmt(points[index])}", source=self.source, key="params"
            )
        return points

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "suite_ref": self.suite_ref,
            "source": self.source,
            "variants": list(self.variants),
            "baseline": self.baseline,
            "axes": self.axes,
            "zip": self.zipped,
            "constraints": [c.text for c in self.constraints],
            "timing": self.timing.to_dict(),
            "description": self.description,
        } | ({"tune": {"configuration": list(self.tuned)}} if self.tuned else {})


def _fmt(point: Point) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


def _check_keys(mapping: dict, allowed: tuple[str, ...], source: str, where: str) -> None:
    for key in mapping:
        if key not in allowed:
            hint = did_you_mean(str(key), allowed)
            raise ConfigError(
                f"unknown key {quote(key)}{hint}; allowed: {', '.join(allowed)}",
                source=source,
                key=f"{where}.{key}" if where else str(key),
            )


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _coerce_values(bench: Benchmark, name: str, raw: Any, source: str, key: str) -> list[Any]:
    try:
        param = bench.param(name)
    except KeyError:
        known = [p.name for p in bench.params]
        raise ConfigError(
            f"unknown parameter {quote(name)} for suite {quote(bench.name)}"
            f"{did_you_mean(str(name), known)}; parameters: {', '.join(known)}",
            source=source,
            key=key,
        ) from None
    values = _as_list(raw)
    if not values:
        raise ConfigError("empty list: give at least one value", source=source, key=key)
    coerced = []
    for i, value in enumerate(values):
        where = f"{key}[{i}]" if isinstance(raw, list) else key
        try:  # a list or mapping as one value is refused there too, in the same words
            coerced.append(param.coerce(value))
        except ValueError as exc:
            raise ConfigError(str(exc), source=source, key=where) from None
    return coerced


def parse_timing(raw: Any, source: str, base: TimingPolicy | None = None) -> TimingPolicy:
    base = base or TimingPolicy()
    if raw is None:
        return base
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping, got {quote(raw)}", source=source, key="timing")
    types = TimingPolicy.field_types()
    _check_keys(raw, tuple(types), source, "timing")
    values = {f.name: getattr(base, f.name) for f in fields(TimingPolicy)}
    for key, value in raw.items():
        kind = types[key]
        where = f"timing.{key}"
        if kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(
                    f"expected true or false, got {quote(value)}", source=source, key=where
                )
        elif kind is str:
            if not isinstance(value, str):
                raise ConfigError(f"expected text, got {quote(value)}", source=source, key=where)
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(
                    f"expected an integer, got {quote(value)}", source=source, key=where
                )
        else:
            try:
                if isinstance(value, bool):
                    raise ValueError
                value = float(value)  # `1e-3` arrives as a string from YAML 1.1
            except (TypeError, ValueError, OverflowError):
                raise ConfigError(
                    f"expected a number, got {quote(value)}", source=source, key=where
                ) from None
            if not math.isfinite(value):
                raise ConfigError(
                    f"expected a finite number, got {quote(value)}", source=source, key=where
                )
        values[key] = value
    policy = TimingPolicy(**values)
    for name, problem in policy.check():
        raise ConfigError(
            f"{problem} (got {quote(getattr(policy, name))})", source=source, key=f"timing.{name}"
        )
    return policy


def _parse_variants(bench: Benchmark, raw: Any, source: str) -> tuple[str, ...]:
    if raw is None:
        return bench.variant_names
    names = _as_list(raw)
    if not names:
        raise ConfigError("empty list: name at least one variant", source=source, key="variants")
    for i, name in enumerate(names):
        if name not in bench.variant_names:
            raise ConfigError(
                f"unknown variant {quote(name)}{did_you_mean(str(name), bench.variant_names)}; "
                f"variants of {bench.name}: {', '.join(bench.variant_names)}",
                source=source,
                key=f"variants[{i}]",
            )
    if len(set(names)) != len(names):
        raise ConfigError(f"a variant is listed twice: {names}", source=source, key="variants")
    return tuple(names)


def _suite_ref(value: str, source: str) -> str:
    """A suite name as it is; a suite .py file relative to the sweep file (or the current
    directory) as an absolute path."""
    if not value.endswith((".py", ".yaml", ".yml")):
        return value
    beside_config = Path(source).parent / value
    path = beside_config if beside_config.is_file() else Path(value)
    return str(path.resolve())


def spec_from_mapping(data: Any, source: str) -> SweepSpec:
    if not isinstance(data, dict):
        raise ConfigError(
            f"expected a mapping at the top level, got {type(data).__name__}", source=source
        )
    _check_keys(data, TOP_LEVEL_KEYS, source, "")
    if "kernel" not in data and "suite" in data:  # a kernel file is checked by its own schema
        from gpubench.formats.sweep_file import SweepFile, check

        check(data, SweepFile, source)
    bench, suite_ref = _parse_suite(data, source)
    variants, baseline = _parse_variants_and_baseline(bench, data, source)
    axes = _parse_params(bench, data.get("params") or {}, source)
    zipped = _parse_zip(bench, data.get("zip") or [], set(axes), source)
    constraints = _parse_constraints(bench, data.get("constraints") or [], source)
    outputs = _parse_outputs(data.get("outputs") or {}, source)
    outputs = _with_history(outputs, data.get("history"), source)
    description = _parse_description(data.get("description") or "", source)
    tuned = _parse_tune(bench, data.get("tune"), source)
    spec = SweepSpec(
        suite=bench.name,
        source=source,
        variants=variants,
        baseline=baseline,
        axes=axes,
        zipped=zipped,
        constraints=constraints,
        timing=parse_timing(data.get("timing"), source),
        outputs=outputs,
        description=description,
        suite_ref=suite_ref,
        tuned=tuned,
        bench=bench,
    )
    spec.points()  # expand once now, so an empty or impossible sweep fails before the GPU
    return spec


def _parse_suite(data: dict, source: str) -> tuple[Benchmark, str]:
    """The suite (a name, a suite file) or the kernel file itself, and how to find it again."""
    if "kernel" in data:
        # A kernel file: the suite is declared right here, and its params are the sweep.
        from gpubench.kernelfile import benchmark as kernelfile_benchmark

        if "suite" in data:
            raise ConfigError(
                "a file has either `suite:` (a sweep of a suite) or `kernel:` "
                "(your own kernel), not both",
                source=source,
                key="kernel",
            )
        bench = kernelfile_benchmark.benchmark_from(data, source)
        return bench, str(Path(source).resolve())
    if "suite" not in data:
        raise ConfigError(
            "missing required key 'suite' (or `kernel:` for your own kernel)",
            source=source,
            key="suite",
        )
    suite_ref = _suite_ref(str(data["suite"]), source)
    return registry.get(suite_ref, source=source, key="suite"), suite_ref


def _parse_variants_and_baseline(
    bench: Benchmark, data: dict, source: str
) -> tuple[tuple[str, ...], str]:
    variants = _parse_variants(bench, data.get("variants"), source)
    reference = getattr(bench, "reference_variant", None)
    if reference:
        # The variant the others are checked against runs first at every point.
        variants = (reference, *(v for v in variants if v != reference))
    baseline = data.get("baseline", bench.baseline)
    if baseline not in bench.variant_names:
        raise ConfigError(
            f"unknown variant {quote(baseline)}{did_you_mean(str(baseline), bench.variant_names)}",
            source=source,
            key="baseline",
        )
    # A baseline named beside variants that leave it out would run nowhere: every speedup
    # would be missing without a word. (The suite's default baseline may be left out.)
    if "baseline" in data and data.get("variants") is not None and baseline not in variants:
        raise ConfigError(
            f"{quote(baseline)} is not among the variants run ({', '.join(variants)}): "
            "add it to variants or leave baseline out",
            source=source,
            key="baseline",
        )
    return variants, baseline


def _parse_params(bench: Benchmark, raw: Any, source: str) -> dict[str, list[Any]]:
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping, got {quote(raw)}", source=source, key="params")
    return {
        name: _coerce_values(bench, name, value, source, f"params.{name}")
        for name, value in raw.items()
    }


def _parse_zip(
    bench: Benchmark, raw: Any, taken: set[str], source: str
) -> list[dict[str, list[Any]]]:
    """Groups of parameter lists that vary together; a parameter is set in one place only."""
    if not isinstance(raw, list):
        raise ConfigError("expected a list of groups", source=source, key="zip")
    zipped = []
    for gi, group in enumerate(raw):
        where = f"zip[{gi}]"
        if not isinstance(group, dict) or not group:
            raise ConfigError(
                f"expected a mapping of parameter lists, got {quote(group)}",
                source=source,
                key=where,
            )
        coerced = {}
        for name, values in group.items():
            if name in taken:
                raise ConfigError(
                    f"parameter {quote(name)} is set twice (params or another zip group)",
                    source=source,
                    key=f"{where}.{name}",
                )
            if not isinstance(values, list):
                raise ConfigError(
                    f"expected a list, got {quote(values)}", source=source, key=f"{where}.{name}"
                )
            coerced[name] = _coerce_values(bench, name, values, source, f"{where}.{name}")
            taken.add(name)
        lengths = sorted({len(values) for values in coerced.values()})
        if len(lengths) > 1:
            raise ConfigError(
                f"lists of one zip group must have the same length, got lengths {lengths}",
                source=source,
                key=where,
            )
        zipped.append(coerced)
    return zipped


def _parse_constraints(bench: Benchmark, raw: Any, source: str) -> list[sweep.Constraint]:
    if not isinstance(raw, list):
        raise ConfigError("expected a list of conditions", source=source, key="constraints")
    constraints = []
    for ci, text in enumerate(raw):
        try:
            constraints.append(sweep.Constraint.parse(text, [p.name for p in bench.params]))
        except ValueError as exc:
            raise ConfigError(str(exc), source=source, key=f"constraints[{ci}]") from None
    return constraints


def _parse_outputs(raw: Any, source: str) -> Outputs:
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping, got {quote(raw)}", source=source, key="outputs")
    _check_keys(raw, OUTPUT_KEYS, source, "outputs")
    for key, value in raw.items():
        if not isinstance(value, str) or not value:
            raise ConfigError(
                f"expected a file path, got {quote(value)}", source=source, key=f"outputs.{key}"
            )
    return Outputs(**raw)


def _with_history(outputs: Outputs, raw: Any, source: str) -> Outputs:
    """`history: PATH` (or `history: true` for results/history.sqlite) at the top level: the
    store every run of this file is appended to; the same as `outputs: {history: PATH}`."""
    if raw is None or raw is False:
        return outputs
    if raw is True:
        raw = HISTORY_DEFAULT_PATH
    if not isinstance(raw, str) or not raw:
        raise ConfigError(
            f"expected a file path or true, got {quote(raw)}", source=source, key="history"
        )
    if outputs.history and outputs.history != raw:
        raise ConfigError(
            f"outputs.history names {outputs.history}: give the store once",
            source=source,
            key="history",
        )
    return Outputs(json=outputs.json, csv=outputs.csv, jsonl=outputs.jsonl, history=raw)


def _parse_description(raw: Any, source: str) -> str:
    if not isinstance(raw, str):
        raise ConfigError(f"expected text, got {quote(raw)}", source=source, key="description")
    return raw


def _parse_tune(bench: Benchmark, raw: Any, source: str) -> tuple[str, ...]:
    """`tune: configuration: [...]`: parameters of the suite that neither its reference nor
    its inputs read (a parameter they read is part of the problem: tuning it would compare
    answers to different questions)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping, got {quote(raw)}", source=source, key="tune")
    _check_keys(raw, ("configuration",), source, "tune")
    names = raw.get("configuration") or []
    reads = set(bench.reference_params or ()) | set(bench.input_params or ())
    known = [p.name for p in bench.params]
    for number, name in enumerate(names):
        key = f"tune.configuration[{number}]"
        if name not in known:
            raise ConfigError(
                f"unknown parameter {quote(name)}{did_you_mean(str(name), known)}",
                source=source,
                key=key,
            )
        if name in reads:
            raise ConfigError(
                f"{quote(name)} is read by the suite's reference or inputs: it is part of the "
                "problem, not a configuration",
                source=source,
                key=key,
            )
    return tuple(dict.fromkeys(names))


def load(path: str | Path) -> SweepSpec:
    data = read_document(path)
    if data is None:
        raise ConfigError("the file is empty", source=str(path))
    return spec_from_mapping(data, str(path))


def configs_dir() -> Path | None:
    """The bundled sweep files: configs/ beside the package in a checkout, or inside it in an
    installed wheel."""
    package = Path(__file__).resolve().parents[1]  # gpubench/
    for candidate in (package.parent / "configs", package / "configs"):
        if candidate.is_dir():
            return candidate
    return None


def bundled_configs() -> list[Path]:
    """The sweep files that ship, and the kernel-file examples (configs/examples/)."""
    directory = configs_dir()
    if directory is None:
        return []
    return sorted(directory.glob("*.yaml")) + sorted((directory / "examples").glob("*.yaml"))


def find(name: str) -> Path:
    """A sweep file by path, or a bundled one by name (`smoke`, `smoke.yaml`)."""
    if not name.strip():  # Path("") is the working directory: never what was meant
        message = "an empty path: give a sweep file or a bundled sweep's name"
        raise ConfigError(message, source="command line", key="CONFIG")
    path = Path(name)
    try:
        if path.exists() or len(path.parts) > 1:
            return path
    except OSError:  # a name the file system refuses (too long): not a bundled sweep either
        return path
    for candidate in bundled_configs():
        if name in (candidate.stem, candidate.name):
            return candidate
    known = [p.stem for p in bundled_configs()]
    raise ConfigError(
        f"no such file, and no bundled sweep of that name{did_you_mean(path.stem, known)}"
        f" (bundled: {', '.join(known)})",
        source=name,
    )


def describe(path: Path) -> tuple[str, str]:
    """(suite, first comment line) of a bundled sweep file, for `gpubench list --configs`."""
    text = path.read_text(encoding="utf-8")
    comment = next(
        (line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), ""
    )
    # The value less a YAML comment after it (" # ...").
    suite = next(
        (
            line.split(":", 1)[1].split(" #", 1)[0].strip()
            for line in text.splitlines()
            if line.startswith("suite:")
        ),
        "",
    )
    if not suite and any(line.startswith("kernel:") for line in text.splitlines()):
        suite = "kernel file"
    return suite, comment

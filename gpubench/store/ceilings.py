"""Measured ceilings of one GPU: made from a run of the `ceilings` suite, kept per GPU UUID,
read back by `gpubench roofline`. No GPU is touched here."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError

RECORD_KIND = "gpubench-ceilings"
RECORD_VERSION = 1


@dataclass(frozen=True)
class Ceiling:
    key: str
    variant: str  # the ceilings suite's variant that measures it
    metric: str  # the result metric it is read from
    unit: str
    label: str
    theoretical: str | None  # the DeviceInfo property with the theoretical figure, if any


CEILINGS: tuple[Ceiling, ...] = (
    Ceiling("dram_read_gbps", "dram_read", "gbps", "GB/s", "DRAM read", "peak_bandwidth_gbps"),
    Ceiling("dram_write_gbps", "dram_write", "gbps", "GB/s", "DRAM write", "peak_bandwidth_gbps"),
    Ceiling(
        "dram_copy_gbps",
        "dram_copy",
        "gbps",
        "GB/s",
        "DRAM copy (read + write)",
        "peak_bandwidth_gbps",
    ),
    Ceiling("l2_read_gbps", "l2_read", "gbps", "GB/s", "L2 read", None),
    Ceiling("shared_gbps", "shared_read", "gbps", "GB/s", "shared memory read", "peak_shared_gbps"),
    Ceiling("fp32_gflops", "fp32_fma", "gflops", "GFLOP/s", "FP32 FMA", "peak_fp32_gflops"),
    Ceiling("fp64_gflops", "fp64_fma", "gflops", "GFLOP/s", "FP64 FMA", "peak_fp64_gflops"),
    Ceiling("fp16_gflops", "fp16_fma", "gflops", "GFLOP/s", "FP16 half2 FMA", "peak_fp16_gflops"),
    Ceiling(
        "tensor_fp16_gflops",
        "tensor_fp16",
        "gflops",
        "GFLOP/s",
        "FP16 tensor cores (cuBLAS GEMM)",
        None,
    ),
)


@dataclass
class CeilingsRecord:
    gpu_uuid: str | None
    gpu_name: str
    measured: dict[str, float]
    theoretical: dict[str, float | None]
    environment: dict[str, Any] = field(default_factory=dict)
    # Where the figures come from: "measured" (gpubench ceilings) or "theoretical" (no
    # measurement for this GPU: the device's theoretical peaks stand in).
    source: str = "measured"
    measured_at: str = ""
    # The median SM clock (MHz) each ceiling was measured at, where it was read...
    clock_mhz: dict[str, float] = field(default_factory=dict)
    # ...and the ceilings whose load capped the clock below the throttle threshold throughout
    # (the tensor-core GEMM under the power limit): their figure holds at that clock.
    clock_capped: list[str] = field(default_factory=list)

    def get(self, key: str) -> float | None:
        """The measured figure, else the theoretical one."""
        return self.measured.get(key) or self.theoretical.get(key)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": RECORD_KIND, "version": RECORD_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, record: Any, source: str) -> CeilingsRecord:
        """A record from its JSON form; a ConfigError naming the file, the field path and the
        value where it does not fit the ceilings format (gpubench.formats.ceilings)."""
        from gpubench.formats import ceilings as formats
        from gpubench.formats import validate

        if not isinstance(record, dict) or record.get("kind") != RECORD_KIND:
            raise ConfigError("is not a ceilings record (made by gpubench ceilings)", source=source)
        validate(record, formats.CeilingsRecord, source=source)
        return cls(
            gpu_uuid=record.get("gpu_uuid"),
            gpu_name=record["gpu_name"],
            measured={k: float(v) for k, v in record["measured"].items()},
            theoretical={
                k: None if v is None else float(v)
                for k, v in (record.get("theoretical") or {}).items()
            },
            environment=dict(record.get("environment") or {}),
            source=record.get("source", "measured"),
            measured_at=record.get("measured_at", ""),
            clock_mhz={k: float(v) for k, v in (record.get("clock_mhz") or {}).items()},
            clock_capped=list(record.get("clock_capped") or []),
        )


def theoretical_from_device(device: dict[str, Any]) -> dict[str, float | None]:
    """Theoretical figures from an environment record's device entry."""
    return {c.key: device.get(c.theoretical) if c.theoretical else None for c in CEILINGS}


def from_results(results: list[Any], environment: dict[str, Any], when: str = "") -> CeilingsRecord:
    """A ceilings record from a run of the ceilings suite: each ceiling is its variant's
    verified median-based metric (failed or skipped variants are left out)."""
    best: dict[str, tuple[float, Any]] = {}  # ceiling key → (highest figure, its result)
    for ceiling in CEILINGS:
        for r in results:
            if r.suite == "ceilings" and r.variant == ceiling.variant and r.status.is_measured:
                value = float(r.metrics.get(ceiling.metric) or 0.0)
                if value > best.get(ceiling.key, (0.0, None))[0]:
                    best[ceiling.key] = (value, r)
    measured = {key: value for key, (value, _) in best.items()}
    # Each ceiling's clock and cap come with the result its figure is from.
    summaries = {key: r.summary or {} for key, (_, r) in best.items()}
    clock_mhz = {key: float(s["clock_mhz"]) for key, s in summaries.items() if s.get("clock_mhz")}
    capped = [key for key, s in summaries.items() if s.get("clock_capped")]
    device = environment.get("device") or {}
    return CeilingsRecord(
        gpu_uuid=environment.get("gpu_uuid"),
        gpu_name=str(device.get("name", "unknown GPU")),
        measured=measured,
        theoretical=theoretical_from_device(device),
        environment=environment,
        measured_at=when,
        clock_mhz=clock_mhz,
        clock_capped=capped,
    )


def theoretical_only(environment: dict[str, Any]) -> CeilingsRecord:
    device = environment.get("device") or {}
    return CeilingsRecord(
        gpu_uuid=environment.get("gpu_uuid"),
        gpu_name=str(device.get("name", "unknown GPU")),
        measured={},
        theoretical=theoretical_from_device(device),
        environment=environment,
        source="theoretical",
    )


def store_dir() -> Path:
    from gpubench.caches import cache_root

    return cache_root() / "ceilings"


def _file_for(uuid: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in uuid)[:100]
    return store_dir() / f"{safe}.json"


def save(record: CeilingsRecord, path: str | Path | None = None) -> Path:
    """Write the record (atomically) to `path`, or to the store under its GPU UUID."""
    if path is None:
        if not record.gpu_uuid:
            raise ConfigError("the GPU has no UUID here: give --json FILE to keep the ceilings")
        path = _file_for(record.gpu_uuid)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record.to_dict(), indent=1, default=str))
        tmp.replace(target)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the ceilings ({exc.strerror})", source=str(target)
        ) from None
    return target


def load_for(uuid: str | None) -> CeilingsRecord | None:
    """The stored record of this GPU, if any."""
    if not uuid:
        return None
    path = _file_for(uuid)
    if not path.is_file():
        return None
    return load_file(path)


# A ceilings record is a few kB; a file past this size is read as a results file of the
# ceilings suite (with the results' own limits) and refused outright if it claims to be a record.
MAX_RECORD_BYTES = 1 << 20


def load_file(path: str | Path) -> CeilingsRecord:
    """A ceilings record, or a results file of the ceilings suite (JSON or JSON lines)."""
    source = str(path)
    from gpubench.model.results import MAX_LOG_BYTES, check_readable, size_text

    what = "a ceilings record is a JSON file"
    try:
        check_readable(path, what, "a ceilings record or results file", MAX_LOG_BYTES)
        with open(path, "rb") as handle:
            raw = handle.read(MAX_RECORD_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror}", source=source) from None
    if len(raw) > MAX_RECORD_BYTES:
        if RECORD_KIND.encode() in raw[:200]:
            raise ConfigError(
                f"more than {size_text(MAX_RECORD_BYTES)}: a ceilings record is at most "
                f"{size_text(MAX_RECORD_BYTES)}",
                source=source,
            )
        return _from_results_file(source)
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", source=source) from None
    except (ValueError, RecursionError):
        record = None
    if isinstance(record, dict) and record.get("kind") == RECORD_KIND:
        return CeilingsRecord.from_dict(record, source)
    return _from_results_file(source)


def _from_results_file(source: str) -> CeilingsRecord:
    from gpubench.model import results

    result_set = results.load_any(source)
    if not any(r.suite == "ceilings" for r in result_set.results):
        raise ConfigError(
            "holds neither a ceilings record nor results of the ceilings suite", source=source
        )
    return from_results(result_set.results, result_set.environment, result_set.created)


def is_record_file(path: str | Path) -> bool:
    """True for a file that holds a ceilings record (cheap: reads its start)."""
    from gpubench.model.results import check_readable

    try:
        check_readable(path, "a ceilings record is a JSON file", "a ceilings record")
        with open(path, encoding="utf-8") as handle:
            start = handle.read(200)
    except (ConfigError, OSError, UnicodeDecodeError):
        return False
    return f'"kind": "{RECORD_KIND}"' in start


ROW_COLUMNS = ("ceiling", "measured", "theoretical", "% of theoretical", "SM clock")


def rows(record: CeilingsRecord) -> list[tuple[str, str, str, str, str]]:
    """ROW_COLUMNS for a table. The theoretical figures are at the maximum clock; a ceiling
    whose load capped the clock shows the clock it held."""
    out = []
    for c in CEILINGS:
        measured, theory = record.measured.get(c.key), record.theoretical.get(c.key)
        clock = record.clock_mhz.get(c.key) if measured else None
        capped = " (capped)" if c.key in record.clock_capped else ""
        out.append(
            (
                c.label,
                f"{measured:,.0f} {c.unit}" if measured else "not measured",
                f"{theory:,.0f} {c.unit}" if theory else "—",
                f"{100 * measured / theory:.1f}%" if measured and theory else "",
                f"{clock:,.0f} MHz{capped}" if clock else "",
            )
        )
    return out

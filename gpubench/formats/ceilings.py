"""The ceilings record (`gpubench ceilings`): one GPU's measured ceilings, kept in the cache
under its UUID (`<cache>/ceilings/<uuid>.json`) or written with `--json`, read back by
`gpubench roofline`. Figures are finite and non-negative (GB/s, GFLOP/s, MHz)."""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

from gpubench.formats.results import Environment, Int, NonNegative


class CeilingsRecord(Struct, forbid_unknown_fields=True):
    kind: Literal["gpubench-ceilings"]
    gpu_name: str
    # Ceiling key (dram_read_gbps, fp32_gflops, ...) -> figure.
    measured: dict[str, NonNegative]
    version: Int = 1
    gpu_uuid: str | None = None
    theoretical: dict[str, NonNegative | None] = {}
    environment: Environment | None = None
    # "measured" (gpubench ceilings) or "theoretical" (the device's peaks stand in).
    source: Literal["measured", "theoretical"] = "measured"
    measured_at: str = ""
    # The median SM clock (MHz) each ceiling was measured at.
    clock_mhz: dict[str, NonNegative] = {}
    # The ceilings whose load capped the clock (their figure holds at that clock).
    clock_capped: list[str] = []


SCHEMAS: dict[str, type] = {"Ceilings record": CeilingsRecord}

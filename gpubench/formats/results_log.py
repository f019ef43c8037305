"""The results log (`gpubench sweep`'s default output, `--jsonl`): one JSON object a line,
written as results finish. The first line is the header; then a "result" line per result
and a "metrics" line per result whose cross-variant metrics (speedup, % of vendor) came once
its point was complete. A last line a kill cut short is ignored."""

from __future__ import annotations

from msgspec import Struct

from gpubench.formats.results import Count, Environment, Float, Point, Result, Scalar, Spec


class Fingerprint(Struct):
    """What must not change between a run and its resumption (`--resume`) or between the
    shards a merge joins. `points` are the points' keys (JSON text), one per point."""

    suite: str | None = None
    kernel_source_sha256: str | None = None
    declarations_sha256: str | None = None
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    gpu_uuids: list[str] | None = None
    points: list[str] | None = None
    variants: list[str] | None = None
    baseline: str | None = None
    timing: dict[str, Scalar] | None = None
    shard: str | None = None


class Header(Struct, tag="header", tag_field="kind"):
    """The first line: what run the results belong to."""

    schema_version: int | None = None
    # When the run began (ISO 8601, UTC); logs written before it was recorded lack it.
    created: str | None = None
    suite: str | None = None
    environment: Environment | None = None
    spec: Spec | None = None
    fingerprint: Fingerprint | None = None
    # The seed each problem's inputs were drawn from (a resumption draws from it too).
    run_seed: Count | None = None
    # The logs `gpubench merge` joined into this one.
    merged_from: list[str] | None = None


class ResultLine(Result, tag="result", tag_field="kind"):
    """One result, as in a results file, with `"kind": "result"`."""


class MetricsLine(Struct, tag="metrics", tag_field="kind", forbid_unknown_fields=True):
    """Metrics added to the result of this point and variant (an earlier line)."""

    point: Point
    variant: str
    metrics: dict[str, Float | None]


# A line of the log: the header first, then results and metrics in any order.
Line = Header | ResultLine | MetricsLine

SCHEMAS: dict[str, type] = {"Results log line (JSON lines)": Line}

"""The results file (`gpubench run/sweep --json`, `gpubench history export`): one run's
environment, spec and results, as `gpubench.model.results.ResultSet.to_dict` writes it.

Known fields are typed exactly: a reader (compare, history, report, roofline) can use them
without checking again. Records that later gpubench versions may extend (environment, spec,
summary, device entries) tolerate keys they do not know; a result record does not (a typo
there would silently lose a figure).

Numbers: an integer field holds a 64-bit integer at most (a 400-digit integer is one line of
error, never an OverflowError later); a float field a finite float (JSON has no NaN or
infinity; gpubench writes an unknown figure as null).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

# -- the numbers and scalars every format shares ------------------------------------------
# The bounds are what a 64-bit integer and a finite double can hold: outside them a value
# cannot come from gpubench (and float() of it would overflow).
Int = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
Count = Annotated[int, Meta(ge=0, le=2**63 - 1)]
Float = Annotated[float, Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
NonNegative = Annotated[float, Meta(ge=0, le=sys.float_info.max)]
# A point's parameter value, a summary figure: what a sweep parameter can be.
Scalar = str | bool | Int | Float | None
Point = dict[str, Scalar]

# gpubench.model.results.Status, spelled out (this module must not import the results module).
Status = Literal[
    "ok",
    "unstable",
    "incorrect",
    "compile_failed",
    "launch_failed",
    "crashed",
    "timeout",
    "skipped",
    "unverified",
    "implausible",
    "pruned",
]


class Verification(Struct, forbid_unknown_fields=True):
    """How a result's outputs compared with the reference."""

    passed: bool
    max_abs_error: Float | None = None
    max_rel_error: Float | None = None
    worst_output: str | None = None
    worst_index: list[Int] | None = None
    got: Float | None = None
    expected: Float | None = None
    unwritten: Count = 0
    wrong: Count = 0
    checked_on: str = "host"
    message: str = ""


class Work(Struct):
    """The work of one run, that the metrics (GB/s, GFLOP/s) and the roofline divide."""

    bytes_moved: NonNegative | None = None
    flops: NonNegative | None = None
    elements: NonNegative | None = None
    level: str | None = None
    precision: str | None = None


class Span(Struct):
    """One step of a recorded timeline (`--timeline`)."""

    stream: Int
    op: str
    label: str
    start_ms: Float
    end_ms: Float


class ResultDevice(Struct):
    """The GPU that measured a result (a sweep may spread over several)."""

    index: Int | None = None
    uuid: str | None = None
    name: str | None = None
    worker: str | None = None


class Energy(Struct, forbid_unknown_fields=True):
    """The energy of one run (`--energy`; gpubench.model.energy.EnergyReading), or why a
    verified result has none (`missing`)."""

    joules_per_run: NonNegative | None = None
    average_watts: NonNegative | None = None
    idle_watts: NonNegative | None = None
    # The run's energy above idle: negative where the board drew less than its idle figure.
    above_idle_joules_per_run: Float | None = None
    sm_clock_mhz: NonNegative | None = None
    temperature_c: Float | None = None
    window_s: NonNegative | None = None
    runs: Count | None = None
    time_per_run_ms: NonNegative | None = None
    duty: NonNegative | None = None
    intervals: Count | None = None
    counter_period_ms: NonNegative | None = None
    noise: NonNegative | None = None
    counter_joules: NonNegative | None = None
    sampled_joules: NonNegative | None = None
    missing: str | None = None


class Result(Struct, forbid_unknown_fields=True):
    """One variant at one point."""

    suite: str
    variant: str
    point: Point
    status: Status
    reason: str = ""
    baseline: str | None = None
    # median_ms, min_ms, mean_ms, stdev_ms, rel_noise, samples, clock_mhz, clock_capped, ...
    summary: dict[str, Float | bool | None] | None = None
    converged: bool | None = None
    metrics: dict[str, Float | None] = {}
    verification: Verification | None = None
    kernel_attributes: dict[str, Any] = {}
    seed: Int | None = None
    work: Work | None = None
    timeline: list[Span] = []
    device: ResultDevice | None = None
    # Host seconds per phase: {"point": {...}, "variant": {...}}.
    phases: dict[str, dict[str, Float]] = {}
    energy: Energy | None = None


class DeviceRecord(Struct):
    """`environment.device`: what gpubench.model.device.DeviceInfo.to_dict writes (less what
    nothing reads back); the peak figures are theoretical, at the maximum clock."""

    name: str | None = None
    arch: str | None = None
    compute_capability: list[Int] | None = None
    sm_count: Count | None = None
    sm_clock_mhz: NonNegative | None = None
    memory_clock_mhz: NonNegative | None = None
    memory_bus_width_bits: Count | None = None
    memory_bytes: Count | None = None
    peak_bandwidth_gbps: NonNegative | None = None
    peak_fp32_gflops: NonNegative | None = None
    peak_fp64_gflops: NonNegative | None = None
    peak_fp16_gflops: NonNegative | None = None
    peak_shared_gbps: NonNegative | None = None


class Backend(Struct):
    name: str | None = None
    version: str | None = None


class Environment(Struct):
    """Where and with what the run was measured (gpubench.model.device.Environment and what the
    sweep adds). Keys this version does not know are kept, for newer files."""

    gpubench_version: str | None = None
    python_version: str | None = None
    numpy_version: str | None = None
    backend: Backend | None = None
    device: DeviceRecord | None = None
    gpu_uuid: str | None = None
    device_index: Int | None = None
    device_count: Count | None = None
    # Every GPU a sweep spread over, each as a result's device entry.
    devices: list[ResultDevice] | None = None
    driver_version: str | None = None
    cuda_driver_api_version: str | None = None
    pycuda_version: str | None = None
    pycuda_built_for_cuda: str | None = None
    nvcc_version: str | None = None
    sm_clock_mhz_at_start: Float | None = None
    temperature_c_at_start: Float | None = None
    power_w_at_start: Float | None = None
    energy_counter: bool | None = None
    worker_restarts: Count | None = None
    worker_retries: Count | None = None
    scheduler: str | None = None
    # The gpubench checkout that ran it (null where it is not a git checkout).
    git_commit: str | None = None
    git_dirty: bool | None = None


class Tune(Struct):
    """What a tuning run (`gpubench tune`) ranked its configurations by."""

    # time (the median), energy (per run) or edp (energy per run x the median).
    objective: str | None = None


class Spec(Struct):
    """The sweep that made the run (gpubench.load.config.SweepSpec.to_dict); `points`, where a
    file lists them, are the points themselves: objects of scalars."""

    suite: str | None = None
    suite_ref: str | None = None
    source: str | None = None
    variants: list[str] | None = None
    baseline: str | None = None
    axes: dict[str, list[Scalar]] | None = None
    # Groups of parameters that vary together: each group maps a parameter to its values.
    zip: list[dict[str, list[Scalar]]] | None = None
    constraints: list[str] | None = None
    timing: dict[str, Scalar] | None = None
    description: str | None = None
    points: list[Point] | None = None
    note: str | None = None
    tune: Tune | None = None


class ResultsFile(Struct):
    """A results file as a whole."""

    schema_version: Int
    created: str
    suite: str
    environment: Environment
    spec: Spec
    results: list[Result]
    # How the kernels were compiled; informative only (a damaged one reads as empty).
    compile_report: Any = None


SCHEMAS: dict[str, type] = {"Results file (JSON)": ResultsFile}

"""The command tables (list, info, history, compare, roofline, ceilings, inspect, dry run),
pinned: every title, header, alignment and cell for data chosen to reach each branch (derived
defaults, bounds on one side, a dirty commit, no commit, a memory-bound and a compute-bound
point, a large dry run cut in the middle). Expected text: tests/report/tables/NAME.txt
(GPUBENCH_UPDATE_SNAPSHOTS=1 rewrites them; tests/snapshots.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpubench import api
from gpubench.engine.inspection import Inspection, KernelReport, Resources
from gpubench.load import registry
from gpubench.model.benchmark import Param
from gpubench.model.metrics import TIME
from gpubench.report import command_tables
from gpubench.report.roofline import Placement
from gpubench.store.ceilings import CeilingsRecord
from gpubench.store.history import Run
from tests import snapshots

PINNED = Path(__file__).parent / "tables"


def pinned(name: str, *rendered) -> None:
    snapshots.matches(PINNED / f"{name}.txt", "\n".join(snapshots.table_text(t) for t in rendered))


@pytest.mark.parametrize("suite", ["transpose", "matmul", "sssp"])
def test_suite_tables(suite):
    pinned(f"suite_{suite}", *command_tables.suite_tables(registry.get(suite)))


def test_suite_tables_show_one_sided_bounds_and_derived_defaults():
    params = (
        Param("low", int, 4, help="at least one", minimum=1),
        Param("high", float, 0.5, help="at most one", maximum=1.0),
        Param("rows", int, None, help="from size", derived_from="size"),
        Param(
            "shape", str, "square", help="a choice", choices=("square", "tall"), compile_time=True
        ),
    )
    bench = SimpleNamespace(
        variants=registry.get("transpose").variants, baseline="copy", params=params
    )
    pinned("suite_made_up", *command_tables.suite_tables(bench))


def test_configs_table():
    pinned(
        "configs",
        command_tables.configs_table(
            [("smoke", "transpose", "tile, size"), ("matmul", "matmul", "size")]
        ),
    )


def _run(**changes) -> Run:
    base = dict(
        id=7,
        created="2026-11-24T05:00:00",
        suite="transpose",
        label="nightly",
        commit="0123456789abcdef",
        dirty=False,
        gpubench_version="0.9.0",
        gpu_name="NVIDIA H100 80GB HBM3",
        gpu_uuid="GPU-1",
        backend="pycuda",
        source="run.json",
        results=12,
    )
    return Run(**{**base, **changes})


def test_runs_table():
    runs = [_run(), _run(id=8, dirty=True), _run(id=9, commit=None, gpu_name=None, backend=None)]
    pinned("runs", command_tables.runs_table(runs, "history.sqlite"))


def test_roofline_table():
    record = CeilingsRecord(
        gpu_uuid="GPU-1",
        gpu_name="NVIDIA H100 80GB HBM3",
        measured={"fp32_gflops": 51234.6, "dram_read_gbps": 3012.4},
        theoretical={},
        source="measured",
    )
    memory = Placement(
        "transpose",
        "padded",
        {"size": 8192, "tile": 32},
        "H100",
        2900.4,
        None,
        None,
        3012.4,
        0.9628,
        "memory",
    )
    compute = Placement(
        "matmul",
        "pipelined",
        {"size": 4096, "tile": 8},
        "H100",
        120.5,
        48123.9,
        12.3456,
        51234.6,
        0.9393,
        "compute",
    )
    group = api.RooflineGroup(
        environment={}, created="", record=record, placed=[memory, compute], varying=["size"]
    )
    pinned("roofline", command_tables.roofline_table(group))
    unknown = CeilingsRecord(
        gpu_uuid=None, gpu_name="GPU", measured={}, theoretical={}, source="theoretical"
    )
    group = api.RooflineGroup(environment={}, created="", record=unknown, placed=[], varying=[])
    pinned("roofline_unknown", command_tables.roofline_table(group))


def test_inspection_table():
    kernels = [
        KernelReport(
            "transpose_naive",
            Resources(16, 0, 0, 0, 0, 0),
            Counter({"LDG.32": 1, "STG.32": 1, "BRA": 2, "total": 12}),
        ),
        KernelReport(
            "transpose_shared_memory_padded",
            Resources(40, 8, 4, 16, 4224, 1),
            Counter(
                {
                    "LDG.128": 2,
                    "LDS.32": 4,
                    "STS.32": 4,
                    "STG.32": 1,
                    "BAR": 2,
                    "FFMA": 3,
                    "predicated": 5,
                    "total": 40,
                }
            ),
        ),
    ]
    report = Inspection(arch="sm_90", kernels=kernels, listing_kind="sass")
    found = api.Inspection(
        point={"tile": 32, "rows": None, "size": 64},
        source=Path("t.cu"),
        report=report,
        shown=kernels,
    )
    pinned("inspection", command_tables.inspection_table(registry.get("transpose"), "sm_90", found))


def _plan(points: int) -> api.DryRun:
    points_list = [{"size": 16 * (i + 1), "tile": 32} for i in range(points)]
    listed = list(enumerate(points_list, 1))
    shown = listed if points <= api.DRY_RUN_LISTED else listed[:5] + listed[-5:]
    return api.DryRun(
        bench=registry.get("transpose"),
        points=points_list,
        shown=shown,
        varying=["size"],
        fixed={"tile": 32},
        axes=[("size", points, 16, 16 * points)],
    )


def test_dry_run_tables_small_and_large():
    pinned("dry_run_small", *command_tables.dry_run_tables(_plan(3), "configs/t.yaml"))
    pinned(
        "dry_run_large",
        *command_tables.dry_run_tables(_plan(api.DRY_RUN_LISTED + 2000), "configs/t.yaml"),
    )


def test_comparison_table():
    rows = [
        SimpleNamespace(
            point={"size": 1024},
            variant="naive",
            base=1.25,
            new=1.5,
            change=0.2,
            noise=0.011,
            verdict="slower",
        ),
        SimpleNamespace(
            point={"size": 2048},
            variant="padded",
            base=0.004,
            new=None,
            change=None,
            noise=None,
            verdict="only in base",
        ),
    ]
    comparison = SimpleNamespace(metric=TIME, varying=["size"], rows=rows)
    pinned("comparison", command_tables.comparison_table(comparison, "old.json", "new.json"))


def test_comparison_table_of_a_rate_with_a_broken_pair():
    from gpubench.model.metrics import BANDWIDTH

    rows = [
        SimpleNamespace(point={"size": 1024}, variant="naive", base=812.5, new=406.25,
                        change=-0.5, noise=0.5, verdict="worse"),
        SimpleNamespace(point={"size": 2048}, variant="padded", base=900.0, new=None,
                        change=None, noise=None, verdict="broken now: incorrect"),
    ]  # fmt: skip
    comparison = SimpleNamespace(metric=BANDWIDTH, varying=["size"], rows=rows)
    table = command_tables.comparison_table(comparison, "old.json", "new.json")
    cells = {str(c.header): [snapshots._text(x) for x in c.cells] for c in table.columns}
    assert cells["base"] == ["'812.5'", "'900.0'"]  # in GB/s, not a time
    assert cells["noise"] == ["'50.0%'", "''"] and cells["change"] == ["'-50.0%'", "''"]
    assert cells["verdict"] == ["'[bold red]worse[/bold red]'",
                                "'[bold red]broken now: incorrect[/bold red]'"]  # fmt: skip


def test_a_roofline_row_names_every_varying_parameter():
    record = CeilingsRecord(gpu_uuid=None, gpu_name="GPU", measured={}, theoretical={},
                            source="theoretical")  # fmt: skip
    placed = Placement("matmul", "tiled", {"size": 64, "tile": 8, "dtype": "f"}, "GPU", 1.0,
                       2.0, 3.0, 4.0, 0.5, "compute")  # fmt: skip
    group = api.RooflineGroup(environment={}, created="", record=record, placed=[placed],
                              varying=["size", "tile", "n"])  # fmt: skip
    (point,) = command_tables.roofline_table(group).columns[2].cells
    assert str(point) == "size=64, tile=8"


def test_a_dry_run_of_exactly_the_listed_points_is_listed_whole():
    (whole,) = command_tables.dry_run_tables(_plan(api.DRY_RUN_LISTED), "configs/t.yaml")
    assert str(whole.title) == "configs/t.yaml: transpose" and whole.row_count == api.DRY_RUN_LISTED
    _axes, ends = command_tables.dry_run_tables(_plan(api.DRY_RUN_LISTED + 1), "configs/t.yaml")
    assert ends.title is None and ends.row_count == 11  # 5, the ellipsis, 5


def test_an_inspection_with_no_kernel_shown_keeps_the_kernel_column_readable():
    report = Inspection(arch="sm_90", kernels=[], listing_kind="sass")
    found = api.Inspection(point={"size": 64}, source=Path("t.cu"), report=report, shown=[])
    table = command_tables.inspection_table(registry.get("transpose"), "sm_90", found)
    assert str(table.columns[0].header) == "kernel" and table.columns[0].min_width == 6


H100 = dict(name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0), sm_count=132,
            sm_clock_mhz=1980.0, memory_clock_mhz=2619.0, memory_bus_width_bits=5120,
            memory_bytes=85_045_788_672, l2_bytes=52_428_800, shared_per_block_bytes=49_152,
            shared_per_block_optin_bytes=232_448, shared_per_sm_bytes=233_472,
            registers_per_sm=65_536, registers_per_block=65_536, max_threads_per_block=1024,
            max_threads_per_sm=2048, warp_size=32)  # fmt: skip


def an_environment(**fields):
    from gpubench.model.device import Environment

    return Environment(gpubench_version="0.9", python_version="3.11.9", numpy_version="2.1.0",
                       **fields)  # fmt: skip


def test_info_of_a_gpu_whose_driver_and_nvml_report_everything():
    from gpubench.model.device import DeviceInfo

    env = an_environment(
        backend={"name": "pycuda", "version": "2026.1"}, gpu_uuid="GPU-5f1c",
        driver_version="580.159.04", cuda_driver_api_version="13.0", pycuda_version="2026.1",
        pycuda_built_for_cuda="13.0.0", nvcc_version="13.0.88", sm_clock_mhz_at_start=1755.0,
    )  # fmt: skip
    pinned("info_h100", command_tables.info_table(0, DeviceInfo(**H100), env))


def test_info_of_a_gpu_with_clocks_and_nvml_unknown():
    from gpubench.model.device import DeviceInfo

    dev = DeviceInfo(**{**H100, "name": "Small GPU", "compute_capability": (7, 5),
                        "sm_clock_mhz": None, "memory_clock_mhz": None,
                        "memory_bus_width_bits": None, "l2_bytes": 1_048_576,
                        "shared_per_sm_bytes": 65_536})  # fmt: skip
    env = an_environment(backend={"name": "cuda-core", "version": "1.2.2",
                                  "cuda_bindings": "13.5.0", "compiler": "NVRTC 13.0"})  # fmt: skip
    pinned("info_unknowns", command_tables.info_table(1, dev, env))


@pytest.mark.parametrize(
    ("backend", "pycuda", "line"),
    [
        ({"name": "pycuda", "version": "2026.1"}, ("2026.1", "13.0.0"),
         "pycuda 2026.1 (built for CUDA 13.0.0)"),
        ({"name": "cuda-core", "version": "1.2.2", "cuda_bindings": "13.5.0",
          "compiler": "NVRTC 13.0"}, (None, None), "cuda-core 1.2.2 (cuda-bindings 13.5.0, NVRTC 13.0)"),
        ({"name": "hip", "version": "6.2", "other": "x"}, (None, None), "hip 6.2"),
        ({}, (None, None), "unknown "),
    ],
)  # fmt: skip
def test_the_backend_line_names_the_backend_and_what_it_was_built_with(backend, pycuda, line):
    env = an_environment(backend=backend, pycuda_version=pycuda[0],
                         pycuda_built_for_cuda=pycuda[1])  # fmt: skip
    assert command_tables.backend_line(env) == line


def test_the_ceilings_table_of_a_measured_gpu():
    record = CeilingsRecord(gpu_uuid="GPU-5f1c", gpu_name="NVIDIA H100 80GB HBM3",
                            measured={"dram_read_gbps": 3001.5, "fp32_gflops": 51_234.0},
                            theoretical={"dram_read_gbps": 3352.3, "fp32_gflops": 66_908.0},
                            measured_at="2026-11-25", clock_mhz={"fp32_gflops": 1980.0})  # fmt: skip
    pinned("ceilings_measured", command_tables.ceilings_table(record))

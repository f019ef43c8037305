"""The command tables that are not results tables: suites and sweep files (`list`), the GPU
(`info`), a comparison (`compare`), the roofline, the ceilings, an inspection and a dry run.
Each function takes the data a gpubench.api function returned and returns rich tables; none
computes anything the data does not hold."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from gpubench.report.plain import PlainTable as Table

_RIGHT = {"justify": "right"}


def suite_tables(bench: Any) -> tuple[Table, Table]:
    """(variants, parameters) of one suite, for `gpubench list`."""
    variants = Table(show_header=True, box=None, padding=(0, 2))
    variants.add_column("variant")
    variants.add_column("what it shows")
    for v in bench.variants:
        variants.add_row(v.name + (" (baseline)" if v.name == bench.baseline else ""), v.help)
    params = Table(show_header=True, box=None, padding=(0, 2))
    for column in ("param", "type", "default", "allowed", "compile-time", "meaning"):
        params.add_column(column)
    for p in bench.params:
        default = p.default if p.default is not None else f"= {p.derived_from}"
        bounds = [
            f">= {p.minimum}" if p.minimum is not None else "",
            f"<= {p.maximum}" if p.maximum is not None else "",
        ]
        allowed = (
            ", ".join(map(str, p.choices))
            if p.choices
            else (" and ".join(b for b in bounds if b) or "any")
        )
        params.add_row(
            p.name, p.type_name, str(default), allowed, "yes" if p.compile_time else "", p.help
        )
    return variants, params


def configs_table(configs: list[tuple[str, str, str]]) -> Table:
    table = Table(title="bundled sweep files: gpubench sweep NAME", title_justify="left")
    for column in ("name", "suite", "what it sweeps"):
        table.add_column(column)
    for row in configs:
        table.add_row(*row)
    return table


def info_table(device_index: int, dev: Any, env: Any) -> Table:
    """The GPU, its limits and peaks, and the software versions (`gpubench info`)."""
    table = Table(title=f"GPU {device_index}: {dev.name}", show_header=False, title_justify="left")
    table.add_column("property")
    table.add_column("value", justify="right")

    def mib(n: int) -> str:
        return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 1024:,.0f} KiB"

    def opt(value: float | None, fmt: str) -> str:
        return "unknown" if value is None else fmt.format(value)

    cc = dev.compute_capability
    rows = [
        ("compute capability", f"{cc[0]}.{cc[1]} ({dev.arch})"),
        ("SMs", str(dev.sm_count)),
        ("SM clock (max)", opt(dev.sm_clock_mhz, "{:,.0f} MHz")),
        ("SM clock now", opt(env.sm_clock_mhz_at_start, "{:,.0f} MHz")),
        ("memory", f"{dev.memory_bytes / 2**30:,.1f} GiB"),
        ("memory clock", opt(dev.memory_clock_mhz, "{:,.0f} MHz")),
        ("memory bus width", opt(dev.memory_bus_width_bits, "{} bits")),
        ("L2 cache", mib(dev.l2_bytes)),
        (
            "shared memory per block",
            f"{mib(dev.shared_per_block_bytes)} ({mib(dev.shared_per_block_optin_bytes)} opt-in)",
        ),
        ("shared memory per SM", mib(dev.shared_per_sm_bytes)),
        ("registers per SM", f"{dev.registers_per_sm:,}"),
        ("max threads per block / SM", f"{dev.max_threads_per_block} / {dev.max_threads_per_sm}"),
        ("peak DRAM bandwidth (theoretical)", opt(dev.peak_bandwidth_gbps, "{:,.0f} GB/s")),
        (
            "peak FP32 (theoretical)",
            opt(dev.peak_fp32_gflops and dev.peak_fp32_gflops / 1e3, "{:,.1f} TFLOP/s"),
        ),
        ("GPU UUID", env.gpu_uuid or "unknown"),
        ("driver", env.driver_version or "unknown"),
        ("CUDA (driver API)", env.cuda_driver_api_version or "unknown"),
        ("nvcc", env.nvcc_version or "not found"),
        ("backend", backend_line(env)),
        ("gpubench", env.gpubench_version),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def runs_table(runs: list[Any], store: str) -> Table:
    """The runs of a history store (`gpubench history list`)."""
    table = Table(title=f"{store}: {len(runs)} run(s)", title_justify="left")
    for column in ("run", "date", "suite", "label", "commit", "GPU", "backend", "results"):
        table.add_column(column, justify="right" if column in ("run", "results") else "left")
    for run in runs:
        commit = (run.commit or "")[:10] + (" (dirty)" if run.dirty else "")
        table.add_row(
            str(run.id),
            run.created,
            run.suite,
            run.label,
            commit or f"gpubench {run.gpubench_version}",
            run.gpu_name or "",
            run.backend or "",
            str(run.results),
        )
    return table


def backend_line(env: Any) -> str:
    """Which backend measured: PyCUDA with the CUDA it was built for, cuda.core with its
    bindings and NVRTC."""
    backend = env.backend or {}
    name, version = backend.get("name", "unknown"), backend.get("version", "")
    if env.pycuda_version:
        return f"{name} {version} (built for CUDA {env.pycuda_built_for_cuda})"
    extras = [f"{k.replace('_', '-')} {v}" for k, v in backend.items() if k == "cuda_bindings"]
    extras += [str(v) for k, v in backend.items() if k == "compiler"]
    return f"{name} {version}" + (f" ({', '.join(extras)})" if extras else "")


VERDICT_STYLE = {"same": "green", "faster": "cyan", "better": "cyan", "slower": "bold red",
                 "worse": "bold red", "broken": "bold red"}  # fmt: skip


def comparison_table(comparison: Any, base_label: str, new_label: str) -> Table:
    """One row per compared pair (api.Comparison)."""
    from gpubench.model import metrics
    from gpubench.report.results_table import format_time

    chosen = comparison.metric
    show = format_time if chosen.key == metrics.TIME.key else chosen.format
    table = Table(title=f"{base_label} → {new_label} · {chosen.header}", title_justify="left")
    for name in comparison.varying:
        table.add_column(name, **_RIGHT)
    for column in ("variant", "base", "new", "change", "noise", "verdict"):
        table.add_column(
            column, justify="right" if column not in ("variant", "verdict") else "left"
        )
    for row in comparison.rows:
        style = VERDICT_STYLE.get(row.verdict.split(" ")[0], "yellow")
        table.add_row(
            *(str(row.point.get(n)) for n in comparison.varying),
            row.variant,
            show(row.base),
            show(row.new),
            "" if row.change is None else f"{100 * row.change:+.1f}%",
            "" if row.noise is None else f"{100 * row.noise:.1f}%",
            Text(row.verdict, style=style),
        )
    return table


def _number(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


def roofline_table(group: Any) -> Table:
    """One GPU's results on its roofline (api.RooflineGroup)."""
    record = group.record
    table = Table(
        title=f"{record.gpu_name} · roofline ({record.source} ceilings: FP32 "
        f"{_number(record.get('fp32_gflops'))} GFLOP/s, DRAM "
        f"{_number(record.get('dram_read_gbps'))} GB/s)",
        title_justify="left",
    )
    numeric = ("FLOP/B", "achieved", "attainable", "% attainable")
    for column in ("suite", "variant", "point", *numeric, "bound"):
        table.add_column(column, justify="right" if column in numeric else "left")
    for p in group.placed:
        point = ", ".join(f"{k}={p.point[k]}" for k in group.varying if k in p.point)
        if p.intensity is None:
            achieved, attainable = f"{p.gbps:,.0f} GB/s", f"{p.attainable:,.0f} GB/s"
        else:
            achieved, attainable = f"{p.gflops:,.0f} GFLOP/s", f"{p.attainable:,.0f} GFLOP/s"
        table.add_row(
            p.suite,
            p.variant,
            point,
            "" if p.intensity is None else f"{p.intensity:,.3g}",
            achieved,
            attainable,
            f"{100 * p.fraction:.1f}%",
            p.bound,
        )
    return table


def ceilings_table(record: Any) -> Table:
    from gpubench.store import ceilings as store

    table = Table(title=f"{record.gpu_name}: ceilings ({record.source})", title_justify="left")
    for column in store.ROW_COLUMNS:
        table.add_column(column, justify="left" if column == "ceiling" else "right")
    for row in store.rows(record):
        table.add_row(*row)
    return table


def inspection_table(bench: Any, arch: str, found: Any) -> Table:
    """Resources and instruction mix of each kernel asked for (api.Inspection)."""
    from gpubench.engine import inspection

    fixed = ", ".join(f"{k}={v}" for k, v in found.point.items() if v is not None)
    table = Table(
        title=f"{bench.name} · {arch} · {fixed} · instruction mix from the "
        f"{found.report.listing_kind.upper()}",
        title_justify="left",
    )
    shown = found.shown
    widths = sorted(
        {key for k in shown for key in k.mix if "." in key},
        key=lambda key: (key.split(".")[0], int(key.split(".")[1])),
    )
    mix_columns = [c for c in inspection.COLUMNS if c not in ("LDG", "STG", "LDS", "STS")]
    longest = max((len(k.name) for k in shown), default=6)
    # Kernel names are what the table is about: never cut them.
    table.add_column("kernel", no_wrap=True, min_width=longest)
    for column in ["regs", "spill st/ld", "stack", "smem", "bar", *widths, *mix_columns]:
        table.add_column(column, **_RIGHT)
    for k in shown:
        r = k.resources
        table.add_row(
            k.name,
            str(r.registers),
            f"{r.spill_stores}/{r.spill_loads}",
            str(r.stack_bytes),
            str(r.shared_bytes),
            str(r.barriers),
            *(str(k.mix.get(w, 0)) for w in widths),
            *(str(k.mix.get(c, 0)) for c in mix_columns),
        )
    return table


def dry_run_tables(plan: Any, source: str) -> list[Table]:
    """A dry run (api.DryRun): the axes summary of a large sweep, then the points shown."""
    tables = []
    large = len(plan.shown) < len(plan.points)  # api.dry_run shows only the ends
    if large:
        # Rendering a table of 10^5 rows takes minutes: summarise the axes, show both ends.
        axes = Table(
            title=f"{source}: {plan.bench.name}, {len(plan.points):,} points", title_justify="left"
        )
        for column in ("param", "distinct values", "from", "to"):
            axes.add_column(column, justify="right" if column != "param" else "left")
        for name, count, low, high in plan.axes:
            axes.add_row(name, f"{count:,}", str(low), str(high))
        tables.append(axes)
    table = Table(title=None if large else f"{source}: {plan.bench.name}", title_justify="left")
    table.add_column("#", justify="right")
    for name in plan.varying:
        table.add_column(name, justify="right")
    for i, (number, point) in enumerate(plan.shown):
        if large and i == 5:
            table.add_row("…", *("…" for _ in plan.varying))
        table.add_row(f"{number:,}", *(str(point[n]) for n in plan.varying))
    tables.append(table)
    return tables

"""Command-line interface: parse, call, render; GpubenchError becomes a one-line message and an exit code.

Heavy imports (NumPy, the suites, PyCUDA) happen inside the commands so `gpubench --help`
starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gpubench import __version__
from gpubench.errors import (
    EXIT_CODE_MEANINGS,
    EXIT_FAILED_POINTS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    GpubenchError,
)

if TYPE_CHECKING:
    from gpubench.benchmark import Benchmark, Param
    from gpubench.config import SweepSpec


def _exit_codes_help() -> str:
    import textwrap

    lines = ["\b", "Exit codes:"]
    for code, meaning in EXIT_CODE_MEANINGS.items():
        wrapped = textwrap.wrap(meaning, 72)
        lines.append(f"  {code:<4} {wrapped[0]}")
        lines += [f"       {rest}" for rest in wrapped[1:]]
    return "\n" + "\n".join(lines) + "\n"


EXIT_CODES_HELP = _exit_codes_help()


# Wide enough for a results table when output goes to a file or a CI log.
PIPE_WIDTH = 180


def _stderr():
    from rich.console import Console

    console = Console(stderr=True)
    return console if console.is_terminal else Console(stderr=True, width=PIPE_WIDTH)


def _stdout():
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=PIPE_WIDTH)


class GpubenchGroup(click.Group):
    """Turns GpubenchError and Ctrl-C into one line on stderr and the documented exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GpubenchError as exc:
            from rich.text import Text

            _stderr().print(
                Text("error: ", style="bold red") + Text(str(exc)), highlight=False, soft_wrap=True
            )
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            _stderr().print("interrupted")
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=GpubenchGroup, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="gpubench")
def cli() -> None:
    """gpubench: compile CUDA kernels, check them against NumPy, time them with CUDA events,
    sweep their parameters from YAML and report time, bandwidth, GFLOP/s and speedup.

    \b
    Examples:
      gpubench list
      gpubench info
      gpubench run transpose --tile 32 --size 4096
      gpubench sweep configs/transpose.yaml --json results/transpose.json
      gpubench sweep configs/smoke.yaml --dry-run
      gpubench sweep configs/examples/saxpy.yaml          # your own kernel, no Python
      gpubench sweep configs/transpose.yaml --devices all
      gpubench ceilings && gpubench roofline results/matmul.jsonl -o roofline.png
      gpubench plot results/transpose.jsonl
      gpubench inspect matmul -v pipelined
    """


# -- list -----------------------------------------------------------------------------------
@cli.command("list")
@click.option("--configs", "show_configs", is_flag=True,
              help="List the sweep files that ship with gpubench instead.")  # fmt: skip
def list_suites(show_configs: bool) -> None:
    """List suites, their variants (baseline marked) and parameters; or, with --configs, the
    bundled sweep files (`gpubench sweep NAME` runs one by name).

    \b
    Examples:
      gpubench list
      gpubench list --configs
    """
    from rich.table import Table

    from gpubench import registry

    console = _stdout()
    if show_configs:
        from gpubench import config

        table = Table(title="bundled sweep files: gpubench sweep NAME", title_justify="left")
        for column in ("name", "suite", "what it sweeps"):
            table.add_column(column)
        for path in config.bundled_configs():
            table.add_row(path.stem, *config.describe(path))
        console.print(table)
        return
    for bench in registry.all_suites().values():
        console.rule(f"[bold]{bench.name}[/]: {bench.description}")
        variants = Table(show_header=True, box=None, padding=(0, 2))
        variants.add_column("variant")
        variants.add_column("what it shows")
        for v in bench.variants:
            variants.add_row(v.name + (" (baseline)" if v.name == bench.baseline else ""), v.help)
        console.print(variants)
        params = Table(show_header=True, box=None, padding=(0, 2))
        for column in ("param", "type", "default", "allowed", "compile-time", "meaning"):
            params.add_column(column)
        for p in bench.params:
            default = p.default if p.default is not None else f"= {p.derived_from}"
            bounds = [f">= {p.minimum}" if p.minimum is not None else "",
                      f"<= {p.maximum}" if p.maximum is not None else ""]  # fmt: skip
            allowed = (
                ", ".join(map(str, p.choices))
                if p.choices
                else (" and ".join(b for b in bounds if b) or "any")
            )
            params.add_row(
                p.name, p.type_name, str(default), allowed, "yes" if p.compile_time else "", p.help
            )
        console.print(params)
        console.print()


# -- info -----------------------------------------------------------------------------------
@cli.command()
@click.option("--device", default=0, show_default=True, help="CUDA device index.")
def info(device: int) -> None:
    """Show the GPU, its limits and peaks, and the software versions.

    \b
    Example:
      gpubench info
    """
    from rich.table import Table

    from gpubench import backends

    backend = backends.load(device)
    dev = backend.device
    env = backend.environment()
    table = Table(title=f"GPU {device}: {dev.name}", show_header=False, title_justify="left")
    table.add_column("property")
    table.add_column("value", justify="right")

    def mib(n: int) -> str:
        return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 1024:,.0f} KiB"

    def opt(value: float | None, fmt: str) -> str:
        return "unknown" if value is None else fmt.format(value)

    rows = [
        (
            "compute capability",
            f"{dev.compute_capability[0]}.{dev.compute_capability[1]} ({dev.arch})",
        ),
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
        ("PyCUDA", f"{env.pycuda_version} (built for CUDA {env.pycuda_built_for_cuda})"),
        ("gpubench", env.gpubench_version),
    ]
    for name, value in rows:
        table.add_row(name, value)
    _stdout().print(table)


# -- shared by run and sweep ---------------------------------------------------------------
def _execute(spec: SweepSpec, request: Any, device: int, spread: Any = None) -> int:
    from gpubench import session

    return session.execute(spec, request, device, console=_stdout(), err=_stderr(),
                           spread=spread)  # fmt: skip


def _spread(device: int, devices: str | None, scheduler: str | None = None,
            shard: str | None = None) -> Any:  # fmt: skip
    """--device, --devices, --scheduler and --shard as one Spread, each checked."""
    from gpubench.errors import ConfigError
    from gpubench.session import Spread

    chosen = None
    if devices is not None:
        from gpubench.pool import parse_devices

        try:
            chosen = parse_devices(devices)
        except ValueError as exc:
            raise ConfigError(str(exc), key="--devices") from None
    if scheduler is not None:
        if devices is not None:
            raise ConfigError("--scheduler sends points to the cluster's workers; --devices "
                              "picks GPUs of this host: give one of them", key="--scheduler")  # fmt: skip
        if not scheduler.strip() or any(c.isspace() for c in scheduler):
            raise ConfigError(f"expected an address such as tcp://host:8786, got {scheduler!r}",
                              key="--scheduler")  # fmt: skip
    parsed_shard = None
    if shard is not None:
        parts = shard.split("/")
        try:
            index, count = (int(p) for p in parts) if len(parts) == 2 else (None, None)
        except ValueError:
            index = count = None
        if index is None or count is None or count < 1 or not 0 <= index < count:
            raise ConfigError(f"expected I/N with 0 <= I < N (the I-th of N shards, e.g. "
                              f"$SLURM_ARRAY_TASK_ID/4), got {shard!r}", key="--shard")  # fmt: skip
        parsed_shard = (index, count)
    return Spread(device=device, devices=chosen, scheduler=scheduler, shard=parsed_shard)


def _timing_options(func: Any) -> Any:
    options = [
        click.option("--warmup", type=int, help="Untimed runs before sampling."),
        click.option("--min-samples", type=int, help="Fewest timed samples."),
        click.option("--max-samples", type=int, help="Most timed samples."),
        click.option(
            "--min-time", "min_time_s", type=float, help="Least total GPU time sampled, s."
        ),
        click.option(
            "--max-time", "max_time_s", type=float, help="Sampling budget per variant, s."
        ),
        click.option(
            "--target-noise", type=float, help="Stop once the robust noise is at or below this."
        ),
        click.option(
            "--mode",
            type=click.Choice(["cold", "hot"]),
            help="cold: one run per sample; hot: back-to-back runs (a CUDA graph) per sample.",
        ),
        click.option(
            "--time-limit",
            "time_limit_s",
            type=float,
            help="Kill a variant's worker after this many seconds (recorded as timeout).",
        ),
        click.option(
            "--flush-l2/--no-flush-l2",
            default=None,
            help="Flush L2 before every sample (default: the suite decides).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


TIMING_KEYS = (
    "mode",
    "time_limit_s",
    "warmup",
    "min_samples",
    "max_samples",
    "min_time_s",
    "max_time_s",
    "target_noise",
    "flush_l2",
)


def _output_options(func: Any) -> Any:
    for option in reversed([
        click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write results as JSON."),
        click.option("--csv", "csv_path", type=click.Path(dir_okay=False), help="Write results as CSV."),
        click.option("--jsonl", "jsonl_path", type=click.Path(dir_okay=False),
                     help="Append each result as a JSON line the moment it finishes."),
        click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
                     help="Write the results table as GitHub-flavoured markdown (a CI job "
                     "summary, a pull request)."),
        click.option("--device", default=0, show_default=True, help="CUDA device index."),
        click.option("--profile", is_flag=True,
                     help="Run each verified kernel variant once more under Nsight Compute "
                     "(ncu) and add its counters to the results: DRAM bytes, sectors per "
                     "request, bank conflicts, branch uniformity, occupancy, instructions."),
        click.option("--devices", "devices", metavar="all|I,J,...",
                     help="Run points on several GPUs of this host at once, one worker each "
                     "(all, or indices such as 0,2,3)."),
        click.option("--verbose", is_flag=True,
                     help="Also print where the host time went: each result's phases (inputs, "
                     "reference, uploads, checked run, check, timing, re-check, downloads) and "
                     "the share of the wall time the GPU spent in timed runs."),
    ]):  # fmt: skip
        func = option(func)
    return func


# -- run ------------------------------------------------------------------------------------
def _param_option(param: Param) -> click.Option:
    if param.choices:
        kind: Any = click.Choice([str(c) for c in param.choices])
    else:
        kind = {int: click.INT, float: click.FLOAT, bool: click.BOOL}.get(param.type, click.STRING)
    default = param.default if param.default is not None else f"{param.derived_from}"
    flag = "--" + param.name.replace("_", "-")
    return click.Option([flag, param.name], type=kind, default=None,
                        help=f"{param.help} [default: {default}]")  # fmt: skip


def _run_command(bench: Benchmark, suite_ref: str) -> click.Command:
    @_timing_options
    @_output_options
    @click.option("--variant", "-v", "variants", multiple=True,
                  type=click.Choice(list(bench.variant_names)),
                  help="Variant to run (repeatable; default: all).")  # fmt: skip
    @click.option("--baseline", type=click.Choice(list(bench.variant_names)),
                  help=f"Variant the speedup is measured against [default: {bench.baseline}].")  # fmt: skip
    @click.option("--timeline", "timeline_path", type=click.Path(dir_okay=False), default=None,
                  is_flag=False, flag_value="",
                  help="Record one run's operations per stream (suites with streams) and print "
                  "them; with FILE, also draw a Gantt chart there (PNG, needs matplotlib).")  # fmt: skip
    @click.option("--force", is_flag=True,
                  help="Start a new --jsonl log where one with results exists (the old one is "
                  "kept beside it as LOG.1).")  # fmt: skip
    def command(variants: tuple[str, ...], baseline: str | None, json_path: str | None,
                csv_path: str | None, jsonl_path: str | None, markdown_path: str | None,
                device: int, profile: bool, devices: str | None, verbose: bool,
                timeline_path: str | None, force: bool, **values: Any) -> None:  # fmt: skip
        from gpubench import config

        timing = {k: values.pop(k) for k in TIMING_KEYS if values.get(k) is not None}
        for key in TIMING_KEYS:
            values.pop(key, None)
        mapping: dict[str, Any] = {
            "suite": suite_ref,
            "params": {k: v for k, v in values.items() if v is not None},
            "timing": timing,
        }
        if variants:
            mapping["variants"] = list(variants)
        if baseline:
            mapping["baseline"] = baseline
        spec = config.spec_from_mapping(mapping, source="command line")
        from gpubench.outputs import OutputRequest

        request = OutputRequest(json=json_path, csv=csv_path, jsonl=jsonl_path,
                                timeline=timeline_path, force=force, markdown=markdown_path,
                                profile=profile, verbose=verbose)  # fmt: skip
        code = _execute(spec, request, device, _spread(device, devices))
        click.get_current_context().exit(code)

    command.__doc__ = (
        f"{bench.description}.\n\nVariants: {', '.join(bench.variant_names)} "
        f"(baseline: {bench.baseline}).\n\n\b\nExample:\n  gpubench run {bench.name} "
        + " ".join(
            f"--{p.name.replace('_', '-')} {p.default}"
            for p in bench.params
            if p.default is not None and p.compile_time
        )
    )
    params = [_param_option(p) for p in bench.params]
    cmd = click.command(name=bench.name, epilog=EXIT_CODES_HELP)(command)
    cmd.params.extend(params)
    return cmd


class SuiteGroup(click.Group):
    """`gpubench run SUITE`: one subcommand per suite, built from its declared parameters."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from gpubench import registry

        return registry.suite_names()

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from gpubench import registry

        if name.endswith((".py", ".yaml", ".yml")):  # a user's own suite or kernel file
            return _run_command(registry.get(name), name)
        suites = registry.all_suites()
        return _run_command(suites[name], name) if name in suites else None

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        from gpubench import registry

        name = args[0] if args else ""
        if (
            name
            and not name.startswith("-")
            and not name.endswith((".py", ".yaml", ".yml"))
            and name not in registry.suite_names()
        ):
            hint = registry.did_you_mean(name, registry.suite_names())
            raise click.UsageError(
                f"unknown suite {name!r}{hint}; suites: {', '.join(registry.suite_names())}", ctx
            )
        return super().resolve_command(ctx, args)


@cli.group(cls=SuiteGroup, epilog=EXIT_CODES_HELP)
def run() -> None:
    """Run one point of a suite: every variant (or those named), checked, timed, one table.

    \b
    Examples:
      gpubench run transpose --tile 32
      gpubench run transpose --tile 32 --size 4096 -v naive -v padded --json out.json
    """


# -- sweep ----------------------------------------------------------------------------------
@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("config_path", metavar="CONFIG.yaml|NAME", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Validate and list the points; touch no GPU.")
@click.option("--resume", "resume_path", type=click.Path(dir_okay=False),
              help="Continue the run logged in this JSON-lines file: points already there are "
              "not measured again; new results are appended to it.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="Resume even if the GPU, the kernel source or the sweep changed; without "
              "--resume, start a new log where one with results exists (the old one is kept "
              "beside it as LOG.1).")  # fmt: skip
@click.option("--scheduler", "scheduler", metavar="ADDRESS",
              help="Send the points to the workers of a Dask cluster (tcp://host:8786): one "
              "worker per GPU; results stream back into the log (needs the cluster extra).")  # fmt: skip
@click.option("--shard", "shard", metavar="I/N",
              help="Run only every N-th point, from the I-th (0-based): one of N jobs (SLURM "
              "arrays); `gpubench merge` joins their logs.")  # fmt: skip
@_output_options
def sweep(config_path: str, dry_run: bool, resume_path: str | None, force: bool,
          json_path: str | None, csv_path: str | None, jsonl_path: str | None,
          markdown_path: str | None, device: int, profile: bool, devices: str | None,
          verbose: bool, scheduler: str | None, shard: str | None) -> None:  # fmt: skip
    """Run a whole sweep from a YAML file: progress bar, table, results files.

    Every point runs in a worker process: a kernel that crashes or hangs is recorded
    (`crashed`, `timeout`) and the sweep goes on. Each finished point is appended at once to
    a JSON-lines log (--jsonl, outputs.jsonl, or results/<config>.jsonl), so an interrupted
    sweep loses nothing and --resume picks it up.

    \b
    Examples:
      gpubench sweep configs/transpose.yaml --json results/transpose.json
      gpubench sweep configs/smoke.yaml --dry-run
      gpubench sweep smoke          # a bundled sweep file by name (gpubench list --configs)
      gpubench sweep configs/transpose.yaml --resume results/transpose.jsonl
    """
    from gpubench import config

    config_path = str(config.find(config_path))
    spec = config.load(config_path)
    spread = _spread(device, devices, scheduler, shard)
    ctx = click.get_current_context()
    if dry_run:
        _print_plan(spec, spread.shard)
        ctx.exit(EXIT_OK)
    from pathlib import Path

    from gpubench.outputs import OutputRequest

    stem = Path(config_path).stem
    if spread.shard:
        stem += f".shard-{spread.shard[0]}-of-{spread.shard[1]}"
    request = OutputRequest(json=json_path, csv=csv_path, jsonl=jsonl_path, resume=resume_path,
                            force=force, progress=True, markdown=markdown_path, profile=profile,
                            verbose=verbose, default_log=str(Path("results") / f"{stem}.jsonl"))  # fmt: skip
    ctx.exit(_execute(spec, request, device, spread))


# -- compare --------------------------------------------------------------------------------
@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("base_path", metavar="BASE", type=click.Path(dir_okay=False))
@click.argument("new_path", metavar="NEW", type=click.Path(dir_okay=False))
@click.option("--threshold", default=0.05, show_default=True, type=float,
              help="Smallest relative change that counts (a change must also exceed twice the noise).")  # fmt: skip
@click.option("--metric", default="time_ms", show_default=True,
              help="Which metric to compare: time_ms, or any metric key of the results "
              "(gbps, gflops, ...); its declared direction says what a regression is.")  # fmt: skip
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
              help="Also write the comparison as GitHub-flavoured markdown.")  # fmt: skip
@click.option("--suite-threshold", "suite_thresholds", multiple=True, metavar="SUITE=FRACTION",
              help="A threshold for one suite's results (repeatable), e.g. transpose=0.10.")  # fmt: skip
def compare(base_path: str, new_path: str, threshold: float, metric: str,
            markdown_path: str | None, suite_thresholds: tuple[str, ...]) -> None:  # fmt: skip
    """Compare two results files point by point: exit 3 if anything got slower (or, with
    --metric, worse).

    Each file may be JSON (--json) or a JSON-lines log (--jsonl, a sweep's default output).

    \b
    Examples:
      gpubench compare results/before.json results/after.json --threshold 0.02
      gpubench compare results/transpose.jsonl results/transpose-new.jsonl
      gpubench compare results/before.json results/after.json --metric gbps
    """
    import math

    from rich.table import Table

    from gpubench import metrics, results
    from gpubench.compare import compare as compare_sets
    from gpubench.compare import regressions
    from gpubench.errors import ConfigError

    if not math.isfinite(threshold) or threshold < 0:
        raise ConfigError(f"expected a finite number >= 0, got {threshold!r}", key="--threshold")
    per_suite: dict[str, float] = {}
    for item in suite_thresholds:
        name, _, value = item.partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = float("nan")
        if not name or not math.isfinite(fraction) or fraction < 0:
            raise ConfigError(f"expected SUITE=FRACTION such as transpose=0.10, got {item!r}",
                              key="--suite-threshold")  # fmt: skip
        per_suite[name] = fraction
    if markdown_path:
        from gpubench.outputs import check_writable

        check_writable(markdown_path, "--markdown")
    base, new = results.load_any(base_path), results.load_any(new_path)
    present = {key for r in base.results + new.results for key in r.metrics}
    extra = tuple(metrics.Metric(key, key, "") for key in sorted(present))
    try:
        chosen = metrics.by_key(metric, extra)
    except KeyError:
        known = sorted({m.key for m in metrics.CATALOG} | present)
        from gpubench.registry import did_you_mean

        raise ConfigError(f"unknown metric {metric!r}{did_you_mean(metric, known)}; "
                          f"known: {', '.join(known)}", key="--metric") from None  # fmt: skip
    rows = compare_sets(base, new, threshold, chosen, per_suite)
    names = [
        n for n in (rows[0].point if rows else {}) if len({str(r.point.get(n)) for r in rows}) > 1
    ]
    table = Table(title=f"{base_path} → {new_path} · {chosen.header}", title_justify="left")
    for name in names:
        table.add_column(name, justify="right")
    for column in ("variant", "base", "new", "change", "noise", "verdict"):
        table.add_column(
            column, justify="right" if column not in ("variant", "verdict") else "left"
        )
    style = {"same": "green", "faster": "cyan", "better": "cyan", "slower": "bold red",
             "worse": "bold red", "broken": "bold red"}  # fmt: skip
    if chosen.key == metrics.TIME.key:
        from gpubench.report.table import format_time as show
    else:
        show = chosen.format
    for row in rows:
        table.add_row(
            *(str(row.point.get(n)) for n in names), row.variant, show(row.base),
            show(row.new), "" if row.change is None else f"{100 * row.change:+.1f}%",
            "" if row.noise is None else f"{100 * row.noise:.1f}%",
            f"[{style.get(row.verdict.split(' ')[0], 'yellow')}]{row.verdict}[/]",
        )  # fmt: skip
    console = _stdout()
    console.print(table)
    changes = [abs(r.change) for r in rows if r.change is not None]
    if changes:
        console.print(f"{len(changes)} pair(s) compared; largest change {100 * max(changes):.2f}%",
                      highlight=False)  # fmt: skip
    base_gpu, new_gpu = base.environment.get("gpu_uuid"), new.environment.get("gpu_uuid")
    notes = []
    if changes:
        notes.append(f"{len(changes)} pair(s) compared; largest change {100 * max(changes):.2f}%")
    if base_gpu != new_gpu:
        notes.append(f"note: different GPUs ({base_gpu} vs {new_gpu})")
        _stderr().print(notes[-1], highlight=False)
    failed = regressions(rows)
    if markdown_path:
        from gpubench.report import markdown
        from gpubench.session import device_line

        verdict = f"{failed} regression(s)" if failed else "no regressions"
        markdown.write(markdown_path, markdown.document(
            f"gpubench compare: {verdict}", device_line(new.environment, new.created), [table],
            notes))  # fmt: skip
    click.get_current_context().exit(EXIT_FAILED_POINTS if failed else EXIT_OK)


# -- inspect ---------------------------------------------------------------------------------
def _inspect_command(bench: Benchmark, suite_ref: str) -> click.Command:
    @click.option("--variant", "-v", "kernels", multiple=True,
                  help="Only this kernel (repeatable; default: every kernel of the source).")  # fmt: skip
    @click.option("--arch", default="sm_90", show_default=True,
                  help="Architecture to compile for (no GPU needed).")  # fmt: skip
    @click.option("--ptx", "show_ptx", is_flag=True, help="Print the PTX with source lines.")
    @click.option("--sass", "show_sass", is_flag=True,
                  help="Print the SASS (needs cuobjdump or nvdisasm).")  # fmt: skip
    def command(kernels: tuple[str, ...], arch: str, show_ptx: bool, show_sass: bool,
                **values: Any) -> None:  # fmt: skip
        from rich.table import Table

        from gpubench import config, inspection
        from gpubench import kernels as kernel_sources
        from gpubench.errors import ConfigError, EnvironmentProblem

        if not bench.has_kernels:
            raise ConfigError(f"{bench.name} has no kernels of its own to inspect")
        mapping = {"suite": suite_ref, "params": {k: v for k, v in values.items() if v is not None}}
        spec = config.spec_from_mapping(mapping, source="command line")
        point = spec.points(bench)[0]
        source = kernel_sources.source_path(bench)
        options = kernel_sources.define_options(bench.defines(point)) + list(
            bench.compiler_options(point)
        )
        report = inspection.inspect(source, options, [str(source.parent)], arch,
                                    want_sass=not show_ptx)  # fmt: skip
        names = [k.name for k in report.kernels]
        chosen = set(kernels) if kernels else None
        for name in kernels:
            if name not in names:
                from gpubench.registry import did_you_mean

                raise ConfigError(f"no kernel {name!r} in {source.name}{did_you_mean(name, names)};"
                                  f" kernels: {', '.join(names)}", key="--variant")  # fmt: skip
        shown = [k for k in report.kernels if chosen is None or k.name in chosen]
        console = _stdout()
        if show_sass:
            if not report.sass:
                raise EnvironmentProblem(report.note or "no SASS could be produced")
            functions = inspection.sass_functions(report.sass)
            for kernel in shown:
                console.rule(f"{kernel.name} · SASS · {arch}")
                console.print("\n".join(functions.get(kernel.name, [])), highlight=False,
                              markup=False)  # fmt: skip
            return
        if show_ptx:
            console.print(inspection.annotate_ptx(report.ptx, source, chosen), highlight=False,
                          markup=False)  # fmt: skip
            return
        fixed = ", ".join(f"{k}={v}" for k, v in point.items() if v is not None)
        table = Table(title=f"{bench.name} · {arch} · {fixed} · instruction mix from the "
                      f"{report.listing_kind.upper()}", title_justify="left")  # fmt: skip
        columns = ["kernel", "regs", "spill st/ld", "stack", "smem", "bar"]
        widths = sorted({key for k in shown for key in k.mix if "." in key},
                        key=lambda key: (key.split(".")[0], int(key.split(".")[1])))  # fmt: skip
        mix_columns = [c for c in inspection.COLUMNS if c not in ("LDG", "STG", "LDS", "STS")]
        longest = max((len(k.name) for k in shown), default=6)
        for column in columns + widths + mix_columns:
            if column == "kernel":  # names are what the table is about: never cut them
                table.add_column(column, no_wrap=True, min_width=longest)
            else:
                table.add_column(column, justify="right")
        for k in shown:
            r = k.resources
            table.add_row(k.name, str(r.registers), f"{r.spill_stores}/{r.spill_loads}",
                          str(r.stack_bytes), str(r.shared_bytes), str(r.barriers),
                          *(str(k.mix.get(w, 0)) for w in widths),
                          *(str(k.mix.get(c, 0)) for c in mix_columns))  # fmt: skip
        console.print(table)
        if report.note:
            _stderr().print(f"note: {report.note}", highlight=False)

    command.__doc__ = (
        f"Registers, spills, shared memory and the instruction mix of {bench.name}'s kernels, "
        "compiled here with nvcc (no GPU needed); --ptx or --sass print the listings."
    )
    cmd = click.command(name=bench.name, epilog=EXIT_CODES_HELP)(command)
    cmd.params.extend(_param_option(p) for p in bench.params)
    return cmd


class InspectGroup(SuiteGroup):
    """`gpubench inspect SUITE`: one subcommand per suite, as for run."""

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from gpubench import registry

        if name.endswith((".py", ".yaml", ".yml")):
            return _inspect_command(registry.get(name), name)
        suites = registry.all_suites()
        return _inspect_command(suites[name], name) if name in suites else None


@cli.group(cls=InspectGroup, epilog=EXIT_CODES_HELP)
def inspect() -> None:
    """What a suite's kernels compile to, without a GPU: registers, spills, shared memory,
    barriers, and the instruction mix (global and shared loads and stores by width, FFMA,
    MUFU, branches, predicated instructions, barriers) from the SASS, or from the PTX where
    neither cuobjdump nor nvdisasm is installed.

    \b
    Examples:
      gpubench inspect transpose --tile 32
      gpubench inspect matmul -v pipelined --arch sm_80
      gpubench inspect reduction -v warp_shuffle --ptx
      gpubench inspect configs/examples/saxpy.yaml --sass
    """


# -- merge -----------------------------------------------------------------------------------
@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("logs", metavar="LOGS...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))  # fmt: skip
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The merged JSON-lines log.")  # fmt: skip
@click.option("--force", is_flag=True, help="Replace an output that already holds results.")
def merge(logs: tuple[str, ...], output: str, force: bool) -> None:
    """Join the logs of one sweep's shards (sweep --shard I/N) into one log; refuses logs of
    different sweeps or kernel sources, and results that two logs both hold.

    \b
    Example:
      gpubench merge results/transpose.shard-*-of-4.jsonl -o results/transpose.jsonl
    """
    from gpubench.merge import merge as merge_logs

    count, total = merge_logs(list(logs), output, force)
    _stderr().print(f"merged {total} result(s) of {count} logs into {output}", highlight=False)


# -- ceilings, roofline, plot -----------------------------------------------------------------
def _need_matplotlib(option: str) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        from gpubench.errors import EnvironmentProblem

        raise EnvironmentProblem(f"{option} draws with matplotlib, which is not installed: "
                                 "pip install '.[plot]'") from None  # fmt: skip


@cli.command(epilog=EXIT_CODES_HELP)
@click.option("--remeasure", is_flag=True,
              help="Measure again even if this GPU's ceilings are already stored.")  # fmt: skip
@click.option("--json", "json_path", type=click.Path(dir_okay=False),
              help="Also write the ceilings record here (roofline --ceilings reads it).")  # fmt: skip
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
              help="Write the ceilings table as GitHub-flavoured markdown.")  # fmt: skip
@click.option("--device", default=0, show_default=True, help="CUDA device index.")
def ceilings(remeasure: bool, json_path: str | None, markdown_path: str | None,
             device: int) -> None:  # fmt: skip
    """Measure this GPU's ceilings (DRAM, L2 and shared-memory bandwidth; FP32, FP64, FP16
    and tensor-core throughput), each kernel checked, and keep them per GPU for `roofline`.

    \b
    Examples:
      gpubench ceilings
      gpubench ceilings --remeasure --json results/ceilings.json
    """
    import tempfile
    from pathlib import Path

    from gpubench import ceilings as store
    from gpubench import config, results, session
    from gpubench.outputs import OutputRequest, check_writable

    for path, option in ((json_path, "--json"), (markdown_path, "--markdown")):
        if path:
            check_writable(path, option)
    ctx = click.get_current_context()
    record, code = None, EXIT_OK
    if not remeasure:
        environment = session.probe_environment("ceilings", device)
        record = store.load_for(environment.get("gpu_uuid"))
        if record is not None:
            _stderr().print(f"{record.gpu_name}: ceilings measured earlier "
                            f"({store.store_dir()}); --remeasure measures them again",
                            highlight=False)  # fmt: skip
    if record is None:
        spec = config.spec_from_mapping({"suite": "ceilings"}, source="gpubench ceilings")
        with tempfile.TemporaryDirectory() as tmp:
            out = str(Path(tmp) / "ceilings.json")
            code = _execute(spec, OutputRequest(json=out), device)
            if code == EXIT_INTERRUPTED or not Path(out).is_file():
                ctx.exit(code)
            measured = results.load_any(out)
        record = store.from_results(measured.results, measured.environment, measured.created)
        if record.gpu_uuid:
            _stderr().print(f"ceilings kept in {store.save(record)}", highlight=False)
    if json_path:
        store.save(record, json_path)
    table = _ceilings_table(record)
    _stdout().print(table)
    if markdown_path:
        from gpubench.report import markdown

        markdown.write(markdown_path, markdown.document(
            "gpubench ceilings", session.device_line(record.environment, record.measured_at),
            [table]))  # fmt: skip
    ctx.exit(code)


def _ceilings_table(record: Any) -> Any:
    from rich.table import Table

    from gpubench import ceilings as store

    table = Table(title=f"{record.gpu_name}: ceilings ({record.source})", title_justify="left")
    for column in ("ceiling", "measured", "theoretical", "% of theoretical"):
        table.add_column(column, justify="left" if column == "ceiling" else "right")
    for row in store.rows(record):
        table.add_row(*row)
    return table


@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("results_paths", metavar="RESULTS...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))  # fmt: skip
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Draw the roofline chart here (PNG or SVG; needs the plot extra).")  # fmt: skip
@click.option("--ceilings", "ceilings_path", type=click.Path(dir_okay=False),
              help="Ceilings to use: a record from `gpubench ceilings --json`, or results of the "
              "ceilings suite (default: the stored ceilings of the results' GPU).")  # fmt: skip
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
              help="Write the table as GitHub-flavoured markdown.")  # fmt: skip
def roofline(results_paths: tuple[str, ...], output: str | None, ceilings_path: str | None,
             markdown_path: str | None) -> None:  # fmt: skip
    """Place every result of any results files on the roofline of its GPU: achieved vs
    attainable, and whether memory or compute bounds it.

    \b
    Examples:
      gpubench roofline results/matmul.jsonl results/reduction.jsonl -o roofline.png
      gpubench roofline results/*.json --ceilings results/ceilings.json
    """
    from rich.table import Table

    from gpubench import ceilings as store
    from gpubench import results
    from gpubench.errors import ConfigError
    from gpubench.outputs import check_writable
    from gpubench.report import roofline as rl
    from gpubench.report.table import varying_params

    for path, option in ((output, "--output"), (markdown_path, "--markdown")):
        if path:
            check_writable(path, option)
    if output:
        _need_matplotlib("--output")
    for path in results_paths:
        if store.is_record_file(path):
            raise ConfigError("is a ceilings record (gpubench ceilings --json): give it with "
                              "--ceilings", source=path)  # fmt: skip
    sets = [results.load_any(p) for p in results_paths]
    chosen = store.load_file(ceilings_path) if ceilings_path else None
    by_gpu: dict[str, tuple[Any, list[Any]]] = {}
    for result_set in sets:
        uuid = str(result_set.environment.get("gpu_uuid"))
        entry = by_gpu.setdefault(uuid, (result_set.environment, []))
        entry[1].extend(result_set.results)
    if output and len(by_gpu) > 1 and not chosen:
        raise ConfigError(f"results from {len(by_gpu)} GPUs: draw one roofline per GPU",
                          key="--output")  # fmt: skip
    err, console = _stderr(), _stdout()
    tables, placements, record = [], [], None
    for environment, group in by_gpu.values():
        record = chosen or store.load_for(environment.get("gpu_uuid"))
        if record is None:
            record = store.theoretical_only(environment)
            err.print(f"note: no measured ceilings for {record.gpu_name}: the theoretical peaks "
                      "stand in (run `gpubench ceilings` on it)", highlight=False)  # fmt: skip
        placed = rl.place(group, record)
        placements += placed
        varying, _ = varying_params(group)
        table = Table(title=f"{record.gpu_name} · roofline ({record.source} ceilings: FP32 "
                      f"{_fmt(record.get('fp32_gflops'))} GFLOP/s, DRAM "
                      f"{_fmt(record.get('dram_read_gbps'))} GB/s)", title_justify="left")  # fmt: skip
        for column in ("suite", "variant", "point", "FLOP/B", "achieved", "attainable",
                       "% attainable", "bound"):  # fmt: skip
            table.add_column(column, justify="right" if column in (
                "FLOP/B", "achieved", "attainable", "% attainable") else "left")  # fmt: skip
        for p in placed:
            point = ", ".join(f"{k}={p.point[k]}" for k in varying if k in p.point)
            if p.intensity is None:
                achieved, attainable = f"{p.gbps:,.0f} GB/s", f"{p.attainable:,.0f} GB/s"
            else:
                achieved = f"{p.gflops:,.0f} GFLOP/s"
                attainable = f"{p.attainable:,.0f} GFLOP/s"
            table.add_row(p.suite, p.variant, point,
                          "" if p.intensity is None else f"{p.intensity:,.3g}", achieved,
                          attainable, f"{100 * p.fraction:.1f}%", p.bound)  # fmt: skip
        console.print(table)
        tables.append(table)
    if not placements:
        raise ConfigError("no measured result with its work (bytes moved) to place",
                          source=", ".join(results_paths))  # fmt: skip
    if output and record is not None:
        title = f"{record.gpu_name}: every measured kernel on the roofline"
        rl.draw(placements, record, output, title)
        err.print(f"roofline: {output}", highlight=False)
    if markdown_path:
        from gpubench.report import markdown
        from gpubench.session import device_line

        markdown.write(markdown_path, markdown.document(
            "gpubench roofline", device_line(sets[0].environment, sets[0].created), tables))  # fmt: skip


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


@cli.command(epilog=EXIT_CODES_HELP)
@click.argument("results_path", metavar="RESULTS", type=click.Path(dir_okay=False))
@click.option("--x", "x", help="Parameter on the x axis [default: the numeric parameter with "
              "the most values].")  # fmt: skip
@click.option("--y", "y", help="Metric on the y axis: gbps, gflops, time_ms, speedup, ... "
              "[default: gbps, else gflops].")  # fmt: skip
@click.option("--by", "by", default="variant", show_default=True,
              help="One line per value of this (variant or a parameter).")  # fmt: skip
@click.option("--facet", "facet", help="One panel per value of this parameter.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Where to draw (PNG or SVG) [default: RESULTS with .png].")  # fmt: skip
def plot(results_path: str, x: str | None, y: str | None, by: str, facet: str | None,
         output: str | None) -> None:  # fmt: skip
    """Draw any metric of a results file against any parameter, one line per variant.

    \b
    Examples:
      gpubench plot results/transpose.jsonl
      gpubench plot results/matmul.jsonl --x size --y gflops -o matmul.svg
      gpubench plot results/transpose.jsonl --facet dtype --by variant
    """
    from pathlib import Path

    from gpubench import results
    from gpubench.errors import ConfigError
    from gpubench.outputs import check_writable
    from gpubench.report import plot as plotting

    target = output or str(Path(results_path).with_suffix(".png"))
    if Path(target).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ConfigError("give a .png, .svg or .pdf file", source=target, key="--output")
    check_writable(target, "--output")
    _need_matplotlib("plot")
    result_set = results.load_any(results_path)
    chart = plotting.build(result_set.results, x, y, by, facet)
    device = (result_set.environment.get("device") or {}).get("name", "")
    suites = sorted({r.suite for r in result_set.results})
    title = f"{', '.join(suites)}: {chart.y.header} vs {chart.x}" + (
        f" · {device}" if device else ""
    )
    if chart.best_over:
        title += f"\n(each line: the best over {', '.join(chart.best_over)})"
    plotting.draw(chart, target, title)
    _stderr().print(f"plot: {target} ({chart.y.header} vs {chart.x}"
                    f"{', log x' if chart.log_x else ''}{', log y' if chart.log_y else ''})",
                    highlight=False)  # fmt: skip


# Up to this many points a dry run lists them all; beyond it, a summary.
DRY_RUN_LISTED = 50


def _print_plan(spec: SweepSpec, shard: tuple[int, int] | None = None) -> None:
    from operator import itemgetter

    from rich.table import Table

    from gpubench import registry
    from gpubench.session import shard_points

    bench = registry.get(spec.suite_ref or spec.suite)
    points = shard_points(spec.points(bench), shard, spec.source)
    problems = bench.dry_run_problems(points)
    if problems:
        from gpubench.errors import ConfigError

        raise ConfigError(problems[0], source=spec.source)
    from gpubench.report.table import split_params

    names = list(points[0])
    console = _stdout()
    # Both ends of a large sweep (a list of 10^6 numbered pairs would cost 70 MB).
    ends = (
        range(len(points))
        if len(points) <= DRY_RUN_LISTED
        else [*range(5), *range(len(points) - 5, len(points))]
    )
    shown = [(i + 1, points[i]) for i in ends]
    # The points table shows the parameters that vary (a suite with many parameters would
    # otherwise squeeze every column to an ellipsis); the others are listed once.
    if len(points) <= DRY_RUN_LISTED:
        varying, fixed = split_params(points)
    else:
        varying, fixed = [], {}
        # Rendering a table of 10^5 rows takes minutes: summarise the axes, show both ends.
        axes = Table(title=f"{spec.source}: {bench.name}, {len(points):,} points",
                     title_justify="left")  # fmt: skip
        for column in ("param", "distinct values", "from", "to"):
            axes.add_column(column, justify="right" if column != "param" else "left")
        for name in names:
            values = set(map(itemgetter(name), points))
            try:
                low, high = min(values), max(values)
            except TypeError:  # None beside numbers: show the first and last point's
                low, high = points[0][name], points[-1][name]
            axes.add_row(name, f"{len(values):,}", str(low), str(high))
            if len(values) > 1:  # the summary has every value: no second pass over 10^6 points
                varying.append(name)
        console.print(axes)
    varying = varying or names  # one point, or every point the same
    table = Table(title=None if len(points) > DRY_RUN_LISTED else f"{spec.source}: {bench.name}",
                  title_justify="left")  # fmt: skip
    table.add_column("#", justify="right")
    for name in varying:
        table.add_column(name, justify="right")
    for i, (number, point) in enumerate(shown):
        if len(points) > DRY_RUN_LISTED and i == 5:
            table.add_row("…", *("…" for _ in varying))
        table.add_row(f"{number:,}", *(str(point[n]) for n in varying))
    console.print(table)
    if fixed and varying != names:
        console.print("at every point: " + ", ".join(f"{n}={v}" for n, v in fixed.items()),
                      highlight=False)  # fmt: skip
    builds: set[tuple] = set()
    if bench.has_kernels:
        # defines() depends on the compile-time params only: one call per distinct set.
        compile_names = [p.name for p in bench.params if p.compile_time]
        keys = map(itemgetter(*compile_names), points) if compile_names else ((),) * len(points)
        representatives = dict(zip(keys, points, strict=True))
        builds = {(tuple(sorted(bench.defines(p).items())), tuple(bench.compiler_options(p)))
                  for p in representatives.values()}  # fmt: skip
    for note in bench.dry_run_notes(points):
        console.print(note, highlight=False)
    total = len(points) * len(spec.variants)
    console.print(
        f"{len(points):,} point(s) × {len(spec.variants)} variant(s) "
        f"({', '.join(spec.variants)}; baseline {spec.baseline}) = "
        f"{total:,} measurement(s), {len(builds):,} distinct compile(s)",
        highlight=False,
    )


def main() -> None:
    cli(prog_name="gpubench")


if __name__ == "__main__":  # pragma: no cover
    main()

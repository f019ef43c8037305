"""What the commands share: consoles, the timing and output options, the options made from a
suite's parameters, --device/--devices/--scheduler/--shard as one Spread, and the exit-code
epilog."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gpubench.cli.energy_options import energy_option, energy_window_option
from gpubench.errors import EXIT_CODE_MEANINGS

# gpubench.model.results.HISTORY_DEFAULT_PATH, spelled out: importing the store (sqlite3, the results
# module) would cost `gpubench --help` 45 ms. tests/store/test_history.py holds them equal.
HISTORY_DEFAULT = "results/history.sqlite"

if TYPE_CHECKING:
    from gpubench.load.config import SweepSpec
    from gpubench.model.benchmark import Param


def exit_codes_help() -> str:
    import textwrap

    lines = ["\b", "Exit codes:"]
    for code, meaning in EXIT_CODE_MEANINGS.items():
        wrapped = textwrap.wrap(meaning, 72)
        lines.append(f"  {code:<4} {wrapped[0]}")
        lines += [f"       {rest}" for rest in wrapped[1:]]
    return "\n" + "\n".join(lines) + "\n"


EXIT_CODES_HELP = exit_codes_help()

INT32_MAX = 2**31 - 1

# Wide enough for a results table when output goes to a file or a CI log.
PIPE_WIDTH = 180


def err_console() -> Any:
    from rich.console import Console

    console = Console(stderr=True)
    return console if console.is_terminal else Console(stderr=True, width=PIPE_WIDTH)


def out_console() -> Any:
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=PIPE_WIDTH)


def execute(spec: SweepSpec, request: Any, device: int, spread: Any = None) -> int:
    from gpubench.cli.outcome import execute as measure_show_and_save

    return measure_show_and_save(spec, request, device, out_console(), err_console(), spread)


def check_device_index(device: int) -> None:
    """--device of any command: a usage error (exit 2) when it cannot be a device at all; an
    index past this machine's GPUs is an environment error, found when the GPU is opened."""
    from gpubench.errors import ConfigError

    if not 0 <= device <= INT32_MAX:  # CUDA's device ordinal is an int; -1 is no device
        raise ConfigError(f"expected a device index from 0, got {device}", key="--device")


def spread_from(
    device: int, devices: str | None, scheduler: str | None = None, shard: str | None = None
) -> Any:
    """--device, --devices, --scheduler, --shard and --backend as one Spread, each checked."""
    from gpubench.engine.session import Spread
    from gpubench.errors import ConfigError

    check_device_index(device)
    chosen = None
    if devices is not None:
        from gpubench.engine.devices import parse_devices

        try:
            chosen = parse_devices(devices)
        except ValueError as exc:
            raise ConfigError(str(exc), key="--devices") from None
    if scheduler is not None:
        if devices is not None:
            raise ConfigError(
                "--scheduler sends points to the cluster's workers; --devices "
                "picks GPUs of this host: give one of them",
                key="--scheduler",
            )
        if not scheduler.strip() or any(c.isspace() for c in scheduler):
            raise ConfigError(
                f"expected an address such as tcp://host:8786, got {scheduler!r}", key="--scheduler"
            )
    parsed_shard = None
    if shard is not None:
        parts = shard.split("/")
        try:
            index, count = (int(p) for p in parts) if len(parts) == 2 else (None, None)
        except ValueError:
            index = count = None
        if index is None or count is None or count < 1 or not 0 <= index < count:
            raise ConfigError(
                f"expected I/N with 0 <= I < N (the I-th of N shards, e.g. "
                f"$SLURM_ARRAY_TASK_ID/4), got {shard!r}",
                key="--shard",
            )
        parsed_shard = (index, count)
    return Spread(
        device=device,
        devices=chosen,
        scheduler=scheduler,
        shard=parsed_shard,
        backend=chosen_backend(),
    )


def timing_options(func: Any) -> Any:
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
        click.option(
            "--untrusted/--trusted",
            default=None,
            help="For kernels you do not trust: check every timed run, on inputs switched "
            "between two sets at random (slower; see the guarantees page).",
        ),
        energy_option,
        energy_window_option,
    ]
    for option in reversed(options):
        func = option(func)
    return func


# The smallest relative change that counts as faster or slower, for `compare` and for the web
# report alike (each also asks for more than twice the noise): the gate and the page agree.
CHANGE_THRESHOLD = 0.05

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
    "untrusted",
    "energy",
    "energy_window_s",
)


BACKEND_KEY = "gpubench.backend"


def _choose_backend(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.meta[BACKEND_KEY] = value


def chosen_backend() -> str | None:
    """The backend --backend named for this command (None: GPUBENCH_BACKEND or the default);
    handed to the engine as a parameter, checked with everything else before the first
    measurement."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(BACKEND_KEY) if ctx is not None else None


# Records the backend for this command; spread_from hands it on.
backend_option = click.option(
    "--backend",
    metavar="pycuda|cuda-core",
    expose_value=False,
    callback=_choose_backend,
    help="The GPU backend: pycuda (the default; needs the CUDA toolkit) or cuda-core (NVIDIA "
    "cuda.core and NVRTC, from wheels alone). Also GPUBENCH_BACKEND.",
)


def _output_option_list() -> list[Any]:
    """The backend, and the files results go to."""
    return [
        backend_option,
        click.option(
            "--json",
            "json_path",
            type=click.Path(dir_okay=False),
            help="Write results as JSON.",
        ),
        click.option(
            "--csv", "csv_path", type=click.Path(dir_okay=False), help="Write results as CSV."
        ),
        click.option(
            "--jsonl",
            "jsonl_path",
            type=click.Path(dir_okay=False),
            help="Append each result as a JSON line the moment it finishes.",
        ),
        click.option(
            "--markdown",
            "markdown_path",
            type=click.Path(dir_okay=False),
            help="Write the results table as GitHub-flavoured markdown (a CI job "
            "summary, a pull request).",
        ),
    ]


def _run_option_list() -> list[Any]:
    """Where and how the points run, and what else the run keeps or prints."""
    return [
        click.option("--device", default=0, show_default=True, help="CUDA device index."),
        click.option(
            "--profile",
            is_flag=True,
            help="Run each verified kernel variant once more under Nsight Compute "
            "(ncu) and add its counters to the results: DRAM bytes, sectors per "
            "request, bank conflicts, branch uniformity, occupancy, instructions.",
        ),
        click.option(
            "--devices",
            "devices",
            metavar="all|I,J,...",
            help="Run points on several GPUs of this host at once, one worker each "
            "(all, or indices such as 0,2,3).",
        ),
        click.option(
            "--history",
            "history_path",
            is_flag=False,
            flag_value=HISTORY_DEFAULT,
            metavar="[PATH]",
            help="Also append the run to a history store (SQLite; "
            f"{HISTORY_DEFAULT} without PATH) for `gpubench history` and `report`.",
        ),
        click.option(
            "--label",
            default="",
            help="A label for the run in the history store (a branch, a change, 'nightly').",
        ),
        click.option(
            "--verbose",
            is_flag=True,
            help="Also print where the host time went: each result's phases (inputs, "
            "reference, uploads, checked run, check, timing, re-check, downloads) and "
            "the share of the wall time the GPU spent in timed runs.",
        ),
    ]


def output_options(func: Any) -> Any:
    for option in reversed([*_output_option_list(), *_run_option_list()]):
        func = option(func)
    return func


def param_option(param: Param) -> click.Option:
    if param.choices:
        kind: Any = click.Choice([str(c) for c in param.choices])
    else:
        kind = {int: click.INT, float: click.FLOAT, bool: click.BOOL}.get(param.type, click.STRING)
    default = param.default if param.default is not None else f"{param.derived_from}"
    flag = "--" + param.name.replace("_", "-")
    return click.Option(
        [flag, param.name], type=kind, default=None, help=f"{param.help} [default: {default}]"
    )

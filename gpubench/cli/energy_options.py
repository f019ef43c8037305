"""--energy and --energy-window, on run, sweep and tune alike, and how they (and sweep's
--untrusted) override a sweep file's timing."""

from __future__ import annotations

from typing import Any

import click

energy_option = click.option(
    "--energy/--no-energy",
    default=None,
    help="Also measure each verified result's energy per run (NVML's energy counter over a "
    "window of back-to-back runs; overrides the file's timing.energy).",
)
energy_window_option = click.option(
    "--energy-window",
    "energy_window_s",
    type=float,
    help="Seconds of back-to-back runs the energy is read over [default: 1.0].",
)


# The command-line option that sets each timing field these commands take over a file's.
OPTION_OF = {
    "untrusted": "--untrusted",
    "energy": "--energy",
    "energy_window_s": "--energy-window",
}


def with_timing(spec: Any, **given: Any) -> Any:
    """The sweep with the options given (not None) over its file's timing: `untrusted`,
    `energy`, `energy_window_s`; a value the policy refuses names its option."""
    from dataclasses import replace

    from gpubench.errors import ConfigError

    changes = {name: value for name, value in given.items() if value is not None}
    if not changes:
        return spec
    policy = replace(spec.timing, **changes)
    for name, problem in policy.check():
        if name in changes:
            raise ConfigError(f"{problem} (got {changes[name]:g})", key=OPTION_OF[name])
    return replace(spec, timing=policy)

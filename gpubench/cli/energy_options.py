"""--energy and --energy-window, on run, sweep and tune alike, and how they override a sweep
file's timing.energy and timing.energy_window_s."""

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


def with_energy(spec: Any, energy: bool | None, window_s: float | None) -> Any:
    """The sweep with --energy/--no-energy and --energy-window over its file's timing, where
    given (the window checked as the file's would be)."""
    from dataclasses import replace

    from gpubench.errors import ConfigError

    changes: dict[str, Any] = {}
    if energy is not None:
        changes["energy"] = energy
    if window_s is not None:
        changes["energy_window_s"] = window_s
    if not changes:
        return spec
    policy = replace(spec.timing, **changes)
    for name, problem in policy.check():
        if name == "energy_window_s":
            raise ConfigError(f"{problem} (got {window_s:g})", key="--energy-window")
    return replace(spec, timing=policy)

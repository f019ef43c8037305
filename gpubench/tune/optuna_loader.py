"""Optuna, imported only when a strategy of it runs (`gpubench --help` and the built-in
strategies work without it), its own log quietened."""

from __future__ import annotations

from typing import Any

from gpubench.errors import EnvironmentProblem


def optuna_module() -> Any:
    try:
        import optuna
    except ImportError:
        raise EnvironmentProblem(
            "the Optuna strategies need Optuna: pip install 'gpubench-studies[tune]' "
            "(or use --strategy random or exhaustive)"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna

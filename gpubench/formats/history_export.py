"""`gpubench history export RUN --json FILE` writes a stored run as a results file: the same
format as `gpubench run/sweep --json` (less each result's timeline and phases, which the
store does not keep), read back by the same reader: each result's energy (`--energy`; the
Energy schema of gpubench.formats.results) goes out and comes back in as the run wrote it.
`gpubench history import` takes either results format (a results file or a results log)."""

from __future__ import annotations

from gpubench.formats.results import ResultsFile

SCHEMAS: dict[str, type] = {"History export (a results file)": ResultsFile}

"""Timing policies that several test modules share.

Each is a plain constant: import it by name, and derive a variant with
`dataclasses.replace(QUICK, ...)` rather than writing a new TimingPolicy, so that what a test
changes stands out. tests/test_policies.py pins every field of each, so a change here shows up
as a diff there. Policies that one module needs for a reason of its own stay in that module.
"""

from __future__ import annotations

from gpubench.model.timing import TimingPolicy

CHECK_ONLY = TimingPolicy(warmup=0, min_samples=1, max_samples=1, min_time_s=0)
"""One timed run, no warmup, no time floor: for tests of what a variant computes (its check,
its status, its launches), where the time is not looked at."""

QUICK = TimingPolicy(warmup=1, min_samples=3, max_samples=5, min_time_s=0, max_time_s=1)
"""A few samples, no time floor: the CPU stand-in's default, for tests of the runner's logic
(verification, skips, convergence, speedups) that need a median but not a good one."""

THREE_SAMPLES = TimingPolicy(warmup=0, min_samples=3, max_samples=3, min_time_s=0)
"""Exactly three samples, no warmup, no time floor: every variant of a suite checked and timed
a few times on the CPU stand-in, in a fixed number of runs whatever the noise."""

"""The shared timing policies (tests/policies.py), pinned field by field: a change to one
changes every test that imports it, so it has to show up here as a diff first."""

from __future__ import annotations

from dataclasses import asdict, fields

import pytest

from gpubench.model.timing import TimingPolicy
from tests import policies

# Every field of each policy, defaults included: a new default in TimingPolicy changes the
# shared policies too, and fails here.
PINNED = {
    "CHECK_ONLY": {
        "warmup": 0,
        "min_samples": 1,
        "max_samples": 1,
        "min_time_s": 0,
        "target_noise": 0.02,
        "max_time_s": 2.0,
        "mode": "cold",
        "hot_sample_ms": 1.0,
        "flush_l2": None,
        "throttle_threshold": 0.9,
        "time_limit_s": 120.0,
        "untrusted": False,
        "energy": False,
        "energy_window_s": 1.0,
    },
    "QUICK": {
        "warmup": 1,
        "min_samples": 3,
        "max_samples": 5,
        "min_time_s": 0,
        "target_noise": 0.02,
        "max_time_s": 1,
        "mode": "cold",
        "hot_sample_ms": 1.0,
        "flush_l2": None,
        "throttle_threshold": 0.9,
        "time_limit_s": 120.0,
        "untrusted": False,
        "energy": False,
        "energy_window_s": 1.0,
    },
    "THREE_SAMPLES": {
        "warmup": 0,
        "min_samples": 3,
        "max_samples": 3,
        "min_time_s": 0,
        "target_noise": 0.02,
        "max_time_s": 2.0,
        "mode": "cold",
        "hot_sample_ms": 1.0,
        "flush_l2": None,
        "throttle_threshold": 0.9,
        "time_limit_s": 120.0,
        "untrusted": False,
        "energy": False,
        "energy_window_s": 1.0,
    },
}


def test_the_shared_policies_are_exactly_the_pinned_ones():
    shared = {name for name, value in vars(policies).items() if isinstance(value, TimingPolicy)}
    assert shared == set(PINNED)  # a new shared policy is pinned here too


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_field_is_pinned(name):
    policy = getattr(policies, name)
    assert set(PINNED[name]) == {f.name for f in fields(TimingPolicy)}
    assert asdict(policy) == PINNED[name]
    # The types too: 0 and 0.0 are equal, but a record written from the policy shows which.
    assert {k: type(v) for k, v in asdict(policy).items()} == {
        k: type(v) for k, v in PINNED[name].items()
    }
    assert policy.check() == []

"""The default strategy's one model over every problem: its balanced start, and what is fast
at one size tried at the next."""

from __future__ import annotations

from collections import Counter

import pytest

from gpubench.tune import replay, search, shared_tpe, strategies
from tests.tune.recorded import log_file, sweep_file, ten_times

pytest.importorskip("optuna")


def two_sizes(tmp_path):
    config = sweep_file(tmp_path, [64, 128])
    log = log_file(tmp_path, ten_times(64) | ten_times(128, offset=1.0))
    return replay.prepare(str(config), str(log))


def test_the_start_tries_every_value_of_every_axis_evenly(tmp_path):
    recorded = two_sizes(tmp_path)
    found = search.searches(recorded.space, "tpe", search.Budget(count=8), seed=3)
    search.interleave(found, search.one_at_a_time(recorded.evaluate))
    # The problems take turns: the first eight proposals are the first four of each.
    proposed = [one.problem.configurations[s.index] for one in found for s in one.run.steps[:4]]
    assert len(proposed) == shared_tpe.START == 8
    assert Counter(c["tile"] for c in proposed) == {16: 4, 32: 4}
    rows = Counter(c["block_rows"] for c in proposed)
    assert set(rows) == {1, 2, 4, 8, 16} and max(rows.values()) == 2


def test_the_start_takes_half_of_a_small_budget_at_most(tmp_path, monkeypatch):
    recorded = two_sizes(tmp_path)
    balanced = []
    original = shared_tpe.SharedTpe._balanced

    def counted(self, number):
        balanced.append(number)
        return original(self, number)

    monkeypatch.setattr(shared_tpe.SharedTpe, "_balanced", counted)
    for per_problem, expected in ((2, [0, 1]), (3, [0, 1, 0]), (8, [0, 1] * 4)):
        balanced.clear()
        found = search.searches(recorded.space, "tpe", search.Budget(count=per_problem), 0)
        search.interleave(found, search.one_at_a_time(recorded.evaluate))
        assert balanced == expected, per_problem


def test_the_same_seed_proposes_the_same_and_another_seed_differs(tmp_path):
    recorded = two_sizes(tmp_path)

    def proposals(seed):
        found = search.searches(recorded.space, "tpe", search.Budget(count=7), seed)
        search.interleave(found, search.one_at_a_time(recorded.evaluate), batch=2)
        return [[step.index for step in one.run.steps] for one in found]

    first = proposals(5)
    assert first == proposals(5) != proposals(6)
    assert all(len(set(indices)) == 7 for indices in first)  # none twice in a problem


def test_the_best_of_another_size_is_tried_every_other_proposal(tmp_path, monkeypatch):
    """The model (here a stand-in that always wants tile 16 with 1 row) and the carried best
    of the other size take turns."""
    import numpy as np

    monkeypatch.setattr(shared_tpe, "START", 0)  # the model from the first proposal
    monkeypatch.setattr(shared_tpe.SharedTpe, "_asked", lambda self, number: np.zeros(2))
    recorded = two_sizes(tmp_path)
    small, large = recorded.space.problems
    at_small, at_large = strategies.make("tpe", recorded.space.problems, 0)
    for index in range(10):  # the small size measured whole: (32, 8) is its best
        at_small.seen(index, recorded.evaluate(small, index).cost)
    chosen = []
    for _ in range(4):
        index = at_large.propose()
        at_large.learn(index, recorded.evaluate(large, index).cost)
        configuration = large.configurations[index]
        chosen.append((configuration["tile"], configuration["block_rows"]))
    # Model, carried (the small size's best), model (its nearest not yet spent), carried
    # (the small size's second best: 32 with 4 or 16 rows, 1.25 ms; 4 was measured first).
    assert chosen == [(16, 1), (32, 8), (16, 2), (32, 4)]


def test_times_are_standardised_per_problem_and_a_failure_is_twice_the_worst():
    import math

    values = shared_tpe._standardised([(0, 1.0), (1, None), (2, math.e)])
    # log times 0 and 1: mean 0.5, deviation 0.5; the failure at log(2 e) = 1 + log 2.
    assert values == pytest.approx([-1.0, 1 + 2 * math.log(2), 1.0])
    assert shared_tpe._standardised([(0, 3.0)]) == [0.0]  # one time: no spread to divide by
    assert shared_tpe._standardised([(0, None), (1, None)]) == [3.0, 3.0]


def test_a_configuration_that_failed_at_the_other_size_is_not_carried(tmp_path, monkeypatch):
    import numpy as np

    monkeypatch.setattr(shared_tpe, "START", 0)
    monkeypatch.setattr(shared_tpe.SharedTpe, "_asked", lambda self, number: np.zeros(2))
    recorded = two_sizes(tmp_path)
    _, large = recorded.space.problems
    at_small, at_large = strategies.make("tpe", recorded.space.problems, 0)
    for index in range(10):  # every configuration failed at the small size
        at_small.seen(index, None)
    first = at_large.propose()
    at_large.learn(first, 1.0)
    second = at_large.propose()  # nothing to carry: the model's nearest not yet spent
    rows = [(c["tile"], c["block_rows"]) for c in large.configurations]
    assert (rows[first], rows[second]) == ((16, 1), (16, 2))

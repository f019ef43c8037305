"""The second input set: the near copy, the hand-over between points of one problem, the
thread that makes it, and the loads and comparisons on the CPU stand-in."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.engine import input_sets
from gpubench.engine.stages import Placements
from gpubench.model.benchmark import BufferSpec, Param
from gpubench.model.phases import PhaseClock
from tests.fakes import FakeBackend, ScaleSuite


def test_the_second_seed_is_derived_from_the_point_s_and_stays_in_range():
    assert input_sets.fresh_seed(5) == input_sets.fresh_seed(5) != 5
    assert all(0 <= input_sets.fresh_seed(s) < 2**63 for s in (0, 1, 2**63 - 1))


@pytest.mark.parametrize(
    ("size", "changes"), [(1, 1), (31, 1), (8191, 1), (8192, 2), (65536, 16), (10**6, 16)]
)
def test_a_near_copy_changes_a_few_values_of_each_floating_array(size, changes):
    rng = np.random.default_rng(0)
    first = {"x": rng.random(size, dtype=np.float32), "i": np.arange(size, dtype=np.int32)}
    made = []

    def fresh():
        made.append(1)
        return {"x": np.full(size, 7.0, np.float32), "i": first["i"]}

    near = input_sets.near_copy(first, np.random.default_rng(1), fresh)
    assert near is not None and near["i"] is first["i"]  # integers: shared, unchanged
    changed = np.flatnonzero(near["x"] != first["x"])
    assert changed.size == changes
    if size > 1:  # values from elsewhere in the array: no fresh set needed
        assert set(near["x"][changed]) <= set(first["x"]) and made == []
    else:  # a single value has no other: the fresh set's
        assert near["x"][0] == 7.0 and made == [1]
    assert first["x"].min() < 1  # the first set itself untouched
    again = input_sets.near_copy(first, np.random.default_rng(1), fresh)
    assert np.array_equal(again["x"], near["x"])  # reproducible from the seed


def test_a_constant_array_takes_its_changed_values_from_a_fresh_set():
    first = {"x": np.ones(100, np.float64)}
    near = input_sets.near_copy(first, np.random.default_rng(0), lambda: {"x": np.full(100, 3.0)})
    assert np.count_nonzero(near["x"] == 3.0) == 1


def test_inputs_without_floating_arrays_have_no_near_copy():
    ints = {"i": np.arange(10, dtype=np.int32)}
    assert input_sets.near_copy(ints, np.random.default_rng(0), lambda: ints) is None


class _Tuned(ScaleSuite):
    params = (
        *ScaleSuite.params,
        Param("block", int, 256, "threads", choices=(128, 256), compile_time=True),
    )


def test_points_pose_one_problem_when_they_differ_only_in_compile_time_params_not_read():
    bench = _Tuned()
    a = bench.resolve({**bench.defaults(), "block": 128})
    b = bench.resolve({**bench.defaults(), "block": 256})
    assert not input_sets.same_problem(bench, a, b)  # reference_params None: it may read any
    bench.reference_params = frozenset()
    assert input_sets.same_problem(bench, a, b)
    assert input_sets.same_problem(bench, a, a)
    assert not input_sets.same_problem(bench, a, {**b, "n": 7})  # n is the problem
    bench.reference_params = frozenset({"block"})
    assert not input_sets.same_problem(bench, a, b)  # the answer reads block


def test_an_earlier_set_stands_in_only_for_arrays_of_the_same_names_shapes_and_types():
    x = np.zeros(4, np.float32)
    earlier = input_sets.EarlierSet({}, {"x": x}, {}, {})
    assert earlier.matches({"x": np.ones(4, np.float32)})
    assert not earlier.matches({"x": np.ones(5, np.float32)})
    assert not earlier.matches({"x": np.ones(4, np.float64)})
    assert not earlier.matches({"x": x, "y": x})


def test_a_reference_the_thread_could_not_make_is_made_when_asked_for():
    calls = []

    class NeedsItsCase(ScaleSuite):
        ready = False

        def reference(self, computes, point, inputs):
            calls.append(self.ready)
            if not self.ready:
                raise KeyError("what case() keeps")
            return super().reference(computes, point, inputs)

    bench = NeedsItsCase()
    point = bench.resolve(bench.defaults())
    first = bench.inputs(point, np.random.default_rng(0))
    fresh = input_sets.FreshInputs(bench, point, 3, ["double"], first)
    fresh.wait()
    bench.ready = True
    reference = fresh.reference("double")
    assert calls == [False, True] and fresh.kind == "near"
    np.testing.assert_array_equal(reference["out"], 2 * fresh.inputs()["x"])
    fresh.close()


def _sets(use_copies=True):
    backend = FakeBackend()
    clock = PhaseClock()
    bench = ScaleSuite()
    point = bench.resolve(bench.defaults())
    first = bench.inputs(point, np.random.default_rng(0))
    fresh = input_sets.FreshInputs(bench, point, 3, [], first)
    sets = input_sets.InputSets(
        backend, Placements(backend, first, clock), fresh, clock, use_copies=use_copies
    )
    return backend, sets, first


@pytest.mark.parametrize("use_copies", [True, False])
def test_loads_put_either_set_in_the_bound_buffer_and_a_write_is_counted(use_copies):
    backend, sets, first = _sets(use_copies)
    wanted = {"x": "device"}
    sets.ready(wanted)
    buffer = sets.first.get("x", "device")
    spec = sets.first.spec("x", "device")
    assert sets.written(input_sets.FIRST, wanted) == []
    sets.load(input_sets.SECOND, wanted)
    second = sets.fresh.inputs()["x"]
    np.testing.assert_array_equal(backend.read(buffer, spec), second)
    assert sets.written(input_sets.SECOND, wanted) == []
    assert sets.written(input_sets.FIRST, wanted) == ["'x' (1 of 1,000 elements)"]
    sets.load(input_sets.FIRST, wanted)
    changed = first["x"].copy()
    changed[[3, 7]] += 1
    backend.write(buffer, spec, changed)
    assert sets.written(input_sets.FIRST, wanted) == ["'x' (2 of 1,000 elements)"]
    sets.ready(wanted)  # a written buffer is loaded again before the next variant
    np.testing.assert_array_equal(backend.read(buffer, spec), first["x"])
    sets.free()
    sets.first.free()
    assert backend.live_buffers == 0


def test_a_nan_input_is_intact_bit_for_bit():
    got = np.array([np.nan, 1.0], np.float32)
    assert input_sets._count_differing(got, got.copy()) == 0
    assert input_sets._count_differing(got, np.array([np.nan, 2.0], np.float32)) == 1


def test_a_problem_is_the_point_without_the_configuration_neither_reference_nor_inputs_read():
    bench = _Tuned()
    a = bench.resolve({**bench.defaults(), "block": 128})
    b = bench.resolve({**bench.defaults(), "block": 256})
    assert input_sets.problem_key(bench, a) is None  # reference_params None: its own problem
    bench.reference_params = frozenset()
    assert input_sets.problem_key(bench, a) is None  # input_params None: the same
    bench.input_params = frozenset({"n"})
    assert input_sets.problem_key(bench, a) == input_sets.problem_key(bench, b)
    assert input_sets.shares_problem(bench, a, b)
    assert input_sets.problem_key(bench, a) != input_sets.problem_key(bench, {**b, "n": 7})
    bench.reference_params = frozenset({"block"})
    assert input_sets.problem_key(bench, a) != input_sets.problem_key(bench, b)
    bench.reference_params = frozenset()
    bench.input_params = frozenset({"n", "block"})  # the inputs read the block: two problems
    assert input_sets.problem_key(bench, a) != input_sets.problem_key(bench, b)
    assert not input_sets.shares_problem(bench, a, b)
    assert input_sets.same_problem(bench, a, b)  # still one problem for the hand-over


def test_the_points_of_one_problem_run_together_the_biggest_problem_first():
    bench = _Tuned()
    bench.reference_params = frozenset()
    bench.input_params = frozenset({"n"})
    points = [
        bench.resolve({**bench.defaults(), "n": n, "block": block})
        for block in (128, 256)
        for n in (5, 7, 5, 9)
    ]
    ordered = input_sets.by_problem(bench, points)
    assert [(p["n"], p["block"]) for p in ordered] == [
        (9, 128),
        (9, 256),
        (7, 128),
        (7, 256),
        (5, 128),
        (5, 128),
        (5, 256),
        (5, 256),
    ]
    assert input_sets.input_bytes(bench, ordered[0]) == 9 * 4 * len(bench.input_specs(points[0]))
    bench.reference_params = None  # no problem known: each point its own, biggest first
    assert [p["n"] for p in input_sets.by_problem(bench, points)] == [9, 9, 7, 7, 5, 5, 5, 5]


def test_problems_of_one_size_keep_the_sweep_s_order_and_a_suite_without_sizes_too():
    bench = _Tuned()
    bench.reference_params = frozenset()
    bench.input_params = frozenset({"n"})
    points = [bench.resolve({**bench.defaults(), "n": n}) for n in (5, 7, 9)]
    bench.input_specs = lambda point: {}  # equal sizes: where their first point was
    assert input_sets.by_problem(bench, points) == points

    def cannot_say(point):
        raise ValueError("no sizes")

    bench.input_specs = cannot_say
    assert input_sets.input_bytes(bench, points[0]) == 0
    assert input_sets.by_problem(bench, points) == points


def test_arrays_stand_in_for_a_point_only_with_the_shapes_and_types_it_declares():
    x = np.zeros(4, np.float32)
    assert input_sets.shapes_match({"x": BufferSpec((4,), np.dtype(np.float32))}, {"x": x})
    assert not input_sets.shapes_match({"x": BufferSpec((5,), np.dtype(np.float32))}, {"x": x})
    assert not input_sets.shapes_match({"x": BufferSpec((4,), np.dtype(np.float64))}, {"x": x})
    assert not input_sets.shapes_match({"y": BufferSpec((4,), np.dtype(np.float32))}, {"x": x})
    assert not input_sets.shapes_match(None, {"x": x})  # a suite that cannot say
    assert not input_sets.shapes_match({}, {})


def test_run_time_parameters_named_as_configuration_share_the_problem():
    """`tune: configuration: [tag]`: points that differ in a run-time parameter the sweep
    file names (and neither the reference nor the inputs read) pose one problem, ordered
    together; without the name, or where the inputs read it, each is its own."""
    bench = _Tuned()
    bench.reference_params = frozenset()
    bench.input_params = frozenset({"n"})
    a = bench.resolve({**bench.defaults(), "tag": "a"})
    b = bench.resolve({**bench.defaults(), "tag": "b", "block": 128})
    assert not input_sets.shares_problem(bench, a, b)
    assert not input_sets.same_problem(bench, a, b)
    assert input_sets.shares_problem(bench, a, b, ("tag",))
    assert input_sets.same_problem(bench, a, b, ("tag",))
    assert not input_sets.shares_problem(bench, a, {**b, "n": 7}, ("tag",))
    points = [bench.resolve({**bench.defaults(), "n": n, "tag": t}) for t in "ab" for n in (5, 9)]
    assert [(p["n"], p["tag"]) for p in input_sets.by_problem(bench, points, ("tag",))] == [
        (9, "a"),
        (9, "b"),
        (5, "a"),
        (5, "b"),
    ]
    bench.input_params = frozenset({"n", "tag"})  # the inputs read it: part of the problem
    assert not input_sets.shares_problem(bench, a, b, ("tag",))


# -- one seed per problem per run ------------------------------------------------------------
def _tunable():
    from gpubench.load import registry

    return registry.get(str(__import__("pathlib").Path(__file__).parents[1] / "suites/tunable.py"))


def test_a_problem_s_seed_is_the_run_s_for_every_configuration_of_it():
    bench = _tunable()
    point = {"n": 1000, "block": 128, "unroll": 1}
    seed = input_sets.problem_seed(bench, point, (), 12345)
    assert seed == 5033474089514785139  # blake2b of (run seed, suite, problem), 63 bits
    # Another configuration of the problem: the same seed; another problem or run: another.
    assert input_sets.problem_seed(bench, {**point, "block": 256, "unroll": 4}, (), 12345) == seed
    assert input_sets.problem_seed(bench, {**point, "n": 1001}, (), 12345) != seed
    assert input_sets.problem_seed(bench, point, (), 12346) != seed
    assert 0 <= seed < 2**63


def test_a_suite_that_cannot_say_its_problem_has_no_problem_seed():
    assert input_sets.problem_seed(ScaleSuite(), ScaleSuite().defaults(), (), 12345) is None

"""The pool's hand-out: a GPU keeps to its problem, takes an unheld one next, and joins a held
one only where that pays for making its data once more."""

import threading

import pytest

from gpubench.engine.dispatch import ProblemDispatch


def items(*spec):
    """Points named "<problem><n>" ("a1", "a2", "b1"...), in the order given."""
    return [({"name": name, "problem": name[0]}, ["v"]) for name in spec]


def problem_of(point):
    return point["problem"]


def name(item):
    return None if item is None else item[0]["name"]


def test_one_gpu_takes_the_points_in_their_order():
    dispatch = ProblemDispatch(items("a1", "a2", "b1", "c1", "c2"), problem_of)
    taken = []
    while (item := dispatch.take(0)) is not None:
        taken.append(name(item))
        dispatch.done(0, 1.0, item[0])
    assert taken == ["a1", "a2", "b1", "c1", "c2"]


def test_points_of_one_problem_listed_apart_are_handed_out_together():
    dispatch = ProblemDispatch(items("a1", "b1", "a2", "b2"), problem_of)
    assert [name(dispatch.take(0)) for _ in range(4)] == ["a1", "a2", "b1", "b2"]
    assert dispatch.take(0) is None


def test_each_gpu_keeps_to_its_problem_and_a_free_one_takes_the_biggest_unheld():
    dispatch = ProblemDispatch(items("a1", "a2", "a3", "b1", "b2", "c1", "c2"), problem_of)
    a1, b1 = dispatch.take(0), dispatch.take(1)
    assert [name(a1), name(b1)] == ["a1", "b1"]  # a shared queue: a1, a2
    dispatch.done(1, 1.0, b1[0])
    b2 = dispatch.take(1)
    assert name(b2) == "b2"
    dispatch.done(1, 1.0, b2[0])
    assert name(dispatch.take(1)) == "c1"  # b is done: c, which nobody holds, before a
    dispatch.done(0, 1.0, a1[0])
    assert [name(dispatch.take(0)), name(dispatch.take(0))] == ["a2", "a3"]


def test_a_held_problem_is_joined_where_its_time_left_per_holder_is_more_than_its_set_up():
    # Problem a: a first point of 5 s, later ones of 1 s (set-up 4 s); 6 points left on one
    # holder are 6 s: worth a second GPU. With 3 left (3 s) it is not.
    for left, joined in ((6, True), (3, False)):
        dispatch = ProblemDispatch(items(*[f"a{i}" for i in range(left + 2)]), problem_of)
        dispatch.done(0, 5.0, dispatch.take(0)[0])
        dispatch.done(0, 1.0, dispatch.take(0)[0])
        assert (dispatch.take(1) is not None) is joined


def test_of_two_held_problems_the_one_with_most_time_left_per_holder_is_joined():
    dispatch = ProblemDispatch(items("a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"), problem_of)
    for worker, seconds in ((0, 1.0), (1, 3.0)):  # a's points take 1 s, b's 3 s
        dispatch.done(worker, seconds, dispatch.take(worker)[0])
        dispatch.done(worker, seconds, dispatch.take(worker)[0])
    # a: 2 left x 1 s; b: 2 left x 3 s, set-up 0 (first and later alike): b.
    assert name(dispatch.take(2)) == "b3"
    # b now has one point left and two holders: a third GPU joins a (2 s left, set-up 0).
    assert name(dispatch.take(3)) == "a3"


def test_before_any_point_finished_a_problem_is_joined_only_with_more_points_than_holders():
    dispatch = ProblemDispatch(items("a1", "a2", "a3"), problem_of)
    assert [name(dispatch.take(w)) for w in (0, 1)] == ["a1", "a2"]  # 2 left, 1 holder
    assert dispatch.take(2) is None  # 1 left, 2 holders


def test_a_gpu_that_moves_on_lets_go_of_its_problem():
    dispatch = ProblemDispatch(items("a1", "b1", "b2", "b3", "b4"), problem_of)
    a1, b1 = dispatch.take(0), dispatch.take(1)
    assert [name(a1), name(b1)] == ["a1", "b1"]
    dispatch.done(0, 1.0, a1[0])
    # a is done; 0 joins b (3 left, one holder), so b has two holders.
    b2 = dispatch.take(0)
    assert name(b2) == "b2"
    dispatch.done(0, 1.0, b2[0])
    dispatch.done(1, 1.0, b1[0])
    # b: 2 left over 2 holders (1 s each, set-up 0): a third GPU would get nothing worth it.
    assert dispatch.take(2) is None


def test_every_point_is_handed_out_once_to_gpus_taking_in_parallel():
    names = [f"{p}{i}" for p in "abcdefg" for i in range(30)]
    dispatch = ProblemDispatch(items(*names), problem_of)
    taken: list[str] = []
    lock = threading.Lock()

    def serve(worker):
        while (item := dispatch.take(worker)) is not None:
            with lock:
                taken.append(name(item))
            dispatch.done(worker, 0.001, item[0])

    threads = [threading.Thread(target=serve, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == sorted(names)


def test_points_without_a_problem_go_in_their_order():
    listed = [({"n": n}, ["v"]) for n in (3, 1, 2)]
    dispatch = ProblemDispatch(listed, lambda point: ("point", point["n"]))
    assert [dispatch.take(w)[0]["n"] for w in (0, 1, 0)] == [3, 1, 2]


@pytest.mark.parametrize(("first_b_s", "joined"), [(9.0, None), (2.0, "b4")])
def test_a_point_that_finishes_after_its_worker_moved_on_counts_for_its_own_problem(
    first_b_s, joined
):
    """Two points in flight (a Dask worker's next point goes out before it finishes one): GPU 0
    takes a1 and a2, is handed b1 when a1 finishes, and only then finishes a2. a2's 1 s is a
    later point of a, not GPU 0's first point of b: b's set-up is its first point (b1) beyond
    its later ones (b2, 1 s). With b1 at 9 s that is 8 s, more than b's 3 s left (b4..b6 at
    1 s): a second GPU does not join. Counted for b, a2 would have made b1 a later point and
    b's set-up 0 s: joined. With b1 at 2 s (set-up 1 s) joining pays."""
    dispatch = ProblemDispatch(items("a1", "a2", *[f"b{i}" for i in range(1, 7)]), problem_of)
    a1, a2 = dispatch.take(0), dispatch.take(0)
    dispatch.done(0, 1.0, a1[0])
    b1 = dispatch.take(0)
    assert [name(a2), name(b1)] == ["a2", "b1"]
    dispatch.done(0, 1.0, a2[0])
    b2 = dispatch.take(0)
    dispatch.done(0, first_b_s, b1[0])
    assert name(dispatch.take(0)) == "b3"
    dispatch.done(0, 1.0, b2[0])
    assert name(dispatch.take(1)) == joined


def test_the_first_point_of_a_problem_is_the_one_a_worker_took_first_whichever_finishes_first():
    """a's first point on GPU 0 is a1 (it made the data), even where a2 finishes before it:
    a2's 1 s is a later point and a1's 7 s the first, so a's set-up is 6 s and its 3 points
    left on one holder (3 s) are not worth a second GPU. Were a2 counted first (1 s) and a1
    later (7 s), the set-up would be 0 s and GPU 1 would join."""
    dispatch = ProblemDispatch(items(*[f"a{i}" for i in range(1, 6)]), problem_of)
    a1, a2 = dispatch.take(0), dispatch.take(0)
    dispatch.done(0, 1.0, a2[0])
    dispatch.done(0, 7.0, a1[0])
    assert dispatch.take(1) is None


def test_a_plan_s_points_are_handed_out_a_problem_s_configurations_together_biggest_first():
    from gpubench.engine.dispatch import for_plan
    from gpubench.engine.pool import remaining_work
    from gpubench.engine.runner import Plan
    from gpubench.load import registry
    from gpubench.model.timing import TimingPolicy

    bench = registry.get("transpose")
    sizes_and_tiles = [(256, 16), (1024, 16), (256, 32), (1024, 32), (512, 16)]
    points = [bench.resolve({**bench.defaults(), "size": s, "tile": t}) for s, t in sizes_and_tiles]
    plan = Plan(bench, points, ("naive",), "naive", TimingPolicy())
    dispatch = for_plan(plan, remaining_work(plan, ())[1])
    # GPU 0 takes 1024 (both tiles: one problem), GPU 1 the biggest problem nobody holds.
    first, second = dispatch.take(0), dispatch.take(1)
    assert [(p["size"], p["tile"]) for p, _ in (first, second)] == [(1024, 16), (512, 16)]
    assert (dispatch.take(0)[0]["size"], dispatch.take(0)[0]["size"]) == (1024, 256)
    # Then the other 256 point; 512 had one point, already handed out: nothing is left.
    assert dispatch.take(0)[0]["size"] == 256 and dispatch.take(0) is None


def test_a_lost_first_point_counts_no_time_and_the_next_point_of_its_problem_is_a_first():
    """GPU 0's first point of a, a1, is lost (its Dask worker died with the data it made): no
    time is counted for it, and GPU 0 lets go of a. Its next point, a2, is its first point of
    a again: 7 s, against a3's 1 s, makes a's set-up 6 s, more than the 3 s left on one
    holder, so GPU 1 does not join. Were a2 a later point (a1's entry kept, never done), the
    set-up would be 0 s and GPU 1 would join."""
    dispatch = ProblemDispatch(items(*[f"a{i}" for i in range(1, 7)]), problem_of)
    a1 = dispatch.take(0)
    dispatch.lost(0, a1[0])
    a2 = dispatch.take(0)
    dispatch.done(0, 7.0, a2[0])
    a3 = dispatch.take(0)
    dispatch.done(0, 1.0, a3[0])
    assert [name(a1), name(a2), name(a3)] == ["a1", "a2", "a3"]
    assert dispatch.take(1) is None
    assert name(dispatch.take(0)) == "a4"


def test_a_lost_point_of_another_problem_leaves_the_held_one_alone():
    dispatch = ProblemDispatch(items("a1", "a2", "b1", "b2"), problem_of)
    a1 = dispatch.take(0)
    dispatch.lost(1, a1[0])  # not GPU 1's: nothing changes for GPU 0
    assert name(dispatch.take(0)) == "a2" and name(dispatch.take(1)) == "b1"

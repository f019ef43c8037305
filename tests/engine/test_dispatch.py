"""The pool's hand-out: a GPU keeps to its problem, takes an unheld one next, and joins a held
one only where that pays for making its data once more."""

import threading

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
        dispatch.done(0, 1.0)
    assert taken == ["a1", "a2", "b1", "c1", "c2"]


def test_points_of_one_problem_listed_apart_are_handed_out_together():
    dispatch = ProblemDispatch(items("a1", "b1", "a2", "b2"), problem_of)
    assert [name(dispatch.take(0)) for _ in range(4)] == ["a1", "a2", "b1", "b2"]
    assert dispatch.take(0) is None


def test_each_gpu_keeps_to_its_problem_and_a_free_one_takes_the_biggest_unheld():
    dispatch = ProblemDispatch(items("a1", "a2", "a3", "b1", "b2", "c1", "c2"), problem_of)
    assert [name(dispatch.take(w)) for w in (0, 1)] == ["a1", "b1"]  # a shared queue: a1, a2
    dispatch.done(1, 1.0)
    assert name(dispatch.take(1)) == "b2"
    dispatch.done(1, 1.0)
    assert name(dispatch.take(1)) == "c1"  # b is done: c, which nobody holds, before a
    dispatch.done(0, 1.0)
    assert [name(dispatch.take(0)), name(dispatch.take(0))] == ["a2", "a3"]


def test_a_held_problem_is_joined_where_its_time_left_per_holder_is_more_than_its_set_up():
    # Problem a: a first point of 5 s, later ones of 1 s (set-up 4 s); 6 points left on one
    # holder are 6 s: worth a second GPU. With 3 left (3 s) it is not.
    for left, joined in ((6, True), (3, False)):
        dispatch = ProblemDispatch(items(*[f"a{i}" for i in range(left + 2)]), problem_of)
        dispatch.take(0)
        dispatch.done(0, 5.0)
        dispatch.take(0)
        dispatch.done(0, 1.0)
        assert (dispatch.take(1) is not None) is joined


def test_of_two_held_problems_the_one_with_most_time_left_per_holder_is_joined():
    dispatch = ProblemDispatch(items("a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"), problem_of)
    for worker, seconds in ((0, 1.0), (1, 3.0)):  # a's points take 1 s, b's 3 s
        dispatch.take(worker)
        dispatch.done(worker, seconds)
        dispatch.take(worker)
        dispatch.done(worker, seconds)
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
    assert [name(dispatch.take(w)) for w in (0, 1)] == ["a1", "b1"]
    dispatch.done(0, 1.0)
    # a is done; 0 joins b (3 left, one holder), so b has two holders.
    assert name(dispatch.take(0)) == "b2"
    dispatch.done(0, 1.0)
    dispatch.done(1, 1.0)
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
            dispatch.done(worker, 0.001)

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

"""Suite declarations: Param bounds, default defines, default tolerance, Case checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpubench.benchmark import (
    DEFAULT_ULPS,
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Copy,
    Launch,
    Param,
    Repeat,
    RunRecord,
    Tolerance,
    Variant,
    Work,
)

F32 = np.dtype(np.float32)


class Minimal(Benchmark):
    """A suite with no defines(): compile-time params become -D options by themselves."""

    name = "minimal"
    description = "minimal"
    baseline = "v"
    variants = (Variant("v", "v"),)
    params = (
        Param("n", int, 8, "n", minimum=1, maximum=100, maximum_reason="a test limit"),
        Param("block", int, 128, "b", compile_time=True),
        Param("dtype", str, "float", "t", compile_time=True),
        Param("x", float, 1.0, "x"),
    )

    def inputs(self, point, rng):
        return {"x": np.ones(point["n"], np.float32)}

    def case(self, variant, point, device, inputs):
        return Case()

    def reference(self, computes, point, inputs):
        return {}


def test_defines_default_to_the_compile_time_params():
    assert Minimal().defines(Minimal().defaults()) == {"BLOCK": "128", "DTYPE": "float"}


def test_params_refuse_values_past_their_bounds_and_non_finite_numbers():
    n = Minimal().param("n")
    assert n.coerce(100) == 100
    with pytest.raises(ValueError, match=r"above the maximum 100 \(a test limit\)"):
        n.coerce(101)
    with pytest.raises(ValueError, match="below the minimum 1"):
        n.coerce(0)
    for bad in (math.nan, math.inf, "nan", "-inf"):
        with pytest.raises(ValueError, match="finite"):
            Minimal().param("x").coerce(bad)


def test_default_tolerance_is_a_few_ulps_for_floats_and_exact_for_integers():
    assert Tolerance.default_for(F32) == Tolerance(rtol=DEFAULT_ULPS * 2.0**-23)
    assert Tolerance.default_for(np.dtype(np.float64)) == Tolerance(rtol=DEFAULT_ULPS * 2.0**-52)
    assert Tolerance.default_for(np.dtype(np.int32)) == Tolerance()
    assert Case().tolerance_for(F32).rtol == DEFAULT_ULPS * 2.0**-23
    assert Case(tolerance=Tolerance()).tolerance_for(F32) == Tolerance()


def test_work_may_depend_on_what_the_run_recorded():
    case = Case(work=lambda record: Work(bytes_moved=10 * record.iterations))
    assert case.work_for(RunRecord(iterations=7)) == Work(bytes_moved=70)
    assert Case(work=Work(5)).work_for(None) == Work(5)


INPUTS = {"x": np.zeros(4, np.float32), "y": np.zeros(4, np.float32)}


@pytest.mark.parametrize(
    "case, problem",
    [
        (Case(outputs={"y": BufferSpec((4,), F32)}), "has the name of an input"),
        (Case(outputs={"z": BufferSpec((4,), F32, init="input")}), "no input of the same name"),
        (Case(outputs={"y": BufferSpec((5,), F32, init="input")}), "has 20 bytes; its input has 16"),
        (Case(outputs={"o": BufferSpec((4,), F32, location="gpu")}), "location 'gpu'"),
        (Case(outputs={"o": BufferSpec((4,), F32, init="nan")}), "init 'nan'"),
        (Case(outputs={"o": BufferSpec((4,), F32)}, scratch={"o": BufferSpec((4,), F32)}),
         "both an output and scratch"),
        (Case(input_locations={"w": "device"}), "'w', which is not an input"),
        (Case(input_locations={"x": "disk"}), "location 'disk'"),
        (Case(steps=[Launch("k", (1, 1, 1), (1, 1, 1), (BufferRef("nope"),))]),
         "buffer 'nope', which is neither"),
        (Case(steps=[Launch("k", (1, 1, 1), (1, 1, 1), (BufferRef("x"),))],
              input_locations={"x": "pinned"}), "gets host buffer 'x'"),
        (Case(steps=[Copy("x", "y", stream=1, synchronous=True)]), "synchronous copies"),
        (Case(steps=[Copy("x", "h")], input_locations={"x": "pinned"},
              scratch={"h": BufferSpec((4,), F32, location="pageable")}), "host to host"),
        (Case(steps=[Repeat((), flag="x", max_iterations=3)]), "Repeat flag 'x'"),
        (Case(steps=[Repeat((), flag="f", max_iterations=0)],
              scratch={"f": BufferSpec((1,), np.dtype(np.int32))}), "at least 1"),
        (Case(steps=[Repeat((Copy("x", "y", stream=1),), flag="f", max_iterations=3)],
              scratch={"f": BufferSpec((1,), np.dtype(np.int32))}), "runs on stream 0"),
    ],
)  # fmt: skip
def test_declaration_mistakes_are_named(case, problem):
    problems = case.problems(INPUTS)
    assert any(problem in p for p in problems), problems


def test_a_right_declaration_has_no_problems():
    case = Case(
        steps=[Copy("x", "dx"), Launch("k", (1, 1, 1), (1, 1, 1), (BufferRef("dx"), BufferRef("y"))),
               Repeat((Launch("k", (1, 1, 1), (1, 1, 1), (BufferRef("f"),)),), "f", 5)],
        input_locations={"x": "pinned"},
        outputs={"y": BufferSpec((4,), F32, init="input")},
        scratch={"dx": BufferSpec((4,), F32), "f": BufferSpec((1,), np.dtype(np.uint32))},
    )  # fmt: skip
    assert case.problems(INPUTS) == []


def test_a_tolerance_may_depend_on_what_the_run_recorded():
    case = Case(tolerance=lambda record: Tolerance(rtol=1e-7 * record.iterations))
    assert case.tolerance_for(F32, RunRecord(iterations=30)) == Tolerance(rtol=3e-6)

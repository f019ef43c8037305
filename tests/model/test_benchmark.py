"""Suite declarations: Param bounds, default defines, default tolerance, Case checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpubench.model.benchmark import (
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
        (Case(outputs={"y": BufferSpec((4,), F32)}), "output 'y' has the name of an input: declare it init='input' (an in-out buffer) or rename it"),
        (Case(outputs={"z": BufferSpec((4,), F32, init="input")}), "in-out buffer 'z' has no input of the same name"),
        (Case(outputs={"y": BufferSpec((5,), F32, init="input")}), "in-out buffer 'y' has 20 bytes; its input has 16"),
        (Case(outputs={"o": BufferSpec((4,), F32, location="gpu")}), "buffer 'o': location 'gpu' is not one of device, pinned, pageable"),
        (Case(outputs={"o": BufferSpec((4,), F32, init="nan")}), "buffer 'o': init 'nan' is not one of poison, zero, input"),
        (Case(outputs={"o": BufferSpec((4,), F32)}, scratch={"o": BufferSpec((4,), F32)}),
         "buffer 'o' is both an output and scratch"),
        (Case(input_locations={"w": "device"}), "input_locations names 'w', which is not an input"),
        (Case(input_locations={"x": "disk"}), "input 'x': location 'disk' is not one of device, pinned, pageable"),
        (Case(steps=[Launch("k", (1, 1, 1), (1, 1, 1), (BufferRef("nope"),))]),
         "a step uses buffer 'nope', which is neither an input nor declared"),
        (Case(steps=[Launch("k", (1, 1, 1), (1, 1, 1), (BufferRef("x"),))],
              input_locations={"x": "pinned"}), "kernel 'k' gets host buffer 'x'"),
        (Case(steps=[Copy("x", "y", stream=1, synchronous=True)]), "copy x→y: synchronous copies run on stream 0"),
        (Case(steps=[Copy("x", "h")], input_locations={"x": "pinned"},
              scratch={"h": BufferSpec((4,), F32, location="pageable")}), "copy x→h: host to host is no GPU work"),
        (Case(steps=[Repeat((), flag="x", max_iterations=3)]), "Repeat flag 'x' must be a declared one-element 32-bit integer device buffer"),
        (Case(steps=[Repeat((), flag="f", max_iterations=0)],
              scratch={"f": BufferSpec((1,), np.dtype(np.int32))}), "Repeat max_iterations must be at least 1"),
        (Case(steps=[Repeat((Copy("x", "y", stream=1),), flag="f", max_iterations=3)],
              scratch={"f": BufferSpec((1,), np.dtype(np.int32))}), "a Repeat body runs on stream 0 and holds no Repeat"),
    ],
)  # fmt: skip
def test_declaration_mistakes_are_named(case, problem):
    assert case.problems(INPUTS) == [problem]


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


FLAG = "Repeat flag 'f' must be a declared one-element 32-bit integer device buffer"


@pytest.mark.parametrize(
    ("flag", "iterations", "problems"),
    [
        (BufferSpec((1,), np.dtype(np.int32)), 1, []),
        (BufferSpec((1,), np.dtype(np.uint32)), 1, []),
        (BufferSpec((1,), np.dtype(np.int64)), 1, [FLAG]),
        (BufferSpec((2,), np.dtype(np.int16)), 1, [FLAG]),
        (BufferSpec((1,), F32), 1, [FLAG]),
        (BufferSpec((1,), np.dtype(np.int32), location="pinned"), 1, [FLAG]),
        (BufferSpec((1,), np.dtype(np.int32)), 0, ["Repeat max_iterations must be at least 1"]),
    ],
)  # fmt: skip
def test_a_repeat_flag_is_one_32_bit_integer_on_the_device_and_one_iteration_is_enough(
    flag, iterations, problems
):
    case = Case(steps=[Repeat((), flag="f", max_iterations=iterations)], scratch={"f": flag})
    assert case.problems(INPUTS) == problems


def test_work_records_its_level_and_precision_only_when_not_the_default():
    assert Work(8, 2, 1).to_dict() == {"bytes_moved": 8, "flops": 2, "elements": 1}
    assert Work(8, 2, 1, level="l2", precision="fp16").to_dict() == {
        "bytes_moved": 8, "flops": 2, "elements": 1, "level": "l2", "precision": "fp16"}  # fmt: skip


def test_a_tolerance_per_output_falls_back_to_the_dtype_default():
    exact = Tolerance()
    case = Case(tolerance={"out": exact, "": Tolerance(rtol=0.5)})
    assert case.tolerance_for(F32, output="out") == exact
    assert case.tolerance_for(F32, output="other") == Tolerance.default_for(F32)
    assert case.tolerance_for(F32) == Tolerance(rtol=0.5)  # no name: the "" entry


@pytest.mark.parametrize(("param", "value", "message"), [
    (Param("b", bool, False, ""), "yes", "expected true or false, got 'yes'"),
    (Param("b", bool, False, ""), None, "expected true or false, got None"),
    (Param("f", float, 1.0, ""), True, "expected a number, got True"),
    (Param("f", float, 1.0, ""), [1], "expected a number, got [1]"),
    (Param("f", float, 1.0, ""), "x", "expected a number, got 'x'"),
    (Param("f", float, 1.0, ""), "inf", "expected a finite number, got 'inf'"),
    (Param("s", str, "a", ""), True, "expected text, got the boolean True (YAML reads "
     "yes/no/on/off as booleans: quote the value)"),
    (Param("s", str, "a", ""), [1], "expected text, got [1]"),
    (Param("n", int, 4, "", minimum=2), 1, "1 is below the minimum 2"),
    (Param("n", int, 4, "", maximum=8), 9, "9 is above the maximum 8"),
    (Param("n", int, 4, "", maximum=8, maximum_reason="an unsigned int"), 9,
     "9 is above the maximum 8 (an unsigned int)"),
])  # fmt: skip
def test_each_refused_value_in_its_words(param, value, message):
    with pytest.raises(ValueError) as info:
        param.coerce(value)
    assert str(info.value) == message


def test_none_is_a_value_only_where_the_default_is_none():
    assert Param("rows", int, None, "", derived_from="size").coerce(None) is None
    with pytest.raises(ValueError):
        Param("rows", int, 4, "").coerce(None)
    assert Param("f", float, 1.0, "").coerce("1e-3") == 0.001
    assert Param("s", str, "a", "").coerce(7) == "7"


def test_an_unknown_parameter_is_a_key_error_naming_it():
    from tests.fakes import ScaleSuite

    with pytest.raises(KeyError) as info:
        ScaleSuite().param("nope")
    assert info.value.args == ("nope",)


def test_an_unknown_variant_is_a_key_error_naming_it():
    from gpubench.load import registry

    with pytest.raises(KeyError) as info:
        registry.get("transpose").variant("nope")
    assert info.value.args == ("nope",)


@pytest.mark.parametrize(("a", "b", "blocks"), [(0, 4, 0), (1, 4, 1), (8, 4, 2), (9, 4, 3),
                                                (1000003, 256, 3907)])  # fmt: skip
def test_ceil_div_counts_the_blocks_that_cover_a_size(a, b, blocks):
    from gpubench.model.benchmark import ceil_div

    assert ceil_div(a, b) == blocks and type(ceil_div(a, b)) is int


def test_a_suite_without_host_variants_says_so_when_asked_for_one():
    from gpubench.load import registry

    with pytest.raises(NotImplementedError) as error:
        registry.get("transpose").host_run("numpy", {}, {})
    assert str(error.value) == "transpose has no host variant 'numpy'"

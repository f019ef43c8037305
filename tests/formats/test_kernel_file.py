"""The kernel-file schema (gpubench/formats/kernel_file.py): every shipped and test kernel file
fits it, a wrong type anywhere is one line naming the file, the field and the value, numbers
past what a field holds are refused in one line (never an OverflowError), and a fuzzer
replacing each field by each wrong value gets that line or a valid sweep."""

from __future__ import annotations

import copy
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.errors import ConfigError, quote
from gpubench.formats import FORMAT_MODULES, kernel_file, sweep_file
from gpubench.kernelfile.declaration import is_kernel_file
from gpubench.load import config
from tests.formats.fuzzing import BAD_VALUES, paths, replaced
from tests.formats.test_sweep_file import one_line_or_valid

REPO = Path(__file__).resolve().parents[2]
KERNEL_FILES = sorted(
    p
    for folder in ("configs/examples", "tests/suites", "tests/exploits", "tests/kernels_cu")
    for p in (REPO / folder).glob("*.yaml")
    if is_kernel_file(config.read_document(p))
)
BASE = {
    "kernel": {
        "source": "k.cu",
        "variants": ["good"],
        "args": [{"out": "out float32[n]"}, {"x": "in float32[n]"}, {"n": "uint32 = n"}],
        "grid": "ceil_div(n, 128)",
        "block": 128,
        "reference": "2 * x",
    },
    "params": {"n": [1000]},
}


def kernel_with(**keys):
    data = copy.deepcopy(BASE)
    data["kernel"].update(keys)
    return data


def refusal(data) -> str:
    with pytest.raises(ConfigError) as caught:
        sweep_file.check(
            data, kernel_file.KernelFile, "k.yaml", kernel_file.HINTS + sweep_file.HINTS
        )
    return str(caught.value)


def test_the_files_fuzzed_and_checked_are_found():
    assert {p.stem for p in KERNEL_FILES} >= {"saxpy", "gemm", "histogram", "axpy_cheats"}


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: p.name)
def test_every_kernel_file_fits_the_schema(path):
    data = config.read_document(path)
    sweep_file.check(data, kernel_file.KernelFile, str(path))


def test_the_schema_is_declared_for_the_docs():
    assert "kernel_file" in FORMAT_MODULES
    schema = msgspec.json.schema(kernel_file.SCHEMAS["Kernel file"])
    kernel = schema["$defs"]["Kernel"]
    assert kernel["required"] == ["source", "variants", "args", "grid", "block"]
    assert {"init", "tolerance", "reference", "work", "defines", "options"} <= set(
        kernel["properties"]
    )


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (
            {"tolerance": {"rtol": 10**400}},
            "k.yaml: kernel.tolerance.rtol: number out of range "
            "(found <an integer of about 400 digits>)",
        ),
        (
            {"tolerance": {"atol": True}},
            "k.yaml: kernel.tolerance.atol: expected a number, got True",
        ),
        (
            {"tolerance": "close"},
            "k.yaml: kernel.tolerance: expected {rtol: R, atol: A} or exact, got 'close'",
        ),
        (
            {"init": {"x": 5}},
            "k.yaml: kernel.init.x: expected one of uniform(), normal(), "
            "integers(), zeros(), ones(), full(), arange(), got 5",
        ),
        (
            {"args": [{"out": "out float32[n]"}, {"x": 2**70}]},
            "k.yaml: kernel.args[1].x: "
            "expected a declaration such as `in float32[n]` or `uint32 = n`, got "
            "1180591620717411303424",
        ),
        (
            {"grid": ["n", "1", "1", "1"]},
            "k.yaml: kernel.grid: expected 1 to 3 expressions, or a "
            "mapping of variants (and default) to them, got ['n', '1', '1', '1']",
        ),
        (
            {"block": {"good": [True]}},
            "k.yaml: kernel.block.good[0]: expected an expression, got True",
        ),
        (
            {"grid": 10**400},
            "k.yaml: kernel.grid: expected an integer <= 9223372036854775807 "
            "(found <an integer of about 400 digits>)",
        ),
        (
            {"reference": {"out": None}},
            "k.yaml: kernel.reference.out: expected an expression, got None",
        ),
        ({"work": {"bytes": [1]}}, "k.yaml: kernel.work.bytes: expected an expression, got [1]"),
        ({"options": 5}, "k.yaml: kernel.options: expected a list of nvcc options, got 5"),
    ],
)
def test_a_wrong_type_is_one_line_naming_the_field_and_the_value(keys, message):
    assert refusal(kernel_with(**keys)) == message


def test_timing_in_a_kernel_file_is_checked_like_a_sweep_s():
    assert refusal({**BASE, "timing": {"untrusted": 1}}) == (
        "k.yaml: timing.untrusted: expected true or false, got 1"
    )


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        (
            "  tolerance: {rtol: " + "9" * 400 + "}\n",
            "kernel.tolerance.rtol: number out of range (found <an integer of about 400 digits>)",
        ),
        (
            "  init: {x: 'uniform(-1, " + "9" * 400 + ")'}\n",
            f"kernel.init.x: an integer of 1329 bits is too large in {quote('9' * 400)}",
        ),
        (
            "  tolerance: {rtol: .nan}\n",
            "kernel.tolerance.rtol: expected a finite number >= 0, got nan",
        ),
        (
            "  tolerance: {atol: .inf}\n",
            "kernel.tolerance.atol: expected a finite number >= 0, got inf",
        ),
        (
            "  tolerance: {atol: 1e999}\n",
            "kernel.tolerance.atol: expected a finite number >= 0, got '1e999'",
        ),
    ],
)
def test_absurd_numbers_in_a_kernel_file_are_one_line_never_an_overflow(tmp_path, kernel, message):
    (tmp_path / "k.cu").write_text("// k\n")
    path = tmp_path / "k.yaml"
    path.write_text(
        "kernel:\n  source: k.cu\n  variants: [good]\n  args:\n    - out: out float32[n]\n"
        "    - x: in float32[n]\n    - n: uint32 = n\n  grid: ceil_div(n, 128)\n  block: 128\n"
        "  reference: 2 * x\n" + kernel + "params:\n  n: [1000]\n"
    )
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert str(caught.value) == f"{path}: {message}"


def test_an_init_bound_of_2_to_the_70_is_the_point_s_one_line(tmp_path):
    (tmp_path / "k.cu").write_text("// k\n")
    path = tmp_path / "k.yaml"
    path.write_text(
        "kernel:\n  source: k.cu\n  variants: [good]\n  args:\n    - out: out int32[n]\n"
        "    - x: in int32[n]\n    - n: uint32 = n\n  grid: ceil_div(n, 128)\n  block: 128\n"
        "  init: {x: 'integers(0, 2 ** 70)'}\n  reference: 2 * x\nparams:\n  n: [1000]\n"
    )
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert str(caught.value) == (
        f"{path}: params: kernel.init.x: integers(0, 1180591620717411303424) is empty or outside "
        "int32 [-2147483648, 2147483648), at the point n=1000"
    )


# -- the fuzzer -------------------------------------------------------------------------------
FUZZED = [p for p in KERNEL_FILES if p.parent.name == "examples"]
DOCUMENTS = {p: config.read_document(p) for p in FUZZED}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_field_replaced_by_a_wrong_value_is_one_line_or_valid(data):
    path = data.draw(st.sampled_from(FUZZED))
    document = DOCUMENTS[path]
    where = data.draw(st.sampled_from(paths(document)))
    value = data.draw(st.sampled_from(BAD_VALUES))
    mutated = replaced(document, where, value)
    one_line_or_valid(lambda: config.spec_from_mapping(mutated, str(path)), str(path))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_truncated_or_doubled_file_is_one_line_or_valid(data):
    path = data.draw(st.sampled_from(FUZZED))
    text = path.read_text()
    cut = data.draw(st.integers(0, len(text)))
    variant = data.draw(st.sampled_from([text[:cut], text + text, text[:cut] + text]))

    def load():
        document = config.parse_yaml(variant, str(path))
        if not isinstance(document, dict):
            raise ConfigError("not a mapping", source=str(path))
        config.spec_from_mapping(document, str(path))

    one_line_or_valid(load, str(path))

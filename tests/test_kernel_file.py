"""The kernel-file format: every mistake is one line naming the file, the key and the problem."""

from __future__ import annotations

import pytest

from gpubench import config
from gpubench.errors import ConfigError
from tests.test_kernel_suite import SCALE, write

# -- refusals: one line naming the file, the key and the problem -----------------------------
BAD = [
    ("kernel: 3", "kernel: expected a mapping"),
    (SCALE.replace("  block: block\n", ""), "kernel.block: missing required key"),
    (SCALE.replace("source: k.cu", "source: nope.cu"), "kernel.source: 'nope.cu' not found"),
    (SCALE.replace("grid:", "gird:"), "unknown key 'gird' (did you mean 'grid'?)"),
    (SCALE.replace("[good, fast, skips_last, wrong]", "[good, good]"), "listed twice"),
    (SCALE.replace("[good, fast, skips_last, wrong]", "['bad name']"), "not a kernel name"),
    (SCALE.replace("out float32[n]", "out float33[n]"), "kernel.args[0].out: cannot read"),
    (SCALE.replace("out float32[n]", "outt float32[n]"), "kernel.args[0].out: cannot read"),
    (SCALE.replace("out float32[n]", "out float32[m]"), "unknown name 'm'"),
    (
        SCALE.replace("out float32[n]", "out float32"),
        "an array needs its dimensions: `out float32[n]`",
    ),
    (SCALE.replace("out float32[n]", "in float32[n]"), "no output: declare"),
    (SCALE.replace("- x: in float32[n]", "- out: in float32[n]"), "declared twice"),
    (SCALE.replace("n: uint32 = n", "n: uint32 = n +"), "kernel.args[2].n: cannot parse"),
    (
        SCALE.replace("grid: ceil_div(n, block)", "grid: ceil_dvi(n, block)"),
        "unknown function 'ceil_dvi'",
    ),
    (
        SCALE.replace("grid: ceil_div(n, block)", "grid: {default: ceil_div(n, block)}"),
        "YAML splits",
    ),
    (SCALE.replace("grid: ceil_div(n, block)", "grid: {good: 1}"), "no value for fast"),
    (
        SCALE.replace("grid: ceil_div(n, block)", "grid: {nope: 1, default: 2}"),
        "kernel.grid.nope: 'nope' is not a variant",
    ),
    (SCALE.replace("grid: ceil_div(n, block)", "grid: 1, 2, 3, 4"), "1 to 3 expressions"),
    (SCALE.replace("defines: [block]", "defines: [blocks]"), "'blocks' is not a parameter"),
    (SCALE.replace("defines: [block]", "defines: {block: 2x}"), "not a macro name"),
    (SCALE.replace("defines: [block]", "defines: [[block]]"), "expected a parameter name"),
    (SCALE.replace("defines: [block]", "defines: [7]"), "expected a parameter name"),
    (SCALE.replace("reference: 2 * x", "reference: open('x')"), "unknown function 'open'"),
    (SCALE.replace("reference: 2 * x", "reference: variant:nope"), "'nope' is not one of"),
    (SCALE.replace("reference: 2 * x", "reference: missing.py:f"), "'"),
    (SCALE.replace("reference: 2 * x", "reference: {z: x}"), "'z' is not an `out`"),
    (
        SCALE.replace("  reference", "  init: {out: zeros()}\n  reference"),
        "is not an `in` or `inout` array",
    ),
    (SCALE.replace("  reference", "  init: {x: random()}\n  reference"), "expected one of"),
    (SCALE.replace("  reference", "  init: {x: full()}\n  reference"), "full() takes 1 to 1"),
    (
        SCALE.replace("float32[n]\n    - n", "int32[n]\n    - n").replace(
            "  reference", "  init: {x: normal()}\n  reference"
        ),
        "normal() makes floats",
    ),
    (SCALE.replace("  reference", "  tolerance: {rtol: -1}\n  reference"), "finite number >= 0"),
    (SCALE.replace("  reference", "  tolerance: {rtl: 1}\n  reference"), "unknown key 'rtl'"),
    (SCALE.replace("  reference", "  work: {byte: n}\n  reference"), "unknown key 'byte'"),
    (SCALE.replace("  reference", "  options: [rm -rf]\n  reference"), "not an nvcc option"),
    (
        SCALE.replace("block: [128, 256]", "block: [0, 128]"),
        "kernel.grid: 'ceil_div(n, block)': ceil_div divides by zero, at the point n=1000, block=0",
    ),
    (
        SCALE.replace("block: [128, 256]", "block: [0, 128]").replace("ceil_div(n, block)", "4"),
        "kernel.block: 'block' is 0; each dimension must be an integer in [1, 1024], at the point",
    ),
    (SCALE.replace("block: [128, 256]", "block: [2048]"), "in [1, 1024]"),
    (SCALE.replace("n: [1000, 4097]", "n: [0]"), "kernel.args.out: dimension 'n' is 0"),
    (SCALE.replace("n: [1000, 4097]", "n: [4294967296]"), "does not fit in uint32"),
    (
        SCALE.replace("grid: ceil_div(n, block)", "grid: n / block"),
        "kernel.grid: 'n / block' is 7.8125; each dimension must be an integer",
    ),
    ("suite: transpose\n" + SCALE, "either `suite:`"),
    (SCALE.replace("reference: 2 * x", "reference: {out: 2 * x, extra: x}"), "'extra' is not"),
    (
        SCALE.replace("out float32[n]", "out float32[10**30]"),
        "kernel.args.out: float32[1000000000000000000000000000000] is 4e+30 bytes, more memory",
    ),
    (
        SCALE.replace("  reference", "  init: {z: ones()}\n  reference"),
        "'z' is not an array argument",
    ),
    (
        SCALE.replace("  reference", "  init: {x: 'uniform(2, 1)'}\n  reference"),
        "kernel.init.x: uniform(2, 1) is an empty range, at the point n=1000",
    ),
    (
        SCALE.replace("  reference", "  init: {x: 'normal(0, -n)'}\n  reference"),
        "a negative standard deviation",
    ),
    (
        SCALE.replace("in float32[n]", "in uint8[n]").replace(
            "  reference", "  init: {x: 'integers(0, 300)'}\n  reference"
        ),
        "integers(0, 300) is empty or outside uint8 [0, 256)",
    ),
    (
        SCALE.replace("  reference", "  init: {x: 'integers(0.5, 3)'}\n  reference"),
        "integers(0.5, 3) takes integers",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_mistakes_are_one_line_naming_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    error = str(info.value)
    assert str(path) in error and message in error, error
    assert "\n" not in error

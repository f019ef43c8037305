"""The kernel-file format: every mistake is one line naming the file, the key and the problem."""

from __future__ import annotations

import copy
import hashlib
import json

import numpy as np
import pytest

from gpubench.errors import ConfigError
from gpubench.kernelfile import declaration
from gpubench.load import config
from gpubench.model.benchmark import Tolerance
from tests.kernelfile.test_benchmark import SCALE, write

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


# -- the parser, section by section: each refusal's whole line, each accepted form's value --
# Parsed from data (what YAML gives), so every branch costs microseconds; the lines above go
# through the file reader too.
# What a grid or block holds, in the words of its refusal.
GRID = "1 to 3 expressions, or a mapping of variants (and default) to them"


BASE = {
    "kernel": {
        "source": "k.cu",
        "variants": ["good", "fast"],
        "args": [{"out": "out float32[n]"}, {"x": "in float32[n]"}, {"n": "uint32 = n"}],
        "grid": "ceil_div(n, block)",
        "block": "block",
        "defines": ["block"],
        "reference": "2 * x",
    },
    "params": {"n": [1000, 4097], "block": [128, 256]},
}
DROP = object()
TWO_OUTPUTS = [{"out": "out float32[n]"}, {"o2": "inout float32[n]"}, {"n": "uint32 = n"}]
TYPE_LIST = ", ".join(sorted(declaration.TYPES))


def data_with(top=None, **kernel_keys):
    data = copy.deepcopy(BASE)
    data.update(top or {})
    for key, value in kernel_keys.items():
        if value is DROP:
            del data["kernel"][key]
        else:
            data["kernel"][key] = value
    return data


def parse(tmp_path, data):
    (tmp_path / "k.cu").write_text("// k\n")
    return declaration.parse(data, str(tmp_path / "k.yaml"))


REFUSED = [
    (
        data_with({"kernel": 3}),
        "kernel: expected a mapping with source, variants, args, grid, block, ...; got 3",
    ),
    (
        data_with(gird=1),
        "kernel.gird: unknown key 'gird' (did you mean 'grid'?); allowed: source, "
        "name, variants, args, grid, block, shared, defines, options, init, reference, work, "
        "tolerance",
    ),
    *[
        (data_with(**{key: DROP}), f"kernel.{key}: missing required key")
        for key in ("source", "variants", "args", "grid", "block")
    ],
    (data_with(source=5), "kernel.source: expected the path of a .cu file, got 5"),
    (data_with(source=""), "kernel.source: expected the path of a .cu file, got ''"),
    (
        data_with(source="nope.cu"),
        "kernel.source: 'nope.cu' not found (looked for nope.cu beside k.yaml)",
    ),
    (
        data_with(source="x" * 5000),  # past the system's limit on a name: no OSError
        "kernel.source: '" + "x" * 27 + "..." + "x" * 28 + "' is no usable file name: File "
        "name too long",
    ),
    (
        data_with(source="k\x00.cu"),
        "kernel.source: 'k\\x00.cu' is no usable file name: embedded null byte",
    ),
    (
        data_with(name="bad name"),
        "kernel.name: expected a short name (letters, digits, _ . -), got 'bad name'",
    ),
    (data_with(name=3), "kernel.name: expected a short name (letters, digits, _ . -), got 3"),
    (data_with({"description": 5}), "description: expected text, got 5"),
    (
        data_with(variants=3),
        "kernel.variants: expected a list of kernel names (the first is the "
        "baseline), or a mapping name: what it shows, got 3",
    ),
    (data_with(variants=[]), "kernel.variants: name at least one kernel"),
    (data_with(variants={}), "kernel.variants: name at least one kernel"),
    (
        data_with(variants=["bad name"]),
        "kernel.variants[0]: 'bad name' is not a kernel name (a C identifier)",
    ),
    (
        data_with(variants=["good", 3]),
        "kernel.variants[1]: expected a kernel name (a C identifier), got 3",
    ),
    (data_with(variants={"good": 5}), "kernel.variants.good: expected a description, got 5"),
    (
        data_with(variants=["good", "good"]),
        "kernel.variants: a kernel is listed twice: ['good', 'good']",
    ),
    (
        data_with(args=3),
        "kernel.args: expected the kernel's arguments in order, as a list of "
        "`name: in float32[n]` or `name: uint32 = n`, got 3",
    ),
    (
        data_with(args=[]),
        "kernel.args: expected the kernel's arguments in order, as a list of "
        "`name: in float32[n]` or `name: uint32 = n`; got []",
    ),
    (data_with(args=[5]), "kernel.args[0]: expected one `name: declaration`, got 5"),
    (
        data_with(args=[{"out": "out float32[n]", "b": "in float32[n]"}]),
        "kernel.args[0]: "
        "expected one `name: declaration`, got {'b': 'in float32[n]', 'out': 'out float32[n]'}",
    ),
    (
        data_with(args=[{"1x": "out float32[n]"}]),
        "kernel.args[0]: '1x' is not an argument name (a C identifier)",
    ),
    (
        data_with(args=[{5: "out float32[n]"}]),
        "kernel.args[0]: 5 is not an argument name (a C identifier)",
    ),
    (
        data_with(args=[{"out": "out float32[n]"}, {"out": "in float32[n]"}]),
        "kernel.args[1].out: argument 'out' is declared twice",
    ),
    (
        data_with(args=[{"out": True}]),
        "kernel.args[0].out: expected a declaration such as "
        "`in float32[n]` or `uint32 = n`, got True",
    ),
    (
        data_with(args=[{"out": 5}]),
        "kernel.args[0].out: expected a declaration such as `in float32[n]` or `uint32 = n`, got 5",
    ),
    (
        data_with(args=[{"n": "out float32[n]"}]),
        "kernel.args[0].n: array 'n' has the name of a parameter",
    ),
    (
        data_with(args=[{"out": "out float32[n"}]),
        "kernel.args[0].out: cannot read 'out "
        f"float32[n': an array is `in|out|inout TYPE[dims]`; types: {TYPE_LIST}",
    ),
    (
        data_with(args=[{"out": "out float32[]"}]),
        "kernel.args[0].out: expected 1 to 8 dimensions in brackets, got '[]'",
    ),
    (
        data_with(args=[{"out": "out float32[1,1,1,1,1,1,1,1,1]"}]),
        "kernel.args[0].out: expected 1 to 8 dimensions in brackets, got '[1,1,1,1,1,1,1,1,1]'",
    ),
    (
        data_with(args=[{"out": "out float32[(]"}]),
        "kernel.args[0].out: cannot read the dimensions '[(]'",
    ),
    (
        data_with(args=[{"out": "out float32[m]"}]),
        "kernel.args[0].out: unknown name 'm' in 'm' (known: block, n)",
    ),
    (
        data_with(args=[{"out": "out float32[n]"}, {"a": "float32"}]),
        "kernel.args[1].a: scalar "
        "'a' has no value: write `float32 = EXPRESSION`, or add a parameter 'a'",
    ),
    (
        data_with(args=[{"out": "out float32"}]),
        "kernel.args[0].out: cannot read 'out float32': "
        f"an array needs its dimensions: `out float32[n]`; types: {TYPE_LIST}",
    ),
    (
        data_with(args=[{"out": "out float33[n]"}]),
        "kernel.args[0].out: cannot read 'out "
        f"float33[n]': an array is `in|out|inout TYPE[dims]`; types: {TYPE_LIST}",
    ),
    (
        data_with(args=[{"out": "float33 = 2"}]),
        "kernel.args[0].out: cannot read 'float33 = 2': "
        f"a scalar is `TYPE = expression`; types: {TYPE_LIST}",
    ),
    (
        data_with(args=[{"out": "in unsigned int"}]),
        "kernel.args[0].out: cannot read 'in unsigned int': an array needs its dimensions: "
        f"`in unsigned int[n]`; types: {TYPE_LIST}",
    ),
    (
        data_with(args=[{"out": "xyz[3]"}]),
        "kernel.args[0].out: cannot read 'xyz[3]': an array "
        f"is `in|out|inout TYPE[dims]`; types: {TYPE_LIST}",
    ),
    (
        data_with(args=[{"x": "in float32[n]"}]),
        "kernel.args: no output: declare at least one array `out` or `inout`",
    ),
    (
        data_with(grid="1, 2, 3, 4"),
        "kernel.grid: expected 1 to 3 expressions, got ['1', '2', '3', '4']",
    ),
    (data_with(grid=[1, 2, 3, 4]), f"kernel.grid: expected {GRID}, got [1, 2, 3, 4]"),
    (
        data_with(block={"good": [1, 2, 3, 4], "default": 1}),
        "kernel.block.good: expected 1 to 3 expressions, got [1, 2, 3, 4]",
    ),
    (data_with(grid=["n", "m"]), "kernel.grid[1]: unknown name 'm' in 'm' (known: block, n)"),
    (data_with(shared=[1, 2]), "kernel.shared: expected one expression, got [1, 2]"),
    (data_with(grid=None), f"kernel.grid: expected {GRID}, got None"),
    (
        data_with(grid={"nope": 1}),
        "kernel.grid.nope: 'nope' is not a variant (keys: the variants, and default)",
    ),
    (
        data_with(grid={"fas": 1}),
        "kernel.grid.fas: 'fas' is not a variant (did you mean "
        "'fast'?) (keys: the variants, and default)",
    ),
    (data_with(grid={"good": 1}), "kernel.grid: no value for fast: add a `default:`"),
    (data_with(grid={}), "kernel.grid: no value for good, fast: add a `default:`"),
    (
        data_with(grid="ceil_div(n, m)"),
        "kernel.grid: unknown name 'm' in 'ceil_div(n, m)' (known: block, n)",
    ),
    (
        data_with(grid={"default": "ceil_div(n"}),
        "kernel.grid.default: cannot parse "
        "'ceil_div(n' (YAML splits [..] and {..} at commas: put the expression in quotes, or write "
        "the mapping one key per line)",
    ),
    (data_with(defines=[5]), "kernel.defines[0]: expected a parameter name, got 5"),
    (
        data_with(defines=5),
        "kernel.defines: expected a list of parameters (passed as "
        "-DNAME=value, the name upper-cased) or a mapping param: MACRO, got 5",
    ),
    (
        data_with(defines={"blocks": "X"}),
        "kernel.defines.blocks: 'blocks' is not a parameter (did you mean 'block'?)",
    ),
    (data_with(defines={"block": "2x"}), "kernel.defines.block: '2x' is not a macro name"),
    (data_with(defines={"block": 5}), "kernel.defines.block: expected a macro name, got 5"),
    (data_with(options=5), "kernel.options: expected a list of nvcc options, got 5"),
    *(
        (
            data_with(options=["-O3", option]),
            f"kernel.options[1]: {option!r} is not allowed: gpubench chooses nvcc's output and "
            "never runs it (output, run, host compiler, linker and options-file flags are refused)",
        )
        for option in [
            "--run",
            "-o",
            "-o/etc/x",
            "--output-file=/etc/x",
            "-odir",
            "-ccbin=/bin/sh",
            "-Xcompiler=-fplugin=x",
            "--options-file",
            "-optf=opts",
            "--keep-dir=/tmp",
        ]
    ),
    (
        data_with(options=["rm"]),
        "kernel.options[0]: 'rm' is not an nvcc option (such as --use_fast_math or -lineinfo)",
    ),
    (
        data_with(options=["-O3", 5]),
        "kernel.options[1]: expected an nvcc option (such as --use_fast_math or -lineinfo), got 5",
    ),
    (
        data_with(init=5),
        "kernel.init: expected a mapping array: uniform(lo, hi) | "
        "normal(mean, std) | integers(lo, hi) | zeros() | ones() | full(v) | arange(), got 5",
    ),
    (data_with(init={"z": "ones()"}), "kernel.init.z: 'z' is not an array argument"),
    (
        data_with(init={"xx": "ones()"}),
        "kernel.init.xx: 'xx' is not an array argument (did you mean 'x'?)",
    ),
    (
        data_with(init={"x": "normal(0, 1, 2)"}),
        "kernel.init.x: normal() takes 0 to 2 positional arguments, got 'normal(0, 1, 2)'",
    ),
    (
        data_with(init={"x": "zeros(1)"}),
        "kernel.init.x: zeros() takes 0 to 0 positional arguments, got 'zeros(1)'",
    ),
    (
        data_with(init={"x": "arange(1)"}),
        "kernel.init.x: arange() takes 0 to 0 positional arguments, got 'arange(1)'",
    ),
    (data_with(block=None), f"kernel.block: expected {GRID}, got None"),
    (data_with(block={"good": 1}), "kernel.block: no value for fast: add a `default:`"),
    (
        data_with(reference="variant:x:good"),
        "kernel.reference: 'x:good' is not one of the variants (did you mean 'good'?)",
    ),
    (
        data_with(args=TWO_OUTPUTS, reference={"z": "n"}),
        "kernel.reference.z: 'z' is not an `out` or `inout` array (outputs: out, o2)",
    ),
    (data_with(args=TWO_OUTPUTS, reference={}), "kernel.reference: no reference for out, o2"),
    (
        data_with(args=TWO_OUTPUTS, reference={"out": "y", "o2": "n"}),
        "kernel.reference.out: unknown name 'y' in 'y' (known: block, n, o2, out)",
    ),
    (
        data_with(init={"out": "zeros()"}),
        "kernel.init.out: 'out' is not an `in` or `inout` "
        "array (an `out` array starts poisoned, so an element never written fails)",
    ),
    (
        data_with(init={"x": "random()"}),
        "kernel.init.x: expected one of uniform(), normal(), "
        "integers(), zeros(), ones(), full(), arange(), got 'random()'",
    ),
    (
        data_with(init={"x": 5}),
        "kernel.init.x: expected one of uniform(), normal(), integers(), "
        "zeros(), ones(), full(), arange(), got 5",
    ),
    (
        data_with(init={"x": "full()"}),
        "kernel.init.x: full() takes 1 to 1 positional arguments, got 'full()'",
    ),
    (
        data_with(init={"x": "ones(1)"}),
        "kernel.init.x: ones() takes 0 to 0 positional arguments, got 'ones(1)'",
    ),
    (
        data_with(init={"x": "integers()"}),
        "kernel.init.x: integers() takes 1 to 2 positional arguments, got 'integers()'",
    ),
    (
        data_with(init={"x": "uniform(1, 2, 3)"}),
        "kernel.init.x: uniform() takes 0 to 2 positional arguments, got 'uniform(1, 2, 3)'",
    ),
    (
        data_with(init={"x": "uniform(low=1)"}),
        "kernel.init.x: uniform() takes 0 to 2 positional arguments, got 'uniform(low=1)'",
    ),
    (
        data_with(args=[{"out": "out float32[n]"}, {"x": "in int32[n]"}], init={"x": "normal()"}),
        "kernel.init.x: normal() makes floats; x is int32: use integers(lo, hi)",
    ),
    (
        data_with(args=[{"out": "out float32[n]"}, {"x": "in bool[n]"}], init={"x": "uniform()"}),
        "kernel.init.x: uniform() makes floats; x is bool: use integers(lo, hi)",
    ),
    (
        data_with(init={"x": "uniform(0, m)"}),
        "kernel.init.x: unknown name 'm' in 'm' (known: block, n)",
    ),
    (
        data_with(init={"x": "uniform(0, n"}),
        "kernel.init.x: expected one of uniform(), "
        "normal(), integers(), zeros(), ones(), full(), arange(), got 'uniform(0, n' (YAML splits "
        "[..] and {..} at commas: put the expression in quotes, or write the mapping one key per "
        "line)",
    ),
    (data_with(reference="variant:nope"), "kernel.reference: 'nope' is not one of the variants"),
    (
        data_with(reference="variant: god"),
        "kernel.reference: 'god' is not one of the variants (did you mean 'good'?)",
    ),
    (
        data_with(reference={"z": "x"}),
        "kernel.reference.z: 'z' is not an `out` or `inout` array (outputs: out)",
    ),
    (data_with(reference={}), "kernel.reference: no reference for out"),
    (
        data_with(args=TWO_OUTPUTS, reference="n"),
        "kernel.reference: 2 outputs (out, o2): give a mapping output: expression",
    ),
    (data_with(args=TWO_OUTPUTS, reference={"out": "o2"}), "kernel.reference: no reference for o2"),
    (
        data_with(reference="2 * y"),
        "kernel.reference: unknown name 'y' in '2 * y' (known: block, n, out, x)",
    ),
    (data_with(work=5), "kernel.work: expected a mapping with bytes, flops, elements, got 5"),
    (
        data_with(work={"byte": "n"}),
        "kernel.work.byte: unknown key 'byte'; allowed: bytes, flops, elements",
    ),
    (data_with(work={"bytes": "n +"}), "kernel.work.bytes: cannot parse 'n +'"),
    (data_with(tolerance=5), "kernel.tolerance: expected {rtol: R, atol: A} or exact, got 5"),
    (
        data_with(tolerance={"rtl": 1}),
        "kernel.tolerance.rtl: unknown key 'rtl'; allowed: rtol, atol",
    ),
    (data_with(tolerance={"rtol": "x"}), "kernel.tolerance.rtol: expected a number, got 'x'"),
    (data_with(tolerance={"rtol": True}), "kernel.tolerance.rtol: expected a number, got True"),
    (data_with(tolerance={"rtol": None}), "kernel.tolerance.rtol: expected a number, got None"),
    (
        data_with(tolerance={"rtol": -1}),
        "kernel.tolerance.rtol: expected a finite number >= 0, got -1",
    ),
    (
        data_with(tolerance={"atol": float("inf")}),
        "kernel.tolerance.atol: expected a finite number >= 0, got inf",
    ),
    (data_with({"params": 5}), "params: expected a mapping, got 5"),
    (
        data_with({"params": {"1n": [1]}}),
        "params.1n: '1n' is not a parameter name (letters, digits, _)",
    ),
    (data_with({"params": {5: 1}}), "params.5: 5 is not a parameter name (letters, digits, _)"),
    (data_with({"params": {"n": []}}), "params.n: empty list: give at least one value"),
    (data_with({"params": {"n": [[1]]}}), "params.n[0]: expected a number or text, got [1]"),
    (data_with({"params": {"n": [1, None]}}), "params.n[1]: expected a number or text, got None"),
    (
        data_with({"params": {"n": {"a": 1}}}),
        "params.n: expected a value or a list of values, got {'a': 1}",
    ),
    (
        data_with({"params": {"n": [1]}, "zip": [{"q": [1], "n": [2]}, {"r": []}]}),
        "zip[1].r: empty list: give at least one value",
    ),
]


@pytest.mark.parametrize(("data", "message"), REFUSED)
def test_each_refusal_is_its_whole_line(tmp_path, data, message):
    with pytest.raises(ConfigError) as info:
        parse(tmp_path, data)
    assert str(info.value) == f"{tmp_path / 'k.yaml'}: {message}"
    assert info.value.source == str(tmp_path / "k.yaml")


def test_accepted_nvcc_options_pass(tmp_path):
    options = ["-O3", "--use_fast_math", "-lineinfo", "-Xptxas=-v", "--maxrregcount=64"]
    assert parse(tmp_path, data_with(options=options)).options == tuple(options)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: (d / "k.cu").mkdir(), "'k.cu' is not a regular file"),
        (lambda d: (d / "k.cu").symlink_to("/dev/zero"), "'k.cu' is not a regular file"),
        (
            lambda d: (d / "k.cu").open("wb").truncate(declaration.MAX_SOURCE_BYTES + 1),
            "'k.cu' is 8,388,609 bytes; a kernel source is at most 8 MiB",
        ),
    ],
)
def test_a_source_that_is_no_regular_small_file_is_refused_unread(tmp_path, make, message):
    make(tmp_path)
    with pytest.raises(ConfigError) as info:
        declaration.parse(data_with(), str(tmp_path / "k.yaml"))
    assert str(info.value) == f"{tmp_path / 'k.yaml'}: kernel.source: {message}"


def test_a_missing_reference_file_names_it(tmp_path):
    with pytest.raises(ConfigError) as info:
        parse(tmp_path, data_with(reference="missing.py:f"))
    assert str(info.value) == f"{tmp_path / 'k.yaml'}: '{tmp_path / 'missing.py'}' not found"


def test_the_base_file_parses_into_exactly_its_parts(tmp_path):
    kf = parse(tmp_path, copy.deepcopy(BASE))
    assert kf.path == tmp_path / "k.yaml" and kf.source == (tmp_path / "k.cu").resolve()
    assert (kf.name, kf.description) == ("k", "kernels of k.cu")
    assert [(v.name, v.help, v.computes) for v in kf.variants] == [
        ("good", "", "default"), ("fast", "", "default")]  # fmt: skip
    assert [(p.name, p.type, p.default, p.help, p.compile_time) for p in kf.params] == [
        ("n", int, 1000, "from k.yaml", False), ("block", int, 128, "from k.yaml", True)]  # fmt: skip
    out, x, n = kf.args
    assert (out.name, out.direction, out.dtype, [d.text for d in out.dims]) == (
        "out", "out", np.float32, ["n"])  # fmt: skip
    assert (x.name, x.direction, x.dtype) == ("x", "in", np.float32)
    assert (n.name, n.dtype, n.value.text) == ("n", np.uint32, "n")
    assert [a.name for a in kf.outputs] == ["out"] and [a.name for a in kf.inputs] == ["x"]
    assert [a.name for a in kf.arrays] == ["out", "x"] and [s.name for s in kf.scalars] == ["n"]
    assert [e.evaluate({"n": 1000, "block": 128}) for e in kf.grid.get("good")] == [8]
    assert [e.text for e in kf.block.get("fast")] == ["block"]
    assert kf.shared == declaration.PerVariant(None, {}) and kf.shared.get("good") is None
    assert kf.defines == {"block": "BLOCK"} and kf.options == () and kf.init == {}
    assert list(kf.reference_expressions) == ["out"] and kf.reference_variant is None
    assert kf.reference_function is None and kf.work == {} and kf.tolerance is None
    raw = BASE["kernel"]
    assert kf.digest == hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()
                                       ).hexdigest()  # fmt: skip


def test_each_accepted_form_of_each_key(tmp_path):
    kf = parse(tmp_path, data_with(
        {"description": "first line\nsecond line", "params": {"n": 7, "block": [128]}},
        name="My-Kernel.v2", variants={"good": "what it shows", "fast": None},
        args=[{"out": "  out   float32  [n, 2 * n]"}, {"x": "inout float64[n]"}, {"n": "uint32"},
              {"a": "float = n / 2"}],
        grid={"default": "ceil_div(n, block), 2", "fast": [3]}, block="block, 1, 1",
        shared={"fast": "4 * block"}, defines={"block": "MY_BLOCK"}, options="-O3 -lineinfo",
        init={"x": "uniform(-1, n)"}, reference={"out": "x[::-1] * a", "x": "x + 1"},
        work={"bytes": "8 * n", "flops": "n"}, tolerance={"rtol": 1e-3},
    ))  # fmt: skip
    assert (kf.name, kf.description) == ("My-Kernel.v2", "first line")
    assert [(v.name, v.help) for v in kf.variants] == [("good", "what it shows"), ("fast", "")]
    assert [(p.name, p.default) for p in kf.params] == [("n", 7), ("block", 128)]
    out, x, n, a = kf.args
    assert [d.text for d in out.dims] == ["n", "2 * n"] and x.dtype == np.float64
    assert x.direction == "inout" and n.value.text == "n" and a.value.evaluate({"n": 7}) == 3.5
    assert [a.name for a in kf.outputs] == ["out", "x"] and [a.name for a in kf.inputs] == ["x"]
    point = {"n": 1000, "block": 128, "a": 500.0}
    assert [e.evaluate(point) for e in kf.grid.get("good")] == [8, 2]
    assert [e.evaluate(point) for e in kf.grid.get("fast")] == [3]
    assert [e.evaluate(point) for e in kf.block.get("good")] == [128, 1, 1]
    assert kf.shared.get("good") is None and kf.shared.get("fast")[0].evaluate(point) == 512
    assert kf.defines == {"block": "MY_BLOCK"} and kf.options == ("-O3", "-lineinfo")
    assert kf.init["x"].function == "uniform" and kf.init["x"].text == "uniform(-1, n)"
    assert [e.evaluate(point) for e in kf.init["x"].args] == [-1, 1000]
    assert sorted(kf.reference_expressions) == ["out", "x"]
    arrays = {"x": np.array([1.0, 2.0]), "a": 3.0, "n": 2, "out": np.zeros(2)}
    assert kf.reference_expressions["out"].evaluate(arrays).tolist() == [6.0, 3.0]
    assert kf.reference_expressions["x"].evaluate(arrays).tolist() == [2.0, 3.0]
    assert {k: e.evaluate(point) for k, e in kf.work.items()} == {"bytes": 8000, "flops": 1000}
    assert kf.tolerance == Tolerance(rtol=1e-3, atol=0.0)


@pytest.mark.parametrize(("changes", "check"), [
    ({"variants": "good"}, lambda kf: [v.name for v in kf.variants] == ["good"]),
    ({"defines": "block"}, lambda kf: kf.defines == {"block": "BLOCK"}),
    ({"defines": None}, lambda kf: kf.defines == {} and not kf.params[1].compile_time),
    ({"options": ["--use_fast_math"]}, lambda kf: kf.options == ("--use_fast_math",)),
    ({"tolerance": "exact"}, lambda kf: kf.tolerance == Tolerance(0.0, 0.0)),
    ({"tolerance": {"atol": 2, "rtol": 0}}, lambda kf: kf.tolerance == Tolerance(0.0, 2.0)),
    ({"reference": "variant: fast"}, lambda kf: kf.reference_variant == "fast"
     and kf.reference_expressions == {}),
    ({"reference": None}, lambda kf: kf.reference_expressions == {}
     and kf.reference_variant is None),
    ({"grid": ["ceil_div(n, block)"]}, lambda kf: len(kf.grid.default) == 1),
    ({"grid": {"good": 1, "fast": 2}}, lambda kf: kf.grid.default is None
     and kf.grid.get("fast")[0].evaluate({}) == 2),
    ({"init": {"x": "integers(5)"}}, lambda kf: [e.evaluate({}) for e in kf.init["x"].args] == [5]),
    ({"init": {"x": "full(3)"}}, lambda kf: kf.init["x"].function == "full"),
    ({"init": {"x": "arange()"}}, lambda kf: kf.init["x"].args == ()),
    ({"args": [{"out": "out float32[1, 1, 1, 1, 1, 1, 1, n]"}], "reference": None},
     lambda kf: len(kf.args[0].dims) == 8),
])  # fmt: skip
def test_the_other_accepted_forms(tmp_path, changes, check):
    assert check(parse(tmp_path, data_with(**changes)))


@pytest.mark.parametrize(("values", "kind", "default"), [
    ([True, False], bool, True), ([3, 4], int, 3), ([1, 2.5], float, 1.0), ([2.5, 1], float, 2.5),
    (["a", 1], str, "a"), ([1, True], str, "1"), (7, int, 7), ("fast", str, "fast"),
])  # fmt: skip
def test_a_parameter_s_type_and_default_come_from_its_values(values, kind, default):
    (param,) = declaration.params_from({"p": values}, "k.yaml")
    assert (param.name, param.type, param.default, param.help) == ("p", kind, default,
                                                                   "from k.yaml")  # fmt: skip
    assert type(param.default) is kind


def test_parameters_declared_in_a_zip_group_join_the_params(tmp_path):
    kf = parse(
        tmp_path,
        data_with({"params": {"n": [1000]}, "zip": [{"block": [128, 256], "n": [1, 2]}]}),
    )
    assert [(p.name, p.default, p.compile_time) for p in kf.params] == [
        ("n", 1000, False), ("block", 128, True)]  # fmt: skip


@pytest.mark.parametrize("description", ["", "   \n  ", None])
def test_a_blank_description_is_the_default_one(tmp_path, description):
    assert parse(tmp_path, data_with({"description": description})).description == (
        "kernels of k.cu")  # fmt: skip


def test_the_digest_follows_the_kernel_section_only(tmp_path):
    first = parse(tmp_path, copy.deepcopy(BASE)).digest
    assert parse(tmp_path, data_with({"params": {"n": [5], "block": [64]}})).digest == first
    assert parse(tmp_path, data_with(reference="3 * x")).digest != first
    assert len(first) == 64


def test_is_kernel_file():
    assert declaration.is_kernel_file({"kernel": None})
    assert not declaration.is_kernel_file({"suite": "x"}) and not declaration.is_kernel_file([])

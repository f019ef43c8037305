"""YAML sweep files: valid ones load; every mistake names the file, the key and the value."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest

from gpubench.errors import ConfigError
from gpubench.load import config, registry
from gpubench.model.timing import TimingPolicy

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def error_of(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    assert info.value.exit_code == 2
    message = str(info.value)
    assert message.startswith(str(path))  # every error names the file
    return message


def test_a_full_config_loads(tmp_path):
    spec = config.load(
        write(
            tmp_path,
            """
        suite: transpose
        variants: [naive, padded]
        baseline: padded
        params:
          size: [64, 128]
          tile: [16, 32]
          block_rows: 8
        zip:
          - dtype: [float32, float64]
        constraints: ["tile % block_rows == 0"]
        timing: {warmup: 2, min_samples: 5, target_noise: 1e-3, flush_l2: false}
        outputs: {json: out/r.json, csv: out/r.csv}
    """,
        )
    )
    assert spec.variants == ("naive", "padded") and spec.baseline == "padded"
    assert spec.axes["tile"] == [16, 32] and spec.axes["block_rows"] == [8]
    assert spec.timing.target_noise == pytest.approx(1e-3)  # `1e-3` is a string in YAML 1.1
    assert spec.timing.flush_l2 is False
    assert spec.outputs.json == "out/r.json"
    from gpubench.load import registry

    assert len(spec.points(registry.get("transpose"))) == 2 * 2 * 2


def test_defaults_fill_in_what_is_not_given(tmp_path):
    spec = config.load(write(tmp_path, "suite: transpose\n"))
    from gpubench.load import registry

    bench = registry.get("transpose")
    assert spec.variants == bench.variant_names and spec.baseline == "naive"
    (point,) = spec.points(bench)
    assert point["tile"] == 32 and point["rows"] == point["size"]


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "configs").glob("*.yaml")))
def test_shipped_configs_are_valid(name):
    from gpubench.load import registry

    spec = config.load(REPO / "configs" / name)
    bench = registry.get(spec.suite)
    points = spec.points(bench)
    assert points and all(bench.validate_point(p) is None for p in points)
    assert set(spec.variants) <= set(bench.variant_names) and spec.baseline in bench.variant_names
    # Every shipped sweep writes under results/ (ignored by git), never into the checkout.
    for path in (spec.outputs.json, spec.outputs.csv, spec.outputs.jsonl):
        assert path is None or path.startswith("results/")


@pytest.mark.parametrize(
    "text, key, words",
    [
        ("suite: transpose\nparms: {}\n", "parms", "did you mean 'params'"),
        ("suite: transpose\ntiming: {warmpu: 3}\n", "timing.warmpu", "did you mean 'warmup'"),
        ("suite: transpoze\n", "suite", "did you mean 'transpose'"),
        ("suite: transpose\nparams: {tiel: 32}\n", "params.tiel", "did you mean 'tile'"),
        ("suite: transpose\nvariants: [naive, paded]\n", "variants[1]", "did you mean 'padded'"),
        ("suite: transpose\nbaseline: nave\n", "baseline", "did you mean 'naive'"),
        (
            "suite: transpose\nparams: {tile: 48}\n",
            "params.tile",
            "48 is not allowed (allowed: 16, 32, 64)",
        ),
        ("suite: transpose\nparams: {tile: [16, 48]}\n", "params.tile[1]", "48 is not allowed"),
        (
            "suite: transpose\nparams: {size: big}\n",
            "params.size",
            "expected an integer, got 'big'",
        ),
        ("suite: transpose\nparams: {size: 0}\n", "params.size", "below the minimum 1"),
        ("suite: transpose\nparams: {size: []}\n", "params.size", "empty list"),
        ("suite: transpose\nparams: {size: yes}\n", "params.size", "expected an integer, got True"),
        ("suite: transpose\nparams: {dtype: no}\n", "params.dtype", "quote the value"),
        ("suite: transpose\nparams: {size: {a: 1}}\n", "params.size", "expected a value or a list"),
        (
            "suite: transpose\ntiming: {min_samples: 2.5}\n",
            "timing.min_samples",
            "expected an integer",
        ),
        (
            "suite: transpose\ntiming: {target_noise: lots}\n",
            "timing.target_noise",
            "expected a number",
        ),
        (
            "suite: transpose\ntiming: {flush_l2: maybe}\n",
            "timing.flush_l2",
            "expected true or false",
        ),
        ("suite: transpose\ntiming: {min_samples: 0}\n", "timing.min_samples", "at least 1"),
        ("suite: transpose\ntiming: {mode: warm}\n", "timing.mode", "must be one of cold, hot"),
        ("suite: transpose\ntiming: {mode: 1}\n", "timing.mode", "expected text"),
        (
            "suite: transpose\ntiming: {time_limit_s: 0}\n",
            "timing.time_limit_s",
            "must be positive",
        ),
        (
            "suite: transpose\nconstraints: ['tile <= tiel']\n",
            "constraints[0]",
            "unknown parameter 'tiel'",
        ),
        (
            "suite: transpose\nconstraints: [\"__import__('os')\"]\n",
            "constraints[0]",
            "not allowed",
        ),
        (
            "suite: transpose\nparams: {tile: 16}\nconstraints: ['tile > 16']\n",
            "constraints",
            "the sweep is empty",
        ),
        ("suite: transpose\nzip: [{rows: [1, 2], cols: [3]}]\n", "zip[0]", "same length"),
        (
            "suite: transpose\nparams: {rows: 4}\nzip: [{rows: [1, 2]}]\n",
            "zip[0].rows",
            "set twice",
        ),
        ("suite: transpose\noutputs: {jsn: a.json}\n", "outputs.jsn", "did you mean 'json'"),
        ("suite: transpose\nparams: {tile: 16, block_rows: 32}\n", "params", "must divide tile"),
        ("params: {}\n", "suite", "missing required key"),
        ("suite: transpose\nsuite: transpose\n", "suite", "duplicate key 'suite' (line 2)"),
        ("suite: transpose\nparams: {tile: 16, tile: 32}\n", "tile", "duplicate key 'tile'"),
    ],
)
def test_mistakes_name_the_key_and_the_value(tmp_path, text, key, words):
    message = error_of(tmp_path, text)
    assert f": {key}:" in message
    assert words in message


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "the file is empty"),
        ("- a\n- b\n", "expected a mapping at the top level"),
        ("suite: [unclosed\n", "not valid YAML"),
        ("suite: !!python/object:os.system {}\n", "not valid YAML"),  # safe loading only
    ],
)
def test_files_that_are_not_sweeps(tmp_path, text, words):
    assert words in error_of(tmp_path, text)


def test_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the file"):
        config.load(tmp_path / "nope.yaml")


# -- never a traceback -------------------------------------------------------------------------
SMOKE_LIKE = """suite: transpose
params: {tile: 32, block_rows: 8}
zip:
  - rows: [1, 33]
    cols: [1000, 65]
"""


@pytest.mark.parametrize(
    "extra, words",
    [
        ('constraints: ["tile / (block_rows - 8) > 1"]', "divides by zero"),
        ('constraints: ["dtype < 3"]', "compares text with a number"),
        ('constraints: ["size >= 1"]', "size has no value at this point"),
        ('constraints: ["dtype * 100000000000 == dtype"]', "arithmetic on text"),
        ('constraints: ["-dtype == 1"]', "minus of text"),
        ('constraints: ["' + "(" * 20000 + "tile" + ")" * 20000 + ' > 1"]', "characters"),
        ('constraints: ["' + "-" * 400 + 'tile > 1"]', "nested more than"),
    ],
)
def test_constraints_that_cannot_be_evaluated_are_one_line(tmp_path, extra, words):
    message = error_of(tmp_path, SMOKE_LIKE + extra + "\n")
    assert words in message and "constraints" in message and len(message) < 1000


def test_the_smoke_configs_size_constraint_names_the_point(tmp_path):
    message = error_of(tmp_path, SMOKE_LIKE + 'constraints: ["size >= 1"]\n')
    assert "at the point" in message and "rows=1" in message


@pytest.mark.parametrize(
    "text, words",
    [
        ("? [a, b]\n: 1\nsuite: transpose\n", "a key must be text or a number"),
        ("suite: transpose\nparams:\n  ? {x: 1}\n  : 2\n", "a key must be text or a number"),
        ("suite: transpose\ntiming: {target_noise: .nan}\n", "finite"),
        ("suite: transpose\ntiming: {max_time_s: .inf}\n", "finite"),
        ("suite: transpose\ntiming: {warmup: 100000000000}\n", "at most"),
        ("suite: transpose\ntiming: {target_noise: 1e999}\n", "finite"),
    ],
)
def test_odd_yaml_is_one_line(tmp_path, text, words):
    message = error_of(tmp_path, text)
    assert words in message


def test_non_utf8_bytes_are_one_line(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_bytes(b"suite: transpose\ndescription: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        config.load(path)


def billion_laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + f"\nsuite: *a{levels}\n"


@pytest.mark.parametrize("levels", [4, 9, 30])
def test_an_alias_bomb_is_refused_in_one_short_line(tmp_path, levels):
    import time

    started = time.perf_counter()
    message = error_of(tmp_path, billion_laughs(levels))
    assert time.perf_counter() - started < 2
    assert len(message) < 1000
    if levels >= 9:
        assert "anchors and aliases" in message


def test_long_values_are_cut_in_messages(tmp_path):
    message = error_of(tmp_path, "suite: transpose\nparams: {dtype: " + "x" * 100000 + "}\n")
    assert "params.dtype" in message and "is not allowed" in message and len(message) < 400
    huge = error_of(tmp_path, "suite: transpose\nparams: {tile: " + "9" * 100000 + "}\n")
    assert "cannot read a value" in huge and len(huge) < 400


# -- property: random YAML never raises anything but gpubench's own errors -------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpubench.errors import GpubenchError  # noqa: E402

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20))
keys = st.sampled_from(["suite", "params", "variants", "baseline", "zip", "constraints",
                        "timing", "outputs", "description", "tile", "size", "rows", "cols",
                        "dtype", "block_rows", "warmup", "target_noise", "json", "x"])  # fmt: skip
documents = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=st.dictionaries(keys, documents, max_size=6), suite=st.sampled_from(
    ["transpose", "reduction", "matmul", "streams", "transfer", "nope", 3]))  # fmt: skip
def test_random_sweep_documents_raise_only_config_errors(document, suite):
    import yaml

    document = {"suite": suite, **document} if "suite" not in document else document
    try:
        text = yaml.safe_dump(document)
    except yaml.YAMLError:
        return
    try:
        config.spec_from_mapping(config.parse_yaml(text, "random.yaml"), "random.yaml")
    except GpubenchError as exc:
        assert str(exc).startswith("random.yaml") and len(str(exc)) <= 1000


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_random_text_raises_only_config_errors(text):
    try:
        data = config.parse_yaml(text, "random.yaml")
        if data is not None:
            config.spec_from_mapping(data, "random.yaml")
    except GpubenchError:
        pass


def test_bundled_sweeps_are_found_by_name_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert config.find("smoke") == REPO / "configs" / "smoke.yaml"
    assert config.find("smoke.yaml") == REPO / "configs" / "smoke.yaml"
    (tmp_path / "smoke.yaml").write_text("suite: transpose\n")
    assert config.find("smoke.yaml") == Path("smoke.yaml")  # a file of that name wins
    with pytest.raises(ConfigError, match="did you mean 'smoke'"):
        config.find("smok")
    assert config.find("sub/x.yaml") == Path("sub/x.yaml")  # a path is a path
    suite, comment = config.describe(REPO / "configs" / "smoke.yaml")
    assert suite == "transpose" and comment.startswith("CI smoke sweep")


def test_a_yaml_syntax_error_is_one_line(tmp_path):
    from gpubench.errors import ConfigError
    from gpubench.load import config

    path = tmp_path / "broken.yaml"
    path.write_text("suite: transpose\nparams: [\n")
    with pytest.raises(ConfigError) as info:
        config.load(path)
    assert "not valid YAML" in str(info.value) and "\n" not in str(info.value)


def test_a_swept_value_the_suite_would_drop_is_refused_not_ignored(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("suite: transpose\nparams:\n  size: [1024, 4096]\n"
                    "zip:\n  - rows: [1, 33]\n    cols: [1000, 65]\n")  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert caught.value.key == "params.size"
    assert "size=1024 would be ignored where rows=1, cols=1000" in str(caught.value)


def test_the_kernel_file_examples_are_bundled_and_found_by_name():
    names = {p.stem: p for p in config.bundled_configs()}
    assert {"saxpy", "stencil2d", "histogram", "smoke"} <= set(names)
    assert config.find("saxpy") == names["saxpy"]
    assert config.describe(names["saxpy"])[0] == "kernel file"


def test_only_regular_files_of_at_most_1_mib_are_read(tmp_path):
    import os

    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        config.load(fifo)
    big = tmp_path / "big.yaml"
    big.write_text("suite: transpose\n" + "#" * (1 << 20))
    with pytest.raises(ConfigError, match="at most 1 MiB"):
        config.load(big)


@pytest.mark.parametrize(("text", "history"), [
    ("history: runs/h.sqlite\n", "runs/h.sqlite"),
    ("history: true\n", "results/history.sqlite"),
    ("history: false\n", None),
    ("outputs: {history: o.sqlite}\n", "o.sqlite"),
    ("outputs: {history: o.sqlite}\nhistory: o.sqlite\n", "o.sqlite"),
])  # fmt: skip
def test_a_sweep_file_names_its_history_store(tmp_path, text, history):
    path = tmp_path / "s.yaml"
    path.write_text("suite: transpose\nparams: {size: 64}\n" + text)
    assert config.load(path).outputs.history == history


@pytest.mark.parametrize(("text", "message"), [
    ("history: 7\n", "history: expected a file path or true, got 7"),
    ("history: ''\n", "history: expected a file path or true"),
    ("outputs: {history: a.sqlite}\nhistory: b.sqlite\n", "give the store once"),
])  # fmt: skip
def test_a_bad_history_key_is_one_config_error(tmp_path, text, message):
    path = tmp_path / "s.yaml"
    path.write_text("suite: transpose\nparams: {size: 64}\n" + text)
    with pytest.raises(ConfigError, match=message):
        config.load(path)


# -- each refusal's whole line, from the parsed document (what YAML gives) -------------------
SWEEP = {"suite": "transpose", "params": {"size": [64, 128]}}
TRANSPOSE_VARIANTS = "copy, naive, coalesced, padded, diagonal, vectorized, bulk_store"
TIMING_KEYS = (
    "warmup, min_samples, max_samples, min_time_s, target_noise, max_time_s, mode, "
    "hot_sample_ms, flush_l2, throttle_threshold, time_limit_s, untrusted, energy, "
    "energy_window_s"
)


def sweep_with(**keys):
    return {**copy.deepcopy(SWEEP), **keys}


REFUSED = [
    ([1, 2], "expected a mapping at the top level, got list"),
    ("text", "expected a mapping at the top level, got str"),
    (
        sweep_with(paramz=1),
        "paramz: unknown key 'paramz' (did you mean 'params'?); allowed: "
        "suite, kernel, description, variants, baseline, params, zip, constraints, timing, "
        "outputs, history, tune",
    ),
    (
        sweep_with(timing={"warmup": 1, "warmpu": 2}),
        f"timing.warmpu: unknown key 'warmpu' (did you mean 'warmup'?); allowed: {TIMING_KEYS}",
    ),
    ({"params": {}}, "suite: missing required key 'suite' (or `kernel:` for your own kernel)"),
    (
        sweep_with(kernel={"source": "k.cu"}),
        "kernel: a file has either `suite:` (a sweep of a "
        "suite) or `kernel:` (your own kernel), not both",
    ),
    (sweep_with(variants=[]), "variants: empty list: name at least one variant"),
    (
        sweep_with(variants=["padded", "nope"]),
        f"variants[1]: unknown variant 'nope'; variants of transpose: {TRANSPOSE_VARIANTS}",
    ),
    (
        sweep_with(variants="padde"),
        "variants[0]: unknown variant 'padde' (did you mean "
        f"'padded'?); variants of transpose: {TRANSPOSE_VARIANTS}",
    ),
    (
        sweep_with(variants=["padded", "padded"]),
        "variants: a variant is listed twice: ['padded', 'padded']",
    ),
    (sweep_with(baseline="nope"), "baseline: unknown variant 'nope'"),
    (sweep_with(baseline="padde"), "baseline: unknown variant 'padde' (did you mean 'padded'?)"),
    (
        sweep_with(variants=["padded"], baseline="copy"),
        "baseline: 'copy' is not among the variants run (padded): add it to variants or leave "
        "baseline out",
    ),
    (
        sweep_with(
            params={
                "tile": [16, 32],
                "block_rows": [1, 2, 4, 8, 16, 32, 64],
                "size": list(range(1, 101)),
                "dtype": ["float32", "float64"],
            },
            zip=[{"rows": list(range(1, 401)), "cols": list(range(1, 401))}],
        ),
        "params: the sweep asks for 1,120,000 combinations (2 tile × 7 block_rows × 100 size × "
        "2 dtype × 400 zip[0]); at most 1,000,000 are expanded: narrow an axis or split the "
        "sweep into several files",
    ),
    (sweep_with(params=5), "params: expected a mapping, got 5"),
    (
        sweep_with(params={"siz": [1]}),
        "params.siz: unknown parameter 'siz' for suite "
        "'transpose' (did you mean 'size'?); parameters: size, rows, cols, tile, block_rows, dtype",
    ),
    (sweep_with(params={"size": []}), "params.size: empty list: give at least one value"),
    (sweep_with(params={"size": [[1]]}), "params.size[0]: expected a number or text, got [1]"),
    (
        sweep_with(params={"size": {"a": 1}}),
        "params.size: expected a value or a list of values, got {'a': 1}",
    ),
    (
        sweep_with(params={"dtype": [["x"]]}),
        "params.dtype[0]: expected a number or text, got ['x']",
    ),
    (sweep_with(params={"size": [64, "x"]}), "params.size[1]: expected an integer, got 'x'"),
    (sweep_with(params={"size": "x"}), "params.size: expected an integer, got 'x'"),
    (sweep_with(params={"tile": [7]}), "params.tile[0]: 7 is not allowed (allowed: 16, 32, 64)"),
    (sweep_with(params={"size": [0]}), "params.size[0]: 0 is below the minimum 1"),
    (
        sweep_with(params={"size": 64}, zip=[{"rows": [64], "cols": [32]}]),
        "params.size: size=64 "
        "would be ignored where rows=64, cols=32 (the suite derives size from them there): set "
        "either size or the parameters it stands for",
    ),
    (sweep_with(zip=5), "zip: expected a list of groups, got 5"),
    (sweep_with(zip=[5]), "zip[0]: expected a mapping of parameter lists, got 5"),
    (sweep_with(zip=[{"tile": [32]}, {}]), "zip[1]: expected a mapping of parameter lists, got {}"),
    (
        sweep_with(zip=[{"size": [1]}]),
        "zip[0].size: parameter 'size' is set twice (params or another zip group)",
    ),
    (sweep_with(params={}, zip=[{"size": 3}]), "zip[0].size: expected a list, got 3"),
    (
        sweep_with(params={}, zip=[{"rows": [64, 128], "cols": [64]}]),
        "zip[0]: lists of one zip group must have the same length, got lengths [1, 2]",
    ),
    (
        sweep_with(params={}, zip=[{"rows": [64]}, {"rows": [64]}]),
        "zip[1].rows: parameter 'rows' is set twice (params or another zip group)",
    ),
    (
        sweep_with(params={}, zip=[{"rows": [64], "tile": [7]}]),
        "zip[0].tile[0]: 7 is not allowed (allowed: 16, 32, 64)",
    ),
    (sweep_with(constraints=5), "constraints: expected a list of conditions, got 5"),
    (
        sweep_with(constraints=["size > 1", "size >"]),
        "constraints[1]: cannot parse condition 'size >'",
    ),
    (
        sweep_with(constraints=["nope > 1"]),
        "constraints[0]: unknown parameter 'nope' in condition 'nope > 1'",
    ),
    (
        sweep_with(constraints=["size > 1000"]),
        "constraints: the sweep is empty: the constraints rule out every combination of params",
    ),
    (sweep_with(outputs=5), "outputs: expected a mapping, got 5"),
    (
        sweep_with(outputs={"jsn": "a"}),
        "outputs.jsn: unknown key 'jsn' (did you mean 'json'?); allowed: json, csv, jsonl, history",
    ),
    (sweep_with(outputs={"json": 5}), "outputs.json: expected a file path, got 5"),
    (sweep_with(outputs={"csv": ""}), "outputs.csv: expected a file path, got ''"),
    (sweep_with(history=5), "history: expected a file path or true, got 5"),
    (sweep_with(history=""), "history: expected a file path or true, got ''"),
    (
        sweep_with(outputs={"history": "a.sqlite"}, history="b.sqlite"),
        "history: outputs.history names a.sqlite: give the store once",
    ),
    (sweep_with(description=5), "description: expected text, got 5"),
    (sweep_with(timing=5), "timing: expected a mapping, got 5"),
    (sweep_with(timing={"hot": 1}), f"timing.hot: unknown key 'hot'; allowed: {TIMING_KEYS}"),
    (sweep_with(timing={"warmup": 1.5}), "timing.warmup: expected an integer, got 1.5"),
    (sweep_with(timing={"warmup": True}), "timing.warmup: expected an integer, got True"),
    (sweep_with(timing={"mode": 5}), "timing.mode: expected text, got 5"),
    (sweep_with(timing={"flush_l2": "yes"}), "timing.flush_l2: expected true or false, got 'yes'"),
    (sweep_with(timing={"min_time_s": "x"}), "timing.min_time_s: expected a number, got 'x'"),
    (sweep_with(timing={"min_time_s": True}), "timing.min_time_s: expected a number, got True"),
    (
        sweep_with(timing={"min_time_s": float("inf")}),
        "timing.min_time_s: expected a finite number, got inf",
    ),
    (sweep_with(timing={"warmup": -1}), "timing.warmup: must be 0 or more (got -1)"),
    (
        sweep_with(timing={"max_samples": 1, "min_samples": 5}),
        "timing.max_samples: must be at least min_samples (got 1)",
    ),
    (
        sweep_with(suite="transpos"),
        "suite: unknown suite 'transpos' (did you mean "
        "'transpose'?); known suites: access, banks, ceilings, divergence, intrinsics, matmul, "
        "reduction, sssp, streams, transfer, transpose, unroll",
    ),
]


@pytest.mark.parametrize(("data", "message"), REFUSED)
def test_each_sweep_refusal_is_its_whole_line(data, message):
    with pytest.raises(ConfigError) as info:
        config.spec_from_mapping(data, "s.yaml")
    assert str(info.value) == f"s.yaml: {message}"
    assert info.value.source == "s.yaml"


def test_each_key_of_a_sweep_document_lands_in_its_place(tmp_path):
    (tmp_path / "s.yaml").write_text("")
    spec = config.spec_from_mapping(sweep_with(
        variants=["padded", "copy"], baseline="copy", params={"tile": [16, 32]},
        zip=[{"rows": [64, 96], "cols": [32, 48]}], constraints=["tile <= cols"],
        timing={"warmup": 0, "min_time_s": "1e-3", "flush_l2": False}, description="what\nmore",
        outputs={"json": "a.json", "csv": "a.csv", "jsonl": "a.jsonl"}, history=True,
    ), str(tmp_path / "s.yaml"))  # fmt: skip
    assert (spec.suite, spec.suite_ref, spec.source) == ("transpose", "transpose",
                                                         str(tmp_path / "s.yaml"))  # fmt: skip
    assert (spec.variants, spec.baseline) == (("padded", "copy"), "copy")
    assert spec.axes == {"tile": [16, 32]}
    assert spec.zipped == [{"rows": [64, 96], "cols": [32, 48]}]
    assert [c.text for c in spec.constraints] == ["tile <= cols"]
    assert (spec.timing.warmup, spec.timing.min_time_s, spec.timing.flush_l2) == (0, 0.001, False)
    assert spec.timing.max_samples == TimingPolicy().max_samples
    assert spec.description == "what\nmore"
    assert spec.outputs == config.Outputs(json="a.json", csv="a.csv", jsonl="a.jsonl",
                                          history=history_default())  # fmt: skip
    assert len(spec.points(registry.get("transpose"))) == 4
    assert spec.to_dict()["constraints"] == ["tile <= cols"] and spec.to_dict()["zip"] == (
        spec.zipped)  # fmt: skip


def history_default():
    from gpubench.store.history import DEFAULT_PATH

    return DEFAULT_PATH


@pytest.mark.parametrize(("history", "expected"), [
    (None, None), (False, None), ("h.sqlite", "h.sqlite"),
])  # fmt: skip
def test_history_at_the_top_level(history, expected):
    assert config.spec_from_mapping(sweep_with(history=history), "s.yaml").outputs.history == (
        expected)  # fmt: skip


def test_the_same_history_twice_is_accepted():
    spec = config.spec_from_mapping(
        sweep_with(outputs={"history": "h.sqlite", "json": "a.json"}, history="h.sqlite"), "s.yaml"
    )
    assert (spec.outputs.history, spec.outputs.json) == ("h.sqlite", "a.json")


def test_every_variant_when_none_are_named_and_the_suite_s_baseline():
    spec = config.spec_from_mapping(copy.deepcopy(SWEEP), "s.yaml")
    assert spec.variants == tuple(TRANSPOSE_VARIANTS.split(", ")) and spec.baseline == "naive"
    assert spec.description == "" and spec.outputs == config.Outputs()


@pytest.mark.parametrize("suffix", [".py", ".yaml", ".yml"])
def test_a_suite_file_is_found_beside_the_sweep_file_first(tmp_path, monkeypatch, suffix):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / f"s{suffix}").write_text("")
    monkeypatch.chdir(tmp_path)
    assert config._suite_ref(f"s{suffix}", str(tmp_path / "sub" / "sweep.yaml")) == str(
        tmp_path / "sub" / f"s{suffix}")  # fmt: skip
    assert config._suite_ref(f"t{suffix}", str(tmp_path / "sub" / "sweep.yaml")) == str(
        tmp_path / f"t{suffix}")  # fmt: skip
    assert config._suite_ref("transpose.PY", "x/sweep.yaml") == "transpose.PY"


def test_find_names_every_bundled_sweep_when_nothing_matches(tmp_path):
    known = ", ".join(p.stem for p in config.bundled_configs())
    with pytest.raises(ConfigError) as info:
        config.find("nope")
    assert (
        str(info.value)
        == f"nope: no such file, and no bundled sweep of that name (bundled: {known})"
    )
    assert info.value.source == "nope"
    with pytest.raises(ConfigError) as info:
        config.find("smok")
    assert str(info.value).startswith("smok: no such file, and no bundled sweep of that name "
                                      "(did you mean 'smoke'?) (bundled: ")  # fmt: skip


def test_an_empty_sweep_file_is_one_line(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing\n")
    with pytest.raises(ConfigError) as info:
        config.load(path)
    assert str(info.value) == f"{path}: the file is empty"


def test_a_condition_that_cannot_be_evaluated_names_the_point():
    with pytest.raises(ConfigError) as info:
        config.spec_from_mapping(sweep_with(params={"size": [64], "tile": [32]},
                                            constraints=["size // (tile - 32) > 0"]), "s.yaml")  # fmt: skip
    assert str(info.value).startswith("s.yaml: constraints: ")
    assert str(info.value).endswith(", at the point size=64, rows=64, cols=64, tile=32, "
                                    "block_rows=8, dtype='float32'")  # fmt: skip


def test_a_spec_as_a_record_holds_every_field_under_its_name(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("suite: transpose\ndescription: two sizes\nvariants: [copy, naive]\n"
                    "baseline: copy\nparams:\n  size: [64, 96]\nconstraints: ['size > 32']\n")  # fmt: skip
    spec = config.load(path)
    record = spec.to_dict()
    assert list(record) == ["suite", "suite_ref", "source", "variants", "baseline", "axes", "zip",
                            "constraints", "timing", "description"]  # fmt: skip
    assert (record["suite"], record["source"], record["variants"], record["baseline"]) == (
        "transpose", str(path), ["copy", "naive"], "copy")  # fmt: skip
    assert record["axes"] == {"size": [64, 96]} and record["zip"] == []
    assert record["constraints"] == ["size > 32"] and record["description"] == "two sizes"
    assert record["timing"] == spec.timing.to_dict()


@pytest.mark.parametrize(("text", "described"), [
    ("# Tiles of transpose\n#  second\nsuite: transpose # the suite\n", ("transpose",
                                                                       "Tiles of transpose")),
    ("suite: a:b\n", ("a:b", "")),
    ("suite: my suite # a # b\n", ("my suite", "")),
    ("#X marks the suite\nsuite: x\n", ("x", "X marks the suite")),
    ("kernel:\n  source: k.cu\n", ("kernel file", "")),
    ("params: {}\n", ("", "")),
    ("suite: x\nkernel:\n  source: k.cu\n", ("x", "")),
])  # fmt: skip
def test_a_bundled_sweep_file_is_described_by_its_suite_and_first_comment(
    tmp_path, text, described
):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert config.describe(path) == described


def test_the_bundled_sweep_files_are_found_in_a_checkout_or_inside_an_installed_package(
    tmp_path, monkeypatch
):  # fmt: skip
    from gpubench.load import config

    package = tmp_path / "site-packages" / "gpubench"
    package.mkdir(parents=True)
    monkeypatch.setattr(config, "__file__", str(package / "load" / "config.py"))
    assert config.configs_dir() is None
    (package / "configs").mkdir()
    assert config.configs_dir() == package / "configs"  # the wheel's layout
    (package.parent / "configs").mkdir()
    assert config.configs_dir() == package.parent / "configs"  # a checkout's, first


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_sweep_name_is_one_line_not_the_working_directory(name):
    with pytest.raises(ConfigError) as caught:
        config.find(name)
    assert str(caught.value) == (
        "command line: CONFIG: an empty path: give a sweep file or a bundled sweep's name"
    )


def test_the_suite_s_default_baseline_may_be_left_out_of_the_variants():
    spec = config.spec_from_mapping(sweep_with(variants=["padded"]), "s.yaml")
    assert (spec.variants, spec.baseline) == (("padded",), "naive")


def test_tune_names_run_time_parameters_as_configuration(tmp_path):
    spec = config.load(
        write(
            tmp_path,
            """
        suite: sssp
        variants: [near_far]
        params: {delta: [0, 64], local_rounds: 16}
        tune: {configuration: [delta, local_rounds, delta]}
    """,
        )
    )
    assert spec.tuned == ("delta", "local_rounds")
    assert spec.to_dict()["tune"] == {"configuration": ["delta", "local_rounds"]}
    assert "tune" not in config.load(REPO / "configs/transpose.yaml").to_dict()


@pytest.mark.parametrize(
    ("tune", "expected"),
    [
        (
            "{configuration: [deltas]}",
            "tune.configuration[0]: unknown parameter 'deltas' (did you mean 'delta'?)",
        ),
        (
            "{configuration: [delta, weights]}",
            "tune.configuration[1]: 'weights' is read by the suite's reference or inputs: it "
            "is part of the problem, not a configuration",
        ),
        ("{configurations: [delta]}", "tune.configurations: unknown key 'configurations'"),
        ("3", "tune: expected a mapping, got 3"),
        ("{configuration: delta}", "tune.configuration: expected a list of parameter names"),
    ],
)
def test_a_wrong_tune_key_is_one_line(tmp_path, tune, expected):
    message = error_of(tmp_path, f"suite: sssp\nparams: {{delta: [0, 64]}}\ntune: {tune}\n")
    assert expected in message and "\n" not in message

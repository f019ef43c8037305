"""YAML sweep files: valid ones load; every mistake names the file, the key and the value."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpubench import config
from gpubench.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


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
    from gpubench import registry

    assert len(spec.points(registry.get("transpose"))) == 2 * 2 * 2


def test_defaults_fill_in_what_is_not_given(tmp_path):
    spec = config.load(write(tmp_path, "suite: transpose\n"))
    from gpubench import registry

    bench = registry.get("transpose")
    assert spec.variants == bench.variant_names and spec.baseline == "naive"
    (point,) = spec.points(bench)
    assert point["tile"] == 32 and point["rows"] == point["size"]


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "configs").glob("*.yaml")))
def test_shipped_configs_are_valid(name):
    config.load(REPO / "configs" / name)


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
        ("suite: transpose\nparams: {size: {a: 1}}\n", "params.size", "expected a int"),
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

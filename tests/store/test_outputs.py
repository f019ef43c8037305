"""Where results go, decided before the first measurement (gpubench/store/outputs.py)."""

from __future__ import annotations

import json

import pytest

from gpubench.errors import ConfigError
from gpubench.load.config import spec_from_mapping
from gpubench.store import outputs

SPEC = spec_from_mapping({"suite": "transpose", "params": {"size": 64}}, source="test")


@pytest.mark.parametrize(("lines", "holds"), [([], False), (["header"], False),
                                              (["header", "one result"], True),
                                              (["header", "", "one result", ""], True),
                                              (["header", "a", "b"], True)])  # fmt: skip
def test_a_log_holds_results_from_its_first_result_line(tmp_path, lines, holds):
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + ("\n" if lines else ""))
    assert outputs.holds_results(str(log)) is holds


def test_a_log_with_exactly_one_result_is_not_overwritten(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"kind": "header"}\n{"kind": "result"}\n')
    request = outputs.OutputRequest(jsonl=str(log))
    with pytest.raises(ConfigError, match="holds results of an earlier run"):
        outputs.plan(SPEC, request)
    plan = outputs.plan(SPEC, outputs.OutputRequest(jsonl=str(log), force=True))
    assert plan.kept and (tmp_path / "log.jsonl.1").read_text().count("\n") == 2
    assert not log.exists() or log.read_text() == ""


def test_a_log_with_only_its_header_is_reused(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"kind": "header"}\n')
    assert outputs.plan(SPEC, outputs.OutputRequest(jsonl=str(log))).log == str(log)


def test_command_line_paths_win_over_the_sweep_file_and_every_request_field_travels(tmp_path):
    spec = spec_from_mapping({"suite": "transpose", "params": {"size": 64},
                              "outputs": {"json": str(tmp_path / "f.json"),
                                          "csv": str(tmp_path / "f.csv"),
                                          "jsonl": str(tmp_path / "f.jsonl")}},
                             source="test")  # fmt: skip
    from_file = outputs.plan(spec, outputs.OutputRequest(default_log=str(tmp_path / "d.jsonl")))
    assert (from_file.json, from_file.csv, from_file.log) == tuple(
        str(tmp_path / f) for f in ("f.json", "f.csv", "f.jsonl")
    )
    assert from_file.files == [from_file.log, from_file.json, from_file.csv]
    request = outputs.OutputRequest(json=str(tmp_path / "c.json"), csv=str(tmp_path / "c.csv"),
                                    jsonl=str(tmp_path / "c.jsonl"), progress=True,
                                    timeline="", markdown=str(tmp_path / "c.md"), verbose=True,
                                    label="nightly", force=True)  # fmt: skip
    plan = outputs.plan(spec, request)
    assert (plan.json, plan.csv, plan.log, plan.markdown) == tuple(
        str(tmp_path / f) for f in ("c.json", "c.csv", "c.jsonl", "c.md")
    )
    assert (plan.progress, plan.timeline, plan.verbose, plan.label, plan.force) == (
        True,
        "",
        True,
        "nightly",
        True,
    )
    assert (plan.resume, plan.kept, plan.history) == (False, None, None)
    assert outputs.plan(SPEC, outputs.OutputRequest()).log is None
    assert outputs.plan(SPEC, outputs.OutputRequest(default_log="d.jsonl")).log == "d.jsonl"


def test_resume_names_the_log_and_refuses_what_contradicts_it(tmp_path):
    log = tmp_path / "r.jsonl"
    log.write_text('{"kind": "header"}\n{"kind": "result"}\n')
    plan = outputs.plan(
        SPEC, outputs.OutputRequest(resume=str(log), jsonl=str(tmp_path / "." / "r.jsonl"))
    )
    assert (plan.log, plan.resume, plan.kept) == (str(log), True, None)  # appended, not moved
    with pytest.raises(ConfigError) as error:
        outputs.plan(SPEC, outputs.OutputRequest(resume=str(log), jsonl="other.jsonl"))
    assert str(error.value) == (
        f"command line: --jsonl: --resume appends to {log}; --jsonl "
        "names another log (other.jsonl): give only one of them"
    )
    with pytest.raises(ConfigError) as error:
        outputs.plan(SPEC, outputs.OutputRequest(resume=str(tmp_path / "none.jsonl")))
    assert str(error.value) == f"{tmp_path / 'none.jsonl'}: no such results log to resume from"
    with pytest.raises(ConfigError) as error:
        outputs.plan(SPEC, outputs.OutputRequest(json=str(tmp_path / "a"), csv=str(tmp_path / "a")))
    assert str(error.value) == "command line: two outputs name the same file"


def test_a_dry_plan_moves_nothing_and_earlier_logs_are_numbered(tmp_path):
    log = tmp_path / "r.jsonl"
    for n in range(3):
        log.write_text('{"kind": "header"}\n{"kind": "result"}\n')
        dry = outputs.plan(SPEC, outputs.OutputRequest(jsonl=str(log), force=True), dry=True)
        assert dry.kept is None and log.exists()
        plan = outputs.plan(SPEC, outputs.OutputRequest(jsonl=str(log), force=True))
        assert plan.kept == f"{log}.{n + 1}" and not log.exists()


def test_unwritable_paths_are_one_line_naming_the_option(tmp_path):
    (tmp_path / "file").write_text("")
    cases = [(str(tmp_path), "--json", f"{tmp_path}: --json: is a directory; give a file name"),
             (str(tmp_path / "file" / "x" / "r.csv"), "--csv",
              f"{tmp_path / 'file' / 'x' / 'r.csv'}: --csv: {tmp_path / 'file'} is a file, not a "
              "directory")]  # fmt: skip
    for path, option, message in cases:
        with pytest.raises(ConfigError) as error:
            outputs.check_writable(path, option)
        assert str(error.value) == message
    fresh = tmp_path / "new" / "deeper" / "r.json"
    outputs.check_writable(str(fresh), "--json")  # a folder to be made: fine, nothing made
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    outputs.check_writable(str(kept), "--json")
    assert kept.read_text() == "old"
    made = tmp_path / "made.json"
    outputs.check_writable(str(made), "--json")
    assert not made.exists()  # tried, then removed


SWEEP_DOC = {"suite": "transpose", "params": {"size": [64]}}


@pytest.mark.parametrize("option", ["--jsonl", "--json", "--csv", "--timeline", "--markdown",
                                    "--history"])  # fmt: skip
def test_each_output_option_is_checked_under_its_own_name(tmp_path, option):
    field = {"--jsonl": "jsonl", "--json": "json", "--csv": "csv", "--timeline": "timeline",
             "--markdown": "markdown", "--history": "history"}[option]  # fmt: skip
    request = outputs.OutputRequest(**{field: str(tmp_path)})
    with pytest.raises(ConfigError) as error:
        outputs.plan(spec_from_mapping(SWEEP_DOC, "s.yaml"), request)
    assert str(error.value) == f"{tmp_path}: {option}: is a directory; give a file name"


def test_the_failures_of_trying_to_write_in_their_words(tmp_path, monkeypatch):
    long = tmp_path / ("a" * 300 + ".json")
    with pytest.raises(ConfigError) as error:
        outputs.check_writable(str(long), "--json")
    assert str(error.value) == f"{str(long)[:199]}…: --json: cannot write here (File name too long)"
    monkeypatch.setattr(outputs.os, "access", lambda path, mode: False)
    with pytest.raises(ConfigError) as error:
        outputs.check_writable(str(tmp_path / "r.json"), "--csv")
    assert str(error.value) == (f"{tmp_path / 'r.json'}: --csv: cannot write here ({tmp_path} is "
                                "read-only for you)")  # fmt: skip
    existing = tmp_path / "there.json"
    existing.write_text("")
    # An existing file is asked about itself, not its folder.
    monkeypatch.setattr(outputs.os, "access", lambda path, mode: path == existing)
    outputs.check_writable(str(existing), "--json")


def test_an_output_named_twice_and_the_history_store_in_the_plan(tmp_path):
    spec = spec_from_mapping(SWEEP_DOC, "s.yaml")
    same = str(tmp_path / "r.out")
    with pytest.raises(ConfigError) as error:
        outputs.plan(spec, outputs.OutputRequest(json=same, history=same))
    assert str(error.value) == "command line: two outputs name the same file"
    store = tmp_path / "h.sqlite"
    dry = outputs.plan(spec, outputs.OutputRequest(history=str(store)), dry=True)
    assert dry.history == str(store) and not store.exists()  # a dry plan creates nothing
    real = outputs.plan(spec, outputs.OutputRequest(history=str(store), label="x"))
    assert (real.history, real.label) == (str(store), "x") and store.exists()


def test_a_timeline_file_needs_matplotlib_and_a_text_timeline_does_not(tmp_path, monkeypatch):
    import sys

    from gpubench.errors import EnvironmentProblem

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    spec = spec_from_mapping(SWEEP_DOC, "s.yaml")
    assert outputs.plan(spec, outputs.OutputRequest(timeline="")).timeline == ""
    with pytest.raises(EnvironmentProblem) as error:
        outputs.plan(spec, outputs.OutputRequest(timeline=str(tmp_path / "t.png")))
    assert str(error.value) == ("--timeline FILE draws with matplotlib, which is not installed: "
                                "pip install 'gpubench-studies[plot]' (or --timeline without FILE for "
                                "the text chart)")  # fmt: skip


def test_a_log_that_holds_results_is_refused_in_its_words(tmp_path):
    log = tmp_path / "r.jsonl"
    log.write_text('{"kind": "header"}\n{"kind": "result"}\n')
    with pytest.raises(ConfigError) as error:
        outputs.plan(spec_from_mapping(SWEEP_DOC, "s.yaml"), outputs.OutputRequest(jsonl=str(log)))
    assert str(error.value) == (f"{log}: holds results of an earlier run: continue it with "
                                "--resume, or give --force to start a new log (the old one is "
                                "kept beside it)")  # fmt: skip


def test_holds_results_only_for_a_file_with_a_line_past_its_header(tmp_path):
    from gpubench.store.outputs import holds_results

    log = tmp_path / "r.jsonl"
    assert not holds_results(str(log)) and not holds_results(str(tmp_path))
    log.write_text('{"kind": "header"}\n\n')
    assert not holds_results(str(log))
    log.write_text('{"kind": "header"}\n{"kind": "result"}\n')
    assert holds_results(str(log))


def test_an_old_log_is_set_aside_under_the_first_free_number_up_to_9999(tmp_path):
    from gpubench.errors import ConfigError
    from gpubench.store.outputs import _set_aside

    log = tmp_path / "r.jsonl"
    log.write_text("old\n")
    (tmp_path / "r.jsonl.1").write_text("older\n")
    assert _set_aside(log) == str(tmp_path / "r.jsonl.2") and not log.exists()
    for n in range(3, 10_000):
        (tmp_path / f"r.jsonl.{n}").touch()
    log.write_text("new\n")
    with pytest.raises(ConfigError) as info:
        _set_aside(log)
    assert str(info.value) == f"{log}: too many earlier logs kept beside it; remove some"
    assert log.read_text() == "new\n"


def test_a_log_that_cannot_be_read_holds_no_results(tmp_path, monkeypatch):
    from pathlib import Path

    log = tmp_path / "log.jsonl"
    log.write_text("header\none result\n")

    def refused(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refused)
    assert outputs.holds_results(str(log)) is False


def _log(path, results: int, points=("a", "b"), variants=("v",)) -> None:
    header = {"kind": "header", "fingerprint": {"points": list(points), "variants": list(variants)}}
    lines = [json.dumps(header)] + [
        json.dumps({"kind": "result", "point": {"n": i}, "variant": "v"}) for i in range(results)
    ]
    path.write_text("\n".join(lines) + "\n")


def test_a_finished_log_is_set_aside_by_itself_and_an_unfinished_one_asks(tmp_path):
    log = tmp_path / "nightly.jsonl"
    _log(log, results=2)  # both planned results: the run finished
    assert outputs.log_finished(str(log)) is True
    plan = outputs.plan(SPEC, outputs.OutputRequest(jsonl=str(log)))
    assert plan.kept == str(tmp_path / "nightly.jsonl.1") and not log.exists()
    _log(log, results=1)  # one of two: interrupted
    assert outputs.log_finished(str(log)) is False
    with pytest.raises(ConfigError, match="holds results of an earlier run"):
        outputs.plan(SPEC, outputs.OutputRequest(jsonl=str(log)))
    # A dry plan (the check before anything runs) sets nothing aside.
    _log(log, results=2)
    assert outputs.plan(SPEC, outputs.OutputRequest(jsonl=str(log)), dry=True).kept is None
    assert log.exists()


@pytest.mark.parametrize("text", ["", "not json\n", '{"kind": "header"}\n{"kind": "result"}\n',
                                  '{"kind": "header", "fingerprint": {"points": [], "variants": []}}\n',
                                  '[1]\n'])  # fmt: skip
def test_a_log_without_a_plan_it_completed_is_not_finished(tmp_path, text):
    log = tmp_path / "r.jsonl"
    log.write_text(text)
    assert outputs.log_finished(str(log)) is False


@pytest.mark.parametrize("field", ["json", "csv", "jsonl", "resume", "markdown", "history"])
@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_path_on_the_command_line_is_refused_naming_the_option(field, empty):
    option = f"--{field}"
    with pytest.raises(ConfigError) as info:
        outputs.plan(SPEC, outputs.OutputRequest(**{field: empty}))
    assert str(info.value) == f"command line: {option}: an empty path ({empty!r}): give a file name"


@pytest.mark.parametrize(
    ("name", "shown"), [("t.foo", "'.foo'"), ("t", "no extension"), ("t.png.txt", "'.txt'")]
)
def test_a_timeline_picture_matplotlib_cannot_write_is_refused_before_the_run(
    tmp_path, name, shown
):
    pytest.importorskip("matplotlib")
    target = tmp_path / name
    with pytest.raises(ConfigError) as info:
        outputs.plan(SPEC, outputs.OutputRequest(timeline=str(target)))
    assert str(info.value).startswith(
        f"{target}: --timeline: a picture needs an extension "
        f"matplotlib writes, got {shown}: .png, .svg or .pdf (or "
    )
    assert str(info.value).endswith(".tiff, .webp)") and not target.exists()
    assert outputs.plan(SPEC, outputs.OutputRequest(timeline=str(tmp_path / "t.SVG"))).timeline


@pytest.mark.parametrize("empty", ["", " \t"])
def test_check_writable_refuses_an_empty_path_rather_than_the_working_directory(empty):
    with pytest.raises(ConfigError) as info:
        outputs.check_writable(empty, "--markdown")
    assert (
        str(info.value) == f"command line: --markdown: an empty path ({empty!r}): give a file name"
    )


def test_a_pipe_as_an_output_is_refused_rather_than_waited_on(tmp_path):
    import os

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(ConfigError) as info:
        outputs.check_writable(str(pipe), "--json")  # opening it would block for a reader
    assert str(info.value) == f"{pipe}: --json: is a pipe or socket; give a file name"

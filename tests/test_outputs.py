"""Where results go, decided before the first measurement (gpubench/outputs.py)."""

from __future__ import annotations

import pytest

from gpubench import outputs
from gpubench.config import spec_from_mapping
from gpubench.errors import ConfigError

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

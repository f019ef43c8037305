"""The generated reference pages name every suite, variant, parameter, bundled sweep file and
exit code."""

from __future__ import annotations

from gpubench.errors import EXIT_CODE_MEANINGS
from gpubench.load import config, registry
from gpubench.report import reference


def test_every_suite_variant_and_parameter_is_on_the_suites_page():
    text = reference.pages()["suites.md"]
    for name, bench in registry.all_suites().items():
        assert f"## {name}\n" in text
        assert f"| `{bench.baseline}` (baseline) |" in text
        for variant in bench.variants:
            assert f"`{variant.name}`" in text
        for param in bench.params:
            assert f"| `{param.name}` |" in text


def test_every_bundled_config_and_exit_code_is_listed():
    pages = reference.pages()
    for path in config.bundled_configs():
        assert f"| `{path.stem}` |" in pages["configs.md"]
    for code in EXIT_CODE_MEANINGS:
        assert f"| {code} |" in pages["exit-codes.md"]
    assert set(EXIT_CODE_MEANINGS) == {0, 2, 3, 4, 130}


def test_pipes_in_text_do_not_break_the_tables():
    assert reference._cell("a|b\nc") == "a\\|b c"


def test_the_pages_are_the_pinned_ones():
    """Every character of the generated pages (tests/report/pages/; a change to a suite's
    declarations shows up here as a diff: GPUBENCH_UPDATE_SNAPSHOTS=1 rewrites them)."""
    from pathlib import Path

    from tests import snapshots

    pages = reference.pages()
    assert sorted(pages) == ["configs.md", "exit-codes.md", "formats.md", "suites.md"]
    for name, text in pages.items():
        snapshots.matches(Path(__file__).parent / "pages" / name, text)


def test_cells_escape_pipes_and_newlines_and_show_none_as_empty():
    assert reference._cell(None) == ""
    assert reference._cell("a|b\nc") == "a\\|b c"
    assert reference._cell(0) == "0"


def test_each_kind_of_parameter_bound_and_default_on_the_suites_page():
    from types import SimpleNamespace

    from gpubench.model.benchmark import Param, Variant

    params = (
        Param("mode", str, "a", "choices win over bounds", choices=("a", "b"), minimum=0),
        Param("upper", int, 7, "only a largest value", maximum=9),
        Param("lower", int, 7, "only a smallest value", minimum=1),
        Param("free", int, 3, "no bound at all"),
        Param("width", int, None, "from another", derived_from="size"),
        Param("extra", int, None, "no default, not derived"),
    )
    bench = SimpleNamespace(description="a made-up suite", baseline="one", params=params,
                            variants=(Variant("one", "the only one", "x"),))  # fmt: skip
    rows = [line for line in reference.suites_page({"made": bench}).splitlines()
            if line.startswith("| `") and "variant" not in line][1:]  # fmt: skip
    assert rows == [
        "| `mode` | str | a | a, b |  | choices win over bounds |",
        "| `upper` | int | 7 | <= 9 |  | only a largest value |",
        "| `lower` | int | 7 | >= 1 |  | only a smallest value |",
        "| `free` | int | 3 |  |  | no bound at all |",
        "| `width` | int | from size |  |  | from another |",
        "| `extra` | int |  |  |  | no default, not derived |",
    ]

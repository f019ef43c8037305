"""The generated reference pages name every suite, variant, parameter, bundled sweep file and
exit code."""

from __future__ import annotations

from gpubench import config, registry
from gpubench.errors import EXIT_CODE_MEANINGS
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

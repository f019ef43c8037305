"""Reference pages made from the code (the documentation site's generated part): every suite
with its variants and parameters, the bundled sweep files, the exit codes. Renders markdown
text only; docs/hooks.py writes it before each build, so these pages cannot drift."""

from __future__ import annotations

from typing import Any

from gpubench.errors import EXIT_CODE_MEANINGS


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def suites_page(suites: dict[str, Any]) -> str:
    """`gpubench list` as a page: one section per suite."""
    out = [
        "# Suites and their parameters",
        "",
        "Generated from the suites' declarations (`gpubench list` prints the same). Every "
        "parameter is a `gpubench run SUITE --name VALUE` option and a `params:` key of a "
        "sweep file; compile-time parameters become `-D` defines.",
        "",
    ]
    for name, bench in sorted(suites.items()):
        out += [
            f"## {name}",
            "",
            f"{bench.description}.",
            "",
            "| variant | what it shows |",
            "| --- | --- |",
        ]
        for variant in bench.variants:
            mark = " (baseline)" if variant.name == bench.baseline else ""
            out.append(f"| `{variant.name}`{mark} | {_cell(variant.help)} |")
        out += [
            "",
            "| parameter | type | default | allowed | compile-time | meaning |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for param in bench.params:
            allowed = ", ".join(str(c) for c in param.choices) if param.choices else ""
            if not allowed and (param.minimum is not None or param.maximum is not None):
                low = "" if param.minimum is None else f">= {param.minimum}"
                high = "" if param.maximum is None else f"<= {param.maximum}"
                allowed = " and ".join(x for x in (low, high) if x)
            default = (
                param.default
                if param.default is not None
                else (f"from {param.derived_from}" if param.derived_from else "")
            )
            out.append(
                f"| `{param.name}` | {param.type_name} | {_cell(default)} | "
                f"{_cell(allowed)} | {'yes' if param.compile_time else ''} | "
                f"{_cell(param.help)} |"
            )
        out.append("")
    return "\n".join(out)


def configs_page(configs: list[tuple[str, str, str]]) -> str:
    """(file name, suite, first comment line) of each bundled sweep file."""
    out = [
        "# Bundled sweep files",
        "",
        "Generated from `configs/` (`gpubench list --configs` prints the same); run one by "
        "name: `gpubench sweep NAME`.",
        "",
        "| name | suite | what it sweeps |",
        "| --- | --- | --- |",
    ]
    out += [f"| `{name}` | {_cell(suite)} | {_cell(comment)} |" for name, suite, comment in configs]
    return "\n".join(out) + "\n"


def exit_codes_page() -> str:
    out = [
        "# Exit codes",
        "",
        "Generated from `gpubench/errors.py` (every command's `--help` ends with the same table).",
        "",
        "| code | meaning |",
        "| --- | --- |",
    ]
    out += [f"| {code} | {_cell(meaning)} |" for code, meaning in EXIT_CODE_MEANINGS.items()]
    return "\n".join(out) + "\n"


def formats_page(schemas: dict[str, dict[str, Any]]) -> str:
    """The JSON Schema of each file format gpubench writes or reads (gpubench.formats), and
    the limits its readers hold it to."""
    import json

    from gpubench.model import results
    from gpubench.model.results import size_text
    from gpubench.store import ceilings

    out = [
        "# File formats",
        "",
        "Generated from the schemas in `gpubench/formats/`: every file gpubench writes and "
        "reads back is checked against its schema when read, and a value of a wrong type is "
        "one line naming the file, the field path and the value (exit code 2). Objects that "
        "later versions may extend (the environment, the spec, a summary) accept keys they "
        "do not list; the listed ones must have the listed type. Integers hold at most 64 "
        "bits and numbers are finite.",
        "",
        f"Limits, checked before a file is parsed or its results are built: a results file (JSON, read whole) at most "
        f"{size_text(results.MAX_RESULTS_BYTES)} and {results.MAX_JSON_CONTAINERS:,} objects "
        f"and arrays; a results log (JSON lines, read a line at a time) at most "
        f"{size_text(results.MAX_LOG_BYTES)}, {results.MAX_LOG_RESULTS:,} results and "
        f"{results.MAX_LOG_LINES:,} lines, each "
        f"line at most {size_text(results.MAX_LOG_LINE_BYTES)} and "
        f"{results.MAX_JSON_CONTAINERS:,} objects and arrays; a ceilings record at most "
        f"{size_text(ceilings.MAX_RECORD_BYTES)}. A history export is a results file.",
        "",
    ]
    for title, schema in schemas.items():
        out += [f"## {title}", "", "```json", json.dumps(schema, indent=2), "```", ""]
    return "\n".join(out)


def pages() -> dict[str, str]:
    """File name (under docs/reference/) -> markdown."""
    from gpubench.formats import json_schemas
    from gpubench.load import config, registry

    configs = [(path.stem, *config.describe(path)) for path in config.bundled_configs()]
    return {
        "suites.md": suites_page(registry.all_suites()),
        "configs.md": configs_page(configs),
        "exit-codes.md": exit_codes_page(),
        "formats.md": formats_page(json_schemas()),
    }

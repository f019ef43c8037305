"""The shape of the code, held: no import circle among gpubench's modules (imports inside
functions count), command modules that stay small, functions of at most 60 lines as the
formatter lays them out, and `# fmt: skip` only on tables of data."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gpubench"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_command_modules_stay_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in (PACKAGE / "cli").glob("*.py")}
    assert sizes and all(lines < 300 for lines in sizes.values()), sizes


def test_no_function_is_longer_than_60_lines():
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > 60:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.name} ({lines})")
    assert not long, long


# The layers that show things (and the library facade above the engine, and the entry point);
# every other module is the engine, which measures and returns data.
SHOWING = ("cli", "report")
ABOVE_THE_ENGINE = ("api.py", "__main__.py")


def _imported_modules(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):  # imports inside functions count too
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_the_engine_imports_nothing_that_shows_things():
    offending = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in SHOWING or str(relative) in ABOVE_THE_ENGINE:
            continue
        for module in _imported_modules(ast.parse(path.read_text())):
            layer = module.split(".")[1] if module.startswith("gpubench.") else None
            if layer in SHOWING:
                offending.append(f"{relative}: {module}")
    assert not offending, offending


# Modules whose code is still packed onto fewer lines with `# fmt: skip`: this list is being
# emptied; a module leaves it when it is formatted like the rest.
NOT_YET_FORMATTED: tuple[str, ...] = ()
FMT_SKIP = "# fmt: skip"


def _tables(body: list[ast.stmt]) -> set[int]:
    """Last lines of the tables of data among module- and class-level statements: assignments
    of a literal dict, list, tuple or set."""
    lines = set()
    for node in body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(
            node.value, ast.Dict | ast.List | ast.Tuple | ast.Set
        ):
            lines.add(node.end_lineno)
        elif isinstance(node, ast.ClassDef):
            lines |= _tables(node.body)
    return lines


def misplaced_skips(text: str) -> list[int]:
    """Lines whose `# fmt: skip` does not end a table of data."""
    marked = {
        token.start[0]
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT and token.string == FMT_SKIP
    }
    return sorted(marked - _tables(ast.parse(text).body))


def test_fmt_skip_only_on_tables_of_data():
    """The formatter lays out the code, so the 60-line rule is met by splitting functions, not
    by packing lines; `# fmt: skip` keeps a table of data laid out as a table."""
    misplaced = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith(NOT_YET_FORMATTED):
            misplaced += [f"{relative}:{line}" for line in misplaced_skips(path.read_text())]
    assert not misplaced, misplaced


def test_not_yet_formatted_names_what_exists():
    assert all((PACKAGE / name).exists() for name in NOT_YET_FORMATTED), NOT_YET_FORMATTED


def test_the_skip_finder_tells_tables_from_code():
    text = (
        "ROWS = (\n    (1, 2),\n    (3, 4),\n)  " + FMT_SKIP + "\n"
        "class C:\n    table = {'a': 1,  'b': 2}  " + FMT_SKIP + "\n"
        "def f(a,\n      b):  " + FMT_SKIP + "\n"
        "    local = [a, b]  " + FMT_SKIP + "\n"
        "    return f(a,\n             b)  " + FMT_SKIP + "\n"
        "NAME = '" + FMT_SKIP + "'\n"
        "x = call(1,  2)  " + FMT_SKIP + "\n"
    )
    assert misplaced_skips(text) == [8, 9, 11, 13]


# The packages from the ground up: a module imports only from its own layer or those below.
# The engine (measuring) stands on what to run (load) and where results go (store); what shows
# things (report), the library facade (api) and the command line stand above it.
LAYERS = (
    ("errors", "caches", "host", "__init__"),
    ("formats",),
    ("model",),
    ("backends", "kernelfile", "benchmarks"),
    ("load",),
    ("store",),
    ("engine",),
    ("report", "tune"),
    ("api",),
    ("cli", "__main__"),
)


def _layer(module: str) -> int | None:
    """The layer of gpubench.X[.Y]: X's; the package's own names (gpubench.install_hint) are
    the ground."""
    parts = module.split(".")
    if parts[0] != "gpubench":
        return None
    name = parts[1] if len(parts) > 1 else "__init__"
    for rank, names in enumerate(LAYERS):
        if name in names:
            return rank
    return 0 if (PACKAGE / "__init__.py").read_text().count(f"def {name}") else None


def test_every_package_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    tops -= {"__pycache__", "py"}
    assert {t for t in tops if _layer(f"gpubench.{t}") is None} == set()


def test_no_import_runs_down_to_up_between_layers():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        own = _layer("gpubench." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        for module in _imported_modules(ast.parse(path.read_text())):
            target = _layer(module)
            if target is not None and own is not None and target > own:
                upward.append(f"{path.relative_to(PACKAGE)} -> {module}")
    assert not upward, upward

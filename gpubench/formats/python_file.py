"""A user's own Python file (a suite, a reference function) loaded as a module: whatever goes
wrong while loading it is one ConfigError naming the file."""

from __future__ import annotations

from typing import Any

from gpubench.errors import ConfigError

# The most bytes of a user's .py file. Python holds the text, its tokens and its code at once
# (about 2.3 times the file: 228 MB for 100 MB of comments); suites and reference functions
# are kilobytes, so a larger file is refused by its size before it is read.
MAX_PYTHON_FILE_BYTES = 8 * 2**20


def load_python_file(path: str, where: str | None = None) -> Any:
    """Import a user's .py file as a module; whatever goes wrong while loading it is one
    ConfigError naming the file (or `where`) and the problem."""
    import hashlib
    import importlib.util
    import sys
    import traceback
    from pathlib import Path

    file = Path(path).resolve()
    if not file.is_file():
        raise ConfigError(f"{path!r} not found", source=where or path)
    size = file.stat().st_size
    if size > MAX_PYTHON_FILE_BYTES:
        raise ConfigError(
            f"{path!r} is {size:,} bytes; a suite or reference .py file is at "
            f"most {MAX_PYTHON_FILE_BYTES // 2**20} MiB",
            source=where or path,
        )
    name = f"gpubench_user_{hashlib.sha1(str(file).encode()).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError("cannot load this file as Python", source=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        # A file NUL bytes or a bad encoding make unreadable has no line to name.
        on_line = f" on line {exc.lineno}" if exc.lineno else ""
        raise ConfigError(f"syntax error{on_line}: {exc.msg}", source=path) from None
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from a suite file too
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(file)]
        where_line = f" (line {frames[-1].lineno})" if frames else ""
        raise ConfigError(
            f"loading the suite failed{where_line}: {type(exc).__name__}: {exc}", source=path
        ) from None
    return module

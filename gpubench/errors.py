"""The exception types gpubench raises on purpose, and the exit code each one maps to."""

from __future__ import annotations

import difflib

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_FAILED_POINTS = 3
EXIT_ENVIRONMENT = 4
EXIT_INTERRUPTED = 130

# What each exit code means: the CLI's --help epilog and the docs' reference page are made
# from this table.
EXIT_CODE_MEANINGS: dict[int, str] = {
    EXIT_OK: "every point ran and verified (skipped shapes, unstable timings and unverified "
    "results of a kernel file without a reference included)",
    EXIT_USAGE: "usage or config error, or a --resume log that does not match (nothing was run)",
    EXIT_FAILED_POINTS: "finished, but some points failed: incorrect, compile_failed, "
    "launch_failed, crashed, timeout (compare: something got slower, or a result of the base "
    "has no partner in the new file)",
    EXIT_ENVIRONMENT: "environment error: no PyCUDA, no GPU or driver, nvcc missing or too old",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C or SIGTERM); finished results are kept",
}


# An error message is one line a person reads: user values in it are cut to this length.
MAX_QUOTED = 60
MAX_MESSAGE = 1000


def quote(value: object, limit: int = MAX_QUOTED) -> str:
    """repr(value) cut to a sane length (a YAML alias bomb must not become a 34 MB line)."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring = short.maxother = short.maxlong = limit
    short.maxlist = short.maxdict = short.maxtuple = short.maxset = 4
    short.maxlevel = 3
    if isinstance(value, int) and value.bit_length() > 4 * limit:
        return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"
    try:
        return short.repr(value)
    except (ValueError, RecursionError):  # an object whose repr refuses
        return f"<a {type(value).__name__}>"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shortened(message: str) -> str:
    """A message that quotes what the user typed, with each word cut to 200 characters (a long
    path still reads whole) and the whole to MAX_MESSAGE: a 100 kB option value must not come
    back as a 100 kB line."""
    words = (_cut(word, 200) for word in message.split(" "))
    return _cut(" ".join(words), MAX_MESSAGE)


class GpubenchError(Exception):
    """An error the user can act on: printed as one line, never as a traceback."""

    exit_code = 1


class ConfigError(GpubenchError):
    """A sweep file or command-line value is wrong. Names the file, the key and the value."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None):
        self.source = source
        self.key = key
        self.message = message  # without the file and key, for re-raising with a file
        where = ": ".join(_cut(part, 200) for part in (source, key) if part)
        super().__init__(_cut(f"{where}: {message}" if where else message, MAX_MESSAGE))


class PointError(ConfigError):
    """A suite's declarations have no sensible value at one point (a dimension that comes
    out zero, a reference NumPy refuses): that point's result says so; the sweep goes on."""


class EnvironmentProblem(GpubenchError):
    """Something the machine lacks: PyCUDA, a GPU, a driver, nvcc."""

    exit_code = EXIT_ENVIRONMENT


class KernelCompileError(GpubenchError):
    """nvcc rejected a kernel source; carries the compiler's own message."""

    def __init__(self, message: str, compiler_output: str = ""):
        self.compiler_output = compiler_output
        super().__init__(message)


class KernelLaunchError(GpubenchError):
    """The driver refused or failed a launch."""


class LaunchShapeUnsupported(GpubenchError):
    """The device cannot run this launch shape (threads per block, shared memory, ...)."""


class OutOfMemory(GpubenchError):
    """The device or the host could not provide a buffer: the point is skipped, not crashed."""


def did_you_mean(word: str, candidates: list[str] | tuple[str, ...]) -> str:
    """' (did you mean X?)' for the closest candidate, or ''."""
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""

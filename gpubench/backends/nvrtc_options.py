"""nvcc options, as suites and kernel files write them, as NVRTC's ProgramOptions.

One list of options serves both backends, so a kernel file is written once. NVRTC compiles
device code only: nvcc's host-side optimisation levels (-O0 ... -O3) change nothing on the
device and are dropped; an option with no NVRTC meaning is refused by name, never ignored.
No CUDA import here: the translation is tested on machines without one.
"""

from __future__ import annotations

from typing import Any

from gpubench.errors import KernelCompileError

# Flags that switch one ProgramOptions field on.
_FLAGS = {
    "--use_fast_math": "use_fast_math", "-use_fast_math": "use_fast_math",
    "-lineinfo": "lineinfo", "--generate-line-info": "lineinfo",
    "-G": "debug", "--device-debug": "debug",
    "--extra-device-vectorization": "extra_device_vectorization",
    "--restrict": "restrict", "-restrict": "restrict",
}  # fmt: skip
# `--name=true|false` options.
_BOOLEANS = {"ftz": "ftz", "prec-div": "prec_div", "prec-sqrt": "prec_sqrt", "fmad": "fma"}
_HOST_ONLY = {"-O0", "-O1", "-O2", "-O3"}


def parse(options: list[str], include_dirs: list[str]) -> dict[str, Any]:
    """ProgramOptions' fields for these nvcc options; KernelCompileError names one NVRTC
    has no equivalent for."""
    fields: dict[str, Any] = {"define_macro": [], "include_path": list(include_dirs)}
    pending: str | None = None  # "-Xptxas" waiting for its value
    for option in options:
        if pending is not None:
            fields.setdefault("ptxas_options", []).append(option)
            pending = None
        elif option.startswith("-D") and len(option) > 2:
            name, equals, value = option[2:].partition("=")
            fields["define_macro"].append((name, value) if equals else name)
        elif option.startswith("-I") and len(option) > 2:
            fields["include_path"].append(option[2:])
        elif option in _FLAGS:
            fields[_FLAGS[option]] = True
        elif option in _HOST_ONLY:
            continue
        elif option in ("-Xptxas", "--ptxas-options"):
            pending = option
        elif option.startswith(("-Xptxas=", "--ptxas-options=")):
            fields.setdefault("ptxas_options", []).extend(option.split("=", 1)[1].split(","))
        elif option.startswith(("-maxrregcount=", "--maxrregcount=")):
            fields["max_register_count"] = _integer(option)
        elif option.startswith(("-std=", "--std=")):
            fields["std"] = option.split("=", 1)[1]
        elif option.lstrip("-").split("=")[0] in _BOOLEANS and "=" in option:
            name, value = option.lstrip("-").split("=", 1)
            fields[_BOOLEANS[name]] = _boolean(option, value)
        else:
            raise KernelCompileError(
                f"nvcc option {option!r} has no NVRTC equivalent (the cuda-core backend "
                "compiles with NVRTC): drop it or use --backend pycuda"
            )
    if pending is not None:
        raise KernelCompileError(f"{pending} needs a value")
    return fields


def program_options(options: list[str], include_dirs: list[str], arch: str) -> Any:
    from cuda.core import ProgramOptions

    fields = {k: v for k, v in parse(options, include_dirs).items() if v != []}
    return ProgramOptions(arch=arch, **fields)


def _integer(option: str) -> int:
    raw = option.split("=", 1)[1]
    if not raw.isdigit():
        raise KernelCompileError(f"{option!r}: expected a whole number")
    return int(raw)


def _boolean(option: str, value: str) -> bool:
    if value not in ("true", "false"):
        raise KernelCompileError(f"{option!r}: expected true or false")
    return value == "true"

"""What a suite's kernels compile to, without a GPU: registers, spills, shared memory and
barriers (ptxas), the instruction mix (from the SASS where cuobjdump or nvdisasm is there,
else from the PTX), and the listings with their source lines.

Everything runs nvcc and the CUDA binary utilities as subprocesses; nothing imports PyCUDA.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gpubench.errors import EnvironmentProblem, KernelCompileError

ARCH = re.compile(r"^sm_\d{2,3}[a-z]?$")


@dataclass
class Resources:
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_bytes: int = 0
    shared_bytes: int = 0
    barriers: int = 0


@dataclass
class KernelReport:
    name: str
    resources: Resources
    mix: Counter[str] = field(default_factory=Counter)


@dataclass
class Inspection:
    arch: str
    kernels: list[KernelReport]
    listing_kind: str  # "sass" or "ptx": where the instruction mix comes from
    ptx: str = ""
    sass: str = ""
    note: str = ""
    source: Path | None = None


# -- ptxas -v -------------------------------------------------------------------------------
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_ptxas(log: str) -> dict[str, Resources]:
    """Per kernel, what `ptxas -v` reported."""
    out: dict[str, Resources] = {}
    current: Resources | None = None
    for line in log.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current = out.setdefault(entry.group(1), Resources())
            continue
        if current is None:
            continue
        properties = _PROPERTIES.search(line)
        if properties:
            current.stack_bytes, current.spill_stores, current.spill_loads = map(
                int, properties.groups()
            )
        used = _USED.search(line)
        if used:
            current.registers = int(used.group(1))
            smem = _SMEM.search(line)
            current.shared_bytes = int(smem.group(1)) if smem else 0
            barriers = _BARRIERS.search(line)
            current.barriers = int(barriers.group(1)) if barriers else 0
    return out


# -- instruction mix ----------------------------------------------------------------------------
# (column, SASS opcode pattern, PTX instruction pattern); widths are the access size in bits.
MIX: tuple[tuple[str, str, str], ...] = (
    ("LDG", r"^LDG\b", r"^ld\.global"),
    ("STG", r"^STG\b", r"^st\.global"),
    ("LDS", r"^LDS\b", r"^ld\.shared"),
    ("STS", r"^STS\b", r"^st\.shared"),
    ("FFMA", r"^FFMA\b", r"^fma\.rn\.f32"),
    ("DFMA", r"^DFMA\b", r"^fma\.rn\.f64"),
    ("HFMA2", r"^HFMA2\b", r"^fma\.rn\.f16x2"),
    ("MUFU", r"^MUFU\b", r"^(sin|cos|ex2|lg2|rsqrt|rcp|sqrt|tanh)\.approx"),
    ("BRA", r"^BRA\b", r"^bra\b"),
    ("BAR", r"^BAR\b", r"^bar(\.sync|\.warp\.sync)?\b"),
    ("atomic", r"^(ATOM|RED|ATOMS)\b", r"^(atom|red)\."),
)
COLUMNS = ("LDG", "STG", "LDS", "STS", "FFMA", "DFMA", "HFMA2", "MUFU", "BRA", "BAR", "atomic",
           "predicated", "total")  # fmt: skip


def _width_sass(opcode: str) -> str:
    match = re.search(r"\.(8|16|32|64|128|U8|S8|U16|S16)\b", opcode)
    if match:
        bits = match.group(1).lstrip("US")
        return bits
    return "32"


def _width_ptx(instruction: str) -> str:
    vector = re.search(r"\.v(2|4)\.", instruction)
    scalar = re.search(r"\.[bfsu](8|16|32|64)\b", instruction)
    bits = int(scalar.group(1)) if scalar else 32
    return str(bits * (int(vector.group(1)) if vector else 1))


def mix(instructions: list[str], kind: str) -> Counter[str]:
    """Counts per column of the instruction lines of one kernel (SASS opcodes with operands,
    or PTX instructions); loads and stores also per width (`LDG.128`)."""
    counts: Counter[str] = Counter()
    for raw in instructions:
        text = raw.strip()
        predicated = text.startswith("@")
        if predicated:
            text = text.split(None, 1)[1] if " " in text else ""
            # PTX and SASS write the guard differently (@%p1 / @!P0); both count here.
            counts["predicated"] += 1
        if not text:
            continue
        counts["total"] += 1
        opcode = text.split()[0]
        for column, sass_pattern, ptx_pattern in MIX:
            if re.match(sass_pattern if kind == "sass" else ptx_pattern, opcode):
                counts[column] += 1
                if column in ("LDG", "STG", "LDS", "STS"):
                    width = _width_sass(opcode) if kind == "sass" else _width_ptx(opcode)
                    counts[f"{column}.{width}"] += 1
                break
    return counts


_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+(\w+)\s*\(")


def ptx_functions(ptx: str) -> dict[str, list[str]]:
    """Each kernel's PTX instruction lines (directives, labels and braces left out)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    depth = 0
    for line in ptx.splitlines():
        entry = _PTX_ENTRY.match(line)
        if entry:
            current = out.setdefault(entry.group(1), [])
            depth = 0
            continue
        if current is None:
            continue
        depth += line.count("{") - line.count("}")
        text = line.strip()
        if text == "}" and depth <= 0:
            current = None
            continue
        # ")" closes the parameter list of `.entry name(`: a line of its own, no instruction.
        if not text or text.startswith((".", "//", "{", "}", "$", ")")) or text.endswith(":"):
            continue
        current.append(text.rstrip(";"))
    return out


_SASS_FUNCTION = re.compile(r"Function\s*:\s*(\S+)")
_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.+?)\s*;")


def sass_functions(sass: str) -> dict[str, list[str]]:
    """Each kernel's SASS instructions, from `cuobjdump -sass` or `nvdisasm` output."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in sass.splitlines():
        function = _SASS_FUNCTION.search(line)
        if function:
            current = out.setdefault(function.group(1), [])
            continue
        if current is None:
            continue
        instruction = _SASS_LINE.search(line)
        if instruction:
            current.append(instruction.group(1))
    return out


# -- running the tools --------------------------------------------------------------------------
def _run(command: list[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise EnvironmentProblem(
            f"{command[0]} not found: {what} needs the CUDA toolkit on PATH"
        ) from None
    except subprocess.TimeoutExpired:
        raise EnvironmentProblem(f"{command[0]} took more than 10 minutes") from None


def compile_failure(stderr: str, options: list[str], arch: str) -> Exception:
    """nvcc's refusal as one line: an architecture it does not know is a usage error (exit
    2); a kernel that does not compile is a failed result (exit 3), with nvcc's first error."""
    from gpubench.errors import EXIT_FAILED_POINTS, ConfigError

    if "gpu architecture" in stderr.lower() or "gpu-architecture" in stderr:
        return ConfigError(f"nvcc does not know the architecture {arch!r}", key="--arch")
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")
    error = KernelCompileError(
        f"nvcc failed ({' '.join(options) or 'no options'}): {first}", stderr
    )
    error.exit_code = EXIT_FAILED_POINTS
    return error


def disassembler() -> tuple[str, list[str]] | None:
    """cuobjdump (CUDA toolkit, or pip install nvidia-cuda-cuobjdump) or nvdisasm."""
    if shutil.which("cuobjdump"):
        return "cuobjdump", ["cuobjdump", "-sass"]
    if shutil.which("nvdisasm"):
        return "nvdisasm", ["nvdisasm", "-c", "-g"]
    return None


def inspect(
    source: Path, options: list[str], include_dirs: list[str], arch: str, want_sass: bool = True
) -> Inspection:
    """Compile `source` for `arch` and report on every kernel in it."""
    if not ARCH.match(arch):
        from gpubench.errors import ConfigError, quote

        # quote(): a 100,000-character --arch must not come back as a 100,000-character line.
        raise ConfigError(
            f"expected an architecture such as sm_90, got {quote(arch)}", key="--arch"
        )
    includes = [f"-I{d}" for d in include_dirs]
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        ptx_file = Path(tmp) / "k.ptx"
        base = ["nvcc", f"-arch={arch}", "-lineinfo", *includes, *options, str(source)]
        built = _run([*base[:1], "-cubin", "-Xptxas", "-v", "-o", str(cubin), *base[1:]], "inspect")
        if built.returncode:
            raise compile_failure(built.stderr, options, arch)
        ptx_run = _run([*base[:1], "-ptx", "-o", str(ptx_file), *base[1:]], "inspect")
        ptx = ptx_file.read_text() if ptx_run.returncode == 0 else ""
        resources = parse_ptxas(built.stderr + built.stdout)
        sass, note = "", ""
        tool = disassembler() if want_sass else None
        if tool is not None:
            dumped = _run([*tool[1], str(cubin)], "--sass")
            sass = dumped.stdout if dumped.returncode == 0 else ""
        elif want_sass:
            note = (
                "cuobjdump and nvdisasm not found (CUDA toolkit, or pip install "
                "nvidia-cuda-cuobjdump): the instruction mix is counted in the PTX"
            )
    functions = sass_functions(sass) if sass else ptx_functions(ptx)
    kind = "sass" if sass else "ptx"
    kernels = [
        KernelReport(name, resources.get(name, Resources()), mix(functions.get(name, []), kind))
        for name in sorted(set(resources) | set(functions))
    ]
    return Inspection(arch, kernels, kind, ptx=ptx, sass=sass, note=note, source=source)


def annotate_ptx(ptx: str, source: Path, kernels: set[str] | None = None) -> str:
    """The PTX of the chosen kernels, each `.loc` replaced by the source line it marks."""
    try:
        lines = source.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    out: list[str] = []
    keep = kernels is None
    for line in ptx.splitlines():
        entry = _PTX_ENTRY.match(line)
        if entry:
            keep = kernels is None or entry.group(1) in kernels
        if not keep:
            continue
        loc = re.match(r"^\s*\.loc\s+1\s+(\d+)\s+\d+", line)
        if loc:
            number = int(loc.group(1))
            text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
            out.append(f"        // {source.name}:{number}: {text}")
            continue
        out.append(line)
    return "\n".join(out)

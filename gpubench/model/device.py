"""Device properties, the peaks derived from them, and the environment record kept with results."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

# FP32 lanes (CUDA cores) per SM by compute capability, from the CUDA C Programming Guide's
# "arithmetic instructions" throughput table. Unknown future parts fall back to 128.
FP32_LANES_PER_SM: dict[tuple[int, int], int] = {
    (5, 0): 128, (5, 2): 128, (5, 3): 128,
    (6, 0): 64, (6, 1): 128, (6, 2): 128,
    (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128, (10, 3): 128, (11, 0): 128, (12, 0): 128, (12, 1): 128,
}  # fmt: skip


def fp32_lanes_per_sm(compute_capability: tuple[int, int]) -> int:
    return FP32_LANES_PER_SM.get(tuple(compute_capability), 128)


# FP64 and half2 FP16 (non-tensor) rates relative to FP32, same table of the Programming
# Guide: the data-centre parts (x.0) do FP64 at half the FP32 rate, the others at 1/32 or
# 1/64; FP16 in half2 runs at twice the FP32 rate where the table says so, else at it.
FP64_PER_FP32: dict[tuple[int, int], float] = {
    (6, 0): 1 / 2, (7, 0): 1 / 2, (8, 0): 1 / 2, (9, 0): 1 / 2, (10, 0): 1 / 2,
    (6, 1): 1 / 32, (6, 2): 1 / 32, (7, 5): 1 / 32, (8, 6): 1 / 64, (8, 7): 1 / 64,
    (8, 9): 1 / 64, (12, 0): 1 / 64,
}  # fmt: skip
FP16_PER_FP32: dict[tuple[int, int], float] = {
    (6, 0): 2, (7, 0): 2, (7, 5): 2, (8, 0): 2, (9, 0): 2, (10, 0): 2,
    (8, 6): 1, (8, 7): 1, (8, 9): 1, (12, 0): 1,
}  # fmt: skip
# Shared memory delivers 32 banks × 4 bytes per SM per clock on every part since Maxwell.
SHARED_BYTES_PER_CLOCK_PER_SM = 128


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    # Max (boost) SM clock and memory clock, MHz; None where the driver does not report them.
    sm_clock_mhz: float | None
    memory_clock_mhz: float | None
    memory_bus_width_bits: int | None
    memory_bytes: int
    l2_bytes: int
    shared_per_block_bytes: int
    shared_per_block_optin_bytes: int
    shared_per_sm_bytes: int
    registers_per_sm: int
    registers_per_block: int
    max_threads_per_block: int
    max_threads_per_sm: int
    warp_size: int
    max_blocks_per_sm: int = 32
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def peak_bandwidth_gbps(self) -> float | None:
        """Theoretical DRAM bandwidth: 2 transfers per memory clock (DDR) × bus width."""
        if not self.memory_clock_mhz or not self.memory_bus_width_bits:
            return None
        return 2 * self.memory_clock_mhz * 1e6 * self.memory_bus_width_bits / 8 / 1e9

    @property
    def peak_fp32_gflops(self) -> float | None:
        """SMs × FP32 lanes per SM × 2 (an FMA is two flops) × SM clock."""
        if not self.sm_clock_mhz:
            return None
        lanes = fp32_lanes_per_sm(self.compute_capability)
        return self.sm_count * lanes * 2 * self.sm_clock_mhz * 1e6 / 1e9

    @property
    def peak_fp64_gflops(self) -> float | None:
        ratio = FP64_PER_FP32.get(tuple(self.compute_capability))
        fp32 = self.peak_fp32_gflops
        return None if ratio is None or fp32 is None else fp32 * ratio

    @property
    def peak_fp16_gflops(self) -> float | None:
        """half2 FMAs on the CUDA cores (not the tensor cores)."""
        ratio = FP16_PER_FP32.get(tuple(self.compute_capability))
        fp32 = self.peak_fp32_gflops
        return None if ratio is None or fp32 is None else fp32 * ratio

    @property
    def peak_shared_gbps(self) -> float | None:
        if not self.sm_clock_mhz:
            return None
        return self.sm_count * SHARED_BYTES_PER_CLOCK_PER_SM * self.sm_clock_mhz * 1e6 / 1e9

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["arch"] = self.arch
        record["peak_bandwidth_gbps"] = self.peak_bandwidth_gbps
        record["peak_fp32_gflops"] = self.peak_fp32_gflops
        record["peak_fp64_gflops"] = self.peak_fp64_gflops
        record["peak_fp16_gflops"] = self.peak_fp16_gflops
        record["peak_shared_gbps"] = self.peak_shared_gbps
        return record


@dataclass
class Environment:
    """Everything needed to say where and with what a result was measured."""

    gpubench_version: str
    python_version: str
    numpy_version: str
    # Which backend measured ({"name": ..., "version": ...}).
    backend: dict[str, Any] = field(default_factory=dict)
    device: dict[str, Any] = field(default_factory=dict)
    gpu_uuid: str | None = None
    # Which device of the host measured (its CUDA index) and how many the host shows.
    device_index: int = 0
    device_count: int | None = None
    driver_version: str | None = None
    cuda_driver_api_version: str | None = None
    pycuda_version: str | None = None
    pycuda_built_for_cuda: str | None = None
    nvcc_version: str | None = None
    sm_clock_mhz_at_start: float | None = None
    temperature_c_at_start: float | None = None
    power_w_at_start: float | None = None
    # Whether the GPU has an energy counter gpubench can read (NVML's total energy), which
    # --energy needs; None where not asked.
    energy_counter: bool | None = None
    # The code that measured: the git commit of the working folder and whether tracked files
    # had changes (None outside a repository or without git).
    git_commit: str | None = None
    git_dirty: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def host_environment() -> Environment:
    import numpy

    from gpubench import __version__

    commit, dirty = _git_provenance()
    return Environment(
        gpubench_version=__version__,
        python_version=platform.python_version(),
        numpy_version=numpy.__version__,
        nvcc_version=nvcc_version(),
        git_commit=commit,
        git_dirty=dirty,
    )


def _git_provenance() -> tuple[str | None, bool | None]:
    """The commit and dirty flag of the working folder; (None, None) when git cannot say.
    Never raises: provenance is a note on the results, not a reason to stop measuring."""
    try:
        version = code_version()
    except Exception:  # any failure here only costs the note
        return None, None
    return version.commit, version.dirty


def _nvcc_output(*args: str) -> str | None:
    """stdout of the nvcc on PATH with these arguments, or None when it cannot run."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    try:
        return subprocess.run([nvcc, *args], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def nvcc_version() -> str | None:
    """The `release X.Y` of the nvcc on PATH, or None when there is none."""
    match = re.search(r"release (\d+\.\d+)", _nvcc_output("--version") or "")
    return match.group(1) if match else None


def nvcc_architectures() -> set[str] | None:
    """The sm_XY targets the nvcc on PATH can build, or None if it cannot say."""
    archs = {f"sm_{m}" for m in re.findall(r"compute_(\d+)", _nvcc_output("--list-gpu-arch") or "")}
    return archs or None


def check_nvcc_supports(arch: str, version: str | None) -> None:
    """Raise EnvironmentProblem when the nvcc on PATH cannot build for this GPU."""
    from gpubench.errors import EnvironmentProblem

    if version is None:
        raise EnvironmentProblem(
            "nvcc not found on PATH: install the CUDA toolkit matching your driver and add its bin/ to PATH"
        )
    supported = nvcc_architectures()
    if supported is not None and arch not in supported:
        newest = max(supported, key=lambda a: int(a[3:]))
        raise EnvironmentProblem(
            f"nvcc {version} cannot build for this GPU ({arch}; it supports up to {newest}): "
            "install a newer CUDA toolkit, one that lists this architecture in nvcc --list-gpu-arch"
        )


@dataclass(frozen=True)
class CodeVersion:
    """Which code measured: the git commit and whether the tree had changes, inside a
    repository; the gpubench version always."""

    commit: str | None
    dirty: bool | None
    gpubench: str | None


def code_version(directory: str | os.PathLike[str] = ".") -> CodeVersion:
    from gpubench import __version__

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=directory, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return CodeVersion(None, None, __version__)
    status = git("status", "--porcelain", "--untracked-files=no")
    return CodeVersion(commit, bool(status) if status is not None else None, __version__)

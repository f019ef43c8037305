from __future__ import annotations

import pytest

from gpubench.model.device import fp32_lanes_per_sm, host_environment
from tests.fakes import FAKE_DEVICE


def test_peaks_from_h100_like_properties():
    from dataclasses import replace

    h100 = replace(FAKE_DEVICE, sm_count=132, sm_clock_mhz=1980.0, memory_clock_mhz=2619.0,
                   memory_bus_width_bits=5120, compute_capability=(9, 0))  # fmt: skip
    assert h100.peak_bandwidth_gbps == pytest.approx(3352.32)
    assert h100.peak_fp32_gflops == pytest.approx(66908.16)  # 132 x 128 x 2 x 1.98 GHz
    assert h100.arch == "sm_90"


def test_unknown_clocks_give_no_peak():
    from dataclasses import replace

    dev = replace(FAKE_DEVICE, sm_clock_mhz=None, memory_clock_mhz=None)
    assert dev.peak_bandwidth_gbps is None and dev.peak_fp32_gflops is None


def test_fp32_lanes_by_compute_capability():
    assert fp32_lanes_per_sm((8, 0)) == 64 and fp32_lanes_per_sm((8, 6)) == 128
    assert fp32_lanes_per_sm((7, 0)) == 64 and fp32_lanes_per_sm((42, 0)) == 128


def test_host_environment_records_versions():
    env = host_environment().to_dict()
    assert env["gpubench_version"] and env["python_version"] and env["numpy_version"]


def test_an_nvcc_too_old_for_the_gpu_is_an_environment_error(monkeypatch):
    from gpubench.errors import EnvironmentProblem
    from gpubench.model import device

    monkeypatch.setattr(device, "nvcc_architectures", lambda: {"sm_75", "sm_80", "sm_86"})
    with pytest.raises(EnvironmentProblem) as info:
        device.check_nvcc_supports("sm_90", "11.0")
    assert info.value.exit_code == 4
    assert str(info.value) == (
        "nvcc 11.0 cannot build for this GPU (sm_90; it supports up to sm_86): install a newer "
        "CUDA toolkit, one that lists this architecture in nvcc --list-gpu-arch")  # fmt: skip
    device.check_nvcc_supports("sm_80", "11.0")  # supported: no error
    with pytest.raises(EnvironmentProblem) as info:
        device.check_nvcc_supports("sm_80", None)
    assert str(info.value) == ("nvcc not found on PATH: install the CUDA toolkit matching your "
                               "driver and add its bin/ to PATH")  # fmt: skip


def test_the_device_record_holds_every_property_and_the_derived_peaks():
    from dataclasses import asdict, replace

    h100 = replace(FAKE_DEVICE, sm_count=132, sm_clock_mhz=1980.0, memory_clock_mhz=2619.0,
                   memory_bus_width_bits=5120, compute_capability=(9, 0))  # fmt: skip
    record = h100.to_dict()
    derived = {key: record.pop(key) for key in ("arch", "peak_bandwidth_gbps", "peak_fp32_gflops",
                                                "peak_fp64_gflops", "peak_fp16_gflops",
                                                "peak_shared_gbps")}  # fmt: skip
    assert record == asdict(h100)
    assert derived == pytest.approx({
        "arch": "sm_90", "peak_bandwidth_gbps": 3352.32, "peak_fp32_gflops": 66908.16,
        "peak_fp64_gflops": 33454.08, "peak_fp16_gflops": 133816.32,
        "peak_shared_gbps": 132 * 128 * 1.98,
    })  # fmt: skip


def test_nvcc_is_asked_for_its_release_and_architectures(monkeypatch):
    import subprocess

    from gpubench.errors import EnvironmentProblem
    from gpubench.model import device

    calls = []

    def fake_run(args, **kwargs):
        calls.append((args, kwargs))
        out = {"--version": "Cuda compilation tools, release 13.0, V13.0.48",
               "--list-gpu-arch": "compute_75\ncompute_90\ncompute_100\n"}[args[1]]  # fmt: skip
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr="")

    monkeypatch.setattr(device.shutil, "which", lambda name: f"/cuda/bin/{name}")
    monkeypatch.setattr(device.subprocess, "run", fake_run)
    assert device.nvcc_version() == "13.0"
    assert device.nvcc_architectures() == {"sm_75", "sm_90", "sm_100"}
    assert host_environment().nvcc_version == "13.0"
    assert calls[0] == (["/cuda/bin/nvcc", "--version"],
                        {"capture_output": True, "text": True, "timeout": 30})  # fmt: skip
    with pytest.raises(EnvironmentProblem) as info:
        device.check_nvcc_supports("sm_120", "13.0")
    assert "nvcc 13.0 cannot build for this GPU (sm_120; it supports up to sm_100)" in str(
        info.value
    )
    monkeypatch.setattr(device.shutil, "which", lambda name: None)
    assert device.nvcc_version() is None and device.nvcc_architectures() is None

    def broken(args, **kwargs):
        raise subprocess.TimeoutExpired(args, 30)

    monkeypatch.setattr(device.shutil, "which", lambda name: f"/cuda/bin/{name}")
    monkeypatch.setattr(device.subprocess, "run", broken)
    assert device.nvcc_version() is None


def test_the_environment_records_the_code_that_measured_and_never_fails_for_it(monkeypatch):
    from gpubench.model import device

    monkeypatch.setattr(
        device, "code_version", lambda: device.CodeVersion("ef" * 20, False, "0.1.0")
    )
    env = device.host_environment().to_dict()
    assert (env["git_commit"], env["git_dirty"]) == ("ef" * 20, False)

    def broken():
        raise RuntimeError("no git here")

    monkeypatch.setattr(device, "code_version", broken)
    env = device.host_environment().to_dict()
    assert (env["git_commit"], env["git_dirty"]) == (None, None)

"""--profile without a GPU: ncu's CSV parsed, counters summed over launches and divided by
the runs, the one-point sweep it profiles, the command line, and the one line without ncu."""

from __future__ import annotations

import io
import os
import sys

import pytest
import yaml
from rich.console import Console

from gpubench.engine import profiling
from gpubench.model.results import Result, Status

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')  # fmt: skip


def _notes(console):
    """profile_results' notes, printed as the CLI prints them (plain text, never markup)."""
    from gpubench.report import notices
    from gpubench.report.plain import say

    return lambda notice: say(console, notices.text(notice))


def row(launch: int, kernel: str, name: str, unit: str, value: str) -> str:
    return (
        f'"{launch}","1","python3","host","{kernel}","1","7","(256, 1, 1)","(4, 1, 1)",'
        f'"0","9.0","Command line profiler metrics","{name}","{unit}","{value}"'
    )


def csv_text(launches: list[dict[str, tuple[str, str]]]) -> str:
    lines = ["==PROF== Connected to process 1", "program output", HEADER]
    for index, values in enumerate(launches):
        for name, (unit, value) in values.items():
            lines.append(row(index, "copy", name, unit, value))
    return "\n".join(lines) + "\n==PROF== Disconnected\n"


ONE = {
    "gpu__time_duration.sum": ("nsecond", "3,000"),
    "dram__bytes_read.sum": ("byte", "1,000"),
    "dram__bytes_write.sum": ("Kbyte", "2"),
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": ("sector", "400"),
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": ("request", "100"),
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ("", "30"),
    "smsp__inst_executed.sum": ("inst", "600"),
    "smsp__sass_average_branch_targets_threads_uniform.pct": ("%", "100"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "40"),
}


def test_parse_reads_every_launch_in_base_units_and_skips_other_lines():
    launches = profiling.parse_csv(csv_text([ONE, ONE]))
    assert len(launches) == 2 and launches[0].kernel == "copy"
    assert launches[0].values["dram__bytes_write.sum"] == 2000
    assert launches[0].values["gpu__time_duration.sum"] == pytest.approx(0.003)
    assert profiling.parse_csv("no csv here\n") == []
    # Time in "ns" (ncu's spelling in some versions) as well as "nsecond".
    short = profiling.parse_csv(csv_text([{"gpu__time_duration.sum": ("ns", "174,080")}]))
    assert short[0].values["gpu__time_duration.sum"] == pytest.approx(0.17408)


def test_summary_is_one_run_of_the_three_profiled():
    second = {**ONE, "gpu__time_duration.sum": ("nsecond", "1000"),
              "smsp__sass_average_branch_targets_threads_uniform.pct": ("%", "50")}  # fmt: skip
    out = profiling.summarise(profiling.parse_csv(csv_text([ONE, second, ONE])))
    assert out["ncu_ms"] == pytest.approx(0.007 / 3)
    assert out["dram_bytes"] == pytest.approx(3 * 3000 / 3)
    assert out["ld_sectors_per_request"] == 4.0
    assert "st_sectors_per_request" not in out  # no store requests: no ratio
    assert out["bank_conflicts"] == 30.0 and out["instructions"] == 600.0
    # Percentages weighted by each launch's time: (100*3 + 50*1 + 100*3) / 7.
    assert out["branch_uniformity"] == pytest.approx(650 / 7)
    assert out["achieved_occupancy"] == pytest.approx(40.0)
    with pytest.raises(profiling.ProfileError):
        profiling.summarise([])


def test_the_profiled_sweep_runs_one_variant_once_at_the_point():
    spec = {"suite": "transpose", "suite_ref": None}
    sweep = profiling.one_point_sweep(spec, {"size": 256, "rows": None, "tile": 32}, "padded")
    assert sweep == {"suite": "transpose", "variants": ["padded"], "baseline": "padded",
                     "params": {"size": 256, "tile": 32},
                     "timing": {"warmup": 0, "min_samples": 1, "max_samples": 1,
                                "min_time_s": 0}}  # fmt: skip
    yaml.safe_dump(sweep)
    command = profiling.command("/usr/bin/ncu", "p.yaml", "log.jsonl", 1)
    assert command[:2] == ["/usr/bin/ncu", "--csv"] and "--clock-control" in command
    assert command[command.index("--clock-control") + 1] == "none"
    assert command[-6:] == ["p.yaml", "--jsonl", "log.jsonl", "--force", "--device", "1"]


def test_without_ncu_one_line_and_results_unchanged(monkeypatch):
    monkeypatch.setattr(profiling.shutil, "which", lambda name: None)
    err = Console(file=io.StringIO(), width=200)
    result = Result("transpose", "padded", {"size": 256}, Status.OK, metrics={"gbps": 1.0})
    profiling.profile_results({"suite": "transpose"}, [result], {"padded"}, 0, _notes(err))
    assert err.file.getvalue().strip().splitlines() == [
        "--profile: ncu (Nsight Compute) is not on PATH; results have no profiler metrics"
    ]
    assert result.metrics == {"gbps": 1.0}


def test_a_failed_profile_is_one_line_per_variant(monkeypatch):
    monkeypatch.setattr(profiling.shutil, "which", lambda name: "/usr/bin/ncu")

    def fail(*args, **kwargs):
        raise profiling.ProfileError("ncu gave no counters (exit 1): ==ERROR== no permission")

    monkeypatch.setattr(profiling, "profile_one", fail)
    err = Console(file=io.StringIO(), width=300)
    launched = {"naive": {"registers": 16}}
    results = [Result("transpose", v, {"size": 256}, Status.OK, kernel_attributes=launched)
               for v in ("naive", "padded")]  # fmt: skip
    results.append(Result("transpose", "copy", {"size": 256}, Status.INCORRECT))
    results.append(Result("transpose", "memcpy", {"size": 256}, Status.OK))  # launched nothing
    kernels = {"naive", "padded", "copy", "memcpy"}
    profiling.profile_results({"suite": "transpose"}, results, kernels, 0, _notes(err))
    lines = err.file.getvalue().strip().splitlines()
    assert len(lines) == 2 and all("no permission" in line for line in lines)


@pytest.mark.gpu
def test_gpu_profile_adds_counters_that_match_the_access_pattern(tmp_path):
    import json
    import shutil
    import subprocess
    import sys

    if shutil.which("ncu") is None:
        pytest.skip("ncu (Nsight Compute) is not on PATH")
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-m", "gpubench", "run", "access", "--working-set",
                           str(1 << 24), "--stride", "4", "-v", "read_stride", "-v", "memcpy",
                           "--profile", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = {r["variant"]: r for r in json.loads(out.read_text())["results"]}
    strided = results["read_stride"]["metrics"]
    assert "ld_sectors_per_request" in strided, f"no counters: {done.stderr[-2000:]}"
    # float32 at stride 4: 16 sectors per load request (the model), measured by ncu; the
    # contiguous stores: 4. One run moves the 16 MiB span's sectors plus the output once.
    assert strided["ld_sectors_per_request"] == pytest.approx(16, rel=0.05)
    assert strided["st_sectors_per_request"] == pytest.approx(4, rel=0.05)
    assert strided["dram_bytes"] > (1 << 24) and strided["ncu_ms"] > 0
    assert "ncu_ms" not in results["memcpy"]["metrics"]  # a copy, no kernel of ours


def test_unit_names_in_every_spelling():
    assert [profiling.unit_scale(u) for u in ("ns", "nsec", "nsecond", "us", "usecond", "ms",
                                               "s", "second")] == [1e-6, 1e-6, 1e-6, 1e-3,
                                                                   1e-3, 1.0, 1e3, 1e3]  # fmt: skip
    assert [profiling.unit_scale(u) for u in ("byte", "B", "Kbyte", "KB", "MB", "Gbyte")] == [
        1, 1, 1e3, 1e3, 1e6, 1e9]  # fmt: skip
    assert [profiling.unit_scale(u) for u in ("sector", "request", "%", "inst", "")] == [1.0] * 5
    # A prefix it does not know, on bytes or on time: left as it is.
    assert [profiling.unit_scale(u) for u in ("Xbyte", "XB", "Xsecond")] == [1.0] * 3


def test_the_ncu_command_is_pinned_word_for_word():
    import sys

    metrics = ",".join(profiling.SUMMED + profiling.WEIGHTED)
    assert profiling.command("/opt/ncu", "p.yaml", "log.jsonl", 3) == [
        "/opt/ncu", "--csv", "--print-units", "base", "--clock-control", "none",
        "--target-processes", "all", "--metrics", metrics,
        sys.executable, "-m", "gpubench", "sweep", "p.yaml", "--jsonl", "log.jsonl", "--force",
        "--device", "3",
    ]  # fmt: skip
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum" in profiling.SUMMED


def test_stores_conflicts_and_untimed_launches_in_the_summary():
    stores = {
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": ("sector", "900"),
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": ("request", "100"),
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ("", "30"),
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": ("", "12"),
        "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "40"),
    }
    second = {**stores, "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "70")}
    out = profiling.summarise(profiling.parse_csv(csv_text([stores, second])), runs=2)
    assert out["st_sectors_per_request"] == 9.0 and out["bank_conflicts"] == 42.0
    # No launch has a duration: the plain mean of the two, not a weighted one.
    assert out["achieved_occupancy"] == pytest.approx(55.0)
    assert out["ncu_ms"] == 0.0 and "branch_uniformity" not in out
    with pytest.raises(profiling.ProfileError) as info:
        profiling.summarise([])
    assert str(info.value) == "ncu profiled no kernel launch"


def test_rows_without_an_id_a_metric_or_a_number_are_skipped_and_the_rest_kept():
    lines = [HEADER,
             row(0, "copy", "smsp__inst_executed.sum", "inst", "n/a"),
             row(0, "copy", "", "byte", "5"),
             '"","1","python3","host","copy","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","s",'
             '"dram__bytes_read.sum","byte","7"',
             row(0, "copy", "dram__bytes_read.sum", "", "1,000"),
             row(1, "other", "dram__bytes_read.sum", "Mbyte", "2"),
             row(1, "other", "smsp__inst_executed.sum", "inst", "")]  # fmt: skip
    launches = profiling.parse_csv("\n".join(lines))
    assert [(launch.kernel, launch.values) for launch in launches] == [
        ("copy", {"dram__bytes_read.sum": 1000.0}),
        ("other", {"dram__bytes_read.sum": 2e6}),
    ]
    no_kernel = HEADER.replace('"Kernel Name",', "") + "\n" + (
        '"0","1","python3","host","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","s",'
        '"dram__bytes_read.sum","byte","7"')  # fmt: skip
    assert [launch.kernel for launch in profiling.parse_csv(no_kernel)] == [""]


def test_each_profiled_result_gets_its_own_counters_and_the_others_none(monkeypatch):
    monkeypatch.setattr(profiling.shutil, "which", lambda name: f"/usr/bin/{name}")
    calls = []

    def profile_one(ncu, spec, point, variant, device, backend=None):
        calls.append((ncu, spec["suite"], point, variant, device))
        return {"dram_bytes": float(point["size"])}

    monkeypatch.setattr(profiling, "profile_one", profile_one)
    launched = {"registers": 16}
    results = [Result("transpose", "copy", {"size": 1}, Status.INCORRECT, kernel_attributes=launched),
               Result("transpose", "memcpy", {"size": 2}, Status.OK),
               Result("transpose", "host", {"size": 3}, Status.OK, kernel_attributes=launched),
               Result("transpose", "naive", {"size": 4}, Status.OK, kernel_attributes=launched),
               Result("transpose", "padded", {"size": 5}, Status.UNSTABLE, kernel_attributes=launched)]  # fmt: skip
    err = Console(file=io.StringIO(), width=200)
    kernels = {"copy", "memcpy", "naive", "padded"}
    profiling.profile_results({"suite": "transpose"}, results, kernels, 2, _notes(err))
    assert calls == [("/usr/bin/ncu", "transpose", {"size": 4}, "naive", 2),
                     ("/usr/bin/ncu", "transpose", {"size": 5}, "padded", 2)]  # fmt: skip
    assert [r.metrics for r in results] == [{}, {}, {}, {"dram_bytes": 4.0}, {"dram_bytes": 5.0}]
    assert err.file.getvalue() == ""


def test_a_failed_profile_line_names_the_variant_point_and_reason(monkeypatch):
    monkeypatch.setattr(profiling.shutil, "which", lambda name: "/usr/bin/ncu")

    def fail(*args, **kwargs):
        raise profiling.ProfileError("ncu gave no counters (exit 1): [bold]no[/bold] permission")

    monkeypatch.setattr(profiling, "profile_one", fail)
    err = Console(file=io.StringIO(), width=300, force_terminal=True)
    result = Result("transpose", "naive", {"size": 256}, Status.OK, kernel_attributes={"r": 1})
    profiling.profile_results({"suite": "transpose"}, [result], {"naive"}, 0, _notes(err))
    assert err.file.getvalue().splitlines() == [
        "--profile: naive at {'size': 256}: ncu gave no counters (exit 1): [bold]no[/bold] "
        "permission"]  # fmt: skip


def test_plural_counter_units_are_counts():
    # Units ending in "s" that are not a time: their stem is no time prefix.
    assert [profiling.unit_scale(u) for u in ("sectors", "requests", "cycles")] == [1.0] * 3


def test_a_launch_without_a_duration_weighs_nothing_beside_timed_ones():
    timed = {"gpu__time_duration.sum": ("nsecond", "2000"),
             "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "10")}  # fmt: skip
    untimed = {"sm__warps_active.avg.pct_of_peak_sustained_active": ("%", "50")}
    out = profiling.summarise(profiling.parse_csv(csv_text([timed, untimed])), runs=1)
    assert out["achieved_occupancy"] == pytest.approx(10.0)


def test_the_profiled_sweep_of_a_kernel_file_names_the_file():
    spec = {"suite": "saxpy", "suite_ref": "configs/examples/saxpy.py"}
    sweep = profiling.one_point_sweep(spec, {"n": 1000}, "fused")
    assert sweep["suite"] == "configs/examples/saxpy.py" and sweep["params"] == {"n": 1000}


def a_stand_in_ncu(tmp_path, body: str):
    """An executable in ncu's place: it records its arguments, GPUBENCH_CHECK and the sweep
    file it was given, then does `body` (Python, with `sys` imported)."""
    script, seen = tmp_path / "ncu", str(tmp_path / "seen.json")
    lines = [
        f"#!{sys.executable}",
        "import json, os, sys",
        "sweep = sys.argv[sys.argv.index('sweep') + 1]",
        "record = {'argv': sys.argv[1:], 'check': os.environ.get('GPUBENCH_CHECK'),",
        "          'sweep': open(sweep).read()}",
        f"json.dump(record, open({seen!r}, 'w'))",
        body,
    ]
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return str(script)


SPEC = {"suite": "transpose", "description": "d", "params": {"size": [64]}}


def test_a_profiled_point_is_one_variant_swept_under_ncu_with_host_checks(tmp_path):
    import json

    csv = tmp_path / "out.csv"
    csv.write_text(csv_text([ONE, ONE, ONE]))
    ncu = a_stand_in_ncu(tmp_path, f"sys.stdout.write(open({str(csv)!r}).read())")
    got = profiling.profile_one(ncu, SPEC, {"size": 64}, "naive", 1)
    assert got == profiling.summarise(profiling.parse_csv(csv.read_text()))
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["check"] == "host"
    assert yaml.safe_load(seen["sweep"]) == profiling.one_point_sweep(SPEC, {"size": 64}, "naive")
    expected = profiling.command(ncu, "SWEEP", "LOG", 1)[1:]
    sweep_at = seen["argv"].index("sweep") + 1
    assert seen["argv"][:sweep_at] == expected[:sweep_at]
    sweep, jsonl, log = seen["argv"][sweep_at : sweep_at + 3]
    assert seen["argv"][sweep_at + 3 :] == expected[sweep_at + 3 :]
    # The sweep file and the log in a directory of their own, gone afterwards.
    assert jsonl == "--jsonl" and os.path.isabs(sweep)
    assert os.path.dirname(log) == os.path.dirname(sweep) != os.getcwd()
    assert os.path.basename(log) != "" and not os.path.exists(os.path.dirname(sweep))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("sys.stdout.write('==PROF== out\\n'); sys.stderr.write('==ERROR== no permission\\n');"
         " sys.exit(1)", "ncu gave no counters (exit 1): ==ERROR== no permission"),
        ("sys.stdout.write('first\\nlast line\\n'); sys.exit(2)",
         "ncu gave no counters (exit 2): last line"),
        ("sys.exit(3)", "ncu gave no counters (exit 3): no output"),
        ("sys.stderr.write('x' * 300); sys.exit(4)", "ncu gave no counters (exit 4): " + "x" * 200),
    ],
)  # fmt: skip
def test_ncu_without_counters_is_a_profile_error_with_its_last_words(tmp_path, body, words):
    ncu = a_stand_in_ncu(tmp_path, body)
    with pytest.raises(profiling.ProfileError) as error:
        profiling.profile_one(ncu, SPEC, {"size": 64}, "naive", 0)
    assert str(error.value) == words


def test_ncu_that_does_not_finish_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(profiling, "TIMEOUT_S", 0.5)
    ncu = a_stand_in_ncu(tmp_path, "import time; time.sleep(30)")
    with pytest.raises(profiling.ProfileError) as error:
        profiling.profile_one(ncu, SPEC, {"size": 64}, "naive", 0)
    assert str(error.value) == "ncu took more than 0.5 s"

"""gpubench inspect: ptxas resources, instruction mixes from SASS and PTX, listings; runs here
(nvcc is present, no GPU is)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.engine import inspection

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'vectorized' for 'sm_90'
ptxas info    : Function properties for vectorized
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 4224 bytes smem
ptxas info    : Compiling entry function 'naive' for 'sm_90'
ptxas info    : Function properties for naive
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 26 registers, 360 bytes cmem[0]
"""

SASS = """\
        Function : scale
        /*0000*/                   LDC R1, c[0x0][0x28] ;        /* 0x00000a00ff017b82 */
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;  /* 0x0000000402047981 */
        /*0020*/                   LDS.128 R8, [R25+0x1000] ;    /* 0x0010000019087984 */
        /*0030*/                   FFMA R4, R4, R0, R5 ;         /* 0x0000000004047223 */
        /*0040*/               @P0 BRA 0x7f0 ;                   /* 0x0000000400e40947 */
        /*0050*/                   MUFU.SIN R6, R6 ;             /* 0x0000000006067308 */
        /*0060*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ; /* 0x0000000000007b1d */
        /*0070*/                   STG.E desc[UR4][R2.64], R4 ;  /* 0x0000000402007986 */
        /*0080*/                   EXIT ;                        /* 0x000000000000794d */
        Function : other
        /*0000*/                   STS.64 [R3], R4 ;             /* 0x0000000403007388 */
"""


def test_ptxas_resources_are_read_per_kernel():
    found = inspection.parse_ptxas(PTXAS)
    assert found["vectorized"] == inspection.Resources(32, 4, 12, 8, 4224, 1)
    assert found["naive"] == inspection.Resources(26, 0, 0, 0, 0, 0)


def test_the_sass_mix_counts_each_class_and_access_width():
    functions = inspection.sass_functions(SASS)
    assert set(functions) == {"scale", "other"}
    counts = inspection.mix(functions["scale"], "sass")
    assert counts["total"] == 9 and counts["predicated"] == 1
    for column, expected in {"LDG": 1, "LDG.128": 1, "LDS.128": 1, "FFMA": 1, "BRA": 1,
                             "MUFU": 1, "BAR": 1, "STG": 1, "STG.32": 1}.items():  # fmt: skip
        assert counts[column] == expected, column
    assert inspection.mix(functions["other"], "sass")["STS.64"] == 1


def test_the_ptx_mix_reads_vector_widths_and_approximations():
    lines = ["ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4]", "ld.global.u8 %rs1, [%rd2]",
             "st.shared.f64 [%rd1], %fd1", "fma.rn.f32 %f5, %f1, %f2, %f3",
             "sin.approx.ftz.f32 %f6, %f5", "@%p1 bra $L__BB0_2", "bar.sync 0"]  # fmt: skip
    counts = inspection.mix(lines, "ptx")
    assert counts["LDG.128"] == 1 and counts["LDG.8"] == 1 and counts["STS.64"] == 1
    assert counts["FFMA"] == counts["MUFU"] == counts["BRA"] == counts["BAR"] == 1
    assert counts["predicated"] == 1 and counts["total"] == 7


@needs_nvcc
def test_compiled_here_vector_loads_barriers_and_fast_intrinsics_show(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text(textwrap.dedent("""\
        extern "C" __global__ void scalar(float* out, const float* in) {
            out[threadIdx.x] = in[threadIdx.x] * 2.0f;
        }
        extern "C" __global__ void vector(float4* out, const float4* in) {
            __shared__ float4 s[64];
            s[threadIdx.x] = in[threadIdx.x];
            __syncthreads();
            out[threadIdx.x] = s[63 - threadIdx.x];
        }
        extern "C" __global__ void fast_sin(float* out, const float* in) {
            out[threadIdx.x] = __sinf(in[threadIdx.x]);
        }
        """))  # fmt: skip
    report = inspection.inspect(source, [], [], "sm_90", want_sass=True)
    kernels = {k.name: k for k in report.kernels}
    assert set(kernels) == {"scalar", "vector", "fast_sin"}
    assert kernels["vector"].mix["LDG.128"] >= 1 and kernels["scalar"].mix["LDG.128"] == 0
    assert kernels["vector"].mix["BAR"] >= 1 and kernels["vector"].resources.shared_bytes == 1024
    assert kernels["vector"].resources.barriers == 1
    assert kernels["fast_sin"].mix["MUFU"] >= 1 and kernels["scalar"].mix["MUFU"] == 0
    assert all(k.resources.registers > 0 for k in kernels.values())
    listing = inspection.annotate_ptx(report.ptx, source, {"vector"})
    assert "k.cu:7: __syncthreads();" in listing and ".entry scalar" not in listing


@needs_nvcc
def test_the_command_tabulates_a_suite_and_prints_listings():
    out = CliRunner().invoke(cli, ["inspect", "transpose", "--tile", "32"])
    assert out.exit_code == 0, out.output
    for kernel in ("naive", "coalesced", "padded", "vectorized"):
        assert kernel in out.output
    assert "tile=32" in out.output
    ptx = CliRunner().invoke(cli, ["inspect", "transpose", "-v", "naive", "--ptx"])
    assert ptx.exit_code == 0 and ".entry naive" in ptx.output and "transpose.cu:" in ptx.output
    assert ".entry padded" not in ptx.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["inspect", "transpose", "-v", "naiv"],
            2,
            "no kernel 'naiv' in transpose.cu (did you mean",
        ),
        (["inspect", "transpose", "--arch", "sm9"], 2, "expected an architecture such as sm_90"),
        (["inspect", "transpose", "--tile", "48"], 2, "'48' is not one of"),
        (["inspect", "transfer"], 2, "transfer has no kernels of its own"),
    ],
)
def test_mistakes_are_one_line(args, code, message):
    if shutil.which("nvcc") is None and "-v" in args:
        pytest.skip("nvcc is not on PATH")
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == code and message in out.output, out.output


@needs_nvcc
def test_sass_without_a_disassembler_is_one_line(monkeypatch):
    monkeypatch.setattr(inspection, "disassembler", lambda: None)
    out = CliRunner().invoke(cli, ["inspect", "transpose", "--sass"])
    assert out.exit_code == 4 and "cuobjdump and nvdisasm not found" in out.output


@needs_nvcc
def test_a_compile_failure_and_an_unknown_architecture_are_one_line(tmp_path):
    (tmp_path / "bad.cu").write_text('extern "C" __global__ void k() { oops; }\n')
    (tmp_path / "bad.yaml").write_text(
        "kernel:\n  source: bad.cu\n  variants: [k]\n  args:\n    - o: out float32[n]\n"
        "  grid: 1\n  block: 1\nparams: {n: [4]}\n"
    )
    out = CliRunner().invoke(cli, ["inspect", str(tmp_path / "bad.yaml")])
    assert out.exit_code == 3 and 'identifier "oops" is undefined' in out.output
    assert out.output.count("\n") == 1
    out = CliRunner().invoke(cli, ["inspect", "transpose", "--arch", "sm_999"])
    assert out.exit_code == 2 and "nvcc does not know the architecture 'sm_999'" in out.output


@pytest.mark.parametrize(("opcode", "bits"), [
    ("LDG.E.128", "128"), ("LDG.E.64.CONSTANT", "64"), ("LDS.U8", "8"), ("LDS.S16", "16"),
    ("STG.E.U16", "16"), ("LDG.E", "32"), ("STS.128x", "32"), ("LDG.E.u8", "32"),
])  # fmt: skip
def test_sass_access_widths(opcode, bits):
    assert inspection._width_sass(opcode) == bits


def test_sass_functions_skip_what_comes_before_the_first_function():
    sass = ("        /*0000*/   MOV R1, c[0x0][0x28] ;\n"
            "        Function : kernel_a\n"
            "        /*0000*/   LDG.E R2, [R2.64] ;\n"
            "        .headerflags\n"
            "        /*0010*/   EXIT ;\n"
            "        Function : kernel_b\n"
            "        /*0000*/   EXIT ;\n")  # fmt: skip
    functions = inspection.sass_functions(sass)
    assert list(functions) == ["kernel_a", "kernel_b"]
    assert len(functions["kernel_a"]) == 2 and len(functions["kernel_b"]) == 1


def test_compile_failures_name_the_first_error_and_the_options():
    from gpubench.errors import EXIT_FAILED_POINTS, EXIT_USAGE, ConfigError, KernelCompileError

    stderr = 't.cu(3): warning: x\n\nt.cu(4): error: identifier "y" is undefined\nlater\n'
    failed = inspection.compile_failure(stderr, ["-DTILE=32", "-O3"], "sm_90")
    assert isinstance(failed, KernelCompileError) and failed.exit_code == EXIT_FAILED_POINTS
    assert str(failed) == ('nvcc failed (-DTILE=32 -O3): t.cu(4): error: identifier "y" is '
                           "undefined")  # fmt: skip
    assert failed.compiler_output == stderr
    only_warning = inspection.compile_failure("  first line  \nsecond\n", [], "sm_90")
    assert str(only_warning) == "nvcc failed (no options): first line"
    assert str(inspection.compile_failure("", [], "sm_90")) == "nvcc failed (no options): "
    for message in (
        "nvcc fatal   : Value 'sm_1000' is not defined for option 'gpu-architecture'",
        "nvcc fatal : Unsupported GPU Architecture 'x'",
    ):
        unknown = inspection.compile_failure(message, [], "sm_1000")
        assert isinstance(unknown, ConfigError) and unknown.exit_code == EXIT_USAGE
        assert str(unknown) == "--arch: nvcc does not know the architecture 'sm_1000'"


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        ({"cuobjdump", "nvdisasm"}, ("cuobjdump", ["cuobjdump", "-sass"])),
        ({"nvdisasm"}, ("nvdisasm", ["nvdisasm", "-c", "-g"])),
        (set(), None),
    ],
)
def test_the_disassembler_is_cuobjdump_else_nvdisasm(monkeypatch, installed, expected):
    from gpubench.engine import inspection

    monkeypatch.setattr(inspection.shutil, "which",
                        lambda name: f"/bin/{name}" if name in installed else None)  # fmt: skip
    assert inspection.disassembler() == expected


def test_annotated_ptx_shows_each_kernel_asked_for_with_its_source_lines(tmp_path):
    from gpubench.engine import inspection

    source = tmp_path / "k.cu"
    source.write_bytes(b"first line\n  second \xff line\nthird\n")
    ptx = "\n".join([
        ".version 8.0", ".visible .entry a(", "\t.loc 1 1 5", "\t.loc 1 3 1", "\t.loc 1 0 1",
        "\t.loc 1 4 1", "\tret;", ".entry b(", "\t.loc 1 2 1", "\tret;",
    ])  # fmt: skip
    assert inspection.annotate_ptx(ptx, source).splitlines() == [
        ".version 8.0", ".visible .entry a(",
        "        // k.cu:1: first line", "        // k.cu:3: third", "        // k.cu:0: ",
        "        // k.cu:4: ", "\tret;", ".entry b(", "        // k.cu:2: second \ufffd line", "\tret;",
    ]  # fmt: skip
    assert inspection.annotate_ptx(ptx, source, {"b"}).splitlines() == [
        ".entry b(", "        // k.cu:2: second \ufffd line", "\tret;"]  # fmt: skip
    assert inspection.annotate_ptx(ptx, tmp_path / "gone.cu", {"b"}).splitlines() == [
        ".entry b(", "        // gone.cu:2: ", "\tret;"]  # fmt: skip


def test_inspect_runs_exactly_these_commands_and_reads_what_they_leave(tmp_path, monkeypatch):
    """nvcc for the cubin (with ptxas's report), nvcc for the PTX, the disassembler on the
    cubin; each failure of the last two leaves its listing empty (no GPU, no nvcc needed)."""
    import subprocess

    ran = []
    ptxas = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n" \
            "ptxas info    : Used 12 registers, used 0 barriers\n"  # fmt: skip

    def fake_run(command, what):
        ran.append((command, what))
        if "-ptx" in command:
            out = command[command.index("-o") + 1]
            Path(out).write_text(".visible .entry k()\n{\nld.global.f32 %f1, [%rd1];\nret;\n}\n")
            return subprocess.CompletedProcess(command, ptx_code, "", "")
        if "-cubin" in command:
            return subprocess.CompletedProcess(command, 0, "", ptxas)
        return subprocess.CompletedProcess(command, sass_code, "        Function : k\n"
                                           "        /*0000*/  LDG.E R0, [R2.64] ;\n", "")  # fmt: skip

    monkeypatch.setattr(inspection, "_run", fake_run)
    monkeypatch.setattr(inspection, "disassembler", lambda: ("cuobjdump", ["cuobjdump", "-sass"]))
    source = tmp_path / "k.cu"
    ptx_code = sass_code = 0
    report = inspection.inspect(source, ["-DX=1"], ["inc"], "sm_90")
    (cubin_cmd, w1), (ptx_cmd, w2), (sass_cmd, w3) = ran
    cubin = cubin_cmd[cubin_cmd.index("-o") + 1]
    assert cubin_cmd == ["nvcc", "-cubin", "-Xptxas", "-v", "-o", cubin, "-arch=sm_90",
                         "-lineinfo", "-Iinc", "-DX=1", str(source)]  # fmt: skip
    assert Path(cubin).name == "k.cubin"
    ptx_out = ptx_cmd[ptx_cmd.index("-o") + 1]
    assert ptx_cmd == ["nvcc", "-ptx", "-o", ptx_out, "-arch=sm_90", "-lineinfo", "-Iinc",
                       "-DX=1", str(source)]  # fmt: skip
    assert Path(ptx_out).name == "k.ptx" and sass_cmd == ["cuobjdump", "-sass", cubin]
    assert (w1, w2, w3) == ("inspect", "inspect", "--sass")
    assert (report.listing_kind, report.note, [k.name for k in report.kernels]) == (
        "sass",
        "",
        ["k"],
    )
    assert report.kernels[0].resources.registers == 12 and report.ptx.startswith(".visible")
    assert (report.arch, report.source) == ("sm_90", source)
    assert report.sass.splitlines()[1].strip() == "/*0000*/  LDG.E R0, [R2.64] ;"
    assert report.kernels[0].mix == {"total": 1, "LDG": 1, "LDG.32": 1}
    ran.clear()
    ptx_code = sass_code = 1  # both listings fail: empty, and the mix is the PTX's (none)
    failed = inspection.inspect(source, [], [], "sm_80")
    assert (failed.ptx, failed.sass, failed.listing_kind) == ("", "", "ptx")
    ran.clear()
    ptx_code = 0
    no_sass = inspection.inspect(source, [], [], "sm_80", want_sass=False)
    assert len(ran) == 2 and (no_sass.listing_kind, no_sass.note) == ("ptx", "")
    monkeypatch.setattr(inspection, "disassembler", lambda: None)
    noted = inspection.inspect(source, [], [], "sm_80")
    assert noted.note == ("cuobjdump and nvdisasm not found (CUDA toolkit, or pip install "
                          "nvidia-cuda-cuobjdump): the instruction mix is counted in the PTX")  # fmt: skip


def test_a_tool_that_is_missing_or_hangs_is_one_line(monkeypatch):
    import subprocess

    from gpubench.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem) as info:
        inspection._run(["no-such-tool-here", "x"], "inspect")
    assert str(info.value) == "no-such-tool-here not found: inspect needs the CUDA toolkit on PATH"

    def hang(*args, **kwargs):
        assert kwargs["timeout"] == 600
        raise subprocess.TimeoutExpired("nvcc", 600)

    monkeypatch.setattr(inspection.subprocess, "run", hang)
    with pytest.raises(EnvironmentProblem) as info:
        inspection._run(["nvcc"], "inspect")
    assert str(info.value) == "nvcc took more than 10 minutes"


def test_an_architecture_that_is_not_one_is_refused_before_anything_runs():
    from gpubench.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        inspection.inspect(Path("k.cu"), [], [], "90")
    assert str(info.value) == "--arch: expected an architecture such as sm_90, got '90'"
    with pytest.raises(ConfigError) as info:
        inspection.inspect(Path("k.cu"), [], [], "sm_" + "9" * 100_000)
    assert str(info.value) == (
        "--arch: expected an architecture such as sm_90, got 'sm_999999999999999999999999..."
        "9999999999999999999999999999'"
    )


PTX_TWO_KERNELS = """.version 8.0
.target sm_90
.visible .entry first(
\t.param .u64 first_param_0
)
{
\t.reg .b32 \t%r<4>;
\tld.param.u64 \t%rd1, [first_param_0];
\t{
\t.reg .pred %p;
\tsetp.eq.s32 \t%p, %r1, 0;
\t}
$L__BB0_1:
\t@%p1 bra \t$L__BB0_1;
\tst.global.v4.f32 \t[%rd1], {%f1, %f2, %f3, %f4};
\tret;
}
.entry second()
{
\tld.global.u8 \t%rs1, [%rd2];
\tret;
}
\tnot.in.any;
"""


def test_ptx_functions_follow_nested_braces_and_leave_out_the_parameter_list_s_end():
    assert inspection.ptx_functions(PTX_TWO_KERNELS) == {
        "first": ["ld.param.u64 \t%rd1, [first_param_0]", "setp.eq.s32 \t%p, %r1, 0",
                  "@%p1 bra \t$L__BB0_1", "st.global.v4.f32 \t[%rd1], {%f1, %f2, %f3, %f4}",
                  "ret"],
        "second": ["ld.global.u8 \t%rs1, [%rd2]", "ret"],
    }  # fmt: skip


def test_the_mix_counts_every_repeat_and_a_bare_guard_is_no_instruction():
    sass = ["@P0 LDG.E.128 R4, [R2.64]", "@!P1 LDG.E.128 R8, [R2.64+0x10]", "LDG.E R1, [R2]",
            "@P0", "", "FFMA R1, R2, R3, R4", "FFMA R1, R2, R3, R4", "STG.E.U8 [R2], R1",
            "LDS.U16 R1, [R3]", "STS.S16 [R1], R2"]  # fmt: skip
    assert inspection.mix(sass, "sass") == {
        "total": 8, "predicated": 3, "LDG": 3, "LDG.128": 2, "LDG.32": 1, "FFMA": 2, "STG": 1,
        "STG.8": 1, "LDS": 1, "LDS.16": 1, "STS": 1, "STS.16": 1,
    }  # fmt: skip
    ptx = ["ld.global.v2.u64 %rd1, [%rd2]", "ld.global %r1, [%rd2]", "ld.shared.v4.b16 %rs, [%r]"]
    assert inspection.mix(ptx, "ptx") == {
        "total": 3, "LDG": 2, "LDG.128": 1, "LDG.32": 1, "LDS": 1, "LDS.64": 1,
    }  # fmt: skip


def test_a_kernel_ptxas_reports_without_a_listing_and_one_listed_without_a_report_both_show(
    tmp_path, monkeypatch
):
    import subprocess

    ptxas = "ptxas info    : Compiling entry function 'only_ptxas' for 'sm_90'\n" \
            "ptxas info    : Used 8 registers, used 0 barriers\n"  # fmt: skip

    def fake_run(command, what):
        if "-ptx" in command:
            out = command[command.index("-o") + 1]
            Path(out).write_text(".visible .entry only_listed()\n{\nret;\n}\n")
        return subprocess.CompletedProcess(command, 0, "", ptxas if "-cubin" in command else "")

    monkeypatch.setattr(inspection, "_run", fake_run)
    report = inspection.inspect(tmp_path / "k.cu", [], [], "sm_90", want_sass=False)
    assert [k.name for k in report.kernels] == ["only_listed", "only_ptxas"]
    listed, reported = report.kernels
    assert listed.resources == inspection.Resources() and listed.mix == {"total": 1}
    assert reported.resources.registers == 8 and reported.mix == {}


def test_ptx_before_the_first_kernel_comments_and_plain_labels_are_no_instructions():
    # What nvcc writes before the first .entry when a kernel calls printf, a comment nvcc
    # leaves inside a body, and a label without the $ of newer PTX.
    ptx = textwrap.dedent("""\
        .version 8.5
        .extern .func  (.param .b32 func_retval0) vprintf
        (
        \t.param .b64 vprintf_param_0
        )
        ;
        .visible .entry k()
        {
        \t// begin inline asm
        BB0_2:
        \tret;
        }
        """)
    assert inspection.ptx_functions(ptx) == {"k": ["ret"]}


def test_ptxas_lines_before_the_first_kernel_are_nobody_s():
    # A device function that was not inlined gets its properties before any entry.
    log = ("ptxas info    : Function properties for _Z6helperv\n"
           "    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 9 registers\n" + PTXAS)  # fmt: skip
    assert inspection.parse_ptxas(log) == inspection.parse_ptxas(PTXAS)

"""nvcc options as NVRTC's ProgramOptions: one list serves both backends."""

from __future__ import annotations

import pytest

from gpubench.backends.nvrtc_options import parse
from gpubench.errors import KernelCompileError


def test_defines_includes_and_flags_become_fields():
    fields = parse(["-DTILE=32", "-DFLAG", "-Iextra", "--use_fast_math", "-lineinfo", "-O3",
                    "-maxrregcount=64", "-std=c++17", "--ftz=true", "--fmad=false",
                    "-Xptxas", "-v", "--ptxas-options=-O3,-dlcm=ca"], ["kernels_cu"])  # fmt: skip
    assert fields == {
        "define_macro": [("TILE", "32"), "FLAG"],
        "include_path": ["kernels_cu", "extra"],
        "use_fast_math": True,
        "lineinfo": True,
        "max_register_count": 64,
        "std": "c++17",
        "ftz": True,
        "fma": False,
        "ptxas_options": ["-v", "-O3", "-dlcm=ca"],
    }


def test_a_define_with_an_empty_value_keeps_the_equals_sign():
    assert parse(["-DEMPTY="], [])["define_macro"] == [("EMPTY", "")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--compiler-bindir=/x"], "'--compiler-bindir=/x' has no NVRTC equivalent"),
        (["-Xcompiler", "-O2"], "'-Xcompiler' has no NVRTC equivalent"),
        (["-maxrregcount=lots"], "expected a whole number"),
        (["--ftz=yes"], "expected true or false"),
        (["-Xptxas"], "-Xptxas needs a value"),
    ],
)
def test_an_option_nvrtc_cannot_take_is_refused_by_name(options, message):
    with pytest.raises(KernelCompileError, match=message):
        parse(options, [])


@pytest.mark.parametrize(("options", "fields"), [
    (["--ptxas-options", "-v", "-Xptxas=-O1"], {"ptxas_options": ["-v", "-O1"]}),
    (["-Xptxas=-a,-b"], {"ptxas_options": ["-a", "-b"]}),
    (["--maxrregcount=32"], {"max_register_count": 32}),
    (["--std=c++20"], {"std": "c++20"}),
    (["-std=c++17=x"], {"std": "c++17=x"}),
    (["-ftz=false", "prec-div=true", "--prec-sqrt=false"],
     {"ftz": False, "prec_div": True, "prec_sqrt": False}),
    (["-G", "--device-debug", "--restrict", "--extra-device-vectorization",
      "--generate-line-info", "-use_fast_math"],
     {"debug": True, "restrict": True, "extra_device_vectorization": True, "lineinfo": True,
      "use_fast_math": True}),
    (["-O0", "-O1", "-O2"], {}),
])  # fmt: skip
def test_each_option_s_field(options, fields):
    assert parse(options, ["inc"]) == {"define_macro": [], "include_path": ["inc"], **fields}


@pytest.mark.parametrize(("options", "message"), [
    (["-D"], "nvcc option '-D' has no NVRTC equivalent (the cuda-core backend compiles with "
     "NVRTC): drop it or use --backend pycuda"),
    (["-I"], "nvcc option '-I' has no NVRTC equivalent (the cuda-core backend compiles with "
     "NVRTC): drop it or use --backend pycuda"),
    (["--maxrregcount=-1"], "'--maxrregcount=-1': expected a whole number"),
    (["--fmad=1"], "'--fmad=1': expected true or false"),
    (["--ptxas-options"], "--ptxas-options needs a value"),
])  # fmt: skip
def test_each_refusal_in_its_words(options, message):
    with pytest.raises(KernelCompileError) as info:
        parse(options, [])
    assert str(info.value) == message


def test_program_options_carries_the_fields_and_the_architecture():
    pytest.importorskip("cuda.core")
    from gpubench.backends.nvrtc_options import program_options

    options = program_options(["-DTILE=32", "-lineinfo"], ["inc"], "sm_90")
    assert (options.arch, options.define_macro, options.include_path, options.lineinfo) == (
        "sm_90", [("TILE", "32")], ["inc"], True)  # fmt: skip
    bare = program_options([], [], "sm_80")
    assert (bare.arch, bare.define_macro, bare.include_path) == ("sm_80", None, None)


def test_one_letter_macros_and_include_dirs_and_values_that_hold_an_equals_sign():
    from gpubench.backends import nvrtc_options
    from gpubench.errors import KernelCompileError

    fields = nvrtc_options.parse(["-DX", "-Ia", "--ftz=true", "-maxrregcount=64"], ["base"])
    assert fields == {"define_macro": ["X"], "include_path": ["base", "a"], "ftz": True,
                      "max_register_count": 64}  # fmt: skip
    with pytest.raises(KernelCompileError) as info:
        nvrtc_options.parse(["--fmad=true=false"], [])
    assert "'--fmad=true=false'" in str(info.value)
    with pytest.raises(KernelCompileError) as info:
        nvrtc_options.parse(["-maxrregcount=6=4"], [])
    assert str(info.value) == "'-maxrregcount=6=4': expected a whole number"


def test_the_program_options_are_the_parsed_fields_for_the_architecture():
    pytest.importorskip("cuda.core")
    from gpubench.backends import nvrtc_options

    made = nvrtc_options.program_options(["-DTILE=32", "--use_fast_math"], ["inc"], "sm_90")
    assert made.arch == "sm_90" and made.include_path == ["inc"]
    assert made.define_macro == [("TILE", "32")] and made.use_fast_math is True


def test_only_dashes_are_stripped_from_a_boolean_option():
    # "-Xftz=true" is not --ftz=true: an X before the name makes it an option NVRTC lacks.
    with pytest.raises(KernelCompileError, match="'-Xftz=true' has no NVRTC equivalent"):
        parse(["-Xftz=true"], [])

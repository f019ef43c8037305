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

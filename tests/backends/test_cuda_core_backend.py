"""The cuda-core backend's compiles: two builds of one source that differ only in their
options are two binaries (the driver's compute cache, keyed by the compiled code, once gave
back the first for both; the backend gives each build's code a variable named after its
options)."""

from __future__ import annotations

import uuid

import pytest


@pytest.mark.gpu
def test_fast_math_and_plain_builds_of_one_source_differ_with_a_driver():
    """With the driver loaded (where its cache lives): a fresh source compiled with
    --use_fast_math first, then plain, gives two different cubins in either order."""
    pytest.importorskip("cuda.core")
    from gpubench.backends.cuda_core_backend import compile_cubin

    for first, second in ((["--use_fast_math"], []), ([], ["--use_fast_math"])):
        name = f"k_{uuid.uuid4().hex}"  # a source no cache has seen
        source = f'extern "C" __global__ void {name}(float* o, float x) {{ o[0] = sinf(x); }}\n'
        a = compile_cubin(source, first, [], "sm_90")
        b = compile_cubin(source, second, [], "sm_90")
        assert a != b

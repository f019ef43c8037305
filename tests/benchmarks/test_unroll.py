"""The unroll suite: the reference against a scalar loop on the CPU; every variant at awkward
sizes and trip counts (including 0 and ones not a multiple of the unroll) on the GPU."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("unroll")


def test_reference_matches_a_scalar_loop_and_every_variant_computes_it():
    p = {**bench.defaults(), "n": 50, "work": 7}
    inputs = bench.inputs(p, np.random.default_rng(2))
    out = bench.reference("sum", p, inputs)["out"]
    for i in (0, 17, 49):
        x = int(inputs["in"][i])
        expected = sum(((x ^ k) * 2654435761) % 2**32 for k in range(7)) % 2**32
        assert int(out[i]) == expected
    assert {v.computes for v in bench.variants} == {"sum"}
    for variant in bench.variant_names:
        assert bench.case(variant, p, FAKE_DEVICE, inputs).problems(inputs) == []
    assert bench.show_resources


@pytest.mark.gpu
def test_gpu_every_variant_at_awkward_sizes_and_trip_counts(gpu_backend):
    points = [{**bench.defaults(), "n": n, "work": w}
              for n, w in ((1, 0), (37, 1), (1000003, 17), (4097, 33))]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, bench.baseline,
                                           CHECK_ONLY))  # fmt: skip
    bad = [(r.variant, r.point, r.status, r.reason) for r in results if not r.status.is_measured]
    assert not bad


@pytest.mark.parametrize("suite", ["divergence", "unroll", "intrinsics", "access", "banks"])
def test_declared_input_specs_match_the_inputs(suite):
    """The memory preflight sizes inputs from input_specs before they are made."""
    b = registry.get(suite)
    p = {**b.defaults(), **({"working_set": 1 << 20} if suite == "access" else {"n": 1000}
                            if "n" in b.defaults() else {})}  # fmt: skip
    specs = b.input_specs(p)
    if specs is None:
        pytest.skip(f"{suite} declares no input specs")
    inputs = b.inputs(p, np.random.default_rng(0))
    assert set(specs) == set(inputs)
    for name, spec in specs.items():
        assert spec.nbytes == inputs[name].nbytes and spec.dtype == inputs[name].dtype, name

"""The intrinsics suite: documented bounds, ulp arithmetic, references on the CPU; every
variant in both ranges, with and without --use_fast_math, on the GPU, within its bound."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmarks import intrinsics
from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("intrinsics")


def test_ulp_errors_count_float32_spacings_of_the_exact_value():
    exact = np.array([1.0, 2.0, 0.5])
    got = np.array([1.0 + 2**-23, 2.0 - 2**-22, 0.5], np.float32)
    max_ulp, max_rel = intrinsics.ulp_errors(got, exact)
    assert max_ulp == 1.0 and max_rel == pytest.approx(2**-23)
    assert intrinsics.ulp_errors(np.array([np.nan], np.float32), np.array([1.0]))[0] == np.inf


def test_documented_bounds():
    sin_intrinsic = intrinsics.documented_bound("sin", True, (-np.pi, np.pi))
    assert sin_intrinsic.atol == 2.0**-21.41 and sin_intrinsic.rtol == 0
    assert intrinsics.documented_bound("sin", True, (-1e6, 1e6)).atol == 2.0  # unspecified
    assert intrinsics.documented_bound("sin", False, (-1e6, 1e6)).rtol == 2 * 2.0**-23
    assert intrinsics.documented_bound("exp", True, (-10, 10)).rtol == 13 * 2.0**-23
    assert intrinsics.documented_bound("divide", False, (1, 2)).rtol == 2.0**-24


def test_fast_math_is_a_compiler_option_and_standard_variants_get_intrinsic_bounds():
    p = {**bench.defaults(), "n": 16}
    assert bench.compiler_options(p) == [] and bench.defines(p) == {}
    fast = {**p, "fast_math": True}
    assert bench.compiler_options(fast) == ["--use_fast_math"]
    assert bench._tolerances("exp_standard", fast) == bench._tolerances("exp_intrinsic", p)


def test_inputs_stay_in_range_with_their_nearby_arguments():
    p = {**bench.defaults(), "n": 10000, "repeat": 1024}
    inputs = bench.inputs(p, np.random.default_rng(0))
    assert inputs["x_sin"].max() + 1024 / 1024 <= np.pi + 1e-6
    large = bench.inputs({**p, "range": "large"}, np.random.default_rng(0))
    assert np.abs(large["x_sin"]).max() > 105615 and large["x_divide"].max() > 2.0**126
    ref = bench.reference("sin", {**p, "n": 10000, "repeat": 3}, inputs)
    x = inputs["x_sin"].astype(np.float64)
    expected = sum(np.sin((x + k / 1024).astype(np.float32).astype(np.float64)) for k in range(3))
    assert np.allclose(ref["sum"], expected, rtol=0, atol=1e-12)
    for variant in bench.variant_names:
        assert bench.case(variant, p, FAKE_DEVICE, inputs).problems(inputs) == []


@pytest.mark.gpu
@pytest.mark.parametrize("fast_math", [False, True])
def test_gpu_every_variant_within_its_documented_bound(gpu_backend, fast_math):
    points = [{**bench.defaults(), "n": n, "range": r, "fast_math": fast_math, "repeat": 16}
              for n, r in ((1, "small"), (1000003, "small"), (4099, "large"))]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, bench.baseline,
                                           CHECK_ONLY))  # fmt: skip
    bad = [(r.variant, r.point, r.status, r.reason) for r in results if not r.status.is_measured]
    assert not bad
    assert all(np.isfinite(r.metrics["max_ulp"]) for r in results)
    if not fast_math:  # sinf and expf keep their 2 ulp in the small range
        small = [r for r in results if r.point["range"] == "small"
                 and r.variant in ("sin_standard", "exp_standard")]  # fmt: skip
        assert all(r.metrics["max_ulp"] <= 2 for r in small)


def test_cli_takes_fast_math_as_a_boolean():
    from click.testing import CliRunner

    from gpubench.cli import cli

    def run(value):
        return CliRunner().invoke(cli, ["run", "intrinsics", "--fast-math", value, "-v",
                                        "sin_standard"], catch_exceptions=False)  # fmt: skip

    refused = run("maybe")
    assert refused.exit_code == 2 and "'maybe' is not a valid boolean" in refused.output
    # Accepted: without PyCUDA or a GPU the run then stops with exit 4 (environment).
    assert run("true").exit_code in (0, 4) and run("no").exit_code in (0, 4)


def test_bounds_at_their_edges():
    ulp = 2.0**-23
    # __sinf is bounded only with both ends inside [-pi, pi].
    for span in ((-4.0, 1.0), (-1.0, 4.0)):
        assert intrinsics.documented_bound("sin", True, span).atol == 2.0, span
    # __expf: 2 + floor(1.173 * (|x| + 0.1)) ulp, so |x| = 0.8 is 3 ulp (0.7 would be 2).
    assert intrinsics.documented_bound("exp", True, (-0.8, 0.5)).rtol == 3 * ulp
    # The nearby arguments count: x up to 80 + 1024 / 1024 = 81 is 2 + floor(95.13) ulp.
    p = {**bench.defaults(), "range": "large", "repeat": 1024}
    one, _ = bench._tolerances("exp_intrinsic", p)
    assert one.rtol == 97 * ulp


def test_exact_results_are_zero_ulp_off():
    assert intrinsics.ulp_errors(np.array([1.0, 0.25], np.float32), np.array([1.0, 0.25])) == (
        0.0, 0.0)  # fmt: skip


def test_each_intrinsic_is_compared_with_its_own_standard_function():
    from gpubench.model.results import Result, Status

    def measured(variant, ms, status=Status.OK):
        return Result("intrinsics", variant, {}, status, summary={"median_ms": ms})

    results = [measured("sin_standard", 4.0), measured("sin_intrinsic", 1.0),
               measured("exp_standard", 3.0), measured("exp_intrinsic", 2.0),
               measured("divide_intrinsic", 1.0),  # its standard was not run
               measured("rsqrt_standard", 2.0, Status.INCORRECT),
               measured("rsqrt_intrinsic", 1.0)]  # fmt: skip
    intrinsics.BENCHMARK.point_metrics(results)
    assert [r.metrics.get("vs_standard") for r in results] == [1.0, 4.0, 1.0, 1.5, None, None,
                                                               None]  # fmt: skip

from __future__ import annotations

import pytest

from gpubench import metrics


def test_bandwidth_counts_bytes_over_seconds_in_gb():
    # 2 GiB moved in 1 ms = 2147.48 GB/s (decimal GB, as vendors quote bandwidth).
    assert metrics.bandwidth_gbps(2 * 2**30, 1.0) == pytest.approx(2147.483648)


def test_gflops_and_speedup():
    assert metrics.gflops(2 * 1024**3, 2.0) == pytest.approx(1073.741824)
    assert metrics.speedup(10.0, 2.5) == pytest.approx(4.0)


def test_percent_of_peak_and_unknown_peak():
    assert metrics.percent_of(50.0, 200.0) == pytest.approx(25.0)
    assert metrics.percent_of(50.0, None) is None


@pytest.mark.parametrize("fn", [lambda: metrics.bandwidth_gbps(1, 0), lambda: metrics.gflops(1, -1),
                                lambda: metrics.speedup(1, 0)])  # fmt: skip
def test_non_positive_times_are_refused(fn):
    with pytest.raises(ValueError):
        fn()

"""The check on the GPU (CuPy) gives the verdict of the check on the host (NumPy): the same
pass/fail, worst index, counts, errors and message, on the same outputs. On the CPU: the
types the device check takes, the kernels it instantiates, and how it reads its maxima back."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gpubench.engine import verify
from gpubench.model.benchmark import Tolerance


@pytest.fixture(scope="module")
def cp(gpu_backend):
    cupy = pytest.importorskip("cupy")
    return cupy


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a)
                      and math.isnan(b))  # fmt: skip


def both(cp, got, expected, tol):
    host = verify.check_output("out", got, expected, tol)
    device = verify.check_output("out", cp.asarray(got), cp.asarray(expected), tol, cp)
    for f in dataclasses.fields(host):
        if f.name != "checked_on":
            assert _same(getattr(host, f.name), getattr(device, f.name)), (
                f.name, getattr(host, f.name), getattr(device, f.name))  # fmt: skip
    return host


def _cases():
    rng = np.random.default_rng(7)
    ref32 = rng.random(10_007, dtype=np.float32) * 2 - 1
    ref = ref32.astype(np.float64)
    default32 = Tolerance.default_for(np.float32)
    ulp_past = ref32.copy()
    ulp_past[5000] = np.nextafter(ref32[5000], np.float32(np.inf))
    nan_left = ref32.copy()
    nan_left[[3, 4096, 10_006]] = np.nan
    negzero = np.zeros(4099, np.float32)
    negzero[::7] = -0.0
    ties = ref32.copy()
    ties[[100, 200, 9000]] = ref32[[100, 200, 9000]] + 1.0  # worst excess ties? first wins
    ints = rng.integers(-(2**31), 2**31, 5003, dtype=np.int64).astype(np.int32)
    ints_wrong = ints.copy()
    ints_wrong[-1] += 1
    big = rng.integers(2**60, 2**62, 1001, dtype=np.int64)
    big_wrong = big.copy()
    big_wrong[500] += 1
    specials = np.array([np.inf, -np.inf, np.nan, 1.0, 0.0], np.float64)
    specials_got = np.array([np.inf, np.inf, np.nan, np.nan, -0.0], np.float32)
    return {
        "right": (ref32.copy(), ref, default32),
        "one ulp past an exact tolerance": (ulp_past, ref32, Tolerance()),
        "one ulp past against float64": (ulp_past, ref, Tolerance(rtol=1e-9)),
        "NaN left": (nan_left, ref, default32),
        "-0.0 exact": (negzero, np.zeros(4099, np.float32), Tolerance()),
        "equal errors: the first is the worst": (np.ones(3000), np.zeros(3000), Tolerance()),
        "several wrong": (ties, ref, default32),
        "integers right": (ints.copy(), ints.astype(np.int64), Tolerance()),
        "integers wrong last": (ints_wrong, ints.astype(np.int64), Tolerance()),
        "int64 past float64 precision": (big_wrong, big, Tolerance()),
        "infinities and NaN in the reference": (specials_got, specials, Tolerance(rtol=1e-6)),
        "a finite value or the other infinity for an infinite reference": (
            np.array([1.0, -np.inf, np.inf, 2.0], np.float32),
            np.array([np.inf, np.inf, np.inf, 2.0]),
            Tolerance(rtol=1e-6),
        ),
        "equal infinities": (
            np.array([np.inf, -np.inf, 3.0], np.float32),
            np.array([np.inf, -np.inf, 3.0]),
            Tolerance(rtol=1e-6, atol=1.0),
        ),
        "atol and rtol": (ref32 + np.float32(1e-4), ref, Tolerance(rtol=1e-5, atol=5e-5)),
        "empty": (np.zeros(0, np.float32), np.zeros(0), default32),
        "shape": (np.zeros((3, 2), np.float32), np.zeros((2, 3)), default32),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(_cases()))
def test_host_and_device_give_the_same_verdict(cp, name):
    got, expected, tol = _cases()[name]
    both(cp, got, expected, tol)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(_cases()))
def test_the_same_verdict_over_many_chunks(cp, monkeypatch, name):
    monkeypatch.setattr(verify, "CHUNK", 64)  # the host path in many chunks
    got, expected, tol = _cases()[name]
    both(cp, got, expected, tol)


@pytest.mark.gpu
def test_known_verdicts_on_the_device(cp):
    cases = _cases()
    assert both(cp, *cases["right"]).passed
    v = both(cp, *cases["one ulp past an exact tolerance"])
    assert (v.passed, v.wrong, v.worst_index) == (False, 1, [5000])
    v = both(cp, *cases["NaN left"])
    assert (v.passed, v.unwritten, v.worst_index) == (False, 3, [3])
    assert both(cp, *cases["-0.0 exact"]).passed
    v = both(cp, *cases["equal errors: the first is the worst"])
    assert (v.wrong, v.worst_index) == (3000, [0])
    v = both(cp, *cases["integers wrong last"])
    assert (v.passed, v.worst_index) == (False, [5002])
    v = both(cp, *cases["int64 past float64 precision"])
    assert not v.passed
    v = both(cp, *cases["a finite value or the other infinity for an infinite reference"])
    assert (v.passed, v.wrong, v.worst_index) == (False, 2, [0])
    v = both(cp, *cases["equal infinities"])
    assert v.passed and v.max_abs_error == 0.0


@pytest.mark.gpu
def test_a_large_output_is_checked_on_the_device(cp):
    n = (1 << 26) + 3  # more elements than the grid has threads, not a multiple of a block
    expected = cp.arange(n, dtype=cp.float32)
    got = expected.copy()
    got[-1] = cp.nan  # the last element never written
    v = verify.check_output("out", got, expected, Tolerance(), cp)
    assert (v.passed, v.unwritten, v.worst_index) == (False, 1, [n - 1])


def test_the_device_check_takes_every_integer_and_float_type_but_half():
    from gpubench.engine import verify_device

    for name in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64"):  # fmt: skip
        assert verify_device.supported(np.dtype(name)), name
    for other in (np.float16, np.bool_, np.complex64):
        assert not verify_device.supported(other)


@pytest.mark.parametrize(("got", "expected", "names"), [
    ("float32", "float64", ("errors_pass<float, double, long long, false, false>",
                            "worst_pass<float, double, long long, false>")),
    ("float64", "float64", ("errors_pass<double, double, long long, false, true>",
                            "worst_pass<double, double, long long, false>")),
    ("int32", "int64", ("errors_pass<int, long long, long long, true, false>",
                        "worst_pass<int, long long, long long, true>")),
    ("uint64", "uint64", ("errors_pass<unsigned long long, unsigned long long, u64, true, true>",
                          "worst_pass<unsigned long long, unsigned long long, u64, true>")),
])  # fmt: skip
def test_each_pair_of_types_instantiates_its_kernels(got, expected, names):
    """Integers compare in 64 bits (unsigned where either side is uint64); equal types let
    the kernel compare bits first."""
    from gpubench.engine import verify_device

    assert verify_device._names(got, expected) == names


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, -1.5, 2.0**-1074, -(2.0**1023),
                                   -math.nextafter(1.0, 2.0), math.inf, -math.inf])  # fmt: skip
def test_an_ordered_maximum_reads_back_as_the_double_it_encodes(value):
    """The kernels take maxima of doubles as unsigned 64-bit keys that sort like the values:
    a non-negative double with its sign bit set, a negative one with every bit flipped."""
    from gpubench.engine import verify_device

    bits = int(np.array([value]).view(np.uint64)[0])
    ordered = bits | (1 << 63) if not bits >> 63 else ~bits & (2**64 - 1)
    back = verify_device._to_double(ordered)
    assert back == value and math.copysign(1.0, back) == math.copysign(1.0, value)


def test_the_inputs_check_counts_with_one_kernel_per_item_size_compiled_with_the_check():
    from gpubench.engine import verify_device

    assert [verify_device.count_name(size) for size in (1, 2, 4, 8)] == [
        "count_bits_differ<unsigned char>",
        "count_bits_differ<unsigned short>",
        "count_bits_differ<unsigned int>",
        "count_bits_differ<unsigned long long>",
    ]
    assert "__global__ void count_bits_differ(" in verify_device.SOURCE


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("n", [0, 1, 31, 10_007, (1 << 22) + 5])
def test_the_inputs_count_is_numpy_s_at_every_size_and_width(cp, dtype, n):
    """Differences at the first and last element, one past a warp, and at random places; a
    size past the grid's threads counts every element (each thread strides)."""
    from gpubench.engine import verify_device

    rng = np.random.default_rng(n)
    left = rng.integers(0, np.iinfo(dtype).max, n, dtype=dtype, endpoint=True)
    right = left.copy()
    if n:
        places = np.unique(np.r_[0, n - 1, min(32, n - 1), rng.integers(0, n, 50)])
        right[places] ^= dtype(1)
    expected = int(np.count_nonzero(left != right))
    assert verify_device.count_differing(cp, cp.asarray(left), cp.asarray(right)) == expected
    same = cp.asarray(left)
    assert verify_device.count_differing(cp, same, same.copy()) == 0

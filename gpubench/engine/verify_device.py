"""The steps of gpubench.engine.verify's check, on the GPU: one small CUDA module, two passes over
the outputs, no temporaries.

Pass one computes, per element, the error by the rule of the host check (float64, with the
IEEE round-to-nearest intrinsics so no FMA contraction can change a bit) and folds counts,
maxima and first indices into nine 64-bit counters (warp shuffles, then one atomic per warp).
Pass two finds the first element whose excess over the allowed error equals the maximum. The
host then reads those counters and two elements, and gpubench.engine.verify.decide builds the
verdict: the same one the host path gives (tests/engine/test_verify_device.py).

Compiled by CuPy (NVRTC) once per pair of types and cached on disk by CuPy.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from gpubench.model.benchmark import Tolerance

# C type of each NumPy dtype the device check takes; others (float16, bool, complex) are
# checked on the host.
C_TYPES = {
    "float32": "float", "float64": "double",
    "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
    "uint64": "unsigned long long",
}  # fmt: skip

SOURCE = r"""
typedef unsigned long long u64;
#define INF __longlong_as_double(0x7ff0000000000000LL)
#define NONE 0xffffffffffffffffULL

enum { BITS_DIFFER, VALUES_DIFFER, UNWRITTEN, FIRST_UNWRITTEN, WRONG, MAX_EXCESS, MAX_DIFF,
       MAX_REL, WORST, COUNTERS };

// Doubles as unsigned integers in the same order (NaN never reaches here).
__device__ __forceinline__ u64 ordered(double x) {
    u64 b = (u64)__double_as_longlong(x);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ULL);
}

template <typename T> __device__ __forceinline__ u64 bits_of(T x) {
    u64 b = 0;
    memcpy(&b, &x, sizeof(T));
    return b;
}

template <typename T> __device__ __forceinline__ bool is_nan(T x) { return false; }
template <> __device__ __forceinline__ bool is_nan<float>(float x) { return isnan(x); }
template <> __device__ __forceinline__ bool is_nan<double>(double x) { return isnan(x); }

// The host rule (gpubench.engine.verify._errors), element by element.
template <typename G, typename E, typename COMMON, bool INTEGERS>
__device__ __forceinline__ void element(G got, E expected, double rtol, double atol,
                                        double& diff, double& excess, double& rel,
                                        bool& values_differ) {
    double g = (double)got, e = (double)expected;
    bool both_nan = isnan(g) && isnan(e);
    diff = (g == e || both_nan) ? 0.0 : fabs(__dsub_rn(g, e));  // equal infinities: no error
    if (isnan(diff)) diff = INF;
    bool differ;
    if (INTEGERS) {
        differ = (COMMON)got != (COMMON)expected;
        if (differ) diff = fmax(diff, 1.0);
    } else {
        differ = !(g == e || both_nan);
    }
    values_differ = differ;
    double scale = fabs(e);
    if (isnan(scale)) scale = 0.0;
    // An infinite reference allows no error (a relative tolerance of it would accept anything).
    double allowed = isinf(e) ? 0.0 : __dadd_rn(__dmul_rn(rtol, scale), atol);
    excess = __dsub_rn(diff, allowed);
    if (isnan(excess)) excess = -INF;
    rel = scale > 0 ? __ddiv_rn(diff, scale) : (diff > 0 ? INF : 0.0);
    if (isnan(rel)) rel = INF;
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ u64 warp_max(u64 v) {
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ u64 warp_min(u64 v) {
    for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

template <typename G, typename E, typename COMMON, bool INTEGERS, bool SAME>
__global__ void errors_pass(const G* got, const E* expected, u64 n, double rtol, double atol,
                            u64* counters) {
    u64 bits = 0, values = 0, unwritten = 0, wrong = 0, first_unwritten = NONE;
    u64 max_excess = 0, max_diff = 0, max_rel = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        G g = got[i];
        E e = expected[i];
        if (SAME) bits += bits_of(g) != bits_of((G)e);
        if (is_nan(g) && !isnan((double)e)) {
            unwritten++;
            first_unwritten = min(first_unwritten, i);
        }
        double diff, excess, rel;
        bool differ;
        element<G, E, COMMON, INTEGERS>(g, e, rtol, atol, diff, excess, rel, differ);
        values += differ;
        wrong += excess > 0;
        max_excess = max(max_excess, ordered(excess));
        max_diff = max(max_diff, ordered(diff));
        max_rel = max(max_rel, ordered(rel));
    }
    bits = warp_sum(bits); values = warp_sum(values); unwritten = warp_sum(unwritten);
    wrong = warp_sum(wrong); first_unwritten = warp_min(first_unwritten);
    max_excess = warp_max(max_excess); max_diff = warp_max(max_diff); max_rel = warp_max(max_rel);
    if ((threadIdx.x & 31) == 0) {
        if (bits) atomicAdd(counters + BITS_DIFFER, bits);
        if (values) atomicAdd(counters + VALUES_DIFFER, values);
        if (unwritten) atomicAdd(counters + UNWRITTEN, unwritten);
        if (wrong) atomicAdd(counters + WRONG, wrong);
        atomicMin(counters + FIRST_UNWRITTEN, first_unwritten);
        atomicMax(counters + MAX_EXCESS, max_excess);
        atomicMax(counters + MAX_DIFF, max_diff);
        atomicMax(counters + MAX_REL, max_rel);
    }
}

// The first element whose excess is the largest.
template <typename G, typename E, typename COMMON, bool INTEGERS>
__global__ void worst_pass(const G* got, const E* expected, u64 n, double rtol, double atol,
                           u64* counters) {
    u64 largest = counters[MAX_EXCESS], first = NONE;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x) {
        double diff, excess, rel;
        bool differ;
        element<G, E, COMMON, INTEGERS>(got[i], expected[i], rtol, atol, diff, excess, rel,
                                        differ);
        if (ordered(excess) == largest) { first = i; break; }  // i only grows in a thread
    }
    first = warp_min(first);
    if ((threadIdx.x & 31) == 0 && first != NONE) atomicMin(counters + WORST, first);
}

// The inputs check: how many elements of two arrays differ bit for bit (read as unsigned
// integers of their item size, so a NaN equals itself), in one pass with no temporary array.
template <typename U>
__global__ void count_bits_differ(const U* left, const U* right, u64 n, u64* count) {
    u64 differ = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n;
         i += (u64)gridDim.x * blockDim.x)
        differ += left[i] != right[i];
    differ = warp_sum(differ);
    if ((threadIdx.x & 31) == 0 && differ) atomicAdd(count, differ);
}
"""

COUNTERS = ("bits_differ", "values_differ", "unwritten", "first_unwritten", "wrong",
            "max_excess", "max_diff", "max_rel", "worst")  # fmt: skip
NONE = 2**64 - 1
BLOCK = 256

# The (output, reference) types of the shipped suites, compiled together once (in the
# background when a worker starts: see warm_up); any other pair compiles on first use.
COMMON_PAIRS = (("float32", "float64"), ("float32", "float32"), ("float64", "float64"),
                ("int32", "int64"))  # fmt: skip

# The inputs check's counts, by item size: compiled into every module, kept from the first
# (so the warm-up compiles them too, with no CuPy kernel of its own to wait for).
COUNT_TYPES = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int",
               8: "unsigned long long"}  # fmt: skip

_modules: dict[tuple[str, str], tuple[Any, Any]] = {}
_counts: dict[int, Any] = {}
_lock = threading.Lock()


def supported(dtype: Any) -> bool:
    return np.dtype(dtype).name in C_TYPES


def _names(got: str, expected: str) -> tuple[str, str]:
    g, e = C_TYPES[got], C_TYPES[expected]
    dtypes = (np.dtype(got), np.dtype(expected))
    integers = all(np.issubdtype(d, np.integer) for d in dtypes)
    common = "u64" if np.dtype(np.uint64) in dtypes else "long long"
    flags = f"{common}, {'true' if integers else 'false'}"
    same = "true" if got == expected else "false"
    return f"errors_pass<{g}, {e}, {flags}, {same}>", f"worst_pass<{g}, {e}, {flags}>"


def count_name(itemsize: int) -> str:
    return f"count_bits_differ<{COUNT_TYPES[itemsize]}>"


def _compile(cupy: Any, pairs: tuple[tuple[str, str], ...]) -> None:
    names = {pair: _names(*pair) for pair in pairs}
    # The counts once, in the first module compiled (the warm-up's, as a rule).
    counts = {} if _counts else {size: count_name(size) for size in COUNT_TYPES}
    expressions = (*(n for pair in names.values() for n in pair), *counts.values())
    module = cupy.RawModule(code=SOURCE, options=("-std=c++17",), name_expressions=expressions)
    for pair, (errors, worst) in names.items():
        _modules[pair] = (module.get_function(errors), module.get_function(worst))
    _counts.update({size: module.get_function(name) for size, name in counts.items()})


def _kernels(cupy: Any, got: np.dtype, expected: np.dtype) -> tuple[Any, Any]:
    key = (got.name, expected.name)
    with _lock:
        if key not in _modules:
            _compile(cupy, COMMON_PAIRS if key in COMMON_PAIRS else (key,))
        return _modules[key]


def warm_up(cupy: Any) -> None:
    """Compile the common pairs now (CuPy keeps the binary on disk: once per machine)."""
    with _lock:
        if COMMON_PAIRS[0] not in _modules:
            _compile(cupy, COMMON_PAIRS)


def count_differing(cupy: Any, left: Any, right: Any) -> int:
    """How many elements of two CuPy arrays of one unsigned integer type (1, 2, 4 or 8 bytes)
    differ, counted in one pass on CuPy's current stream."""
    with _lock:
        if not _counts:
            _compile(cupy, COMMON_PAIRS)
        kernel = _counts[left.dtype.itemsize]
    n = left.size
    count = cupy.asarray(np.zeros(1, np.uint64))  # made here: no CuPy kernel to compile
    if n:
        grid = (max(1, min((n + BLOCK - 1) // BLOCK, 132 * 16)),)
        kernel(grid, (BLOCK,), (left, right, np.uint64(n), count))
    return int(count.get()[0])


def _to_double(ordered: int) -> float:
    bits = ordered & ~(1 << 63) if ordered >> 63 else ~ordered & (2**64 - 1)
    return float(np.array([bits], np.uint64).view(np.float64)[0])


class DeviceOps:
    """The steps verify.decide asks for, answered from one pass over CuPy arrays."""

    def __init__(self, got: Any, expected: Any, tol: Tolerance) -> None:
        import cupy

        self.cupy, self.got, self.expected, self.tol = cupy, got, expected, tol
        self.errors_pass, self.worst_pass = _kernels(cupy, got.dtype, expected.dtype)
        n = got.size
        start = np.zeros(len(COUNTERS), np.uint64)  # made here: no CuPy kernel to compile
        start[[COUNTERS.index("first_unwritten"), COUNTERS.index("worst")]] = NONE
        self.counters = cupy.asarray(start)
        self.grid = (max(1, min((n + BLOCK - 1) // BLOCK, 132 * 16)),)
        self.args = (
            got,
            expected,
            np.uint64(n),
            np.float64(tol.rtol),
            np.float64(tol.atol),
            self.counters,
        )
        self.errors_pass(self.grid, (BLOCK,), self.args)
        self.read = dict(zip(COUNTERS, (int(v) for v in self.counters.get()), strict=True))

    def bitwise_equal(self) -> bool:
        return self.got.dtype == self.expected.dtype and self.read["bits_differ"] == 0

    def unwritten(self) -> tuple[int, int]:
        count = self.read["unwritten"]
        return count, (self.read["first_unwritten"] if count else -1)

    def values_equal(self) -> bool:
        return self.read["values_differ"] == 0

    def errors(self) -> tuple[int, int, float, float]:
        self.worst_pass(self.grid, (BLOCK,), self.args)
        worst = int(self.counters[COUNTERS.index("worst")].get())
        return (
            worst,
            self.read["wrong"],
            _to_double(self.read["max_diff"]),
            _to_double(self.read["max_rel"]),
        )

    def value(self, which: str, index: int) -> Any:
        return (self.got if which == "got" else self.expected)[index].item()

"""The built-in suites' tests, and what several of them check alike."""

import numpy as np


def whole_launches(steps) -> bool:
    """Every launch among `steps` in whole threads and blocks: PyCUDA and cuda.core take
    integers, and a float dimension would fail only at launch, on a GPU."""
    return all(type(d) is int for step in steps if hasattr(step, "grid")
               for d in (*step.grid, *step.block))  # fmt: skip


def assert_each_set_gets_its_own_product(cupy, step, shapes, dtype) -> None:
    """A cuBLAS step run on two sets of buffers (small integers: exact) writes into each C
    the product of that set's A and B."""
    sets = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        arrays = {n: cupy.asarray(rng.integers(-3, 4, s).astype(dtype)) for n, s in shapes.items()}
        arrays["C"][:] = 0
        sets.append(arrays)
    cupy.cuda.Device().synchronize()
    for arrays in sets:
        step({n: int(a.data.ptr) for n, a in arrays.items()}, 0)
    cupy.cuda.Device().synchronize()
    for arrays in sets:
        a, b = (cupy.asnumpy(arrays[n]).astype(np.float64) for n in "AB")
        np.testing.assert_array_equal(cupy.asnumpy(arrays["C"]).astype(np.float64), a @ b)

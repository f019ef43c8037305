"""The built-in suites' tests, and what several of them check alike."""


def whole_launches(steps) -> bool:
    """Every launch among `steps` in whole threads and blocks: PyCUDA and cuda.core take
    integers, and a float dimension would fail only at launch, on a GPU."""
    return all(type(d) is int for step in steps if hasattr(step, "grid")
               for d in (*step.grid, *step.block))  # fmt: skip

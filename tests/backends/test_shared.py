"""What the driver-level backends share, tested without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.backends.shared import kernel_scalar
from gpubench.errors import KernelLaunchError


@pytest.mark.parametrize("value", [np.int32(-3), np.uint32(3), np.int64(2**40), np.uint64(1),
                                   np.float32(1.5), np.float64(2.5)])  # fmt: skip
def test_a_kernel_scalar_keeps_its_c_type(value):
    scalar = kernel_scalar("k", value)
    assert scalar.dtype == value.dtype and scalar == value


@pytest.mark.parametrize("value", [np.float16(1), np.int8(1), np.bool_(True), "text"])
def test_a_scalar_of_another_type_is_refused_by_name(value):
    with pytest.raises(KernelLaunchError, match="kernel 'k': argument of type"):
        kernel_scalar("k", value)

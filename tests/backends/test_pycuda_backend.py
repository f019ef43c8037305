"""What only the PyCUDA backend has (the contract itself is tested for every backend in
test_contract.py): its versions, and nvcc in its compiler id."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def pycuda_backend():
    from gpubench import backends

    return backends.load(0, "pycuda")


def test_the_environment_names_pycuda_and_the_cuda_it_was_built_for(pycuda_backend):
    env = pycuda_backend.environment().to_dict()
    assert env["pycuda_version"] and env["pycuda_built_for_cuda"]
    assert env["backend"] == {"name": "pycuda", "version": env["pycuda_version"]}
    assert env["cuda_driver_api_version"]


def test_the_compiler_id_names_nvcc_and_the_architecture(pycuda_backend):
    from gpubench.device import nvcc_version

    assert pycuda_backend.compiler_id == f"nvcc {nvcc_version()} {pycuda_backend.device.arch}"

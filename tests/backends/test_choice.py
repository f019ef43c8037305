"""Choosing a backend (gpubench/backends/__init__.py) without a GPU: what the preflight says
is missing for each backend, in its words, and how a backend named by the user is found."""

from __future__ import annotations

import sys

import pytest

from gpubench import backends
from gpubench.errors import ConfigError, EnvironmentProblem


def test_installed_tells_an_import_that_would_work_from_one_that_would_not(monkeypatch):
    assert backends.installed("json") and not backends.installed("no_such_module_here")
    monkeypatch.setitem(sys.modules, "blocked_module", None)
    assert not backends.installed("blocked_module")
    monkeypatch.setitem(sys.modules, "loaded_module", sys)
    assert backends.installed("loaded_module")
    assert not backends.installed(".relative")


def test_selected_prefers_the_environment_then_pycuda_then_cuda_core(monkeypatch, capsys):
    monkeypatch.setenv("GPUBENCH_BACKEND", "mine:Backend")
    assert backends.selected() == "mine:Backend"
    monkeypatch.delenv("GPUBENCH_BACKEND")
    monkeypatch.setattr(backends, "installed", lambda m: m == "pycuda")
    assert backends.selected() == "pycuda"
    monkeypatch.setattr(backends, "installed", lambda m: False)
    assert backends.selected() == "pycuda"
    monkeypatch.setattr(backends, "installed", lambda m: m in ("pycuda", "cuda.core"))
    assert backends.selected() == "pycuda"  # both installed: PyCUDA
    monkeypatch.setattr(backends, "installed", lambda m: m == "cuda.core")
    monkeypatch.setattr(backends, "driver_present", lambda: False)
    assert backends.selected() == "pycuda"  # no driver: cuda-core could not start either
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(backends, "driver_present", lambda: True)
    assert backends.selected() == "cuda-core" and capsys.readouterr().err == ""  # silent
    assert backends.chosen_automatically() and not backends.chosen_automatically("cuda-core")


def test_the_cuda_core_preflight(monkeypatch):
    monkeypatch.setattr(backends, "installed", lambda m: False)
    with pytest.raises(EnvironmentProblem) as info:
        backends.preflight("cuda-core")
    assert str(info.value) == ("cuda.core is not installed: pip install 'gpubench-studies[cuda-core]' "
                               "(wheels only, no CUDA toolkit), or pip install cuda-core "
                               "cuda-bindings nvidia-cuda-nvrtc")  # fmt: skip
    backends.preflight("cuda-core", local=False)  # the cluster's machines need it, not this one
    monkeypatch.setattr(backends, "installed", lambda m: m == "cuda.core")
    backends.preflight("cuda-core")


def test_the_pycuda_preflight(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    with pytest.raises(EnvironmentProblem) as info:
        backends.preflight("pycuda")
    # One line that fits an 80-column terminal after `error: `.
    assert (
        str(info.value) == "PyCUDA is not installed: pip install '.[cuda]', or --backend cuda-core"
    )
    assert len("error: " + str(info.value)) <= 80
    backends.preflight("pycuda", local=False)
    monkeypatch.setitem(sys.modules, "pycuda", sys)  # "installed"
    monkeypatch.setattr(backends.shutil, "which", lambda name: None if name == "nvcc" else "/x")
    with pytest.raises(EnvironmentProblem) as info:
        backends.preflight("pycuda")
    assert (
        str(info.value) == "nvcc not found on PATH: install the CUDA toolkit or --backend cuda-core"
    )
    assert len("error: " + str(info.value)) <= 80
    monkeypatch.setattr(backends.shutil, "which", lambda name: "/usr/bin/" + name)
    backends.preflight("pycuda")


class NotQuite:
    def describe(self):
        pass


@pytest.mark.parametrize(("name", "message"), [
    ("nope", "unknown backend 'nope': use one of pycuda, cuda-core, or package.module:Class"),
    ("no_such_pkg:Backend", "cannot import backend 'no_such_pkg:Backend': No module named "
     "'no_such_pkg'"),
    ("json:Nope", "json has no Nope"),
    (":X", "backend ':X': expected package.module:Class (an absolute module, dotted names, one "
     "colon, a class name)"),
    ("json:dumps", "'json:dumps' is not a backend (not a class): name a class that implements "
     "gpubench.backends.base.Backend"),
    (f"{__name__}:NotQuite", f"'{__name__}:NotQuite' is not a backend (it lacks "),
])  # fmt: skip
def test_a_backend_named_by_the_user_is_found_or_refused_in_one_line(name, message, monkeypatch):
    with pytest.raises(ConfigError) as info:
        backends.preflight(name, source="--backend")
    assert str(info.value).startswith(f"--backend: {message}")
    if "lacks" not in message:
        assert str(info.value) == f"--backend: {message}"


def test_a_built_in_backend_that_cannot_load_is_an_environment_problem(monkeypatch):
    monkeypatch.setitem(backends.BUILT_IN, "pycuda", "no_such_pkg.mod:Backend")
    with pytest.raises(EnvironmentProblem) as info:
        backends._factory("pycuda")
    assert str(info.value) == ("the pycuda backend could not load (No module named "
                               "'no_such_pkg'): check the NVIDIA driver (nvidia-smi) and that "
                               "the backend's packages are installed")  # fmt: skip
    assert backends._factory("tests.fakes:FakeBackend").__name__ == "FakeBackend"


def test_a_built_in_backend_whose_import_raises_is_an_environment_problem_too(monkeypatch):
    # A cuda.core and cuda.bindings of versions that do not match raise AttributeError on
    # import: the user named no module, so this is the machine's to fix (exit 4), not a name.
    monkeypatch.setitem(backends.BUILT_IN, "cuda-core", "tests.backends.raising_module:Backend")
    with pytest.raises(EnvironmentProblem) as info:
        backends._factory("cuda-core")
    assert str(info.value) == (
        "the cuda-core backend could not load (AttributeError: module 'cuda' has no attribute "
        "'bindings'): check the NVIDIA driver (nvidia-smi) and that the backend's packages are "
        "installed"
    )


def test_a_backend_opens_the_first_gpu_unless_told(monkeypatch):
    opened = []
    monkeypatch.setattr(backends, "preflight", lambda name, source: None)
    monkeypatch.setattr(
        backends, "_factory", lambda name, source: lambda index: opened.append((name, index))
    )
    backends.load(name="fake")
    backends.load(2, name="fake")
    assert opened == [("fake", 0), ("fake", 2)]


def test_a_class_without_the_backend_s_methods_names_the_first_four_it_lacks(monkeypatch):
    lacking = [m for m in backends._CONTRACT if m != "describe"]
    assert len(lacking) > 4
    with pytest.raises(ConfigError) as info:
        backends.preflight(f"{__name__}:NotQuite", source="--backend")
    assert str(info.value) == (
        f"--backend: '{__name__}:NotQuite' is not a backend (it lacks {', '.join(lacking[:4])}): "
        "name a class that implements gpubench.backends.base.Backend")  # fmt: skip
    assert "it lacks environment, readings, sm_clock_mhz, energy_meter)" in str(info.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            name,
            f"GPUBENCH_BACKEND: backend {name!r}: expected package.module:Class (an absolute "
            "module, dotted names, one colon, a class name)",
        )
        for name in ("..x:Y", ".x:Y", ":Y", "x:", "x:Y:Z", "a b:C", "x.:Y", "x:Y.Z", "1x:Y")
    ]
    + [
        (
            "nope",
            "GPUBENCH_BACKEND: unknown backend 'nope': use one of pycuda, cuda-core, or "
            "package.module:Class",
        ),
        (
            "x" * 300,
            "GPUBENCH_BACKEND: unknown backend 'xxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxx"
            "xxxxxxxxxxxxxxxx': use one of pycuda, cuda-core, or package.module:Class",
        ),
        (
            "no_such_module_here:Backend",
            "GPUBENCH_BACKEND: cannot import backend "
            "'no_such_module_here:Backend': No module named 'no_such_module_here'",
        ),
        ("json:NoSuchClass", "GPUBENCH_BACKEND: json has no NoSuchClass"),
    ],
)
def test_a_backend_name_that_names_no_importable_class_is_one_line(monkeypatch, name, message):
    with pytest.raises(ConfigError) as info:
        backends.preflight(name)  # no option named it: the environment did
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("body", "raised"),
    [
        ("raise RuntimeError('boom')", "RuntimeError: boom"),
        ("import sys; sys.exit(3)", "SystemExit: 3"),
        ("1/0", "ZeroDivisionError: division by zero"),
    ],
)
def test_a_backend_module_that_raises_on_import_is_one_line(tmp_path, monkeypatch, body, raised):
    (tmp_path / "raising_backend_module.py").write_text(body + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "raising_backend_module", raising=False)
    with pytest.raises(ConfigError) as info:
        backends.preflight("raising_backend_module:Backend")
    assert str(info.value) == (
        f"GPUBENCH_BACKEND: importing backend 'raising_backend_module:Backend' raised {raised}"
    )

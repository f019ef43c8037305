"""CudaGraphs against a stand-in for the driver library: which driver calls a capture, a
launch and a destroy make, in what order, on which stream and graph, and how each failure is
named. (The real driver is exercised by the GPU tests in test_contract.py.)"""

from __future__ import annotations

import ctypes

import pytest

from gpubench.backends.cuda_graphs import CudaGraphs
from gpubench.errors import KernelLaunchError

STREAM, GRAPH, EXECUTABLE = 0x5000, 0x6000, 0x7000


class StandInDriver:
    """libcuda's graph calls: records each with its arguments; `codes` makes one fail."""

    def __init__(self, **codes: int) -> None:
        self.calls: list[tuple] = []
        self.codes = codes

    def _code(self, name: str) -> int:
        return self.codes.get(name, 0)

    def cuStreamBeginCapture_v2(self, stream, mode):
        self.calls.append(("begin", stream.value, mode))
        return self._code("begin")

    def cuStreamEndCapture(self, stream, graph):
        graph._obj.value = GRAPH
        self.calls.append(("end", stream.value))
        return self._code("end")

    def cuGraphInstantiateWithFlags(self, executable, graph, flags):
        executable._obj.value = EXECUTABLE
        self.calls.append(("instantiate", graph.value, flags.value))
        return self._code("instantiate")

    def cuGraphDestroy(self, graph):
        self.calls.append(("destroy graph", graph.value))
        return 0

    def cuGraphLaunch(self, executable, stream):
        self.calls.append(("launch", executable.value, stream.value))
        return self._code("launch")

    def cuGraphExecDestroy(self, executable):
        self.calls.append(("destroy executable", executable.value))
        return 0


def graphs_on(driver: StandInDriver) -> CudaGraphs:
    graphs = object.__new__(CudaGraphs)  # without loading libcuda
    graphs._ctypes, graphs._lib = ctypes, driver
    return graphs


def test_a_capture_in_relaxed_mode_instantiates_and_frees_the_graph_it_came_from():
    driver, enqueued = StandInDriver(), []
    executable = graphs_on(driver).capture(STREAM, lambda: enqueued.append(driver.calls[:]))
    assert enqueued == [[("begin", STREAM, CudaGraphs.RELAXED)]]  # inside the capture
    assert driver.calls == [("begin", STREAM, 2), ("end", STREAM), ("instantiate", GRAPH, 0),
                            ("destroy graph", GRAPH)]  # fmt: skip
    assert executable.value == EXECUTABLE


def test_launch_and_destroy_name_the_executable_and_the_stream():
    driver = StandInDriver()
    graphs = graphs_on(driver)
    executable = ctypes.c_void_p(EXECUTABLE)
    graphs.launch(executable, STREAM)
    graphs.destroy(executable)
    assert driver.calls == [("launch", EXECUTABLE, STREAM), ("destroy executable", EXECUTABLE)]


@pytest.mark.parametrize(
    ("failing", "words"),
    [
        ("begin", "cuStreamBeginCapture failed with CUDA error 900"),
        ("end", "cuStreamEndCapture failed with CUDA error 901"),
        ("instantiate", "cuGraphInstantiateWithFlags failed with CUDA error 902"),
    ],
)
def test_each_failing_capture_call_is_named_with_the_drivers_code(failing, words):
    code = {"begin": 900, "end": 901, "instantiate": 902}[failing]
    driver = StandInDriver(**{failing: code})
    with pytest.raises(KernelLaunchError) as error:
        graphs_on(driver).capture(STREAM, lambda: None)
    assert str(error.value) == words
    if failing == "instantiate":  # the graph is freed even when its instantiation fails
        assert driver.calls[-1] == ("destroy graph", GRAPH)


def test_a_failing_launch_is_named_with_the_drivers_code():
    with pytest.raises(KernelLaunchError) as error:
        graphs_on(StandInDriver(launch=700)).launch(ctypes.c_void_p(EXECUTABLE), STREAM)
    assert str(error.value) == "cuGraphLaunch failed with CUDA error 700"


def test_a_step_that_cannot_be_captured_ends_the_capture_and_frees_its_graph():
    driver = StandInDriver()

    def pageable_copy():
        raise RuntimeError("operation not permitted when stream is capturing")

    with pytest.raises(KernelLaunchError) as error:
        graphs_on(driver).capture(STREAM, pageable_copy)
    assert str(error.value) == (
        "stream capture failed: operation not permitted when stream is capturing"
    )
    assert driver.calls == [("begin", STREAM, 2), ("end", STREAM), ("destroy graph", GRAPH)]


def test_the_driver_library_is_loaded_with_an_int_result_for_every_call(monkeypatch):
    """ctypes' default result type is int too, but named here: a CUresult is a C int."""
    loaded, driver = [], StandInDriver()
    names = ("cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
             "cuGraphLaunch", "cuGraphDestroy", "cuGraphExecDestroy")  # fmt: skip

    class Function:
        def __init__(self, call):
            self.call, self.restype = call, None

        def __call__(self, *args):
            return self.call(*args)

    class Library:
        def __init__(self, path):
            loaded.append(path)
            for name in names:
                setattr(self, name, Function(getattr(driver, name)))

    monkeypatch.setattr(ctypes, "CDLL", Library)
    graphs = CudaGraphs()
    assert loaded == ["libcuda.so.1"]
    assert all(getattr(graphs._lib, name).restype is ctypes.c_int for name in names)
    assert graphs.capture(STREAM, lambda: None).value == EXECUTABLE

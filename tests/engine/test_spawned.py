"""Workers spawned ahead, kept until taken: their share of the host's threads at spawn."""

from gpubench.engine import spawned


def test_a_worker_s_share_of_the_host_is_in_its_environment_only_while_it_spawns(monkeypatch):
    import os

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")  # the user's own choice stays
    with spawned.thread_share_in_environment(16):
        seen = {name: os.environ.get(name) for name in spawned.THREAD_VARIABLES}
    assert seen == {"OMP_NUM_THREADS": "16", "OPENBLAS_NUM_THREADS": "3", "MKL_NUM_THREADS": "16"}
    assert "OMP_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
    with spawned.thread_share_in_environment(None):  # the whole host: nothing set
        assert "OMP_NUM_THREADS" not in os.environ


def test_ctrl_c_is_ignored_while_a_worker_spawns_and_only_then():
    import signal
    import threading

    before = signal.getsignal(signal.SIGINT)
    with spawned.interrupts_ignored():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is before
    seen = []

    def in_a_thread():  # not the main thread: nothing to change, nothing raised
        with spawned.interrupts_ignored():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert seen == [before]


def test_a_worker_stopped_without_waiting_is_killed_at_once_and_waited_for_later():
    import multiprocessing
    import time

    context = multiprocessing.get_context("spawn")
    processes = []
    for _ in range(2):
        conn, child = context.Pipe()
        process = context.Process(target=time.sleep, args=(60,), daemon=True)
        process.start()
        child.close()
        processes.append((process, conn))
    for process, conn in processes:
        spawned.stop(process, conn, wait=False)
    assert spawned._stopping == [p for p, _ in processes] and all(c.closed for _, c in processes)
    spawned.wait_for_stopped()
    assert spawned._stopping == []
    assert [p.exitcode for p, _ in processes] == [-9, -9]  # killed, not left to its sleep
    spawned.wait_for_stopped()  # nothing left: returns at once

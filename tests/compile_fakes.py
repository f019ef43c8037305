"""A fake compiler for the background-compile tests, run inside worker processes: it writes
each compile it runs to GPUBENCH_TEST_MARKERS/compiles, and the build of a broken point
(-DBROKEN=1) starts a child process (its pid in `compiler-pid`) and waits for the file
`release`, at most GATE_S seconds (`gate` then says whether it was released)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.fakes import FakeBackend

GATE_S = 20.0


class GatedCompileBackend(FakeBackend):
    def compile_binary(self, source: str, options: list[str], include_dirs: list[str]) -> bytes:
        markers = Path(os.environ["GPUBENCH_TEST_MARKERS"])
        with open(markers / "compiles", "a") as log:
            log.write(" ".join(options) + "\n")
        if "-DBROKEN=1" in options:
            child = subprocess.Popen(["sleep", "60"])  # stands in for nvcc
            (markers / "compiler-pid").write_text(str(child.pid))
            deadline = time.monotonic() + GATE_S
            while not (markers / "release").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            (markers / "gate").write_text(
                "released" if (markers / "release").exists() else "timed out"
            )
            child.kill()
            child.wait()
        return super().compile_binary(source, options, include_dirs)

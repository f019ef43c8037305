"""A year of nightly runs of configs/smoke.yaml (365 runs x 120 results) for the history and
report goals: the points, variants and record layout of a real smoke run on the CPU stand-in
backend, with generated medians (a per-variant base time, a slow drift, 0.3% noise) and one
planted regression (`naive` 30% slower from the last run on). Not measurements: the report's
load, not its numbers, is what this exercises.

    python tests/scripts/year_of_runs.py OUT_DIR [RUNS]   # writes OUT_DIR/run-NNN.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from gpubench.model.stats import summarize

REPO = Path(__file__).resolve().parents[2]
BASE_MS = {"copy": 0.02, "naive": 0.09, "coalesced": 0.03, "padded": 0.021, "diagonal": 0.024,
           "vectorized": 0.022}  # fmt: skip


def template(out: Path) -> dict:
    """One smoke run on the stand-in backend: every point and variant, as gpubench records it."""
    env = {**os.environ, "GPUBENCH_BACKEND": "tests.fakes:FakeBackend", "PYTHONPATH": str(REPO)}
    path = out / "template.json"
    subprocess.run([sys.executable, "-m", "gpubench", "sweep", str(REPO / "configs/smoke.yaml"),
                    "--json", str(path), "--jsonl", str(out / "template.jsonl"), "--force"],
                   env=env, capture_output=True, check=False, cwd=out)  # fmt: skip
    return json.loads(path.read_text())


def generate(out: Path, runs: int = 365, seed: int = 7) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    record = template(out)
    rng = np.random.default_rng(seed)
    start = datetime(2025, 11, 23, 3, 0, tzinfo=UTC)
    paths = []
    for day in range(runs):
        results = []
        for r in record["results"]:
            size = r["point"].get("rows", 1) * r["point"].get("cols", 1)
            base = BASE_MS.get(r["variant"], 0.05) * (1 + size / 2**20)
            drift = 1 + 0.02 * np.sin(day / 40)
            planted = 1.3 if (r["variant"] == "naive" and day == runs - 1) else 1.0
            samples = list(base * drift * planted * (1 + 0.003 * rng.standard_normal(9)))
            summary = summarize(samples).to_dict()
            itemsize = 8 if r["point"].get("dtype") == "float64" else 4
            gbps = 2 * size * itemsize / (summary["median_ms"] * 1e-3) / 1e9  # read + write
            results.append({**r, "status": "ok", "reason": "", "timeline": [], "phases": {},
                            "summary": summary, "metrics": {"gbps": gbps}})  # fmt: skip
        run = {**record, "created": (start + timedelta(days=day)).isoformat(timespec="seconds"),
               "results": results}  # fmt: skip
        path = out / f"run-{day:03d}.json"
        path.write_text(json.dumps(run))
        paths.append(path)
    return paths


if __name__ == "__main__":
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 365
    print(len(generate(Path(sys.argv[1]), count)), "runs written")

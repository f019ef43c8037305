"""Compares the statuses of two config_statuses.sh runs (before and after a change), result by
result: each (config, point, variant) that both measured, and its status on each side.

Usage: python3 tests/scripts/config_statuses.py BEFORE_OUT AFTER_OUT
"""

import json
import sys
from pathlib import Path


def statuses(out: Path) -> dict[tuple[str, str, str], str]:
    found = {}
    for path in sorted(out.glob("*.json")):
        try:
            results = json.loads(path.read_text())["results"]
        except (OSError, ValueError, KeyError):
            continue
        for result in results:
            point = json.dumps(result.get("point"), sort_keys=True)
            found[(path.stem, point, result["variant"])] = result["status"]
    return found


def main() -> None:
    before, after = (statuses(Path(arg)) for arg in sys.argv[1:3])
    shared = sorted(before.keys() & after.keys())
    changed = [key for key in shared if before[key] != after[key]]
    # ok and unstable are both measured and ranked; which one a result gets depends on the
    # noise of that run, so a flip between them is counted apart from real changes.
    noise = {"ok", "unstable"}
    flips = [key for key in changed if {before[key], after[key]} <= noise]
    real = [key for key in changed if key not in flips]
    configs = sorted({key[0] for key in shared})
    print(
        f"{len(shared)} results in {len(configs)} configs measured on both sides; "
        f"{len(flips)} flipped between ok and unstable; {len(real)} other changes"
    )
    for config, point, variant in real:
        key = (config, point, variant)
        print(f"  {config} {point} {variant}: {before[key]} -> {after[key]}")


if __name__ == "__main__":
    main()

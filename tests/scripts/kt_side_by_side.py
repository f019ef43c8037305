"""gpubench's search strategies and Kernel Tuner's own, side by side on one recorded space.

Usage: python3 tests/scripts/kt_side_by_side.py SPACE.kt.json[.gz] [SEEDS] [KT_STRATEGY ...]

For budgets of 5%, 10% and 20% of the space's configurations: the median over SEEDS seeds
(default 50) of the best time found over the exhaustive optimum, for gpubench's default
strategy and random search (replayed by `gpubench.tune`), and for each Kernel Tuner strategy
run in its simulation mode on the same cache (`pip install kernel_tuner`). Kernel Tuner is
told the space's valid configurations as a restriction, so both tools search the same
configurations. Kernel Tuner's result list can hold a configuration more than once: a search
is charged for the first N distinct configurations it evaluated. Prints one Markdown table.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

from gpubench.tune import kernel_tuner_cache, replay, search, strategies

BUDGETS = (0.05, 0.10, 0.20)
KT_STRATEGIES = ("random_sample", "genetic_algorithm", "pso", "simulated_annealing",
                 "dual_annealing", "diff_evo", "firefly_algorithm", "greedy_ils", "mls",
                 "ordered_greedy_mls", "greedy_mls", "basinhopping", "minimize", "bayes_opt")  # fmt: skip


def gpubench_medians(path: str, strategy: str, evaluations: int, seeds: int) -> float:
    (score,) = search.score(
        replay.prepare(None, path),
        strategy,
        search.parse_budget(str(evaluations)),
        list(range(seeds)),
    )
    return score.median_ratio[-1]


def kernel_tuner_median(
    document: dict, cache: str, strategy: str, evaluations: int, seeds: int
) -> float:
    from kernel_tuner import tune_kernel

    keys = document["tune_params_keys"]
    valid = {
        key for key, entry in document["cache"].items() if isinstance(entry.get("time"), float)
    }
    optimum = min(document["cache"][key]["time"] for key in valid)

    def allowed(params: dict) -> bool:
        return ",".join(str(params[k]) for k in keys) in document["cache"]

    ratios = []
    for seed in range(seeds):
        results, _ = tune_kernel(document["kernel_name"], "__global__ void k() {}",
                                 document["problem_size"], [], document["tune_params"],
                                 restrictions=allowed, cache=cache, simulation_mode=True,
                                 strategy=strategy, strategy_options={"max_fevals": evaluations},
                                 quiet=True, seed=seed)  # fmt: skip
        seen: dict[str, float] = {}
        for result in results:
            key = ",".join(str(result[k]) for k in keys)
            if key not in seen and len(seen) < evaluations:
                time = result.get("time")
                seen[key] = time if isinstance(time, float) else float("inf")
        ratios.append(min(seen.values(), default=float("inf")) / optimum)
    return statistics.median(ratios)


def main(argv: list[str]) -> None:
    path = argv[1]
    seeds = int(argv[2]) if len(argv) > 2 else 50
    chosen = tuple(argv[3:]) or KT_STRATEGIES
    text = kernel_tuner_cache.read_text(path).encode("utf-8")  # decompressed where .gz
    document = json.loads(text)
    size = len(document["cache"])
    budgets = [max(1, round(size * share)) for share in BUDGETS]
    with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as plain:
        plain.write(text)  # Kernel Tuner reads an uncompressed cache
    rows = []
    for name in (strategies.DEFAULT, "random"):
        rows.append((f"gpubench {name}", [gpubench_medians(path, name, n, seeds) for n in budgets]))
        print(f"done: gpubench {name}", file=sys.stderr)
    warnings.filterwarnings("ignore")
    for name in chosen:
        try:
            medians = [kernel_tuner_median(document, plain.name, name, n, seeds) for n in budgets]
        except Exception as exc:  # a strategy that needs a package not installed, or fails
            print(
                f"skipped: Kernel Tuner {name}: {type(exc).__name__}: {exc}"[:200], file=sys.stderr
            )
            continue
        rows.append((f"Kernel Tuner {name}", medians))
        print(f"done: Kernel Tuner {name}", file=sys.stderr)
    Path(plain.name).unlink()
    header = " | ".join(f"{share:.0%} ({n})" for share, n in zip(BUDGETS, budgets, strict=True))
    print(f"| strategy | {header} |")
    print("|---" * (len(budgets) + 1) + "|")
    for name, medians in rows:
        print(f"| {name} | " + " | ".join(f"{m:.3f}" for m in medians) + " |")


if __name__ == "__main__":
    main(sys.argv)

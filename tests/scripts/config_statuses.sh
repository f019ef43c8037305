#!/usr/bin/env bash
# Sweeps bundled config files with one checkout of gpubench and writes each result's status,
# so two checkouts (before and after a change) can be compared with config_statuses.py.
# Usage: tests/scripts/config_statuses.sh CODE_DIR OUT_DIR DEADLINE_S CONFIG...
#   CODE_DIR: a checkout with its own gpubench package and configs/ (run from it);
#   DEADLINE_S: configs not started by then are listed as skipped (a time-limited runner).
set -uo pipefail
code_dir=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
deadline=$(($(date +%s) + $3))
shift 3
for config in "$@"; do
    name=$(echo "$config" | tr '/' '_' | sed 's/\.yaml$//')
    left=$((deadline - $(date +%s)))
    if [ ! -f "$code_dir/$config" ]; then
        echo "$config absent" | tee -a "$out/statuses.txt"
        continue
    fi
    if [ "$left" -lt 20 ]; then
        echo "$config skipped (deadline)" | tee -a "$out/statuses.txt"
        continue
    fi
    start=$(date +%s%N)
    (cd "$code_dir" && PYTHONPATH="${SITE:-/tmp/site}:$code_dir" timeout "$left" python3 -m gpubench \
        sweep "$config" --force --jsonl "$out/$name.jsonl" --json "$out/$name.json" \
        >"$out/$name.log" 2>&1)
    rc=$?
    wall=$((($(date +%s%N) - start) / 1000000))
    python3 - "$out/$name.json" "$config" "$rc" "$wall" <<'PY' | tee -a "$out/statuses.txt"
import collections, json, sys
path, config, rc, wall = sys.argv[1:]
try:
    results = json.load(open(path))["results"]
except (OSError, ValueError, KeyError) as exc:
    print(f"{config} rc={rc} wall={wall} ms: no results ({type(exc).__name__})")
    raise SystemExit
counts = collections.Counter(r["status"] for r in results)
print(f"{config} rc={rc} wall={wall} ms: {dict(sorted(counts.items()))}")
PY
done

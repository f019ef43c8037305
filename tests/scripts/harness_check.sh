#!/usr/bin/env bash
# On a GPU machine (after `source .whl/setup.sh`): the exploit corpus and every GPU test on
# both backends, the untrusted mode's cost on configs/transpose.yaml, a sweep of the axpy
# cheats, and matmul 4096 before and after a change (`compare` at 2%).
# Usage: tests/scripts/harness_check.sh BEFORE_DIR OUT_DIR
set -uo pipefail
before_dir=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
for b in pycuda cuda-core; do
    GPUBENCH_BACKEND=$b timeout 120 python3 -m pytest -q -m gpu tests/engine/test_audit_gpu.py \
        -p no:cacheprovider >"$out/corpus_$b.log" 2>&1
    echo "corpus $b rc=$? $(tail -1 "$out/corpus_$b.log")"
done
for b in pycuda cuda-core; do
    GPUBENCH_BACKEND=$b timeout 170 python3 -m pytest -q -m gpu -n 4 -p no:cacheprovider \
        >"$out/gputests_$b.log" 2>&1
    echo "gpu tests $b rc=$? $(tail -1 "$out/gputests_$b.log")"
done
timeout 90 python3 -m gpubench sweep configs/transpose.yaml --untrusted --force --verbose \
    --json "$out/untrusted.json" >"$out/untrusted.log" 2>&1
echo "untrusted rc=$? $(grep '^wall' "$out/untrusted.log")"
timeout 90 python3 -m gpubench sweep tests/exploits/axpy_cheats.yaml --force \
    --json "$out/axpy_cheats.json" >"$out/axpy_cheats.log" 2>&1
echo "axpy cheats sweep rc=$?"
(cd "$before_dir" && PYTHONPATH="${SITE:-/tmp/site}:$before_dir" timeout 40 python3 -m gpubench \
    run matmul --size 4096 --json "$out/mm_before.json" >"$out/mm_before.log" 2>&1)
timeout 40 python3 -m gpubench run matmul --size 4096 --json "$out/mm_after.json" \
    >"$out/mm_after.log" 2>&1
python3 -m gpubench compare "$out/mm_before.json" "$out/mm_after.json" --threshold 0.02 \
    >"$out/compare_mm.log" 2>&1
echo "compare matmul rc=$? $(tail -1 "$out/compare_mm.log")"

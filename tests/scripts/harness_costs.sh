#!/usr/bin/env bash
# The harness's costs and its no-false-alarm check on a GPU, before and after a change:
#   - `sweep configs/transpose.yaml` with the code before and after, ROUNDS times each (default 2),
#     alternated
#     (the compile cache warm for both), wall time of each, and once more in untrusted mode;
#   - transpose 16384, reduction 2^28 and matmul 4096 measured before and after, then
#     `gpubench compare --threshold 0.02` of each pair.
# Usage: tests/scripts/harness_costs.sh BEFORE_DIR OUT_DIR
#   BEFORE_DIR: a checkout of the code before (its own gpubench package); run from the project.
set -uo pipefail
before_dir=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)

before() { (cd "$before_dir" && PYTHONPATH="${SITE:-/tmp/site}:$before_dir" python3 -m gpubench "$@"); }
after() { python3 -m gpubench "$@"; }

timed() {  # NAME COMMAND...: runs it, its output in OUT/NAME.log, its wall time in walls.txt
    local name=$1
    shift
    local start end
    start=$(date +%s%N)
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    end=$(date +%s%N)
    printf '%-28s rc=%d wall=%d ms\n' "$name" "$rc" $(((end - start) / 1000000)) | tee -a "$out/walls.txt"
}

sweep=configs/transpose.yaml
for round in $(seq 1 "${ROUNDS:-2}"); do
    timed "transpose_before_$round" before sweep "$sweep" --force --verbose \
        --json "$out/transpose_before_$round.json"
    timed "transpose_after_$round" after sweep "$sweep" --force --verbose \
        --json "$out/transpose_after_$round.json"
done
timed transpose_untrusted after sweep "$sweep" --force --verbose --untrusted \
    --json "$out/transpose_untrusted.json"

for side in before after; do
    timed "t16k_$side" "$side" run transpose --size 16384 --json "$out/t16k_$side.json"
    timed "r28_$side" "$side" run reduction --n 268435456 --json "$out/r28_$side.json"
    timed "mm4k_$side" "$side" run matmul --size 4096 --json "$out/mm4k_$side.json"
done
for pair in t16k r28 mm4k; do
    after compare "$out/${pair}_before.json" "$out/${pair}_after.json" --threshold 0.02 \
        >"$out/compare_$pair.log" 2>&1
    echo "compare $pair rc=$?" | tee -a "$out/walls.txt"
done

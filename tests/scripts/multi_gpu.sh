#!/usr/bin/env bash
# The multi-GPU measurements of the README (a 2-GPU host): the transpose sweep on one GPU and
# on both, compared point by point; then a Dask scheduler with one worker per GPU on localhost
# running the smoke sweep. Logs go under $OUT (default: ./multi-gpu-out). STEPS picks the parts
# (default "sweeps compare dask"), so the parts fit separate calls of a time-limited runner.
set -uo pipefail
OUT=${OUT:-multi-gpu-out}
STEPS=${STEPS:-sweeps compare dask}
wants() { [[ " $STEPS " == *" $1 "* ]]; }
mkdir -p "$OUT"
run() { local name=$1 limit=$2; shift 2
  local start end code
  start=$(date +%s%N)
  timeout "$limit" python3 -m gpubench "$@" > "$OUT/$name.txt" 2>&1; code=$?
  end=$(date +%s%N)
  echo "$name exit $code wall $(( (end - start) / 1000000 )) ms" | tee -a "$OUT/summary.txt"
}
if wants sweeps; then
  run one-gpu 300 sweep configs/transpose.yaml --devices 0 --jsonl "$OUT/one.jsonl" --json "$OUT/one.json"
  run two-gpus 200 sweep configs/transpose.yaml --devices all --jsonl "$OUT/two.jsonl" --json "$OUT/two.json"
fi
if wants compare; then
  run compare 60 compare "$OUT/one.json" "$OUT/two.json" --markdown "$OUT/compare.md"
  tail -2 "$OUT/compare.txt" | tee -a "$OUT/summary.txt"
  grep -oE '\| (same|faster|slower|only in [a-z]+|not measured[^|]*|broken[^|]*) \|$' "$OUT/compare.md" | sort | uniq -c | tee -a "$OUT/summary.txt"
fi
wants dask || exit 0
# Dask: a scheduler that retries a task once after its worker dies, one worker per GPU.
DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1 dask scheduler --port 8786 > "$OUT/scheduler.txt" 2>&1 &
sleep 4
for gpu in 0 1; do
  CUDA_VISIBLE_DEVICES=$gpu DASK_DISTRIBUTED__WORKER__DAEMON=False \
    dask worker tcp://127.0.0.1:8786 --nworkers 1 --nthreads 1 --name "gpu$gpu" > "$OUT/worker$gpu.txt" 2>&1 &
done
sleep 8
run dask-smoke 90 sweep configs/smoke.yaml --scheduler tcp://127.0.0.1:8786 --jsonl "$OUT/dask.jsonl" --json "$OUT/dask.json"
python3 - "$OUT/dask.json" <<'PY' | tee -a "$OUT/summary.txt"
import collections, json, sys
results = json.load(open(sys.argv[1]))["results"]
print("dask results by GPU:", dict(collections.Counter(r["device"]["uuid"][-8:] for r in results)),
      "statuses:", dict(collections.Counter(r["status"] for r in results)))
PY
kill %1 %2 %3 2>/dev/null

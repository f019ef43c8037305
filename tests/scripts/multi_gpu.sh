#!/usr/bin/env bash
# The several-GPU measurements of docs/several-gpus-and-ci.md, on one host with any number of
# GPUs (one worker per GPU; on a one-GPU host "all" is that GPU and the speed-up is 1x):
#   sweeps   configs/transpose.yaml on GPU 0 alone, then on every GPU (--devices all)
#   compare  the two logs point by point
#   dask     the same sweep through a Dask scheduler with one worker per GPU on this host
#   killpool kill -9 of one pool worker mid-sweep (--devices all)
#   killdask kill -9 of one Dask worker process mid-sweep
# After each killed run the log is checked: every (point, variant) of the sweep once.
# Logs go under $OUT (default: ./multi-gpu-out). STEPS picks the parts (default: all five), so
# the parts fit separate calls of a time-limited runner. SWEEP overrides the sweep file and
# KILL_AFTER the seconds before a kill (default 12).
set -uo pipefail
OUT=${OUT:-multi-gpu-out}
STEPS=${STEPS:-sweeps compare dask killpool killdask}
SWEEP=${SWEEP:-configs/transpose.yaml}
KILL_AFTER=${KILL_AFTER:-12}
GPUS=$(nvidia-smi -L | wc -l)
wants() { [[ " $STEPS " == *" $1 "* ]]; }
mkdir -p "$OUT"
echo "host: $GPUS GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)" | tee -a "$OUT/summary.txt"
millis() { date +%s%3N; }
run() { local name=$1 limit=$2; shift 2
  local start code
  start=$(millis)
  timeout "$limit" python3 -m gpubench "$@" > "$OUT/$name.txt" 2>&1; code=$?
  echo "$name exit $code wall $(( $(millis) - start )) ms" | tee -a "$OUT/summary.txt"
}
# Every (point, variant) of the sweep exactly once in a JSON-lines log, and how they ended.
check_log() {
  python3 - "$1" "$SWEEP" <<'PY' | tee -a "$OUT/summary.txt"
import collections, sys
from gpubench.load import config
from gpubench.model.results import load_jsonl, point_key
_, results = load_jsonl(sys.argv[1])
spec = config.load(sys.argv[2])
expected = {(point_key(p), v) for p in spec.points() for v in spec.variants}
seen = collections.Counter((point_key(r.point), r.variant) for r in results)
twice = [k for k, n in seen.items() if n > 1]
print(f"  {sys.argv[1]}: {len(results)} results for {len(expected)} (point, variant) pairs;",
      f"missing {len(expected - set(seen))}, twice {len(twice)}, unexpected {len(set(seen) - expected)};",
      "statuses", dict(collections.Counter(str(r.status) for r in results)))
PY
}
# Starts a Dask scheduler (a task whose worker dies runs once more, then is crashed) and one
# worker per GPU on this host. Their process ids go in DASK_PIDS: the script stops those only,
# never processes found by name (on a shared node those may be someone else's).
DASK_PIDS=()
start_dask() {
  # gpubench keeps one task on each worker, pinned to it (worker-saturation does not apply to
  # it): a worker that dies holds the point it runs, which is noted.
  DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1 \
    dask scheduler --port 8786 > "$OUT/scheduler.txt" 2>&1 &
  DASK_PIDS+=($!)
  sleep 4
  for ((gpu = 0; gpu < GPUS; gpu++)); do
    CUDA_VISIBLE_DEVICES=$gpu DASK_DISTRIBUTED__WORKER__DAEMON=False \
      dask worker tcp://127.0.0.1:8786 --nworkers 1 --nthreads 1 --name "gpu$gpu" \
      --preload gpubench.engine.dask_preload > "$OUT/worker$gpu.txt" 2>&1 &
    DASK_PIDS+=($!)
  done
  sleep 8
}
# Workers first (each nanny stops the worker process it spawned), then the scheduler.
stop_dask() {
  local pid
  for ((i = ${#DASK_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${DASK_PIDS[i]}
    kill "$pid" 2>/dev/null
  done
  for pid in "${DASK_PIDS[@]}"; do
    wait "$pid" 2>/dev/null
  done
  DASK_PIDS=()
}
# The processes a PID spawned with multiprocessing (gpubench's workers, a Dask nanny's worker).
spawned_by() { pgrep -P "$1" -f "multiprocessing.spawn"; }

if wants sweeps; then
  run one-gpu 300 sweep "$SWEEP" --devices 0 --jsonl "$OUT/one.jsonl" --json "$OUT/one.json" --force
  run all-gpus 300 sweep "$SWEEP" --devices all --jsonl "$OUT/all.jsonl" --json "$OUT/all.json" --force
fi
if wants compare; then
  run compare 60 compare "$OUT/one.json" "$OUT/all.json" --markdown "$OUT/compare.md"
  tail -2 "$OUT/compare.txt" | tee -a "$OUT/summary.txt"
  grep -oE '\| (same|faster|slower|only in [a-z]+|not measured[^|]*|broken[^|]*) \|$' "$OUT/compare.md" | sort | uniq -c | tee -a "$OUT/summary.txt"
fi
if wants dask; then
  start_dask
  run dask 300 sweep "$SWEEP" --scheduler tcp://127.0.0.1:8786 --jsonl "$OUT/dask.jsonl" --json "$OUT/dask.json" --force
  check_log "$OUT/dask.jsonl"
  python3 - "$OUT/dask.json" <<'PY' | tee -a "$OUT/summary.txt"
import collections, json, sys
results = json.load(open(sys.argv[1]))["results"]
print("  dask results by GPU:", dict(collections.Counter(r["device"]["uuid"][-8:] for r in results)))
PY
  [[ -f "$OUT/all.json" ]] && run compare-dask 60 compare "$OUT/all.json" "$OUT/dask.json" && tail -2 "$OUT/compare-dask.txt" | tee -a "$OUT/summary.txt"
  stop_dask
fi
if wants killpool; then
  python3 -m gpubench sweep "$SWEEP" --devices all --jsonl "$OUT/killpool.jsonl" --force > "$OUT/killpool.txt" 2>&1 &
  sweep_pid=$!
  sleep "$KILL_AFTER"
  victim=$(spawned_by "$sweep_pid" | tail -1)
  echo "killpool: kill -9 of pool worker $victim after $KILL_AFTER s" | tee -a "$OUT/summary.txt"
  kill -9 "$victim"
  wait "$sweep_pid"; echo "killpool exit $?" | tee -a "$OUT/summary.txt"
  grep -h "once more\|crashed" "$OUT/killpool.txt" | tee -a "$OUT/summary.txt"
  check_log "$OUT/killpool.jsonl"
fi
if wants killdask; then
  start_dask
  python3 -m gpubench sweep "$SWEEP" --scheduler tcp://127.0.0.1:8786 --jsonl "$OUT/killdask.jsonl" --force > "$OUT/killdask.txt" 2>&1 &
  sweep_pid=$!
  sleep "$KILL_AFTER"
  # The Dask worker process that runs the tasks (its nanny starts a new one), not the nanny.
  nanny=${DASK_PIDS[1]}  # the first worker's nanny (DASK_PIDS[0] is the scheduler)
  victim=$(spawned_by "$nanny" | head -1)
  echo "killdask: kill -9 of Dask worker process $victim (nanny $nanny) after $KILL_AFTER s" | tee -a "$OUT/summary.txt"
  kill -9 "$victim"
  wait "$sweep_pid"; echo "killdask exit $?" | tee -a "$OUT/summary.txt"
  grep -h "once more\|crashed\|lost" "$OUT/killdask.txt" | tee -a "$OUT/summary.txt"
  check_log "$OUT/killdask.jsonl"
  grep -ch "Remove worker\|Register worker" "$OUT/scheduler.txt" | tee -a "$OUT/summary.txt"
  stop_dask
fi

#!/usr/bin/env bash
# The harness-hardening checks on a GPU machine; logs go to $OUT (or ./out).
# Run from the project root after installing gpubench with its cuda extra.
set -u
out=${OUT:-out}; mkdir -p "$out"
log() { echo "== $*" | tee -a "$out/summary.txt"; }

log "20-point sweep with an out-of-bounds kernel, an endless kernel and a compile error"
gpubench sweep tests/suites/faulty.yaml --force --json "$out/faulty.json" > "$out/faulty.txt" 2>&1
log "exit code $?"
gpubench sweep tests/suites/faulty_clean.yaml --force --json "$out/clean.json" > "$out/clean.txt" 2>&1
log "clean run exit code $?"
python3 -c "
import json, collections
r = json.load(open('$out/faulty.json'))['results']
print(collections.Counter(x['status'] for x in r), 'restarts', json.load(open('$out/faulty.json'))['environment']['worker_restarts'])
" | tee -a "$out/summary.txt"
gpubench compare "$out/clean.json" "$out/faulty.json" --threshold 0.02 | tail -4 | tee -a "$out/summary.txt"

log "50 compile-time configurations: one nvcc at a time, then 16 in parallel, then again"
GPUBENCH_CACHE_DIR=/tmp/cache-serial GPUBENCH_COMPILE_WORKERS=1 gpubench sweep tests/suites/compile50.yaml --force 2>&1 | grep compiled | tee -a "$out/summary.txt"
GPUBENCH_CACHE_DIR=/tmp/cache-parallel gpubench sweep tests/suites/compile50.yaml --force 2>&1 | grep compiled | tee -a "$out/summary.txt"
GPUBENCH_CACHE_DIR=/tmp/cache-parallel gpubench sweep tests/suites/compile50.yaml --force 2>&1 | grep compiled | tee -a "$out/summary.txt"

log "kill -9 halfway through the reduction sweep, then --resume"
rm -f "$out/red.jsonl"
gpubench sweep configs/reduction.yaml --jsonl "$out/red.jsonl" > /dev/null 2>&1 &
pid=$!
results() { local n; n=$(grep -c '"kind": "result"' "$out/red.jsonl" 2>/dev/null); echo "${n:-0}"; }
while [ "$(results)" -lt 120 ]; do sleep 0.2; done
kill -9 $pid; wait $pid 2>/dev/null
log "killed with $(results) results logged"
gpubench sweep configs/reduction.yaml --resume "$out/red.jsonl" --json "$out/red_resumed.json" 2>&1 | grep -E "resuming|compiled|failed" | tee -a "$out/summary.txt"
python3 -c "
import json
lines = [json.loads(l) for l in open('$out/red.jsonl')]
lines = [l for l in lines if l.get('kind') == 'result']
keys = [(json.dumps(l['point'], sort_keys=True), l['variant']) for l in lines]
final = json.load(open('$out/red_resumed.json'))['results']
print('logged', len(keys), 'distinct', len(set(keys)), 'final', len(final), 'statuses', sorted({r['status'] for r in final}))
" | tee -a "$out/summary.txt"

#!/usr/bin/env bash
# The --profile figures of the README: Nsight Compute counters for the access, banks,
# divergence and unroll suites on one GPU. Logs under $OUT (default: ./profile-out).
set -uo pipefail
OUT=${OUT:-profile-out}
mkdir -p "$OUT"
cat > "$OUT/access.yaml" <<'YAML'
suite: access
variants: [read_stride]
baseline: read_stride
params: {working_set: 268435456, stride: [1, 2, 4, 8, 32]}
YAML
cat > "$OUT/banks.yaml" <<'YAML'
suite: banks
variants: [strided]
params: {stride: [1, 2, 4, 8, 16, 32], word: 4}
YAML
cat > "$OUT/divergence.yaml" <<'YAML'
suite: divergence
params: {n: 16777216, work: 256}
YAML
cat > "$OUT/unroll.yaml" <<'YAML'
suite: unroll
params: {n: 16777216, work: 256}
YAML
for suite in access banks divergence unroll; do
  timeout 150 python3 -m gpubench sweep "$OUT/$suite.yaml" --profile --json "$OUT/$suite-profiled.json" \
    --markdown "$OUT/$suite-profiled.md" > "$OUT/$suite-profiled.txt" 2>&1
  echo "$suite --profile exit $?"
done

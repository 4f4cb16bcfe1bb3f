#!/usr/bin/env bash
# bench/device_run.sh — the whole gpu tier, compute-sanitizer, the Python GPU tests and the shapes.json
# benchmark in ONE device call (a cold start costs a minute of the session's device time).
#
# Here (no GPU):   ./bench/device_run.sh --prepare      # builds build/ (portable) and fills carry-all/
# Device call:     run(command="bash bench/device_run.sh", carry=["carry-all", ".bench_shared"])
#   .bench_shared/ holds a copy of shared/bench/{anchors.py,shapes.json} (git-ignored).
# Logs and tables go to $OUT (at most 8 files come back: keep the list below short).
set -u
cd "$(dirname "$0")/.."
C=carry-all
if [ "${1:-}" = --prepare ]; then
  ./scripts/build.sh >/dev/null || exit 1
  rm -rf $C && mkdir -p $C/capi || exit 1
  for t in build/tests/gpu_*_test; do strip -o "$C/$(basename "$t")" "$t"; done
  strip -o $C/capi/libkiln.so.0.1.0 build/capi/libkiln.so.0.1.0
  du -sh $C   # the carry limit is 64 MiB in all
  exit 0
fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_CACHE_DIR=$(mktemp -d)
OUT=${OUT:-/tmp/kiln-device-run}
mkdir -p "$OUT"
SAN=/usr/local/cuda/bin/compute-sanitizer; [ -x "$SAN" ] || SAN=$(command -v compute-sanitizer)
t0=$(date +%s)
{
  nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv
  for t in $C/gpu_*_test; do
    log=$(mktemp)
    timeout "${GPU_TEST_TIMEOUT:-150}" "$t" --gtest_filter='-*Timing*' >"$log" 2>&1
    echo "$(basename "$t") rc=$? $(( $(date +%s) - t0 ))s: $(grep -E '^\[  (PASSED|FAILED) ' "$log" | tr '\n' ' ')"
    cat "$log" >>"$OUT/gpu_tier.log"   # one file: only 8 come back
  done
  ( timeout 120 "$SAN" --tool memcheck --error-exitcode 9 $C/gpu_epilogue_gpu_test \
      --gtest_filter='EpilogueRepeatGpuTest.*:EpilogueStridedGpuTest.*' | tail -3 ) 2>&1
  KILN_LIBRARY=$PWD/$C/capi/libkiln.so.0.1.0 timeout 120 python3 -m pytest -q python/tests 2>&1 | tail -3
} >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
KILN_LIBRARY=$PWD/$C/capi/libkiln.so.0.1.0 KILN_ANCHORS_DIR=$PWD/.bench_shared timeout "${BENCH_TIMEOUT:-240}" \
  python3 bench/bench_shapes.py --out "$OUT/shapes" >"$OUT/bench_shapes.log" 2>&1
echo "bench_shapes rc=$? $(( $(date +%s) - t0 ))s"; tail -5 "$OUT/bench_shapes.log"

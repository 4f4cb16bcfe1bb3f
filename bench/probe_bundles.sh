#!/usr/bin/env bash
# bench/probe_bundles.sh — device side: bench/probe_decode.sh (pinned `kiln run` timings against the plan)
# once per prepared bundle, in ONE device call, so kernel variants built here into their own CARRY_DIR
# (`CARRY_DIR=carry-x bench/device_run.sh --prepare`) are timed side by side on the same GPU.
#   run(command="PROBE_DIRS='carry-a carry-b carry-a' PROBE_SHAPES='spec|m|n|k|cfg,...' bash bench/probe_bundles.sh",
#       carry=["carry-a", "carry-b"])
# PROBE_TESTS="binary filter" also runs that gpu test binary of every bundle (its PASSED / FAILED lines), or
# of the bundles PROBE_TEST_DIRS names.
# Out: $OUT/probe_bundles.txt.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kiln-probe}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for d in ${PROBE_DIRS:?PROBE_DIRS names the bundle directories}; do
  X=$(mktemp -d)
  tar -C "$X" -xJf "$d/bundle.tar.xz" || { echo "##### $d: cannot unpack"; continue; }
  echo "##### $d"
  if [ -n "${PROBE_TESTS:-}" ] && [[ " ${PROBE_TEST_DIRS:-$d} " == *" $d "* ]]; then
    read -r bin filter <<<"$PROBE_TESTS"
    KILN_CACHE_DIR=$(mktemp -d) timeout "${PROBE_TEST_TIMEOUT:-200}" "$X/$bin" --gtest_filter="$filter" 2>&1 |
      grep -E '^\[  (PASSED|FAILED) |^\[  FAILED  \]' | head -20
  fi
  KILN_CLI=$X/kiln OUT=$OUT bash bench/probe_decode.sh
done 2>&1 | tee "$OUT/probe_bundles.txt"

#!/usr/bin/env bash
# bench/ab_bundles.sh — device side: bench_shapes.py on several prepared bundles in ONE device call, so that
# variants of a kernel (each built here into its own CARRY_DIR by `CARRY_DIR=carry-x bench/device_run.sh
# --prepare`) are compared with each other and with the anchors in the same run. The tests are skipped.
#   run(command="AB_DIRS='carry-a carry-b carry-a' BENCH_ARGS='--only dense --max-m 16' bash bench/ab_bundles.sh",
#       carry=["carry-a", "carry-b", ".bench_shared"])
# A directory may repeat (drift check). Out: $OUT/<i>-<dir>.md (each run's RESULTS fragment) and
# $OUT/ab.txt (what ran, in order, with each run's exit status); everything else is removed (8 files come
# back at most).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kiln-ab}
mkdir -p "$OUT"
i=0
for d in ${AB_DIRS:?AB_DIRS names the bundle directories}; do
  i=$((i + 1))
  o=$(mktemp -d)
  t0=$(date +%s)
  CARRY_DIR=$d SKIP_TESTS=1 DEVICE_RUN_BUDGET=${AB_BUDGET:-120} OUT=$o bash bench/device_run.sh >/dev/null 2>&1
  rc=$?
  echo "$i $d rc=$rc $(( $(date +%s) - t0 ))s" >>"$OUT/ab.txt"
  cp "$o/shapes/RESULTS.fragment.md" "$OUT/$i-$d.md" 2>/dev/null || tail -5 "$o/bench_shapes.log" >>"$OUT/ab.txt"
  rm -rf "$o"
done
cat "$OUT/ab.txt"

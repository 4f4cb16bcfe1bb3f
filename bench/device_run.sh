#!/usr/bin/env bash
# bench/device_run.sh — the whole gpu tier, compute-sanitizer, dispatch cost, the Python GPU tests and the
# bench/shapes.json benchmark in ONE run on the GPU machine (which needs no build tools: everything it runs
# is built and compiled here).
#
# Here (no GPU):   ./bench/device_run.sh --prepare
#   builds build/ (portable), strips the gpu test binaries, the CLI and libkiln.so, compiles every kernel
#   bench_shapes.py runs into a kernel cache (KILN_TUNING_DEVICE=h200) and packs all of it into
#   carry-all/bundle.tar.xz (~10 MB: the binaries share most of their bytes).
# GPU machine:     bash bench/device_run.sh
#   from the root of a copy of this working tree that includes carry-all/ (git-ignored; CARRY_DIR names
#   another). The anchors and shapes are bench/anchors.py and bench/shapes.json.
#   DEVICE_RUN_BUDGET (default 560) is the seconds the whole script may take; bench_shapes.py gets what
#   the tests leave and writes its tables after every shape, so a time-out keeps what ran.
# Logs and tables go to $OUT (default /tmp/kiln-device-run): summary.txt, gpu_tier.log, bench_shapes.log,
# shapes/results.json, shapes/RESULTS.fragment.md.
# Options (environment): TEST_BINS / TEST_FILTER / EXTRA_RUNS / SAN_RUNS run only the named test binaries and
# sanitizer runs instead of the whole tier; SKIP_TESTS skips the tests; SAN_ONLY limits the default
# sanitizer runs; POST_SCRIPT runs a device-side script after the tests (e.g. bench/ncu_profile.sh);
# BENCH_ARGS are passed to bench_shapes.py (e.g. "--only dense --max-m 16"); TUNE_SHAPES / TUNE_COMPARE at
# --prepare add a tuning run / a tuner-against-exhaustive comparison (below).
set -u
cd "$(dirname "$0")/.."
C=${CARRY_DIR:-carry-all}
if [ "${1:-}" = --prepare ]; then
  ./scripts/build.sh >/dev/null || exit 1
  S=$(mktemp -d)
  mkdir -p "$S/capi" "$S/cache" || exit 1
  for t in build/tests/gpu_*_test; do strip -o "$S/$(basename "$t")" "$t"; done
  strip -o "$S/capi/libkiln.so.0.1.0" build/capi/libkiln.so.0.1.0
  strip -o "$S/kiln" build/tools/kiln
  KILN_TUNING_DEVICE=h200 KILN_LIBRARY=build/capi/libkiln.so.0.1.0 \
    python3 bench/precompile.py --cache-dir "$S/cache" | tail -1 || exit 1
  # Optional: candidates of a tuning run compiled here (TUNE_SHAPES=file.json; timed on the device).
  if [ -n "${TUNE_SHAPES:-}" ]; then
    KILN_CACHE_DIR="$S/cache" build/tools/kiln tune "$TUNE_SHAPES" --compile-only --gpu h200 \
      --max-candidates "${TUNE_CANDIDATES:-24}" | tail -1 || exit 1
    cp "$TUNE_SHAPES" "$S/tune_shapes.json"
  fi
  # Optional: the tuner-vs-exhaustive comparison (TUNE_COMPARE=file.json): every candidate compiled here.
  if [ -n "${TUNE_COMPARE:-}" ]; then
    KILN_CACHE_DIR="$S/cache" build/tools/kiln tune "$TUNE_COMPARE" --compile-only --gpu h200 --max-candidates 0 |
      tail -1 || exit 1
    cp "$TUNE_COMPARE" "$S/compare_shapes.json"
  fi
  rm -rf $C && mkdir -p $C || exit 1
  tar -C "$S" -cf - . | xz -9 -T1 >$C/bundle.tar.xz || exit 1
  rm -rf "$S"
  du -sh $C
  exit 0
fi
BUDGET=${DEVICE_RUN_BUDGET:-560}
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
X=$(mktemp -d)
tar -C "$X" -xJf $C/bundle.tar.xz 2>/dev/null ||
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" $C/bundle.tar.xz "$X" || exit 1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_CLI=$X/kiln
export KILN_LIBRARY=$X/capi/libkiln.so.0.1.0
OUT=${OUT:-/tmp/kiln-device-run}
mkdir -p "$OUT"
SAN=/usr/local/cuda/bin/compute-sanitizer; [ -x "$SAN" ] || SAN=$(command -v compute-sanitizer)
# sanitize TOOL BINARY FILTER SECONDS: one compute-sanitizer run (own kernel cache): the first lines of
# its first reports (what, where, which test) and its last two lines.
sanitize() {
  local log
  # A run that could end past the budget is skipped, saying so.
  if [ $(( $(elapsed) + $4 )) -gt "$BUDGET" ]; then echo "skipped $1 $2 $3: ${4}s would pass the ${BUDGET}s budget"; return; fi
  # SAN_ONLY=regex: only the runs whose binary matches (the default list is ~400 s).
  if [ -n "${SAN_ONLY:-}" ] && ! [[ $2 =~ $SAN_ONLY ]]; then echo "skipped $1 $2 $3 (SAN_ONLY)"; return; fi
  log=$(mktemp)
  KILN_CACHE_DIR=$(mktemp -d) timeout "$4" "$SAN" --tool "$1" --error-exitcode 9 "$X/$2" --gtest_filter="$3" >"$log" 2>&1
  grep -m 24 -E '^========= +(Error|Race|Warning|Invalid|Write|Read|at |by |Saved|Barrier)|^\[ RUN' "$log" |
    grep -B1 -A0 -E '^=========' | head -24
  tail -2 "$log"
}
if [ -n "${TEST_BINS:-}" ]; then
  # Only the named gpu test binaries (e.g. TEST_BINS="gpu_sm90_gemm_gpu_test"), one after the other.
  for n in $TEST_BINS; do
    KILN_CACHE_DIR=$(mktemp -d) timeout "${GPU_TEST_TIMEOUT:-240}" "$X/$n" --gtest_filter="${TEST_FILTER:--*Timing*}" \
      >>"$OUT/gpu_tier.log" 2>&1
    echo "$n rc=$? at $(elapsed)s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tier.log" | tail -2 | tr '\n' ' ')"
  done >"$OUT/summary.txt"
  # EXTRA_RUNS="binary filter;...": plain runs of other filters (figures, timing and result lines kept).
  IFS=';' read -ra extra <<<"${EXTRA_RUNS:-}"
  for r in "${extra[@]}"; do
    read -r bin filter <<<"$r"
    echo "--- $bin $filter at $(elapsed)s"
    KILN_CACHE_DIR=$(mktemp -d) timeout 150 "$X/$bin" --gtest_filter="$filter" 2>&1 |
      grep -E '^\[ (figures|timing) |^\[  (PASSED|FAILED) |^\[  FAILED  \]'
  done >>"$OUT/summary.txt"
  # SAN_RUNS="tool binary filter;...": compute-sanitizer runs after them.
  IFS=';' read -ra runs <<<"${SAN_RUNS:-}"
  for r in "${runs[@]}"; do
    read -r tool bin filter <<<"$r"
    echo "--- $tool $bin $filter at $(elapsed)s"; sanitize "$tool" "$bin" "$filter" 150
  done >>"$OUT/summary.txt"
  # POST_SCRIPT=path: a device-side script run after them (KILN_CLI and KILN_LIBRARY point into the bundle).
  [ -n "${POST_SCRIPT:-}" ] && { echo "--- $POST_SCRIPT at $(elapsed)s"; timeout "${POST_TIMEOUT:-200}" bash "$POST_SCRIPT" 2>&1; } >>"$OUT/summary.txt"
elif [ -n "${SKIP_TESTS:-}" ]; then echo "tests skipped (SKIP_TESTS)" >"$OUT/summary.txt"; else
{
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
  echo "unpacked in $(elapsed)s"
  # Correctness: every binary at once (16 cores compile in parallel; one GPU), each with its own cache.
  pids=()
  for t in "$X"/gpu_*_test; do
    n=$(basename "$t")
    ( KILN_CACHE_DIR=$(mktemp -d) timeout "${GPU_TEST_TIMEOUT:-240}" "$t" \
        --gtest_filter='-*Timing*:DispatchCost*' >"$X/$n.log" 2>&1
      echo "rc=$?" >>"$X/$n.log" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  for t in "$X"/gpu_*_test; do
    n=$(basename "$t")
    echo "$n $(tail -1 "$X/$n.log") $(grep -E '^\[  (PASSED|FAILED) ' "$X/$n.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]' "$X/$n.log" | head -20
    cat "$X/$n.log" >>"$OUT/gpu_tier.log"   # one log for the whole tier
  done
  echo "gpu tier done at $(elapsed)s"
  # Host cost of a prepared plan's run() (alone on the GPU), default dispatch and the portable family.
  KILN_CACHE_DIR=$(mktemp -d) "$X/gpu_sm80_gemm_gpu_test" --gtest_filter='DispatchCost*' 2>&1 | grep -E 'figures|OK|FAILED'
  KILN_FAMILY=sm80 KILN_CACHE_DIR=$(mktemp -d) "$X/gpu_sm80_gemm_gpu_test" --gtest_filter='DispatchCost*' 2>&1 |
    grep -E 'figures|FAILED'
  # The portable family's grouped FP8 / 16-bit cases (the default dispatch takes the sm90 family).
  echo "formats under KILN_FAMILY=sm80: $(KILN_FAMILY=sm80 KILN_CACHE_DIR=$(mktemp -d) timeout 150 \
    "$X/gpu_formats_gpu_test" 2>&1 | grep -E '^\[  (PASSED|FAILED) ' | tr '\n' ' ')"
  echo "epilogues under KILN_FAMILY=sm80: $(KILN_FAMILY=sm80 KILN_CACHE_DIR=$(mktemp -d) timeout 150 \
    "$X/gpu_epilogue_gpu_test" --gtest_filter='Epilogues/*' 2>&1 | grep -E '^\[  (PASSED|FAILED) ' | tr '\n' ' ')"
  echo "--- memcheck (epilogues, sm90 repeat, sm90 grouped) / racecheck (sm90 repeat, grouped) at $(elapsed)s"
  sanitize memcheck gpu_sm90_gemm_gpu_test 'GroupedConfigs/*m300*:GroupedConfigs/*m1_*' 150
  sanitize racecheck gpu_sm90_gemm_gpu_test 'GroupedConfigs/*m1_*' 150
  echo "--- memcheck / racecheck (sm90 MXFP8) at $(elapsed)s"
  sanitize memcheck gpu_sm90_gemm_gpu_test 'MxConfigs/*m77*:MxConfigs/*m1_*' 150
  sanitize racecheck gpu_sm90_gemm_gpu_test 'MxConfigs/*m77_n200*' 150
  echo "--- memcheck / racecheck (sm90 TMA-store epilogue) at $(elapsed)s"
  sanitize memcheck gpu_sm90_gemm_gpu_test 'TmaStoreConfigs/*m77_*:TmaStoreConfigs/*m1_*' 150
  # racecheck is slow: the wide tile and one 16-column-box tile (the others are run by hand when they change).
  sanitize racecheck gpu_sm90_gemm_gpu_test \
    'TmaStoreConfigs/*bf16_b_bf16_out_bf16_m77_*pin128x256w8x1t:TmaStoreConfigs/*bf16_b_bf16_out_bf16_m77_*pin128x176w8x1t' 150
  echo "--- TMA-store timing at $(elapsed)s"
  KILN_CACHE_DIR=$(mktemp -d) timeout 150 "$X/gpu_sm90_gemm_gpu_test" --gtest_filter='Sm90GemmTiming.TmaStore*' 2>&1 |
    grep -E '^\[ timing|OK|FAILED'
  echo "--- memcheck / racecheck (sm90 split-K) at $(elapsed)s"
  sanitize memcheck gpu_sm90_gemm_gpu_test 'SplitKConfigs/*m130*:SplitKConfigs/*m1_*' 150
  sanitize racecheck gpu_sm90_gemm_gpu_test 'SplitKConfigs/*m77*k4' 150
  sanitize memcheck gpu_epilogue_gpu_test 'EpilogueRepeatGpuTest.*:EpilogueStridedGpuTest.*' 120
  echo "--- memcheck (portable mixed mainloop: f16 activations, MXFP8 and grouped FP8 weights) at $(elapsed)s"
  sanitize memcheck gpu_formats_gpu_test 'NewPairings/*a_f16_b_mxfp4*:NewPairings/*mxfp8_out*:NewPairings/*a_bf16_b_e4m3_n*' 150
  echo "--- memcheck / racecheck (sm90 N tiles between the powers of two) at $(elapsed)s"
  sanitize memcheck gpu_sm90_gemm_gpu_test 'OddNConfigs/*m77_*:OddNConfigs/*m1_*' 150
  sanitize racecheck gpu_sm90_gemm_gpu_test 'OddNConfigs/*m77_*pin128x192w8x1t:OddNConfigs/*m77_*pin128x112*' 150
  echo "--- memcheck / racecheck (sm90 ping-pong consumers, section 16) at $(elapsed)s"
  sanitize memcheck gpu_sm90_gemm_gpu_test 'PingPongConfigs/*m77_*:PingPongConfigs/*m2000_*' 150
  # Several tiles per CTA (2000 x 3000) and eight (4096 x 4096 x 256): the order barriers complete many times.
  sanitize racecheck gpu_sm90_gemm_gpu_test \
    'PingPongConfigs/*a_e4m3_m_*m2000_*pin128x128w4x1tp:PingPongConfigs/*a_bf16_b_bf16_out_bf16_m4096_*pin128x128w4x1c2tp' 150
  # The slab in two / four chunks (tma_store 2 / 4) and the wide ping-pong tiles (128 x 176 / 192).
  sanitize memcheck gpu_sm90_gemm_gpu_test 'HalfSlabConfigs/*m77_*:PingPongConfigs/*m77_*tq*:PingPongConfigs/*m1_*pin128x176*' 150
  # (racecheck: one tile per CTA, and eight: 4096 x 4096 x 256 reuses each chunk buffer across tiles.)
  sanitize racecheck gpu_sm90_gemm_gpu_test \
    'HalfSlabConfigs/*bf16_b_bf16_out_bf16_m77_*pin128x256w8x1th:PingPongConfigs/*e4m3_m_b_e4m3_n_out_bf16_m1000_*pin128x176w4x1tqp' 150
  sanitize racecheck gpu_sm90_gemm_gpu_test \
    'HalfSlabConfigs/*a_bf16_b_bf16_out_bf16_m4096_*pin128x128w4x1thp:PingPongConfigs/*a_bf16_b_bf16_out_bf16_m4096_*pin128x176w4x1tqp' 150
  sanitize memcheck gpu_sm90_gemm_gpu_test 'Sm90GemmRepeatTest.*' 120
  sanitize racecheck gpu_sm90_gemm_gpu_test 'Sm90GemmRepeatTest.*' 120
  echo "--- memcheck (MXFP8 pre-pass: conversion kernel + bf16 kernel) at $(elapsed)s"
  sanitize memcheck gpu_mx_prepass_gpu_test 'MxPrepassGpuTest.*' 150
  echo "--- MXFP8 default kernel (4096 x 7168 x 16384), SASS opcode counts at $(elapsed)s"
  CUOBJ=/usr/local/cuda/bin/cuobjdump; [ -x "$CUOBJ" ] || CUOBJ=$(command -v cuobjdump)
  KILN_CACHE_DIR=$(mktemp -d) "$X/kiln" compile "gemm a=mxfp8 b=mxfp8 out=bf16" --arch sm_90a --m 4096 --n 7168 \
    --k 16384 --emit cubin --out "$X/mx.cubin" >/dev/null 2>&1 &&
    "$CUOBJ" --dump-sass "$X/mx.cubin" 2>/dev/null | grep -oE '^ +/\*[0-9a-f]+\*/ +[A-Z][A-Z0-9_.]+' |
    awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -24 | tr '\n' ' '
  echo
  echo "--- pytest at $(elapsed)s"
  KILN_CACHE_DIR=$(mktemp -d) timeout 120 python3 -m pytest -q python/tests 2>&1 | tail -3
  # POST_SCRIPT=path here too (see the TEST_BINS branch).
  [ -n "${POST_SCRIPT:-}" ] && { echo "--- $POST_SCRIPT at $(elapsed)s"; timeout "${POST_TIMEOUT:-200}" bash "$POST_SCRIPT" 2>&1; }
  echo "tests done at $(elapsed)s"
} >"$OUT/summary.txt" 2>&1
fi
cat "$OUT/summary.txt"
left=$(( BUDGET - $(elapsed) ))
[ $left -gt 30 ] || { echo "no time left for bench_shapes"; exit 0; }
mkdir -p "$X/bench-cache" && cp "$X/cache/kiln.db" "$X/bench-cache/" 2>/dev/null
# Optional: the tuner's default space against an exhaustive sweep of the same space, same shapes, no
# recording (the default's winner should be within 3% of the sweep's best; time per shape).
if [ -f "$X/compare_shapes.json" ]; then
  for mode in default exhaustive; do
    extra=""; [ $mode = exhaustive ] && extra="--max-candidates 0"
    t1=$(date +%s)
    KILN_CACHE_DIR=$X/bench-cache timeout 240 "$X/kiln" tune "$X/compare_shapes.json" --gpu h200 --budget 240 \
      --no-record $extra >"$OUT/compare_$mode.log" 2>&1
    echo "compare $mode rc=$? $(( $(date +%s) - t1 ))s"; tail -6 "$OUT/compare_$mode.log"
  done
fi
# Optional tuning run (the bundle's tune_shapes.json): its winners go into the bench's cache database, so
# bench_shapes.py plans with them; exported to $OUT/tuned.json for tuner/pretuned/. TUNE_BUDGET is seconds
# per shape: a budget of 4 timed only 1-2 of 25 candidates at 4096 x 7168 x 16384 on the H200.
# TUNE_TIMEOUT bounds the whole run (shapes x budget must fit in it).
if [ -f "$X/tune_shapes.json" ]; then
  KILN_CACHE_DIR=$X/bench-cache timeout "${TUNE_TIMEOUT:-200}" "$X/kiln" tune "$X/tune_shapes.json" --gpu h200 \
    --budget "${TUNE_BUDGET:-20}" --max-candidates "${TUNE_CANDIDATES:-24}" >"$OUT/tune.log" 2>&1
  echo "tune rc=$? at $(elapsed)s"; tail -4 "$OUT/tune.log"
  KILN_CACHE_DIR=$X/bench-cache "$X/kiln" cache export "$OUT/tuned.json" --gpu h200 2>&1 | tail -1
fi
left=$(( BUDGET - $(elapsed) ))
[ $left -gt 30 ] || { echo "no time left for bench_shapes"; exit 0; }
KILN_CACHE_DIR=$X/bench-cache timeout $left \
  python3 bench/bench_shapes.py --out "$OUT/shapes" ${BENCH_ARGS:-} >"$OUT/bench_shapes.log" 2>&1
echo "bench_shapes rc=$? (timeout $left s) at $(elapsed)s"; tail -3 "$OUT/bench_shapes.log"

#!/usr/bin/env bash
# session 15 call 4 (untracked): main (PDL + L2 prefetch): gpu tier, sanitizers, PDL / prefetch A/B, full bench
set -u
cd "$(dirname "$0")/.."
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
XA=$(mktemp -d); tar -C "$XA" -xJf carry-all/bundle.tar.xz
XB=$(mktemp -d); tar -C "$XB" -xJf carry-nopf/bundle.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_CLI=$XA/kiln KILN_LIBRARY=$XA/capi/libkiln.so.0.1.0
S=$OUT/summary.txt
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
pids=()
for t in "$XA"/gpu_*_test; do n=$(basename "$t")
  ( KILN_CACHE_DIR=$(mktemp -d) timeout 300 "$t" --gtest_filter='-*Timing*:DispatchCost*:*PrintsChainTime*' >"$XA/$n.log" 2>&1; echo "rc=$?" >>"$XA/$n.log" ) & pids+=($!)
done
wait "${pids[@]}"
for t in "$XA"/gpu_*_test; do n=$(basename "$t")
  echo "$n $(tail -1 "$XA/$n.log") $(grep -E '^\[  (PASSED|FAILED) ' "$XA/$n.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$XA/$n.log" | head -10; cat "$XA/$n.log" >> $OUT/gpu_tier.log
done
echo "tier done at $(el)s"
SAN=/usr/local/cuda/bin/compute-sanitizer
san() { echo "--- $1 $2 $3"; KILN_CACHE_DIR=$(mktemp -d) timeout 120 $SAN --tool $1 --error-exitcode 9 $XA/$2 --gtest_filter="$3" 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED|Invalid|Race" | head -4; }
san memcheck gpu_sm90_pdl_gpu_test 'Sm90PdlGpuTest.DenseChain*:Sm90PdlGpuTest.GroupedChain*'
san memcheck gpu_sm90_gemm_gpu_test 'SplitKConfigs/*m1_*:TmaStoreConfigs/*m77_*pin128x256w8x1t:OddNConfigs/*m77_*pin128x192w8x1t'
san racecheck gpu_sm90_gemm_gpu_test 'SplitKConfigs/*m77*k4'
san memcheck gpu_decode_gpu_test '*e4m3*'
echo "sanitizers done at $(el)s"
for v in "A 1" "A 0" "B 1"; do read -r w pdl <<<"$v"; X=$XA; [ $w = B ] && X=$XB
  echo "--- chain: build $w (A = L2 prefetch, B = without) KILN_PDL=$pdl"
  KILN_PDL=$pdl KILN_CACHE_DIR=$(mktemp -d) timeout 100 $X/gpu_sm90_pdl_gpu_test --gtest_filter='*PrintsChainTime*' 2>&1 | grep -E "timing" | head -4
done
echo "--- pytest at $(el)s"; KILN_CACHE_DIR=$(mktemp -d) timeout 120 python3 -m pytest -q python/tests 2>&1 | tail -2
} > $S 2>&1
for v in "A 1" "B 1" "A 0"; do read -r w pdl <<<"$v"; X=$XA; [ $w = B ] && X=$XB
  mkdir -p $X/bc$pdl && cp $X/cache/kiln.db $X/bc$pdl/
  KILN_LIBRARY=$X/capi/libkiln.so.0.1.0 KILN_PDL=$pdl KILN_CACHE_DIR=$X/bc$pdl KILN_ANCHORS_DIR=$PWD/.bench_shared timeout 120 python3 bench/bench_shapes.py --out $OUT/small_${w}$pdl --only dense --max-m 128 > $OUT/bench_small_${w}$pdl.log 2>&1
  echo "bench small build $w KILN_PDL=$pdl rc=$? at $(el)s" >> $S
done
left=$(( 560 - $(el) ))
mkdir -p $XA/bcf && cp $XA/cache/kiln.db $XA/bcf/
KILN_CACHE_DIR=$XA/bcf KILN_ANCHORS_DIR=$PWD/.bench_shared timeout $left python3 bench/bench_shapes.py --out $OUT/shapes > $OUT/bench_full.log 2>&1
echo "bench full rc=$? (timeout $left) at $(el)s" >> $S
rm -f $OUT/small_*/results.json $OUT/bench_small_*.log
cat $S

#!/usr/bin/env bash
# session 15 call 3 (untracked): PDL branch: whole gpu tier, memcheck of the PDL chains, PDL on/off timings
set -u
cd "$(dirname "$0")/.."
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
X=$(mktemp -d); tar -C "$X" -xJf carry-pdl/bundle.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_CLI=$X/kiln KILN_LIBRARY=$X/capi/libkiln.so.0.1.0
S=$OUT/summary.txt
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
pids=()
for t in "$X"/gpu_*_test; do n=$(basename "$t")
  ( KILN_CACHE_DIR=$(mktemp -d) timeout 300 "$t" --gtest_filter='-*Timing*:DispatchCost*:*PrintsChainTime*' >"$X/$n.log" 2>&1; echo "rc=$?" >>"$X/$n.log" ) & pids+=($!)
done
wait "${pids[@]}"
for t in "$X"/gpu_*_test; do n=$(basename "$t")
  echo "$n $(tail -1 "$X/$n.log") $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$X/$n.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$X/$n.log" | head -20; cat "$X/$n.log" >> $OUT/gpu_tier.log
done
echo "tier done at $(el)s"
SAN=/usr/local/cuda/bin/compute-sanitizer
for f in 'Sm90PdlGpuTest.DenseChain*:Sm90PdlGpuTest.GroupedChain*'; do
  KILN_CACHE_DIR=$(mktemp -d) timeout 150 $SAN --tool memcheck --error-exitcode 9 $X/gpu_sm90_pdl_gpu_test --gtest_filter="$f" 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED|Invalid" | head -5
done
KILN_CACHE_DIR=$(mktemp -d) timeout 150 $SAN --tool memcheck --error-exitcode 9 $X/gpu_decode_gpu_test --gtest_filter='*e4m3*' 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED|Invalid" | head -5
echo "memcheck done at $(el)s"
for pdl in 1 0; do echo "--- KILN_PDL=$pdl chain timing"; KILN_PDL=$pdl KILN_CACHE_DIR=$(mktemp -d) timeout 100 $X/gpu_sm90_pdl_gpu_test --gtest_filter='*PrintsChainTime*' 2>&1 | grep -E "figures|timing|us|FAILED" | head -8; done
echo "--- pytest at $(el)s"; KILN_CACHE_DIR=$(mktemp -d) timeout 120 python3 -m pytest -q python/tests 2>&1 | tail -2
} > $S 2>&1
for pdl in 1 0; do
  mkdir -p $X/bc$pdl && cp $X/cache/kiln.db $X/bc$pdl/
  KILN_PDL=$pdl KILN_CACHE_DIR=$X/bc$pdl KILN_ANCHORS_DIR=$PWD/.bench_shared timeout 170 python3 bench/bench_shapes.py --out $OUT/pdl$pdl --only dense --max-m 128 > $OUT/bench_pdl$pdl.log 2>&1
  echo "bench KILN_PDL=$pdl rc=$? at $(el)s" >> $S
done
cat $S

#!/usr/bin/env bash
# session 23 call 5: which grouped TMA-store case gave run 4's 3 racecheck reports; the dense block square beside it.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
X=$(dirname $KILN_CLI)
for f in 'GroupedConfigs/*tensor*pin128x256w8x1th' 'GroupedConfigs/*block1x128_b*pin128x128w8x1c2t' 'GroupedConfigs/*block1x128_b*pin128x128w8x1c2' 'ScaledDefaultConfigs/*a_e4m3_block1x128_b_e4m3_block128x128_out_bf16_m257*'; do
  KILN_CACHE_DIR=$(mktemp -d) timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 $X/gpu_sm90_gemm_gpu_test --gtest_filter="$f" > /tmp/san.log 2>&1
  echo "racecheck rc=$? $f: $(grep -E '^\[  (PASSED|FAILED)|SUMMARY|config=' /tmp/san.log | sed 's/.*config=/config=/' | cut -c1-80 | tr '\n' ' ')"
  grep -A3 -m3 -E '^========= +Error: Race' /tmp/san.log | grep -E 'Race|Write|Read|at ' | head -8
done

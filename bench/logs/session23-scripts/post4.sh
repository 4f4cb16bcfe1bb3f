#!/usr/bin/env bash
# session 23 call 4: sanitizers on the grouped TMA-store kernels; NVRTC-cache registers in `kiln compile`.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
X=$(dirname $KILN_CLI)
for i in 1 2; do KILN_CACHE_DIR=$(mktemp -d) $KILN_CLI compile 'gemm a=bf16 b=bf16 out=bf16' --m 64 --n 256 --k 512 --config bm64_bn128_bk64_s6_w4x1_g8 2>&1 | grep -E "registers|spills|compile " | tr '\n' ' '; echo; done
run_san() {
  KILN_CACHE_DIR=$(mktemp -d) timeout 150 compute-sanitizer --tool $1 --error-exitcode 9 $X/gpu_sm90_gemm_gpu_test --gtest_filter="$2" > /tmp/san.log 2>&1
  echo "$1 rc=$? $2: $(grep -E '^\[  (PASSED|FAILED)|SUMMARY' /tmp/san.log | tr '\n' ' ')"
  grep -m6 -E '^========= +(Error|Race|Invalid)' /tmp/san.log
}
run_san memcheck 'GroupedConfigs/*bf16*m2000_n3000*:GroupedConfigs/*masked*e5m2_m*m300_n1000*:GroupedConfigs/*block1x128_b*pin128x192w8x1t'
run_san racecheck 'GroupedConfigs/*tensor*pin128x256w8x1th:GroupedConfigs/*block1x128_b*pin128x128w8x1c2t'

#!/usr/bin/env bash
# session 19 run 5: ping-pong consumers: racecheck / memcheck of the gpu tier's ping-pong cases, then
# graph-replay probes of ping-pong tiles (5 stages, clusters) at short K.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
SAN=/usr/local/cuda/bin/compute-sanitizer; [ -x "$SAN" ] || SAN=$(command -v compute-sanitizer)
B=$(dirname "$KILN_CLI")/gpu_sm90_gemm_gpu_test
for t in "racecheck PingPongConfigs/*a_e4m3_m_*m2000_*:PingPongConfigs/*a_bf16_*m513_*pin128x128w4x1c2tp" "memcheck PingPongConfigs/*a_e4m3_m_*:PingPongConfigs/*a_f16_*"; do
  read -r tool filt <<<"$t"
  echo "--- $tool $filt"
  KILN_CACHE_DIR=$(mktemp -d) timeout 150 $SAN --tool $tool --error-exitcode 9 $B --gtest_filter="$filt" 2>&1 | grep -E "SUMMARY|PASSED|FAILED|^========= (Error|Race)" | head -6
done
echo "--- graph-replay config probes"
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 bench/probe_graph_configs.py carry-probe/cands5.json

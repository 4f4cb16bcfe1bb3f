#!/usr/bin/env bash
# session 23 call 3: NVRTC's log on the device (registers -1); sanitizers on grouped TMA-store tiles; grouped probes with TMA stores.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
python3 carry-probe/s23/nvrtc_log.py 2>&1 | cut -c1-300
LD_DEBUG=libs KILN_CACHE_DIR=$(mktemp -d) $KILN_CLI compile 'gemm a=bf16 b=bf16 out=bf16' --m 64 --n 256 --k 512 --config bm64_bn64_bk64_s8_w4x1_g8_t 2>&1 | grep -E "nvrtc.*(calling init|trying file)|registers|ptxas|compile " | head -12
for i in 1 2; do KILN_CACHE_DIR=$(mktemp -d) $KILN_CLI compile 'gemm a=bf16 b=bf16 out=bf16' --m 64 --n 256 --k 512 --config bm64_bn128_bk64_s6_w4x1_g8 2>&1 | grep -E "registers|ptxas|compile " ; done
KILN_CACHE_DIR=$(mktemp -d) $KILN_CLI compile 'gemm a=bf16 b=bf16 out=bf16' --m 64 --n 256 --k 512 --config bm64_bn64_bk64_s8_w4x1_g8_t --json 2>&1 | head -c 600; echo
X=$(dirname $KILN_CLI)
for tool in memcheck racecheck; do
  f='GroupedConfigs/*bf16*pin128x256w8x1t:GroupedConfigs/*e4m3_m*pin128x192w8x1t'
  [ $tool = racecheck ] && f='GroupedConfigs/*bf16*pin128x256w8x1th:GroupedConfigs/*e4m3_m*pin128x192w8x1t'
  KILN_CACHE_DIR=$(mktemp -d) timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 $X/gpu_sm90_gemm_gpu_test --gtest_filter="$f" > /tmp/san_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E '^\[  (PASSED|FAILED)|SUMMARY' /tmp/san_$tool.log | tr '\n' ' ')"
  grep -m6 -E '^========= +(Error|Race|Invalid)' /tmp/san_$tool.log
done
timeout ${GPROBE_TIMEOUT:-250} python3 bench/probe_graph_configs.py carry-probe/s23/probe3g.json --rounds 2 --jobs 16 > "$OUT/probe3g.log" 2>&1
echo "grouped probe rc=$?"
python3 - "$OUT/probe3g.log" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    if line.startswith("==="): print(line.strip()[40:]); continue
    m=re.match(r"\s+(.*): median ([\d.]+) us \(([\d.]+)-([\d.]+)", line)
    if m: print("  %8s %8s-%-8s %s" % (m[2], m[3], m[4], m[1][:140].replace('"warps_n":1,','').replace('"group_m":8,','')))
    if "rror" in line: print("  ERR", line.strip()[:200])
PY

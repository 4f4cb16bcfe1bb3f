#!/usr/bin/env bash
# session 22 call 3: settled probes of ping-pong tiles on the long-K shapes (bf16, FP8 tensor, FP8 row).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 420 python3 bench/probe_graph_configs.py carry-probe/s22/probe3.json --rounds 3 --jobs 16 > "$OUT/probe3.log" 2>&1
echo "probe rc=$?"; grep -E "===|median|ran" "$OUT/probe3.log" | grep -E "===|median|plan's own" | grep -v "round" | head -120

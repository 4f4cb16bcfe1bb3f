#!/usr/bin/env bash
# session 23 call 6: FP8 block grouped (DeepSeek-V3 MoE, 32 experts x 1024 rows), direct stores against TMA stores.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 165 python3 bench/probe_graph_configs.py carry-probe/s23/probe6g.json --rounds 2 --jobs 16 > "$OUT/probe6g.log" 2>&1
echo "probe rc=$?"
grep -E "^===|median|rror" "$OUT/probe6g.log" | cut -c1-220

#!/usr/bin/env bash
# session 22 call 5: settled probes of small-M FP8 block shapes where cuBLAS is close (N = 24576 / 32768).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 300 python3 bench/probe_graph_configs.py carry-probe/s22/probe5.json --rounds 3 --jobs 16 > "$OUT/probe5.log" 2>&1
echo "probe rc=$?"; grep -E "===|median|error|rror" "$OUT/probe5.log" | grep -v "^ *round" | head -80

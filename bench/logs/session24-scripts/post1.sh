#!/usr/bin/env bash
# session 24 call 1: settled A/B of TMA stores at 128 rows per expert (gpt-oss-120b gate_up FP8 row T=4096;
# DeepSeek-V3 T=512 bf16 and FP8 row, gate_up and down), against the H200 table's direct-store rows.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 190 python3 bench/probe_graph_configs.py bench/logs/session24-scripts/probe1g.json --rounds 2 --jobs 16 \
  > "$OUT/probe1g.log" 2>&1
echo "probe rc=$?"
grep -E "^===|median|rror" "$OUT/probe1g.log" | cut -c1-220

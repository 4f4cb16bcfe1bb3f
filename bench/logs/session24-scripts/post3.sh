#!/usr/bin/env bash
# session 24 call 3: grouped FP8 row at 32 rows per expert and FP8 block at 128 (DeepSeek-V3 T=128 / 512), settled graph replay.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 190 python3 bench/probe_graph_configs.py bench/logs/session24-scripts/probe2g.json --rounds 2 --jobs 16 \
  > "$OUT/probe2g.log" 2>&1
echo "probe rc=$?"
grep -E "^===|median|rror" "$OUT/probe2g.log" | cut -c1-220

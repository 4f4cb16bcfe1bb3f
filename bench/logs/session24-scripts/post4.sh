#!/usr/bin/env bash
# session 24 call 4: FP8 row against FP8 block on the same one-warpgroup tile (64 x 128, 8 stages) at 32 rows
# per expert (DeepSeek-V3 T=128), in one run: run 2's bench had block faster than row there.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 150 python3 bench/probe_graph_configs.py bench/logs/session24-scripts/probe4g.json --rounds 2 --jobs 16 \
  > "$OUT/probe4g.log" 2>&1
echo "probe rc=$?"
grep -E "^===|median|rror" "$OUT/probe4g.log" | cut -c1-220

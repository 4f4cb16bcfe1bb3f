#!/usr/bin/env bash
# session 19 run 7: the large-M dense bench twice (this one, then device_run.sh's own), for run-to-run spread.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
KILN_CACHE_DIR=$(mktemp -d) KILN_ANCHORS_DIR=$(pwd)/.bench_shared timeout 200 \
  python3 bench/bench_shapes.py --out "$OUT/shapes_a" --only dense --min-m 4096 --jobs 16 >"$OUT/bench_a.log" 2>&1
echo "bench a rc=$?"

#!/usr/bin/env bash
# session 21 call 8: the block targets at M = 64 / 128 with settled timings (the large-M table follows, as
# device_run.sh's bench with BENCH_ARGS).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
export KILN_CACHE_DIR=$(mktemp -d)
timeout 250 python3 bench/bench_shapes.py --out "$OUT/small" --only dense --min-m 64 --max-m 128 --repeats 2 --jobs 16 > "$OUT/small.log" 2>&1
echo "small rc=$?"; tail -2 "$OUT/small.log"

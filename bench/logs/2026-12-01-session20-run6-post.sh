#!/usr/bin/env bash
# session 20 run 6: the large-M dense bench three times (spread), then device_run.sh's own once more.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for r in a b c; do
  KILN_CACHE_DIR=$(mktemp -d) KILN_ANCHORS_DIR=$(pwd)/.bench_shared timeout 80 \
    python3 bench/bench_shapes.py --out /tmp/shapes_$r --only dense --min-m 4096 --jobs 16 >/tmp/bench_$r.log 2>&1
  echo "bench $r rc=$?"
  cp /tmp/shapes_$r/RESULTS.fragment.md "$OUT/large_m_$r.md"
done

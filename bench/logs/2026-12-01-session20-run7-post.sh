#!/usr/bin/env bash
# session 20 run 7: bench_shapes.py --repeats (anchors and kiln timed in turn; medians and ratio ranges):
# large-M dense x5, then small-M dense x3, in the time left.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_CACHE_DIR=$(mktemp -d) KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 110 python3 bench/bench_shapes.py --out /tmp/lm --only dense --min-m 4096 --repeats 5 --jobs 16 >/tmp/lm.log 2>&1
echo "large-M rc=$?"; cp /tmp/lm/RESULTS.fragment.md "$OUT/large_m_r5.md"; cp /tmp/lm/results.json "$OUT/large_m_r5.json"
timeout 80 python3 bench/bench_shapes.py --out /tmp/sm --only dense --max-m 128 --repeats 3 --jobs 16 >/tmp/sm.log 2>&1
echo "small-M rc=$?"; cp /tmp/sm/RESULTS.fragment.md "$OUT/small_m_r3.md"; tail -3 /tmp/sm.log

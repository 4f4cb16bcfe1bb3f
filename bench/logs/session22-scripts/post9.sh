#!/usr/bin/env bash
# session 22 call 9: settled bench of the five small-M shapes whose bf16 / FP8 tensor / FP8 row rows moved.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
export KILN_CACHE_DIR=$(mktemp -d)
timeout 200 python3 bench/bench_shapes.py --shapes carry-probe/s22/small5.json --out "$OUT/small5" --only dense --repeats 2 --jobs 16 > "$OUT/small5.log" 2>&1
echo "bench rc=$?"; grep -E "^\| " "$OUT/small5/RESULTS.fragment.md" | grep -E "kiln (bf16|e4m3)" | head -30

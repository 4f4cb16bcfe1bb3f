#!/usr/bin/env bash
# session 22 call 7: memcheck of the new table rows' kernels; settled bench of the four N = 24576 / 32768 small-M shapes.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
B="gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"
for c in "bm64_bn256_bk128_s4_w4x1_g8_t 77 3000 768" "bm128_bn192_bk128_s4_w8x1_g8_t 128 1000 1152"; do
  set -- $c
  timeout 120 compute-sanitizer --tool memcheck $KILN_CLI run "$B" --m $2 --n $3 --k $4 --check --repeats 2 --config $1 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED|rror" | head -5
done
export KILN_CACHE_DIR=$(mktemp -d)
timeout 300 python3 bench/bench_shapes.py --shapes carry-probe/s22/small4.json --out "$OUT/small4" --only dense --repeats 2 --jobs 16 > "$OUT/small4.log" 2>&1
echo "bench rc=$?"; grep -E "^\| " "$OUT/small4/RESULTS.fragment.md" | grep -E "block|anchor fp8_block" | head -30

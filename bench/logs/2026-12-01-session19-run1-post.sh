#!/usr/bin/env bash
# session 19 run 1: branch wip/row-colscale-smem (the bundle's kiln: column scales staged in smem) against
# main's kiln (carry-probe/kiln-main), A B A B, events timing; then graph-replay probes of tile configs.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
N=$KILN_CLI
M=$(pwd)/carry-probe/kiln-main
R="gemm a=e4m3:m b=e4m3:n out=bf16"
export KILN_CACHE_DIR=$(mktemp -d)
MC=$(mktemp -d)
for c in "4096|7168|2048|bm128_bn256_bk128_s3_w8x1_g8_t" "4096|24576|1536|bm256_bn128_bk128_s3_w8x1_g8_t" "4096|32768|512|bm256_bn128_bk128_s3_w8x1_g8_t" "4096|24576|1536|bm128_bn256_bk128_s3_w8x1_g8_t" "4096|32768|512|bm128_bn256_bk128_s3_w8x1_g8_t"; do
  IFS='|' read -r m n k cfg <<<"$c"
  line="${m}x${n}x${k} $cfg:"
  for rep in 1 2; do
    a=$(KILN_CACHE_DIR=$MC $M run "$R" --m $m --n $n --k $k --config $cfg --repeats 30 2>&1 | grep -oE "median [0-9.]+ ms" | awk '{print $2}')
    b=$($N run "$R" --m $m --n $n --k $k --config $cfg --repeats 30 --check 2>&1 | grep -oE "median [0-9.]+ ms|(PASSED|FAILED): rel_fro_err [0-9.e+-]+" | tr '\n' ' ')
    line="$line main $a staged $b;"
  done
  echo "$line"
done
echo "--- fast-accumulation anchors (graph replay)"
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 - <<'PY'
import sys; sys.path.insert(0, "bench")
from bench_shapes import fast_accum_anchors
for M, N, K in ((4096, 7168, 2048), (4096, 24576, 1536), (4096, 32768, 512), (4096, 2112, 7168), (4096, 7168, 16384)):
    a = fast_accum_anchors(M, N, K)
    print(f"{M}x{N}x{K}", " ".join(f"{k} {v * 1e3:.2f} us" for k, v in sorted(a.items())), flush=True)
PY
echo "--- graph-replay config probes"
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 bench/probe_graph_configs.py carry-probe/cands.json

#!/usr/bin/env bash
# session 19 run 4: ping-pong consumers (section 16): correctness by kiln run --check over shapes with
# tails and several tiles per CTA, racecheck / memcheck of two of them, then graph-replay probes.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
K=$KILN_CLI
export KILN_CACHE_DIR=$(mktemp -d)
SAN=/usr/local/cuda/bin/compute-sanitizer; [ -x "$SAN" ] || SAN=$(command -v compute-sanitizer)
echo "--- checks"
for sp in "gemm a=e4m3:m b=e4m3:n out=bf16|bm128_bn128_bk128_s4_w4x1_g8_t_p bm64_bn256_bk128_s3_w4x1_g8_t_p bm128_bn128_bk128_s6_w4x1_g8_p bm128_bn128_bk128_s4_w4x1_g8_c2_t_p" \
          "gemm a=e4m3 b=e4m3 out=f32|bm128_bn128_bk128_s3_w4x1_g8_t_p bm128_bn128_bk128_s6_w4x1_g8_p" \
          "gemm a=bf16 b=bf16 out=bf16|bm128_bn128_bk64_s4_w4x1_g8_t_p bm128_bn128_bk64_s6_w4x1_g8_c2_p"; do
  IFS='|' read -r spec cfgs <<<"$sp"
  for c in $cfgs; do
    line="$spec $c:"
    for shp in "1 256 512" "77 200 1024" "300 129 512" "1000 1032 1024" "2000 3000 512" "4096 7168 2048" "513 4000 64"; do
      read -r m n k <<<"$shp"
      r=$($K run "$spec" --m $m --n $n --k $k --config $c --repeats 2 --check 2>&1 | grep -oE "(PASSED|FAILED)|INVALID[^;]*|error[^;]*" | head -1)
      line="$line ${m}x${n}x${k} $r;"
    done
    echo "$line"
  done
done
echo "--- racecheck / memcheck"
for t in racecheck memcheck; do
  KILN_CACHE_DIR=$(mktemp -d) timeout 120 $SAN --tool $t $K run "gemm a=e4m3:m b=e4m3:n out=bf16" --m 2000 --n 3000 --k 512 --config bm128_bn128_bk128_s4_w4x1_g8_t_p --repeats 1 --check 2>&1 | grep -E "SUMMARY|PASSED|FAILED|Race|Error" | head -4
  KILN_CACHE_DIR=$(mktemp -d) timeout 120 $SAN --tool $t $K run "gemm a=bf16 b=bf16 out=bf16" --m 1000 --n 1032 --k 1024 --config bm128_bn128_bk64_s6_w4x1_g8_c2_p --repeats 1 --check 2>&1 | grep -E "SUMMARY|PASSED|FAILED|Race|Error" | head -4
done
echo "--- graph-replay config probes"
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 bench/probe_graph_configs.py carry-probe/cands3.json

#!/usr/bin/env bash
# bench/verify_dq.sh — device side, session 8: the final build's kiln CLI on MXFP8 with --config
# (the dequantizing producer, block_k 64, pinned; the plan's own promoted config; the FP8 block path).
# Written in session 8 after the device time was spent: not run yet.
# Usage: run(command="bash bench/verify_dq.sh", carry=["carry-v"]) with carry-v/kiln.xz a stripped kiln, or
# POST_SCRIPT=bench/verify_dq.sh bash bench/device_run.sh (the bundle's kiln, through KILN_CLI).
set -u
X=$(mktemp -d)
if [ -n "${KILN_CLI:-}" ]; then ln -s "$KILN_CLI" $X/kiln; else xz -dc carry-v/kiln.xz > $X/kiln; chmod +x $X/kiln; fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
K() { KILN_CACHE_DIR=$X/cache "$X/kiln" "$@" 2>&1 | grep -E "config|PASSED|FAILED|median|INVALID|ERROR|error" ; echo "rc=${PIPESTATUS[0]}"; }
DQ=bm128_bn256_bk64_s2_w8x1_g8
MX='gemm a=mxfp8 b=mxfp8 out=bf16'
for s in "1 256 544" "77 200 544" "300 129 288" "1000 1030 4096"; do
  set -- $s; echo "== $MX $1x$2x$3 --config $DQ"; K run "$MX" --m $1 --n $2 --k $3 --check --repeats 3 --config $DQ
done
echo "== f32 out, 208-wide"; K run 'gemm a=mxfp8 b=mxfp8 out=f32' --m 77 --n 200 --k 544 --check --repeats 3 --config bm128_bn208_bk64_s3_w8x1_g8
echo "== grouped offsets"; K run 'grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16' --m 300 --n 1000 --k 1056 --check --repeats 3 --config $DQ
echo "== grouped masked"; K run 'grouped_gemm[experts=6,layout=masked] a=mxfp8 b=mxfp8 out=f32' --m 300 --n 1000 --k 1056 --check --repeats 3 --config bm256_bn128_bk64_s2_w8x1_g8
for k in 7168 16384; do
  echo "== 4096x7168x$k: plan (promoted), dequantizing, block"
  K run "$MX" --m 4096 --n 7168 --k $k --check
  K run "$MX" --m 4096 --n 7168 --k $k --config $DQ
  K run 'gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16' --m 4096 --n 7168 --k $k
done

#!/usr/bin/env bash
# session 15 call 1 (untracked): register-A MXFP8 timings, FP8 block ncu SourceCounters + SASS
set -u
cd "$(dirname "$0")/.."
export PROBE_SHAPES="gemm a=mxfp8 b=mxfp8 out=bf16|4096|7168|16384|bm128_bn256_bk64_s3_w8x1_g8,bm128_bn208_bk64_s3_w8x1_g8,bm128_bn192_bk64_s4_w8x1_g8,bm128_bn256_bk64_s2_w8x1_g8,bm128_bn128_bk64_s4_w4x2_g8;gemm a=mxfp8 b=mxfp8 out=bf16|8192|8192|8192|bm128_bn256_bk64_s3_w8x1_g8,bm128_bn208_bk64_s3_w8x1_g8"
CARRY_DIR=carry-dev bash bench/probe_decode.sh
X=$(mktemp -d); tar -C "$X" -xJf carry-dev/bundle.tar.xz
B="gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"
KILN_CACHE_DIR=$(mktemp -d) "$X/kiln" compile "$B" --arch sm_90a --m 4096 --n 7168 --k 16384 --config bm128_bn256_bk128_s3_w8x1_g8_t --emit cubin --out "$X/blk.cubin" >/dev/null 2>&1
/usr/local/cuda/bin/cuobjdump --dump-sass "$X/blk.cubin" > "$OUT/block256.sass" 2>&1; wc -l "$OUT/block256.sass"
NCU_EXTRA="--section SourceCounters" NCU_TAIL=400 CARRY_DIR=carry-dev NCU_PROBLEMS="$B|4096|7168|16384|bm128_bn256_bk128_s3_w8x1_g8_t" bash bench/ncu_profile.sh > /dev/null
cp "$OUT/ncu.txt" "$OUT/ncu_block256.txt"; grep -c . "$OUT/ncu_block256.txt"

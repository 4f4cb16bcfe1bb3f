#!/usr/bin/env bash
# session 15 call 7 (untracked): warp-uniform warpgroup index (shfl) probe: SASS R2UR count and timing, FP8 block + bf16 + mxfp8
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
X=$(mktemp -d); tar -C "$X" -xJf carry-all/bundle.tar.xz
A=$X/kiln; B=carry-probe/kiln; chmod +x $B
CU=/usr/local/cuda/bin/cuobjdump
B1="gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"
for v in A B; do K=$A; [ $v = B ] && K=$B
  KILN_CACHE_DIR=$(mktemp -d) $K compile "$B1" --arch sm_90a --m 4096 --n 7168 --k 16384 --config bm128_bn256_bk128_s3_w8x1_g8_t --emit cubin --out $X/$v.cubin >/dev/null 2>&1
  echo "$v SASS: $($CU --dump-sass $X/$v.cubin | grep -oE '^ +/\*[0-9a-f]+\*/ +[A-Z][A-Z0-9_.]+' | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | grep -E ' (R2UR|QGMMA|FFMA|IMAD|LDG)$' | tr '\n' ' ')"
done
for rep in 1 2; do for v in A B; do K=$A; [ $v = B ] && K=$B
  for spec in "$B1|bm128_bn256_bk128_s3_w8x1_g8_t" "gemm a=bf16 b=bf16 out=bf16|bm128_bn256_bk64_s3_w8x1_g8_t" "gemm a=e4m3:tensor b=e4m3:tensor out=bf16|bm128_bn256_bk128_s3_w8x1_g8_t"; do
    IFS='|' read -r s c <<<"$spec"
    echo -n "$v rep$rep ${s:0:22} $c: "; KILN_CACHE_DIR=$(mktemp -d) $K run "$s" --m 4096 --n 7168 --k 16384 --config $c --repeats 30 --check 2>&1 | grep -E "median|FAIL" | sed 's/over.*runs://' | tr '\n' ' '; echo
  done
done; done

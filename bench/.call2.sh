#!/usr/bin/env bash
# session 15 call 2 (untracked): MXFP8 register-A probes (probe CLI in carry-probe), FP8 block ncu source-level stalls
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
P=carry-probe/kiln; chmod +x $P
MX="gemm a=mxfp8 b=mxfp8 out=bf16"
one() { # defines config
  echo -n "[$1] $2: "
  KILN_DEV_DEFINES="$1" KILN_CACHE_DIR=$(mktemp -d) $P run "$MX" --m 4096 --n 7168 --k 16384 --config "$2" --repeats 20 2>&1 | grep -E "median|rror" | sed 's/over.*runs://' | tr '\n' ' '; echo
}
echo "=== MXFP8 probes 4096x7168x16384 at $(date +%T)"
for d in "" "-DKILN_DQ_NOCONVERT_B" "-DKILN_DQ_NOCONVERT_A" "-DKILN_DQ_NOCONVERT_A -DKILN_DQ_NOCONVERT_B" "-DKILN_DQ_A_EARLY" "-DKILN_DQ_A_EARLY -DKILN_DQ_NOCONVERT_B"; do
  one "$d" bm128_bn256_bk64_s3_w8x1_g8
done
for d in "" "-DKILN_DQ_NOCONVERT_B" "-DKILN_DQ_A_EARLY"; do one "$d" bm128_bn256_bk64_s2_w8x1_g8; one "$d" bm128_bn192_bk64_s4_w8x1_g8; done
echo -n "promoted default: "; KILN_CACHE_DIR=$(mktemp -d) $P run "$MX" --m 4096 --n 7168 --k 16384 --config bm128_bn128_bk128_s5_w8x1_g8_t --repeats 20 2>&1 | grep -E "median" ; echo
echo "=== ncu source-level: FP8 block 128x256 at $(date +%T)"
X=$(mktemp -d)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
B="gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"
KILN_CACHE_DIR=$X timeout 150 $NCU --clock-control none -k regex:kiln_ --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats \
  -o $X/blk -f $P run "$B" --m 4096 --n 7168 --k 16384 --repeats 1 --warmup 1 --config bm128_bn256_bk128_s3_w8x1_g8_t > $X/ncu.log 2>&1; tail -2 $X/ncu.log
timeout 120 $NCU -i $X/blk.ncu-rep --page source --csv --print-source sass > $X/src.csv 2>$X/src.err; wc -l $X/src.csv; head -c 600 $X/src.err
cp $X/src.csv "$OUT/block_src.csv" 2>/dev/null
python3 - "$X/src.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next((i for i, r in enumerate(rows) if any("Source" == c or "Address" in c for c in r)), None)
if hi is None:
    print("no header; first lines:", rows[:3]); sys.exit()
h = rows[hi]; print("columns:", h)
body = [r for r in rows[hi + 1:] if len(r) == len(h)]
def col(name):
    for i, c in enumerate(h):
        if name in c: return i
si = col("Warp Stall Sampling (All"); ni = col("Warp Stall Sampling (Not"); src = col("Source"); ad = col("Address")
def num(x):
    try: return float(x.replace(",", ""))
    except: return 0.0
tot = sum(num(r[si]) for r in body) if si is not None else 0
print("instructions", len(body), "all samples", tot)
if si is not None:
    for r in sorted(body, key=lambda r: -num(r[si]))[:45]:
        print(f"{r[ad] if ad is not None else '':>8} {num(r[si]):8.0f} {100*num(r[si])/max(tot,1):5.1f}% {num(r[ni]) if ni is not None else 0:8.0f}  {r[src][:90]}")
PY

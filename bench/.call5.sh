#!/usr/bin/env bash
# session 15 call 5 (untracked): final main: full bench (PDL on), small-M dense with KILN_PDL=0, same run
set -u
cd "$(dirname "$0")/.."
SKIP_TESTS=1 DEVICE_RUN_BUDGET=200 bash bench/device_run.sh > $OUT/run_full.log 2>&1
X=$(mktemp -d); tar -C "$X" -xJf carry-all/bundle.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} KILN_LIBRARY=$X/capi/libkiln.so.0.1.0
mkdir -p $X/bc && cp $X/cache/kiln.db $X/bc/
KILN_PDL=0 KILN_CACHE_DIR=$X/bc KILN_ANCHORS_DIR=$PWD/.bench_shared timeout 120 python3 bench/bench_shapes.py --out $OUT/small_nopdl --only dense --max-m 128 > $OUT/bench_nopdl.log 2>&1
echo "nopdl rc=$?"; rm -f $OUT/small_nopdl/results.json; tail -3 $OUT/run_full.log

#!/usr/bin/env bash
# session 22 call 2: settled probes of FP8 row 8192^3 and FP8 tensor 4096x2112x7168; the tuner's per-candidate
# times, twice per shape (run-to-run agreement of its ranking).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 200 python3 bench/probe_graph_configs.py carry-probe/s22/probe2.json --rounds 3 --jobs 16 > "$OUT/probe2.log" 2>&1
echo "probe rc=$?"; grep -E "===|median" "$OUT/probe2.log"
export KILN_CACHE_DIR=$(mktemp -d)
for run in 1 2; do
  for s in "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16|4096|7168|16384" "gemm a=e4m3:m b=e4m3:n out=bf16|8192|8192|8192" "gemm a=e4m3 b=e4m3 out=bf16|4096|2112|7168"; do
    IFS='|' read sp m n k <<< "$s"
    timeout 150 $KILN_CLI tune --spec "$sp" --m $m --n $n --k $k --max-candidates 10 --budget 140 --no-record --json --jobs 16 > "$OUT/tune_${run}_${n}_${k}.json" 2>>"$OUT/tune.err"
    echo "tune run $run $m $n $k rc=$?"
  done
done
python3 - "$OUT" <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(os.path.join(sys.argv[1], "tune_*.json"))):
    try: r = json.load(open(f))[0]
    except Exception as e: print(f, "unreadable", e); continue
    print(os.path.basename(f), "best", r["best_config"], r["best_us"], "elapsed", round(r["elapsed_s"],1))
    for t in sorted(r["tried"], key=lambda t: t["us"] or 1e9):
        print("   %-40s %-10s %s" % (t["config"], t["outcome"][:10], "%.2f" % t["us"] if t["us"] else "-"))
PY

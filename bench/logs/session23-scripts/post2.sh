#!/usr/bin/env bash
# session 23 call 2: why CliTest.TuneJsonListsEveryCandidate saw registers -1 on the GPU; grouped probes (round 2);
# dense 64x7168x16384 with TMA stores.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
for j in 16 1; do
  d=$(mktemp -d)
  KILN_CACHE_DIR=$d $KILN_CLI tune --spec 'gemm a=bf16 b=bf16 out=bf16' --m 64 --n 256 --k 512 --max-candidates 3 --json --gpu h200 --compile-only --jobs $j > $d/out.json 2> $d/err.txt
  echo "tune --compile-only --jobs $j rc=$?: $(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print([(t['config'],t['registers'],t['default']) for t in j[0]['tried']])" $d/out.json 2>&1 | head -3)"
  tail -3 $d/err.txt
  KILN_CACHE_DIR=$d $KILN_CLI cache list 2>&1 | head -8
  KILN_CACHE_DIR=$(mktemp -d) $KILN_CLI compile 'gemm a=bf16 b=bf16 out=bf16' --m 64 --n 256 --k 512 --config bm64_bn64_bk64_s8_w4x1_g8_t 2>&1 | grep -E "config|registers|arch" | head -4
done
timeout ${GPROBE_TIMEOUT:-200} python3 bench/probe_graph_configs.py carry-probe/s23/probe2g.json --rounds 2 --jobs 16 > "$OUT/probe2g.log" 2>&1
echo "grouped probe rc=$?"
timeout ${PROBE_TIMEOUT:-100} python3 bench/probe_graph_configs.py carry-probe/s23/probe2.json --rounds 3 --jobs 16 > "$OUT/probe2.log" 2>&1
echo "dense probe rc=$?"
for f in "$OUT/probe2g.log" "$OUT/probe2.log"; do
python3 - "$f" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    if line.startswith("==="): print(line.strip()); continue
    m=re.match(r"\s+(.*): median ([\d.]+) us \(([\d.]+)-([\d.]+)", line)
    if m: print("  %8s %8s-%-8s %s" % (m[2], m[3], m[4], m[1][:140].replace('"warps_n":1,','')))
    if "rror" in line: print("  ERR", line.strip()[:200])
PY
done

#!/usr/bin/env bash
# session 22 call 6: settled probes of the 12 small-M FP8 block shapes (M = 64, 128), 14 configs each.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 480 python3 bench/probe_graph_configs.py carry-probe/s22/probe6.json --rounds 3 --jobs 16 > "$OUT/probe6.log" 2>&1
echo "probe rc=$?"
python3 - "$OUT/probe6.log" <<'PY'
import re, sys
shape=None; own=None
for line in open(sys.argv[1]):
    if line.startswith("==="): shape=line.split()[-1]; print(line.strip()); continue
    m=re.match(r"\s+(.*): median ([\d.]+) us", line)
    if m: print("  %8s  %s" % (m[2], m[1][:150]))
    if "rror" in line: print("  ERR", line.strip()[:200])
PY

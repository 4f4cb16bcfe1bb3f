#!/usr/bin/env bash
# session 23 call 1: settled probes of the five small-M rows below cuBLAS (FP8 tensor x4, bf16 x1), split-K variants.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout ${PROBE_TIMEOUT:-300} python3 bench/probe_graph_configs.py carry-probe/s23/probe1.json --rounds 2 --jobs 16 > "$OUT/probe1.log" 2>&1
echo "probe rc=$?"
python3 - "$OUT/probe1.log" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    if line.startswith("==="): print(line.strip()); continue
    m=re.match(r"\s+(.*): median ([\d.]+) us", line)
    if m: print("  %8s  %s" % (m[2], m[1][:150]))
    if "rror" in line: print("  ERR", line.strip()[:200])
PY
timeout ${GPROBE_TIMEOUT:-170} python3 bench/probe_graph_configs.py carry-probe/s23/probe1g.json --rounds 2 --jobs 16 > "$OUT/probe1g.log" 2>&1
echo "grouped probe rc=$?"
python3 - "$OUT/probe1g.log" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    if line.startswith("==="): print(line.strip()); continue
    m=re.match(r"\s+(.*): median ([\d.]+) us", line)
    if m: print("  %8s  %s" % (m[2], m[1][:150]))
    if "rror" in line: print("  ERR", line.strip()[:200])
PY

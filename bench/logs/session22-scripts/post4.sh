#!/usr/bin/env bash
# session 22 call 4: settled bench of 8192^3 (dense paths, 3 repeats) after the FP8 tensor / row table rows moved.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
export KILN_CACHE_DIR=$(mktemp -d)
timeout 400 python3 bench/bench_shapes.py --shapes carry-probe/s22/s8192.json --out "$OUT/b8192" --only dense --repeats 3 --jobs 16 > "$OUT/b8192.log" 2>&1
echo "bench rc=$?"; grep -E "^\| " "$OUT/b8192/RESULTS.fragment.md" | head -30
python3 -c "
import json; r=json.load(open('$OUT/b8192/results.json'))
for x in r['results']:
    if x.get('name','').startswith('kiln') and 'plan' in x: print(x['name'], [b.get('config') for b in x['plan'].get('buckets',[]) if b.get('m_max',0)>=8192][:1])
"

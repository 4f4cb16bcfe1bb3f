#!/usr/bin/env bash
# session 21 call 11: the two changed table rows, settled bench with same-run anchors (3 repeats).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
export KILN_CACHE_DIR=$(mktemp -d)
timeout 200 python3 bench/bench_shapes.py --shapes carry-probe/s21/two_shapes.json --out "$OUT/two" --only dense --repeats 3 --jobs 16 > "$OUT/two.log" 2>&1
echo "rc=$?"; grep -E "kiln (bf16|e4m3 row) \[" "$OUT/two/RESULTS.fragment.md"
python3 -c "
import json; r=json.load(open('$OUT/two/results.json'))
for x in r['results']:
    if x.get('name','').startswith(('kiln bf16 [','kiln e4m3 row [')): print(x['shape'], x['name'], [b.get('config') for b in x['plan'].get('buckets',[]) if b.get('m_max',0)>=4096][:1])
"

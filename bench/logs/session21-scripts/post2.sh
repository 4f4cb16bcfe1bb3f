#!/usr/bin/env bash
# session 21 call 2: same-run anchors, then bf16 / FP8 tensor probes (3 rounds), then anchors again.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
anch() {
python3 - <<'PY'
import sys; sys.path.insert(0, "bench")
from bench_shapes import fast_accum_anchors
from bench_slice import anchors
for M, N, K in ((4096, 7168, 2048), (4096, 7168, 16384), (8192, 8192, 8192), (4096, 4096, 7168), (4096, 2112, 7168), (4096, 24576, 1536)):
    b = anchors.dense_anchors(M, N, K)
    line = f"{M}x{N}x{K} bf16 {b['bf16'] * 1e3:.2f} us"
    if K in (16384, 7168) and N != 2112:
        a = fast_accum_anchors(M, N, K)
        line += f" fp8_tensor_fast {a['fp8_tensor_fast'] * 1e3:.2f} us"
    print(line, flush=True)
PY
}
anch
timeout 400 python3 bench/probe_graph_configs.py carry-probe/s21/cands2.json --rounds 3 --jobs 16 2>&1 | grep -v "^      [ 0-9.]* us \|^  {.*}$\|^  plan.s own  "
anch

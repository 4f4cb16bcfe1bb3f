#!/usr/bin/env bash
# session 19 run 8: ping-pong at 5 stages for FP8 tensor and bf16 where the bench has them below 1.0x,
# with the same-run anchors (cuBLAS fast-accumulation FP8 tensor, cuBLAS bf16) timed first.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 - <<'PY'
import sys; sys.path.insert(0, "bench")
from bench_shapes import fast_accum_anchors
from bench_slice import anchors
for M, N, K in ((4096, 7168, 2048), (4096, 4096, 7168)):
    a = fast_accum_anchors(M, N, K)
    b = anchors.dense_anchors(M, N, K)
    print(f"{M}x{N}x{K} fp8_tensor_fast {a['fp8_tensor_fast'] * 1e3:.2f} us bf16 {b['bf16'] * 1e3:.2f} us", flush=True)
PY
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 bench/probe_graph_configs.py carry-probe/cands8.json

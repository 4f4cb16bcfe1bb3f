#!/usr/bin/env bash
# session 19 run 2: cuBLAS's kernels for the fast-accumulation anchors (names: tile, cluster, schedule);
# graph-replay probes of row tile configs on the branch's kernels (per-consumer column-scale slabs).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "--- cuBLAS kernels of the fast-accumulation anchors"
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 - <<'PY'
import sys, torch; sys.path.insert(0, "bench")
from bench_slice import anchors
one = torch.ones((), device="cuda")
for M, N, K in ((4096, 7168, 2048), (4096, 24576, 1536), (4096, 2112, 7168), (4096, 4096, 7168)):
    x = anchors.fp8_rowwise(torch.randn(M, K, device="cuda", dtype=torch.bfloat16))
    w = anchors.fp8_rowwise(torch.randn(N, K, device="cuda", dtype=torch.bfloat16))
    calls = {"row_fast": lambda: torch._scaled_mm(x[0], w[0].t(), x[1], w[1].t(), out_dtype=torch.bfloat16, use_fast_accum=True),
             "tensor_fast": lambda: torch._scaled_mm(x[0], w[0].t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True)}
    for name, f in calls.items():
        try:
            f(); torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                f(); torch.cuda.synchronize()
            names = sorted({e.key for e in prof.key_averages() if "Memcpy" not in e.key})
            print(f"{M}x{N}x{K} {name}: {' | '.join(n[:160] for n in names)}", flush=True)
        except Exception as e:
            print(f"{M}x{N}x{K} {name}: error {e}"[:300], flush=True)
PY
exit 0
KILN_ANCHORS_DIR=$(pwd)/.bench_shared python3 bench/probe_graph_configs.py carry-probe/cands2.json

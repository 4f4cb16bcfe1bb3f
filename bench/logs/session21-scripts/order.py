"""Does what runs just before a bench_graph timing move it? cuBLAS anchor vs kiln with its float64 check
before the timing (the bench's order so far) and after it, in turn, 4 times per shape."""
import statistics, sys, time
sys.path.insert(0, "bench")
from bench_slice import anchors, kiln, kiln_dense, torch
from bench_shapes import fast_accum_anchors
rt = kiln.Runtime()
SH = [("gemm a=bf16 b=bf16 out=bf16", "bf16", 4096, 4096, 7168), ("gemm a=bf16 b=bf16 out=bf16", "bf16", 4096, 7168, 2048),
      ("gemm a=bf16 b=bf16 out=bf16", "bf16", 4096, 24576, 1536), ("gemm a=bf16 b=bf16 out=bf16", "bf16", 4096, 7168, 16384),
      ("gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "e4m3", 4096, 7168, 16384), ("gemm a=e4m3:m b=e4m3:n out=bf16", "fp8_row", 4096, 7168, 2048)]
def anchor(fmt, M, N, K):
    n = anchors.copies_for(2 * (M * K + N * K))
    xs = [torch.randn(M, K, device="cuda", dtype=torch.bfloat16) for _ in range(n)]
    ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) for _ in range(n)]
    if fmt == "bf16":
        return anchors.bench_graph([lambda x=x, w=w: x @ w.t() for x, w in zip(xs, ws)])
    q = [(anchors.fp8_rowwise(x), anchors.fp8_rowwise(w)) for x, w in zip(xs, ws)]
    one = torch.ones((), device="cuda")
    if fmt == "e4m3":
        return anchors.bench_graph([lambda a=a, b=b: torch._scaled_mm(a[0], b[0].t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True) for a, b in q])
    return anchors.bench_graph([lambda a=a, b=b: torch._scaled_mm(a[0], b[0].t(), a[1], b[1].t(), out_dtype=torch.bfloat16, use_fast_accum=True) for a, b in q])
for spec, fmt, M, N, K in SH:
    t = {"anchor": [], "kiln check-first": [], "kiln check-after": []}
    for r in range(4):
        order = ["anchor", "kiln check-first", "kiln check-after"] if r % 2 == 0 else ["anchor", "kiln check-after", "kiln check-first"]
        for o in order:
            if o == "anchor":
                t[o].append(anchor(fmt, M, N, K))
            else:
                ms, err, unw, _ = kiln_dense(rt, spec, M, N, K, fmt, check_after=(o == "kiln check-after"))
                assert err < 1e-2 and unw == 0, (err, unw)
                t[o].append(ms)
    a = statistics.median(t["anchor"])
    print(f"{spec} {M}x{N}x{K}: " + "; ".join(f"{k} {statistics.median(v)*1e3:.1f} us ({min(v)*1e3:.1f}-{max(v)*1e3:.1f}) ratio {a/statistics.median(v):.3f}" for k, v in t.items()), flush=True)

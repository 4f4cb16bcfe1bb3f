"""The anchors of kiln's benchmark: what a user would run instead of kiln (cuBLAS through torch, torch's
grouped GEMMs, a torch dequantize-then-matmul fallback, Triton), timed on the same GPU in the same process.

bench/bench_shapes.py and the other drivers in bench/ import it, so both sides are measured the same way in
one run:
    from anchors import bench_graph, ceilings, dense_anchors, grouped_anchors, routing, ...
Run alone, it prints the ceilings and the anchors' times on bench/shapes.json (next to this file):
    python3 bench/anchors.py [--quick]
Needs torch and a GPU (and triton for the Triton anchors). Weights are (N, K) row-major, Y = X W^T (kiln fprop).

Timing (bench_graph): the calls are captured in one CUDA graph and replayed; each call works on its own
copy of the inputs, with enough copies that the working set exceeds 3x L2, so small (decode) problems
are timed from HBM without launch gaps and without a dirty-L2 flush in front of them. kiln is timed with
the same helper.
"""
import json, math, os, statistics, sys
import torch

dev = torch.device("cuda")
L2_BYTES = torch.cuda.get_device_properties(0).L2_cache_size if torch.cuda.is_available() else 60 << 20


def copies_for(bytes_per_call, cap=64):
    """How many input copies make the working set exceed 3x L2."""
    return max(1, min(cap, math.ceil(3 * L2_BYTES / max(1, bytes_per_call))))


def capture_graph(calls):
    """One CUDA graph of `calls` (zero-argument callables), run once eagerly on a side stream first."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for c in calls:
            c()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for c in calls:
            c()
    return g


def bench_graph(calls, reps=30):
    """Median milliseconds per call; `calls` are zero-argument callables, each on its own inputs."""
    g = capture_graph(calls)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / len(calls))
    return statistics.median(times)


def fp8_rowwise(t):
    """FP8 e4m3 with one f32 scale per row (per token for X, per output channel for W)."""
    s = t.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-12) / 448.0
    return (t.float() / s).to(torch.float8_e4m3fn), s


def ceilings():
    """Copy (read+write) and read-only bandwidth, cuBLAS bf16 and FP8 rates at 8192^3.
    read_gbps is the decode ceiling: a GEMM at small M only reads its weights."""
    n = 2 * 1024**3
    a = torch.empty(n, dtype=torch.uint8, device=dev).random_()
    b = torch.empty_like(a)
    # an elementwise kernel, not copy_: a captured memcpy may run on the copy engines, which are slower
    out = {"copy_gbps": 2 * n / bench_graph([lambda: torch.bitwise_not(a, out=b)]) / 1e6}
    a64 = a.view(torch.int64)
    out["read_gbps"] = n / bench_graph([lambda: a64.sum()]) / 1e6
    del a, b, a64
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    y = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    f = 2 * 8192**3
    out["cublas_bf16_tflops"] = f / bench_graph([lambda: x @ y]) / 1e9
    xa, ya = x.to(torch.float8_e4m3fn), y.to(torch.float8_e4m3fn).t().contiguous().t()
    one = torch.ones((), device=dev)
    out["cublas_fp8_tflops"] = f / bench_graph(
        [lambda: torch._scaled_mm(xa, ya, one, one, out_dtype=torch.bfloat16)]) / 1e9
    out["cublas_fp8_fast_accum_tflops"] = f / bench_graph(
        [lambda: torch._scaled_mm(xa, ya, one, one, out_dtype=torch.bfloat16, use_fast_accum=True)]) / 1e9
    return out


def dense_anchors(M, N, K):
    """ms per call: cuBLAS bf16, FP8 tensor / row (m and n) / DeepSeek blocks (1x128 x 128x128)."""
    n_copies = copies_for(2 * (M * K + N * K))
    xs = [torch.randn(M, K, device=dev, dtype=torch.bfloat16) for _ in range(n_copies)]
    ws = [torch.randn(N, K, device=dev, dtype=torch.bfloat16) for _ in range(n_copies)]
    r = {"bf16": bench_graph([lambda x=x, w=w: x @ w.t() for x, w in zip(xs, ws)])}
    xq = [fp8_rowwise(x) for x in xs]
    wq = [fp8_rowwise(w) for w in ws]
    one = torch.ones((), device=dev)
    r["fp8_tensor"] = bench_graph([lambda a=a, b=b: torch._scaled_mm(a[0], b[0].t(), one, one, out_dtype=torch.bfloat16)
                                   for a, b in zip(xq, wq)])
    r["fp8_row"] = bench_graph([lambda a=a, b=b: torch._scaled_mm(a[0], b[0].t(), a[1], b[1].t(), out_dtype=torch.bfloat16)
                                for a, b in zip(xq, wq)])
    if K % 128 == 0 and M > 1:
        try:
            from torch.nn.functional import scaled_mm, ScalingType
            sa = [(torch.rand(M, K // 128, device=dev) + 0.5).t().contiguous().t() for _ in xq]
            sb = [torch.rand((N + 127) // 128, K // 128, device=dev) + 0.5 for _ in wq]
            calls = [lambda a=a, b=b, s1=s1, s2=s2: scaled_mm(a[0], b[0].t(), s1, ScalingType.BlockWise1x128, s2.t(),
                                                              ScalingType.BlockWise128x128, output_dtype=torch.bfloat16)
                     for a, b, s1, s2 in zip(xq, wq, sa, sb)]
            r["fp8_block"] = bench_graph(calls)
        except Exception as e:  # not every torch build has block scaling
            r["fp8_block_error"] = str(e)[:200]
    return r


MXFP4_LUT = [0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6]


def mxfp4_eager_anchor(M, N, K):
    """The dequantize-on-the-fly fallback: unpack MXFP4 to bf16 in torch, then a bf16 matmul."""
    lut = torch.tensor(MXFP4_LUT, device=dev, dtype=torch.bfloat16)
    blocks = torch.randint(0, 256, (N, K // 2), device=dev, dtype=torch.uint8)
    scales = torch.randint(120, 130, (N, K // 32), device=dev, dtype=torch.uint8)
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)

    def f():
        w = torch.stack([lut[(blocks & 15).long()], lut[(blocks >> 4).long()]], -1).reshape(N, K // 32, 32)
        w = torch.ldexp(w.float(), scales.int().unsqueeze(-1) - 127).to(torch.bfloat16).reshape(N, K)
        return x @ w.t()
    return {"mxfp4_eager": bench_graph([f], reps=10)}


def routing(T, topk, E, seed=0):
    """Each token picks `topk` distinct experts uniformly. Returns (counts[E], offsets[E] int32 cumulative ends)
    on the device; rows are tokens*topk sorted by expert. Use the same call for kiln to get the same split."""
    g = torch.Generator(device=dev).manual_seed(seed)
    picks = torch.rand(T, E, device=dev, generator=g).topk(topk, dim=1).indices.flatten()
    counts = torch.bincount(picks, minlength=E)
    return counts, torch.cumsum(counts, 0).to(torch.int32)


def grouped_anchors(T, topk, E, N, K, seed=0):
    """ms per call for torch's grouped GEMMs (bf16, FP8 rowwise) and a per-expert bf16 loop."""
    counts, offs = routing(T, topk, E, seed)
    rows = T * topk
    a = torch.randn(rows, K, device=dev, dtype=torch.bfloat16)
    w = torch.randn(E, N, K, device=dev, dtype=torch.bfloat16)
    r = {"bf16_grouped": bench_graph([lambda: torch._grouped_mm(a, w.transpose(-2, -1), offs=offs,
                                                                 out_dtype=torch.bfloat16)])}
    aq, sa = fp8_rowwise(a)
    wq, sw = fp8_rowwise(w)
    r["fp8_row_grouped"] = bench_graph([lambda: torch._scaled_grouped_mm(
        aq, wq.transpose(-2, -1), sa.squeeze(-1), sw.squeeze(-1), offs=offs, out_dtype=torch.bfloat16)])
    bounds = [0] + offs.tolist()

    def loop():
        for e in range(E):
            if bounds[e + 1] > bounds[e]:
                a[bounds[e]:bounds[e + 1]] @ w[e].t()
    r["bf16_loop"] = bench_graph([loop])
    r["active_experts"] = int((counts > 0).sum())
    r["active_weight_bytes_fp8"] = r["active_experts"] * N * K
    return r


def triton_anchor(M, N, K, dtype=torch.bfloat16):
    """A tutorial-style autotuned Triton matmul: what a Triton user writes."""
    import triton
    import triton.language as tl

    @triton.autotune(configs=[
        triton.Config({"BM": 128, "BN": 256, "BK": 64}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 128, "BK": 64}, num_stages=4, num_warps=4),
        triton.Config({"BM": 128, "BN": 256, "BK": 128}, num_stages=3, num_warps=8),
        triton.Config({"BM": 64, "BN": 64, "BK": 128}, num_stages=4, num_warps=4),
    ], key=["M", "N", "K"])
    @triton.jit
    def mm(a, b, c, M, N, K, sam, sbn, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid = tl.program_id(0)
        npn = tl.cdiv(N, BN)
        pm, pn = pid // npn, pid % npn
        rm = (pm * BM + tl.arange(0, BM)) % M
        rn = (pn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        ap = a + rm[:, None] * sam + rk[None, :]
        bp = b + rn[None, :] * sbn + rk[:, None]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(tl.load(ap, mask=rk[None, :] < K - k * BK, other=0.),
                         tl.load(bp, mask=rk[:, None] < K - k * BK, other=0.), acc)
            ap += BK
            bp += BK
        cm = pm * BM + tl.arange(0, BM)
        cn = pn * BN + tl.arange(0, BN)
        tl.store(c + cm[:, None] * scm + cn[None, :], acc.to(c.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))

    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16).to(dtype)
    w = torch.randn(N, K, device=dev, dtype=torch.bfloat16).to(dtype)
    c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
    f = lambda: mm[grid](x, w, c, M, N, K, x.stride(0), w.stride(0), c.stride(0))
    f()  # autotune outside the graph
    return {"triton_" + str(dtype).split(".")[-1]: bench_graph([f])}


def triton_mxfp4_anchor(M, N, K):
    """MXFP4 weights x bf16 activations the way a Triton user writes it on Hopper (tl.dot_scaled, which
    upcasts the 4-bit operand in registers). Weights (N, K/2) packed along K, even element in the low
    nibble; scales (N, K/32) E8M0. Returns ms and the relative error against an fp64 reference."""
    import triton
    import triton.language as tl

    def prune(configs, named_args, **kwargs):
        return [c for c in configs if named_args["K"] % c.kwargs["BK"] == 0] or configs[-1:]

    @triton.autotune(configs=[triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=st)
                              for bm, bn, bk, w, st in [(16, 64, 256, 4, 4), (16, 128, 128, 4, 4), (32, 64, 256, 4, 4),
                                                        (64, 128, 128, 4, 3), (128, 128, 128, 8, 3), (128, 256, 128, 8, 3),
                                                        (16, 64, 64, 4, 4), (128, 128, 64, 8, 4), (64, 64, 32, 4, 4)]],
                     key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})
    @triton.jit
    def mm(x_ptr, w_ptr, s_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), tl.float32)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.)
            w = tl.load(w_ptr + rn[None, :] * (K // 2) + (k0 // 2 + tl.arange(0, BK // 2))[:, None], mask=rn[None, :] < N, other=0)
            s = tl.load(s_ptr + rn[:, None] * (K // 32) + (k0 // 32 + tl.arange(0, BK // 32))[None, :], mask=rn[:, None] < N, other=127)
            acc = tl.dot_scaled(x, None, "bf16", w, s, "e2m1", acc)
        tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    blocks = torch.randint(0, 256, (N, K // 2), device=dev, dtype=torch.uint8)
    scales = torch.randint(122, 130, (N, K // 32), device=dev, dtype=torch.uint8)
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
    f = lambda: mm[grid](x, blocks, scales, y, M, N, K)
    f()
    torch.cuda.synchronize()
    lut = torch.tensor(MXFP4_LUT, device=dev, dtype=torch.float64)
    w = torch.stack([lut[(blocks & 15).long()], lut[(blocks >> 4).long()]], -1).reshape(N, K // 32, 32)
    w = torch.ldexp(w, scales.long().unsqueeze(-1) - 127).reshape(N, K)
    ref = x.double() @ w.t()
    err = ((y.double() - ref).norm() / ref.norm()).item()
    return {"triton_mxfp4": bench_graph([f]), "triton_mxfp4_rel_err": err}


def humming_w4a16_anchor(M, N, K):
    """MXFP4 weights x bf16 with humming (PyPI `humming-kernels`, the JIT quantized-GEMM library vLLM ships;
    install its wheel on the GPU machine; it compiles with that machine's CUDA toolkit). Weights (N, K/2)
    packed along K, even element in the low nibble, scales (N, K/32) E8M0; weights rotate over enough copies
    to leave L2.
    Returns ms, the weight bytes read per call and the relative error against an fp64 reference."""
    from humming.layer import HummingLayer
    blocks = torch.randint(0, 256, (N, K // 2), device=dev, dtype=torch.uint8)
    scales = torch.randint(118, 124, (N, K // 32), device=dev, dtype=torch.uint8)
    wbytes = N * K // 2 + N * K // 32
    n = copies_for(wbytes + M * K * 2, cap=12)
    xs = [torch.randn(M, K, device=dev, dtype=torch.bfloat16) for _ in range(n)]
    layers = []
    for _ in range(n):
        L = HummingLayer(shape_n=N, shape_k=K, weight_config={"quant_method": "mxfp4"},
                         torch_dtype=torch.bfloat16).cuda()
        L.load_from_tensors({"weight": blocks.clone(), "weight_scale": scales.clone()})
        L.transform()
        layers.append(L)
    y = layers[0](xs[0])
    torch.cuda.synchronize()
    lut = torch.tensor(MXFP4_LUT, device=dev, dtype=torch.float64)
    w = torch.stack([lut[(blocks & 15).long()], lut[(blocks >> 4).long()]], -1).reshape(N, K // 32, 32)
    w = torch.ldexp(w, scales.long().unsqueeze(-1) - 127).reshape(N, K)
    ref = xs[0].double() @ w.t()
    err = ((y.double() - ref).norm() / ref.norm()).item()
    ms = bench_graph([lambda x=x, L=L: L(x) for x, L in zip(xs, layers)])
    return {"humming_mxfp4": ms, "humming_mxfp4_weight_bytes": wbytes, "humming_mxfp4_rel_err": err}


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    shapes = json.load(open(os.path.join(here, "shapes.json")))
    quick = "--quick" in sys.argv
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "l2_bytes": L2_BYTES, **ceilings()}), flush=True)
    for M, N, K in shapes["dense"][: 4 if quick else None]:
        print(json.dumps({"dense": [M, N, K], **dense_anchors(M, N, K)}), flush=True)
    for M, N, K in ([1, 8192, 8192], [16, 5760, 2880], [16, 8192, 8192], [4096, 5760, 2880]):
        print(json.dumps({"dense": [M, N, K], **mxfp4_eager_anchor(M, N, K), **triton_mxfp4_anchor(M, N, K)}), flush=True)
    for M, N, K in ([4096, 7168, 16384],) if quick else ([4096, 7168, 16384], [128, 7168, 2048]):
        for dt in (torch.bfloat16, torch.float8_e4m3fn):
            print(json.dumps({"dense": [M, N, K], **triton_anchor(M, N, K, dt)}), flush=True)
    for m in shapes["moe"][: 2 if quick else None]:
        for T in m["tokens"]:
            print(json.dumps({"moe": m["name"], "T": T,
                              **grouped_anchors(T, m["topk"], m["experts"], m["n"], m["k"])}), flush=True)

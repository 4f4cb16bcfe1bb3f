"""kiln's backward passes (docs/backward.md) against what a training framework runs instead, timed the same
way in one process (anchors.bench_graph):

  dgrad  dX[M, K] = dY[M, N] . W[N, K]      anchor: torch.mm(dY, W)         (cuBLAS, W read as it is stored)
  wgrad  dW[N, K] = dY[M, N]^T . X[M, K]    anchor: torch.mm(dY.t(), X)     (cuBLAS on the transposed view)
  grouped dgrad (offsets)                    anchor: torch._grouped_mm(dY, W, offs)
  grouped wgrad (offsets)                    anchor: torch._grouped_mm(dY.t(), X, offs)  ([E, N, K] bf16)
  frozen MXFP4 grouped dgrad (LoRA)          anchor: torch._grouped_mm on the bf16 dequantization of W
  FP8 1x128 wgrad (mode quantized)           anchors: torch.mm(dY.t(), X) in bf16; scaled_mm 1x128 x 1x128
  FP8 1x128 x 128x128 dgrad (mode quantized) anchors: torch.mm(dY, W) in bf16; scaled_mm 1x128 x 128x128 on Wᵀ
  MXFP8 dgrad / wgrad, per-tensor FP8 wgrad, row-wise FP8 dgrad / wgrad  anchor: torch.mm in bf16 (--copies-only)

bf16 operands (mode high_precision), every dense shape of bench/shapes.json with M >= --min-m and the MoE
layers' dgrad and wgrad at their largest token count. Each kiln output is checked against the anchor's (relative
Frobenius error) before it is timed. Prints a markdown table and writes it with the raw figures to --out.

    python3 bench/bench_backward.py --out out/backward [--min-m 4096] [--out-dtype bf16] [--grouped-only]
        [--frozen-only] [--fp8-block-only] [--copies-only]
Needs torch, a GPU and a built kiln (KILN_LIBRARY or build/capi/libkiln.so).
"""
import argparse, json, os, sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from anchors import bench_graph, copies_for  # noqa: E402
import kiln  # noqa: E402
import kiln.torch as kt  # noqa: E402  (kt.quantize: kiln's quantizers with the layouts of docs/formats.md)

dev = torch.device("cuda")


def config_for(plan, m):
    """The config of the M bucket Plan.run picks for m rows (grouped: rows per expert)."""
    buckets = plan.describe()["buckets"]
    return next((b["config"] for b in buckets if b["m_max"] >= m), buckets[-1]["config"])


def rel_err(x, ref):
    x, ref = x.double(), ref.double()
    return (torch.linalg.norm(x - ref) / torch.linalg.norm(ref).clamp(min=1e-30)).item()


def timed(fn_of_inputs, make_inputs, bytes_per_call):
    copies = [make_inputs() for _ in range(copies_for(bytes_per_call, cap=8))]
    return bench_graph([lambda c=c: fn_of_inputs(*c) for c in copies])


def dense_rows(rt, shapes, out_dtype):
    rows = []
    odt = {"bf16": torch.bfloat16, "f32": torch.float32}[out_dtype]
    for m, n, k in shapes:
        for pass_ in ("dgrad", "wgrad"):
            spec = f"gemm a=bf16 b=bf16 out={out_dtype} pass={pass_}"
            plan = rt.plan(spec, n, k, m)
            plan.prepare()
            dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            if pass_ == "dgrad":
                w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) / n**0.5
                out = torch.empty(m, k, device=dev, dtype=odt)
                plan.run(dy, w, out=out)
                ref = torch.mm(dy, w)
                make = lambda: (torch.randn(m, n, device=dev, dtype=torch.bfloat16),
                                torch.randn(n, k, device=dev, dtype=torch.bfloat16),
                                torch.empty(m, k, device=dev, dtype=odt))
                kiln_fn = lambda a, b, o: plan.run(a, b, out=o)
                anchor_fn = lambda a, b, o: torch.mm(a, b, out=o) if odt == torch.bfloat16 else torch.mm(a, b)
                nbytes = 2 * (m * n + n * k) + odt.itemsize * m * k
            else:
                x = torch.randn(m, k, device=dev, dtype=torch.bfloat16) / m**0.5
                out = torch.empty(n, k, device=dev, dtype=odt)
                plan.run(dy, x, out=out)
                ref = torch.mm(dy.t(), x)
                make = lambda: (torch.randn(m, n, device=dev, dtype=torch.bfloat16),
                                torch.randn(m, k, device=dev, dtype=torch.bfloat16),
                                torch.empty(n, k, device=dev, dtype=odt))
                kiln_fn = lambda a, b, o: plan.run(a, b, out=o)
                anchor_fn = (lambda a, b, o: torch.mm(a.t(), b, out=o)) if odt == torch.bfloat16 else \
                    (lambda a, b, o: torch.mm(a.t(), b))
                nbytes = 2 * (m * n + m * k) + odt.itemsize * n * k
            torch.cuda.synchronize()
            err = rel_err(out, ref)
            t_kiln = timed(kiln_fn, make, nbytes)
            t_anchor = timed(anchor_fn, make, nbytes)
            flops = 2.0 * m * n * k
            rows.append({"pass": pass_, "m": m, "n": n, "k": k, "out": out_dtype, "err": err,
                         "kiln_ms": t_kiln, "anchor_ms": t_anchor, "anchor": "torch.mm (cuBLAS)",
                         "kiln_tflops": flops / t_kiln / 1e9, "anchor_tflops": flops / t_anchor / 1e9,
                         "speedup": t_anchor / t_kiln, "config": config_for(plan, m)})
            print(fmt_row(rows[-1]), flush=True)
    return rows


def grouped_rows(rt, layers):
    rows = []
    for layer in layers:
        e, n = layer["experts"], layer["n"]
        m = max(layer["tokens"]) * layer["topk"]
        g = torch.Generator(device="cpu").manual_seed(e * 7919 + n)
        counts = torch.multinomial(torch.ones(e), m, replacement=True, generator=g).bincount(minlength=e)
        offs = counts.cumsum(0).to(torch.int32).to(dev)
        for pass_ in ("dgrad", "wgrad"):
            rows.append(grouped_row(rt, layer, m, offs, pass_))
            print(fmt_row(rows[-1]), flush=True)
    return rows


def grouped_row(rt, layer, m, offs, pass_):
    """One grouped pass (bf16 out) against torch._grouped_mm's form of it: dgrad dX = dY . W[e]
    (_grouped_mm(dY, W, offs)), wgrad dW[e] = dY_e^T . X_e over each expert's rows (_grouped_mm(dY.t(), X,
    offs), the 2-D x 2-D case with the offsets along the reduction)."""
    e, n, k = layer["experts"], layer["n"], layer["k"]
    plan = rt.plan(f"grouped_gemm[experts={e},layout=offsets] a=bf16 b=bf16 out=bf16 pass={pass_}", n, k, m)
    plan.prepare()
    dgrad = pass_ == "dgrad"

    def make():
        dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
        if dgrad:
            return dy, torch.randn(e, n, k, device=dev, dtype=torch.bfloat16) / n**0.5, \
                torch.empty(m, k, device=dev, dtype=torch.bfloat16)
        return dy, torch.randn(m, k, device=dev, dtype=torch.bfloat16), \
            torch.empty(e, n, k, device=dev, dtype=torch.bfloat16)

    def anchor(a, b, o=None):
        return torch._grouped_mm(a if dgrad else a.t(), b, offs=offs)

    a, b, out = make()
    plan.run(a, b, out=out, offsets=offs)
    err = rel_err(out, anchor(a, b))
    nbytes = 2 * (m * n + e * n * k + m * k)
    t_kiln = timed(lambda a, b, o: plan.run(a, b, out=o, offsets=offs), make, nbytes)
    t_anchor = timed(anchor, make, nbytes)
    flops = 2.0 * m * n * k
    return {"pass": f"grouped {pass_}", "layer": layer["name"], "m": m, "n": n, "k": k, "out": "bf16", "err": err,
            "kiln_ms": t_kiln, "anchor_ms": t_anchor,
            "anchor": "torch._grouped_mm" + ("" if dgrad else "(dY.t(), X)"),
            "kiln_tflops": flops / t_kiln / 1e9, "anchor_tflops": flops / t_anchor / 1e9,
            "speedup": t_anchor / t_kiln, "config": config_for(plan, -(-m // e))}


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_weights(e, n, k, g, scale_bytes=(118, 128)):
    """Random MXFP4 weights [E, N, K/2] (two E2M1 codes per byte, the even element low) with E8M0 scales
    [E, N, K/32] drawn uniformly from the byte range scale_bytes (inclusive; 118..128 is 2^-9..2^1, where
    trained weights' block scales lie), and their exact bf16 dequantization [E, N, K] (the anchor's weights)."""
    codes = torch.randint(0, 256, (e, n, k // 2), generator=g, dtype=torch.uint8).to(dev)
    scales = torch.randint(scale_bytes[0], scale_bytes[1] + 1, (e, n, k // 32), generator=g, dtype=torch.uint8).to(dev)
    table = torch.tensor(E2M1, device=dev, dtype=torch.float32)
    lo, hi = table[(codes & 15).long()], table[(codes >> 4).long()]
    vals = torch.stack([lo, hi], dim=-1).reshape(e, n, k)
    s = torch.exp2(scales.float() - 127.0).repeat_interleave(32, dim=-1)
    return codes, scales, (vals * s).to(torch.bfloat16)


def frozen_mxfp4_rows(rt, layers, rows_per_expert, scale_bytes=(118, 128)):
    """LoRA over frozen MXFP4 experts: grouped dgrad dX = dY . dequant(W) with W read packed (mode
    dequantized), against torch._grouped_mm on the bf16 dequantization of the same weights."""
    rows = []
    for layer in layers:
        e, n, k = layer["experts"], layer["n"], layer["k"]
        g = torch.Generator(device="cpu").manual_seed(e * 131 + n)
        codes, scales, w16 = mxfp4_weights(e, n, k, g, scale_bytes)
        for rpe in rows_per_expert:
            m = rpe * e
            spec = f"grouped_gemm[experts={e},layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad"
            plan = rt.plan(spec, n, k, m)
            plan.prepare()
            offs = torch.arange(1, e + 1, device=dev, dtype=torch.int32) * rpe
            dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            out = torch.empty(m, k, device=dev, dtype=torch.bfloat16)
            plan.run(dy, codes, out=out, b_scale=scales, offsets=offs)
            ref = torch._grouped_mm(dy, w16, offs=offs)
            torch.cuda.synchronize()
            err = rel_err(out, ref)
            wbytes = codes.numel() + scales.numel()
            make_k = lambda: (torch.randn(m, n, device=dev, dtype=torch.bfloat16), codes, scales,
                              torch.empty(m, k, device=dev, dtype=torch.bfloat16))
            t_kiln = timed(lambda a, b, sc, o: plan.run(a, b, out=o, b_scale=sc, offsets=offs), make_k,
                           wbytes + 2 * (m * n + m * k))
            make_a = lambda: (torch.randn(m, n, device=dev, dtype=torch.bfloat16), w16)
            t_anchor = timed(lambda a, b: torch._grouped_mm(a, b, offs=offs), make_a, 2 * (e * n * k + m * n + m * k))
            flops = 2.0 * m * n * k
            rows.append({"pass": "grouped dgrad mxfp4 (dequantized)", "layer": layer["name"], "m": m, "n": n, "k": k,
                         "out": "bf16", "err": err, "kiln_ms": t_kiln, "anchor_ms": t_anchor,
                         "anchor": "torch._grouped_mm on bf16 W", "kiln_tflops": flops / t_kiln / 1e9,
                         "anchor_tflops": flops / t_anchor / 1e9, "speedup": t_anchor / t_kiln,
                         "weight_tbps": wbytes / t_kiln / 1e9, "config": config_for(plan, rpe),
                         "scale_bytes": list(scale_bytes)})
            print(fmt_row(rows[-1]) + f" weights {rows[-1]['weight_tbps']:.2f} TB/s, E8M0 scales {scale_bytes}, "
                  f"{rows[-1]['config']}", flush=True)
    return rows


HEADER = ("| pass | M x N x K | out | kiln ms | anchor ms | kiln TFLOP/s | anchor TFLOP/s | anchor / kiln | err |\n"
          "|---|---|---|---|---|---|---|---|---|")


def dequant_colwise(codes, scales):
    """f32 values of a column-wise FP8 copy: codes [R, M] (e4m3) times its 1x128 scales [R, M/128]."""
    return codes.view(torch.float8_e4m3fn).float() * scales.repeat_interleave(128, dim=1)


def scaled_mm_blockwise(a, sa, b, sb, b_blocks="1x128"):
    """cuBLAS block-scaled GEMM a . bᵀ (torch.nn.functional.scaled_mm): a [R, L] FP8 codes with 1x128 scales
    [R, L/128], b [C, L] codes with 1x128 scales [C, L/128] (b_blocks "1x128") or 128x128 scales
    [C/128, L/128] ("128x128"); both quantized along the reduction L. None where this torch does not offer
    it. The scale layouts cuBLAS takes are tried in turn; the first that runs is timed."""
    what = f"scaled_mm 1x128 x {b_blocks}"
    try:
        from torch.nn.functional import scaled_mm, ScalingType
    except ImportError as e:
        print(f"{what}: not available ({e})")
        return None
    kind = ScalingType.BlockWise1x128 if b_blocks == "1x128" else ScalingType.BlockWise128x128
    fa, fb = a.view(torch.float8_e4m3fn), b.view(torch.float8_e4m3fn).t()
    last = None
    for s1, s2 in ((sa.t().contiguous().t(), sb.t()), (sa.t().contiguous().t(), sb.t().contiguous()),
                   (sa, sb.t().contiguous()), (sa, sb)):
        fn = lambda s1=s1, s2=s2: scaled_mm(fa, fb, s1, ScalingType.BlockWise1x128, s2, kind,
                                            output_dtype=torch.bfloat16)
        try:
            fn()
            return fn
        except Exception as e:  # noqa: BLE001 - try the next layout, report the last failure
            last = e
    print(f"{what}: not available ({type(last).__name__}: {str(last)[:160]})")
    return None


def fp8_block_wgrad_rows(rt, shapes):
    """Mode quantized wgrad: dW[N, K] = dYᵀ X on the column-wise FP8 copies (1x128 blocks along the M tokens,
    made by kiln's `quantize ... transpose=true`), bf16 dW. kiln's GEMM against cuBLAS bf16 on the transposed
    view and against cuBLAS's 1x128 x 1x128 block scaling (scaled_mm) on the same copies; end to end, kiln's
    two quantize passes included."""
    rows = []
    gemm = "gemm a=e4m3:block1x128 b=e4m3:block1x128 out=bf16 pass=wgrad"
    for m, n, k in shapes:
        plan = rt.plan(gemm, n, k, m)
        plan.prepare()
        qd = rt.plan("quantize a=bf16 out=e4m3:block1x128 transpose=true", 0, n, m)
        qx = rt.plan("quantize a=bf16 out=e4m3:block1x128 transpose=true", 0, k, m)
        qd.prepare()
        qx.prepare()

        def make():
            dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            cd = torch.empty(n, m, device=dev, dtype=torch.uint8)
            sd = torch.empty(n, m // 128, device=dev, dtype=torch.float32)
            cx = torch.empty(k, m, device=dev, dtype=torch.uint8)
            sx = torch.empty(k, m // 128, device=dev, dtype=torch.float32)
            dw = torch.empty(n, k, device=dev, dtype=torch.bfloat16)
            qd.run(dy, out=cd, out_scale=sd)
            qx.run(x, out=cx, out_scale=sx)
            return dy, x, cd, sd, cx, sx, dw

        def gemm_only(dy, x, cd, sd, cx, sx, dw):
            plan.run(cd, cx, out=dw, a_scale=sd, b_scale=sx)

        def end_to_end(dy, x, cd, sd, cx, sx, dw):
            qd.run(dy, out=cd, out_scale=sd)
            qx.run(x, out=cx, out_scale=sx)
            plan.run(cd, cx, out=dw, a_scale=sd, b_scale=sx)

        dy, x, cd, sd, cx, sx, dw = make()
        gemm_only(dy, x, cd, sd, cx, sx, dw)
        ref = dequant_colwise(cd, sd) @ dequant_colwise(cx, sx).t()
        err = rel_err(dw.float(), ref)
        del ref
        bytes_per = m * (n + k) * 3 + n * k * 2
        copies = [make() for _ in range(copies_for(bytes_per, cap=4))]
        kiln_ms = bench_graph([lambda c=c: gemm_only(*c) for c in copies])
        e2e_ms = bench_graph([lambda c=c: end_to_end(*c) for c in copies])
        bf16_ms = bench_graph([lambda c=c: torch.mm(c[0].t(), c[1], out=c[6]) for c in copies])
        smm = [scaled_mm_blockwise(c[2], c[3], c[4], c[5]) for c in copies]
        smm_ms = bench_graph(smm) if all(f is not None for f in smm) else None
        if smm_ms is not None:  # the anchor's product on the same copies, against the same reference
            ref = dequant_colwise(cd, sd) @ dequant_colwise(cx, sx).t()
            smm_err = rel_err(scaled_mm_blockwise(cd, sd, cx, sx)().float(), ref)
            del ref
            print(f"scaled_mm 1x128 x 1x128 rel. error {smm_err:.1e}")
        rows.append(fp8_row("wgrad fp8 1x128", m, n, k, kiln_ms, ("e2e_ms", "", e2e_ms), bf16_ms, smm_ms, err,
                            config_for(plan, m)))
        del copies, smm
    return rows


def fp8_row(name, m, n, k, kiln_ms, extra, bf16_ms, smm_ms, err, config):
    """One FP8 backward row (printed as it is made): kiln against cuBLAS bf16 torch.mm, with cuBLAS
    scaled_mm's time and one more kiln time, extra = (key, label, ms)."""
    fl = 2 * m * n * k
    key, label, extra_ms = extra
    row = {"pass": name, "m": m, "n": n, "k": k, "out": "bf16", "kiln_ms": kiln_ms, key: extra_ms,
           "anchor_ms": bf16_ms, "scaled_mm_ms": smm_ms, "kiln_tflops": fl / kiln_ms / 1e9,
           "anchor_tflops": fl / bf16_ms / 1e9, "speedup": bf16_ms / kiln_ms, "err": err, "config": config}
    print(f"| {name} | {m} x {n} x {k} | {kiln_ms:.3f} ({fl / kiln_ms / 1e9:.0f} TFLOP/s) | {label}{extra_ms:.3f} | "
          f"bf16 mm {bf16_ms:.3f} | scaled_mm {'n/a' if smm_ms is None else f'{smm_ms:.3f}'} | {err:.1e} | "
          f"{config} |", flush=True)
    return row


def fp8_block_dgrad_rows(rt, shapes):
    """Mode quantized dgrad: dX[M, K] = dY W with dY in 1x128 blocks along N (kiln's row-wise quantizer) and W
    in 128x128 blocks as the forward holds it, bf16 dX. kiln's run includes its transpose of W (the GEMM reads
    Wᵀ); the same GEMM on a pre-transposed Wᵀ (the forward spec, m=M, n=K, k=N) shows that copy's cost. Anchors:
    cuBLAS bf16 torch.mm(dY, W), and cuBLAS 1x128 x 128x128 scaled_mm on the same codes with W pre-transposed
    (not timed for the anchor)."""
    rows = []
    spec = "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"
    for m, n, k in shapes:
        plan = rt.plan(spec + " pass=dgrad", n, k, m)
        plan.prepare()
        fwd = rt.plan(spec, k, n, m)  # the GEMM alone on Wᵀ
        fwd.prepare()
        qd = rt.plan("quantize a=bf16 out=e4m3:block1x128", 0, n, m)
        qw = rt.plan("quantize a=bf16 out=e4m3:block128x128", 0, k, n)
        qd.prepare()
        qw.prepare()

        def make():
            dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) / n**0.5
            cd = torch.empty(m, n, device=dev, dtype=torch.uint8)
            sd = torch.empty(m, n // 128, device=dev, dtype=torch.float32)
            cw = torch.empty(n, k, device=dev, dtype=torch.uint8)
            sw = torch.empty(n // 128, k // 128, device=dev, dtype=torch.float32)
            qd.run(dy, out=cd, out_scale=sd)
            qw.run(w, out=cw, out_scale=sw)
            cwt, swt = cw.t().contiguous(), sw.t().contiguous()
            dx = torch.empty(m, k, device=dev, dtype=torch.bfloat16)
            return dy, w, cd, sd, cw, sw, cwt, swt, dx

        c0 = make()
        dy, w, cd, sd, cw, sw, cwt, swt, dx = c0
        plan.run(cd, cw, out=dx, a_scale=sd, b_scale=sw)
        ref = (cd.view(torch.float8_e4m3fn).float() * sd.repeat_interleave(128, dim=1)) @ (
            cw.view(torch.float8_e4m3fn).float() * sw.repeat_interleave(128, 0).repeat_interleave(128, 1))
        err = rel_err(dx.float(), ref)
        smm0 = scaled_mm_blockwise(cd, sd, cwt, swt, "128x128")
        if smm0 is not None:
            print(f"scaled_mm 1x128 x 128x128 rel. error {rel_err(smm0().float(), ref):.1e}")
        del ref
        bytes_per = m * n * 3 + 2 * n * k * 3 + m * k * 2
        copies = [make() for _ in range(copies_for(bytes_per, cap=4))]
        kiln_ms = bench_graph([lambda c=c: plan.run(c[2], c[4], out=c[8], a_scale=c[3], b_scale=c[5]) for c in copies])
        gemm_ms = bench_graph([lambda c=c: fwd.run(c[2], c[6], out=c[8], a_scale=c[3], b_scale=c[7]) for c in copies])
        bf16_ms = bench_graph([lambda c=c: torch.mm(c[0], c[1], out=c[8]) for c in copies])
        smm = [scaled_mm_blockwise(c[2], c[3], c[6], c[7], "128x128") for c in copies]
        smm_ms = bench_graph(smm) if all(f is not None for f in smm) else None
        rows.append(fp8_row("dgrad fp8 1x128 x 128x128", m, n, k, kiln_ms, ("gemm_on_wt_ms", "GEMM on Wt ", gemm_ms),
                            bf16_ms, smm_ms, err, config_for(plan, m)))
        del copies, smm
    return rows


def decode(codes, scales):
    """float32 values of MXFP8 (E8M0 per 32 along rows), per-row ([rows] f32) or per-tensor e4m3 codes."""
    v = codes.view(torch.float8_e4m3fn).float()
    if scales.dtype == torch.uint8:
        return v * torch.exp2(scales.float() - 127).repeat_interleave(32, dim=1)
    return v * (scales[:, None] if scales.numel() > 1 else scales)


def copies_rows(rt, shapes, fmt):
    """Mode quantized passes that are the forward's kernel on copies (docs/backward.md): MXFP8 dgrad on W's
    column-wise copy and MXFP8 wgrad on dY's and X's (fmt "mxfp8"), the per-tensor FP8 wgrad on the
    transposed codes (fmt "e4m3"), or the row-wise FP8 dgrad on W's per-column copy and wgrad on the
    per-column copies of dY and X (fmt "rowwise"); bf16 out, GEMM only, against cuBLAS bf16 torch.mm on the
    same problem."""
    rows = []
    passes = ("wgrad",) if fmt == "e4m3" else ("dgrad", "wgrad")
    ab = "a=e4m3:m b=e4m3:n" if fmt == "rowwise" else f"a={fmt} b={fmt}"
    for m, n, k in shapes:
        for pass_ in passes:
            plan = rt.plan(f"gemm {ab} out=bf16 pass={pass_}", n, k, m)
            plan.prepare()
            q = "quantize a=bf16 out=e4m3:m" if fmt == "rowwise" else f"quantize a=bf16 out={fmt}"

            def make():
                dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
                other = (torch.randn(n, k, device=dev, dtype=torch.bfloat16) / n**0.5 if pass_ == "dgrad"
                         else torch.randn(m, k, device=dev, dtype=torch.bfloat16))
                if pass_ == "dgrad":  # dY along N; W's column-wise copy [K, N]
                    a, sa = kt.quantize(q, dy)
                    b, sb = kt.quantize(q + " transpose=true", other)
                elif fmt != "e4m3":  # the column-wise copies dYᵀ [N, M], Xᵀ [K, M]
                    a, sa = kt.quantize(q + " transpose=true", dy)
                    b, sb = kt.quantize(q + " transpose=true", other)
                else:  # per-tensor: the transposed codes
                    a, sa = kt.quantize(q, dy)
                    b, sb = kt.quantize(q, other)
                    a, b = a.t().contiguous(), b.t().contiguous()
                out = torch.empty(m if pass_ == "dgrad" else n, k, device=dev, dtype=torch.bfloat16)
                return dy, other, a, sa, b, sb, out

            c0 = make()
            dy, other, a, sa, b, sb, out = c0
            plan.run(a, b, out=out, a_scale=sa, b_scale=sb)
            ref = decode(a, sa) @ decode(b, sb).t()
            err = rel_err(out.float(), ref)
            del ref, c0
            bytes_per = m * n * 3 + (n * k if pass_ == "dgrad" else m * k) * 3 + out.numel() * 2
            copies = [make() for _ in range(copies_for(bytes_per, cap=4))]
            kiln_ms = bench_graph([lambda c=c: plan.run(c[2], c[4], out=c[6], a_scale=c[3], b_scale=c[5]) for c in copies])
            if pass_ == "dgrad":
                bf16_ms = bench_graph([lambda c=c: torch.mm(c[0], c[1], out=c[6]) for c in copies])
            else:
                bf16_ms = bench_graph([lambda c=c: torch.mm(c[0].t(), c[1], out=c[6]) for c in copies])
            name = {"mxfp8": "mxfp8", "e4m3": "fp8 tensor", "rowwise": "fp8 per-row copies"}[fmt]
            rows.append(fp8_row(f"{pass_} {name}", m, n, k, kiln_ms,
                                ("bf16_mm_ms", "bf16 mm ", bf16_ms), bf16_ms, None, err, config_for(plan, m)))
            del copies
    return rows


def fmt_row(r):
    label = r["pass"] + (f" ({r['layer']})" if "layer" in r else "")
    return (f"| {label} | {r['m']} x {r['n']} x {r['k']} | {r['out']} | {r['kiln_ms']:.3f} | {r['anchor_ms']:.3f} | "
            f"{r['kiln_tflops']:.0f} | {r['anchor_tflops']:.0f} | {r['speedup']:.3f} | {r['err']:.1e} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-m", type=int, default=4096)
    ap.add_argument("--out-dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--no-grouped", action="store_true")
    ap.add_argument("--grouped-only", action="store_true", help="only the MoE layers' grouped dgrad and wgrad rows")
    ap.add_argument("--fp8-block-only", action="store_true",
                    help="only the FP8 quantized wgrad and dgrad rows (M = 4096 dense shapes and 4096 x 7168 x 16384)")
    ap.add_argument("--copies-only", action="store_true",
                    help="only the MXFP8 dgrad / wgrad, per-tensor FP8 wgrad and row-wise FP8 dgrad / wgrad rows "
                         "(M = 4096 dense shapes)")
    ap.add_argument("--frozen-only", action="store_true",
                    help="only the frozen MXFP4 grouped dgrad rows (LoRA over gpt-oss-20b-sized experts)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    shapes = json.load(open(os.path.join(HERE, "shapes.json")))
    dense = [s for s in shapes["dense"] if s[0] >= args.min_m]
    rt = kiln.Runtime()
    print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    print(HEADER)
    rows = []
    if args.fp8_block_only:
        fp8 = sorted({tuple(s) for s in dense if s[0] == 4096} | {(4096, 7168, 16384)})
        rows += fp8_block_wgrad_rows(rt, fp8)
        # dY's 1x128 blocks and W's 128x128 blocks both tile dgrad's reduction N: N % 128 == 0 (kiln.torch pads N).
        skipped = [s for s in fp8 if s[1] % 128]
        if skipped:
            print(f"fp8 dgrad: shapes with N % 128 != 0 left out: {skipped}")
        rows += fp8_block_dgrad_rows(rt, [s for s in fp8 if s[1] % 128 == 0])
    elif args.copies_only:
        at_4096 = sorted({tuple(s) for s in dense if s[0] == 4096})
        rows += copies_rows(rt, at_4096, "mxfp8")
        rows += copies_rows(rt, at_4096, "e4m3")
        rows += copies_rows(rt, at_4096, "rowwise")
    elif args.grouped_only:
        rows += grouped_rows(rt, shapes["moe"])
    elif not args.frozen_only:
        rows += dense_rows(rt, dense, args.out_dtype)
        if not args.no_grouped:
            rows += grouped_rows(rt, shapes["moe"])
    # gpt-oss-20b's experts: gate|up [32, 5760, 2880] and down [32, 2880, 2880].
    gpt_oss = [{"name": "gpt-oss-20b gate_up", "experts": 32, "n": 5760, "k": 2880},
               {"name": "gpt-oss-20b down", "experts": 32, "n": 2880, "k": 2880}]
    if not (args.grouped_only or args.fp8_block_only or args.copies_only):
        rows += frozen_mxfp4_rows(rt, gpt_oss, [8, 16, 32, 64, 1024])
        # Block scales above 2^1 (bytes up to 130) take the decode kernel's two-fma conversion.
        rows += frozen_mxfp4_rows(rt, gpt_oss, [8, 16, 32], scale_bytes=(120, 130))
    with open(os.path.join(args.out, "backward.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.out, "backward.md"), "w") as f:
        f.write(HEADER + "\n" + "\n".join(fmt_row(r) for r in rows) + "\n")
    bad = [r for r in rows if not (r["err"] < 2e-2)]
    if bad:
        print(f"{len(bad)} row(s) disagree with the anchor beyond 2e-2", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

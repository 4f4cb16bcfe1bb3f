"""kiln (the family the planner picks) vs the anchors on a few dense shapes, in one process, timed the same way.

Usage (on a GPU machine, after building): python3 bench/bench_slice.py [--shapes M,N,K ...] [--out DIR] [--no-triton]
The anchors are bench/anchors.py (cuBLAS through torch, and a Triton matmul unless --no-triton).
Every kiln shape timed is also checked against a float64 torch reference on the same inputs.
Writes results.json and a markdown table (RESULTS.fragment.md) to --out (default bench/).
Also the library of the other drivers: the settled timing, the quantizers and references of the dense
formats, kiln_dense and the cuBLAS anchor calls.
"""
import argparse, datetime, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # anchors.py
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import anchors  # noqa: E402
import kiln  # noqa: E402


def settle_timings(seconds):
    """Makes every anchors.bench_graph timing, the anchors' and kiln's alike, start after `seconds` idle.

    On the H200 the power limit (700 W) sets the clock of the large GEMMs, and one bench_graph timing (a
    few tens of ms) takes whatever clock the work just before it left. Measured on an H200: cuBLAS's
    FP8 block anchor at 4096 x 7168 x 16384, timed right after three other heavy timings as
    anchors.dense_anchors times it, took 908 us (median of 4) against 747 us after an idle pause, and
    moving kiln's float64 check before or after its timing moved kiln's ratios by up to 11%. An idle
    pause before each timing starts them all from the same state (one shape's repeats then agree within
    about 1%). bench_graph's own warm-up and timed replays are unchanged. seconds <= 0 leaves bench_graph
    as it is."""
    import time
    original = getattr(anchors.bench_graph, "kiln_unsettled", anchors.bench_graph)
    if seconds <= 0:
        anchors.bench_graph = original
        return

    def settled(calls, *args, **kwargs):
        torch.cuda.synchronize()
        time.sleep(seconds)
        return original(calls, *args, **kwargs)

    settled.kiln_unsettled = original
    anchors.bench_graph = settled


def mx_quantize(x):
    """(e4m3 [R, K], E8M0 uint8 [R, K/32]): per 32 along K, scale 2^ceil(log2(amax / 448)) (docs/numerics.md §3,
    rounding up), elements x / scale rounded to e4m3 (saturating)."""
    R, K = x.shape
    xb = x.float().reshape(R, K // 32, 32)
    amax = xb.abs().amax(dim=2).clamp(min=2.0 ** -120)
    e = torch.ceil(torch.log2(amax / 448.0)).clamp(-127, 127)
    q = (xb / torch.exp2(e)[:, :, None]).clamp(-448, 448).to(torch.float8_e4m3fn).reshape(R, K)
    return q, (e + 127).to(torch.uint8).contiguous()


def mx_dequantize(q, s):
    R, K = q.shape
    return (q.double().reshape(R, K // 32, 32) * torch.exp2(s.double() - 127)[:, :, None]).reshape(R, K)


def anchor_calls(M, N, K, paths, copies=None):
    """cuBLAS's calls for the anchor paths named (bf16; fp8_tensor and fp8_row, promoted, or with fast
    accumulation as fp8_tensor_fast / fp8_row_fast; fp8_block, only where K % 128 == 0 and M > 1 as in
    anchors.dense_anchors): {path: [one call per input set]}, over `copies` input sets (default: enough to
    pass L2, as dense_anchors rotates them), each built as dense_anchors builds its inputs."""
    n = copies or anchors.copies_for(2 * (M * K + N * K))
    xs = [torch.randn(M, K, device=anchors.dev, dtype=torch.bfloat16) for _ in range(n)]
    ws = [torch.randn(N, K, device=anchors.dev, dtype=torch.bfloat16) for _ in range(n)]
    out = {}
    if "bf16" in paths:
        out["bf16"] = [lambda x=x, w=w: x @ w.t() for x, w in zip(xs, ws)]
    fp8 = [p for p in paths if p != "bf16"]
    if not fp8:
        return out
    q = [(anchors.fp8_rowwise(x), anchors.fp8_rowwise(w)) for x, w in zip(xs, ws)]
    one = torch.ones((), device=anchors.dev)
    mm = torch._scaled_mm
    for p in fp8:
        fast = p.endswith("_fast")
        base = p[:-len("_fast")] if fast else p
        if base == "fp8_tensor":
            out[p] = [lambda a=a, b=b, fast=fast: mm(a[0], b[0].t(), one, one, out_dtype=torch.bfloat16,
                                                     use_fast_accum=fast) for a, b in q]
        elif base == "fp8_row":
            out[p] = [lambda a=a, b=b, fast=fast: mm(a[0], b[0].t(), a[1], b[1].t(), out_dtype=torch.bfloat16,
                                                     use_fast_accum=fast) for a, b in q]
        elif p == "fp8_block":
            if K % 128 or M < 2:
                continue
            from torch.nn.functional import scaled_mm, ScalingType
            calls = []
            for a, b in q:
                sa = (torch.rand(M, K // 128, device=anchors.dev) + 0.5).t().contiguous().t()
                sb = torch.rand((N + 127) // 128, K // 128, device=anchors.dev) + 0.5
                calls.append(lambda a=a, b=b, sa=sa, sb=sb: scaled_mm(
                    a[0], b[0].t(), sa, ScalingType.BlockWise1x128, sb.t(), ScalingType.BlockWise128x128,
                    output_dtype=torch.bfloat16))
            out[p] = calls
        else:
            raise ValueError(f"anchor path {p!r}: bf16, fp8_tensor[_fast], fp8_row[_fast] or fp8_block")
    return out


def block_quantize_x(x):
    """(e4m3 [..., R, K], f32 [..., R, K/128]): DeepSeek's 1x128 activation blocks, scale amax / 448."""
    *lead, R, K = x.shape
    xb = x.float().reshape(*lead, R, K // 128, 128)
    sx = xb.abs().amax(dim=-1).clamp(min=1e-4) / 448.0
    return (xb / sx[..., None]).to(torch.float8_e4m3fn).reshape(*lead, R, K), sx.contiguous()


def block_quantize_w(w):
    """(e4m3 [..., N, K], f32 [..., ceil(N/128), K/128]): DeepSeek's 128x128 weight blocks, scale amax / 448;
    a partial last row block takes its amax over the rows it has (as if padded with zeros)."""
    *lead, N, K = w.shape
    nb = (N + 127) // 128
    wp = torch.zeros(*lead, nb * 128, K, device=w.device, dtype=torch.float32)
    wp[..., :N, :] = w.float()
    wb = wp.reshape(*lead, nb, 128, K // 128, 128)
    sw = wb.abs().amax(dim=(-3, -1)).clamp(min=1e-4) / 448.0
    wq = (wb / sw[..., :, None, :, None]).to(torch.float8_e4m3fn).reshape(*lead, nb * 128, K)
    return wq[..., :N, :].contiguous(), sw.contiguous()


def block_dequantize(q, s, rows_per_block):
    """float64 values of block_quantize_x's (rows_per_block 1) or block_quantize_w's (128) pair."""
    *_, R, K = q.shape
    se = s.double().repeat_interleave(rows_per_block, dim=-2)[..., :R, :].repeat_interleave(128, dim=-1)
    return q.double() * se


def kiln_inputs(fmt, M, N, K):
    """Rotated inputs for kiln like anchors.dense_anchors makes them (enough copies to pass L2): a list of
    (a, b, a_scale, b_scale), quantized as `fmt` says (bf16, e4m3 per tensor, fp8_row, fp8_block, mxfp8)."""
    n_copies = anchors.copies_for(2 * (M * K + N * K))
    xs = [torch.randn(M, K, device="cuda", dtype=torch.bfloat16) for _ in range(n_copies)]
    ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) for _ in range(n_copies)]
    if fmt == "bf16":
        return [(x, w, None, None) for x, w in zip(xs, ws)]
    args = []
    if fmt == "fp8_row":  # e4m3 per token x per channel, f32 scales [M], [N]
        for x, w in zip(xs, ws):
            sx = x.abs().amax(dim=1).float().clamp(min=1e-4) / 448.0
            sw = w.abs().amax(dim=1).float().clamp(min=1e-4) / 448.0
            args.append(((x.float() / sx[:, None]).to(torch.float8_e4m3fn),
                         (w.float() / sw[:, None]).to(torch.float8_e4m3fn), sx.contiguous(), sw.contiguous()))
    elif fmt == "fp8_block":  # DeepSeek: x 1x128 blocks [M, K/128], w 128x128 blocks [ceil(N/128), K/128], f32
        args = [block_quantize_x(x) + block_quantize_w(w) for x, w in zip(xs, ws)]
        args = [(xq, wq, sx, sw) for xq, sx, wq, sw in args]
    elif fmt == "mxfp8":  # OCP MX: e4m3 elements, E8M0 bytes per 32 along K [rows, K/32] on both operands
        args = [mx_quantize(x) + mx_quantize(w) for x, w in zip(xs, ws)]
        args = [(xq, wq, sx, sw) for xq, sx, wq, sw in args]
    else:  # e4m3 with per-tensor scales
        for x, w in zip(xs, ws):
            sx = (x.abs().amax().float() / 448.0).reshape(1)
            sw = (w.abs().amax().float() / 448.0).reshape(1)
            args.append(((x.float() / sx).to(torch.float8_e4m3fn), (w.float() / sw).to(torch.float8_e4m3fn), sx, sw))
    return args


def reference(fmt, a, b, sa, sb, M, N, K):
    """float64 torch's result for one of kiln_inputs' tuples."""
    if fmt == "fp8_block":
        return block_dequantize(a, sa, 1) @ block_dequantize(b, sb, 128).t()
    if fmt == "fp8_row":
        return (a.double() @ b.double().t()) * sa.double()[:, None] * sb.double()[None, :]
    if fmt == "mxfp8":
        return mx_dequantize(a, sa) @ mx_dequantize(b, sb).t()
    ref = a.double() @ b.double().t()
    return ref if sa is None else ref * (sa.double() * sb.double())


def kiln_dense(rt, spec, M, N, K, fmt, mx_prepass=False):
    """ms per call and relative error of kiln on `spec`, inputs rotated like anchors.dense_anchors.
    mx_prepass (MXFP8): every call gets a workspace of plan.mx_prepass_workspace_size(M) bytes, so kiln
    converts X and W to bf16 first and runs the bf16 kernel (one workspace: the calls run in order)."""
    plan = rt.plan(spec, n=N, k=K, m_hint=M)
    args = kiln_inputs(fmt, M, N, K)
    outs = [torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in args]
    ws = None
    if mx_prepass:
        size = plan.mx_prepass_workspace_size(M)
        if size == 0:
            raise RuntimeError(f"{spec}: no MXFP8 pre-pass for M={M}")
        ws = torch.empty(size, dtype=torch.uint8, device="cuda")
    # check on the first copy, output poisoned first
    a, b, sa, sb = args[0]
    outs[0].fill_(float("nan"))
    plan.run(a, b, out=outs[0], a_scale=sa, b_scale=sb, workspace=ws)
    torch.cuda.synchronize()
    ref = reference(fmt, a, b, sa, sb, M, N, K)
    err = ((outs[0].double() - ref).norm() / ref.norm()).item()
    unwritten = int(torch.isnan(outs[0]).sum())
    calls = [lambda a=a, b=b, sa=sa, sb=sb, o=o: plan.run(a, b, out=o, a_scale=sa, b_scale=sb, workspace=ws)
             for (a, b, sa, sb), o in zip(args, outs)]
    ms = anchors.bench_graph(calls)
    return ms, err, unwritten, plan.describe()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", nargs="*", default=["4096,7168,7168"])
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--no-triton", action="store_true")
    args = ap.parse_args()
    rt = kiln.Runtime()
    gpu = torch.cuda.get_device_name()
    rows, results = [], []
    for s in args.shapes:
        M, N, K = map(int, s.split(","))
        flop = 2.0 * M * N * K
        anc = anchors.dense_anchors(M, N, K)
        if not args.no_triton:
            for dt in (torch.bfloat16, torch.float8_e4m3fn):
                try:
                    anc.update(anchors.triton_anchor(M, N, K, dt))
                except Exception as e:  # report, do not hide
                    anc["triton_error_" + str(dt)] = str(e)[:200]
        for name, spec, fmt in (("kiln bf16", "gemm a=bf16 b=bf16 out=bf16", "bf16"),
                                ("kiln e4m3 tensor", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "e4m3"),
                                ("kiln e4m3 row", "gemm a=e4m3:m b=e4m3:n out=bf16", "fp8_row"),
                                ("kiln e4m3 block", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                                 "fp8_block")):
            if fmt == "fp8_block" and K % 128 != 0:
                continue
            ms, err, unwritten, desc = kiln_dense(rt, spec, M, N, K, fmt)
            name = f"{name} [{desc.get('family', '?')}]"
            r = {"shape": [M, N, K], "name": name, "spec": spec, "ms": ms, "tflops": flop / ms / 1e9,
                 "rel_err": err, "unwritten": unwritten, "config": desc}
            results.append(r)
            # (Always the promoted cuBLAS anchors; bench_shapes.py picks fast accumulation where kiln's bucket does.)
            anchor_key = {"bf16": "bf16", "e4m3": "fp8_tensor"}.get(fmt, fmt)
            a_ms = anc.get(anchor_key)
            rows.append((f"{M}x{N}x{K}", name, ms, flop / ms / 1e9, err,
                         anchor_key, a_ms, flop / a_ms / 1e9 if a_ms else None, a_ms / ms if a_ms else None))
        for key, val in anc.items():
            if isinstance(val, float) and not key.endswith("err"):
                rows.append((f"{M}x{N}x{K}", "anchor " + key, val, flop / val / 1e9, None, None, None, None, None))
        results.append({"shape": [M, N, K], "anchors": anc})
    os.makedirs(args.out, exist_ok=True)
    meta = {"date": datetime.date.today().isoformat(), "gpu": gpu, "torch": torch.__version__,
            "command": "python3 " + " ".join(sys.argv)}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    lines = [f"Run {meta['date']} on {gpu} (torch {meta['torch']}): `{meta['command']}`", "",
             "| shape | path | ms | TFLOP/s | rel err | anchor | anchor ms | anchor TFLOP/s | kiln / anchor |",
             "|---|---|---|---|---|---|---|---|---|"]
    for shape, name, ms, tf, err, ak, ams, atf, ratio in rows:
        f = lambda v, p=3: "" if v is None else (f"{v:.{p}g}" if isinstance(v, float) else str(v))
        lines.append(f"| {shape} | {name} | {ms:.4f} | {tf:.1f} | {f(err)} | {f(ak)} | {f(ams)} | {f(atf, 4)} | {f(ratio)} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "RESULTS.fragment.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()

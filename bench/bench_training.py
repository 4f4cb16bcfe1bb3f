#!/usr/bin/env python3
"""Training steps through kiln.torch against PyTorch in the same process (H200 figures: bench/RESULTS.md).

Each case times forward + backward (CUDA events around the whole step, median of --reps after 3 warm-up
steps) and checks the gradients (relative Frobenius error):
  dense bf16    kiln.torch.Linear (recipe bf16, bias) vs torch.nn.functional.linear; dX, dW, db against
                the anchor's.
  dense fp8     kiln.torch.Linear (recipe fp8_block: X and dY quantized to 1x128 blocks and along M
                for wgrad in every step, W to 128x128 blocks once per optimizer step: that quantization is
                timed apart as w_quant_ms) vs the bf16 step of torch.nn.functional.linear, at the M = 4096
                shapes of bench/shapes.json; errors of dX and dW against the bf16 step's.
  dense mxfp8   (--cases mxfp8) the same with recipe mxfp8: X, W and dY in MXFP8, W's column-wise copy
                for dgrad, X's and dY's for wgrad; (--cases fp8_tensor) with per-tensor current scaling;
                (--cases fp8_rowwise) per-token X and dY, per-channel W, per-row copies for dgrad / wgrad.
  grouped bf16  kiln.torch.GroupedLinear vs torch._grouped_mm with autograd; dX, dW against the anchor's.
  grouped fp8   (with --cases fp8) kiln.torch.GroupedLinear recipe fp8_block (each expert's tokens in their
                own 128-token blocks for wgrad) vs the bf16 torch._grouped_mm step, at the grouped shapes
                whose K is a multiple of 128; errors against the bf16 step's.
  moe frozen    one gpt-oss-20b MoE block (32 experts, top-4, hidden 2880, intermediate 2880, interleaved
                gate|up, clamped SwiGLU, biases) with MXFP4 experts kept packed (recipe mxfp4_frozen),
                gradient to the block input, vs the same block on torch._grouped_mm over a bf16 copy of
                the experts (1.6 GB), and vs dequantizing each expert on the fly in eager PyTorch; each
                dX against a float64 evaluation of the same block. The clamps of the SwiGLU make dX
                sensitive to one-ulp differences in the pre-activations (a clamp mask flips), so every
                bf16 implementation is a few percent from float64; kiln's error should match the anchors'.
The MoE block around the GEMMs (gather, GLU, routing weights, scatter) is the same PyTorch code for
kiln and the grouped anchor, with the routing (sort by expert) made before the timed steps; the
scatter-reduce is a deterministic sum over each token's top-k slots. A last kiln row times
kiln.torch.MoEExperts, which sorts the routing inside every step.

    KILN_LIBRARY=build/capi/libkiln.so python3 bench/bench_training.py [--cases dense,fp8,mxfp8,fp8_tensor,fp8_rowwise,grouped,moe] [--out DIR]
"""

import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kiln.torch as kt  # noqa: E402
from kiln.torch._functional import quantized_weight  # noqa: E402

DEV = "cuda"


def step_ms(step, reps):
    times = []
    for i in range(reps + 3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def rel(got, ref):
    got, ref = got.double(), ref.double()
    return ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def step_tensors(layer, m, n, k):
    """Prepares layer's plans; returns the anchor's copy of its weight, x [m, k] and dY [m, n]."""
    kt.prepare(layer)
    w = layer.weight.detach().clone().requires_grad_()
    x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    return w, x, torch.randn(m, n, device=DEV, dtype=torch.bfloat16)


def dense_cases(reps):
    rows = []
    for m, n, k in ((4096, 4096, 4096), (4096, 14336, 4096), (4096, 4096, 14336), (1024, 7168, 7168)):
        torch.manual_seed(0)
        layer = kt.Linear(k, n, recipe="bf16", device=DEV)
        w, x, dy = step_tensors(layer, m, n, k)
        b = layer.bias.detach().clone().requires_grad_()

        def run_kiln():
            x.grad = None
            layer.weight.grad = layer.bias.grad = None
            layer(x).backward(dy)

        def run_torch():
            x.grad = w.grad = b.grad = None
            torch.nn.functional.linear(x, w, b).backward(dy)

        run_kiln()
        got = (x.grad.clone(), layer.weight.grad.clone(), layer.bias.grad.clone())
        run_torch()
        err = max(rel(g, r) for g, r in zip(got, (x.grad, w.grad, b.grad)))
        t_kiln, t_torch = step_ms(run_kiln, reps), step_ms(run_torch, reps)
        rows.append({"case": "dense bf16 fwd+bwd", "m": m, "n": n, "k": k, "kiln_ms": t_kiln,
                     "anchor": "torch F.linear", "anchor_ms": t_torch, "speedup": t_torch / t_kiln,
                     "tflops": 6 * m * n * k / t_kiln / 1e9, "max_rel_err": err})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def fp8_cases(reps, recipe="fp8_block"):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shapes.json")) as f:
        shapes = [s for s in json.load(f)["dense"] if s[0] == 4096]
    rows = []
    for m, n, k in shapes:
        torch.manual_seed(0)
        layer = kt.Linear(k, n, bias=False, recipe=recipe, device=DEV)
        w, x, dy = step_tensors(layer, m, n, k)

        def run_kiln():
            x.grad = None
            layer.weight.grad = None
            layer(x).backward(dy)

        def run_torch():
            x.grad = w.grad = None
            torch.nn.functional.linear(x, w).backward(dy)

        def quantize_w():  # what one optimizer step re-quantizes
            kt.drop_quantized_copies(layer)
            quantized_weight(layer.recipe, layer.weight)

        run_kiln()
        got = (x.grad.clone(), layer.weight.grad.clone())
        run_torch()
        errs = [rel(g, r) for g, r in zip(got, (x.grad, w.grad))]
        t_kiln, t_torch, t_w = step_ms(run_kiln, reps), step_ms(run_torch, reps), step_ms(quantize_w, reps)
        rows.append({"case": f"dense {recipe} fwd+bwd", "m": m, "n": n, "k": k, "kiln_ms": t_kiln,
                     "anchor": "torch F.linear bf16", "anchor_ms": t_torch, "speedup": t_torch / t_kiln,
                     "tflops": 6 * m * n * k / t_kiln / 1e9, "w_quant_ms": t_w, "dx_rel_err": errs[0],
                     "dw_rel_err": errs[1]})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def grouped_cases(reps, recipe="bf16"):
    rows = []
    for experts, tokens, n, k in ((8, 8192, 4096, 7168), (32, 16384, 5760, 2880), (128, 8192, 1536, 4096)):
        if recipe == "fp8_block" and k % 128:
            continue  # the recipe's blocks along K
        torch.manual_seed(0)
        counts = torch.distributions.Dirichlet(torch.ones(experts)).sample() * tokens
        counts = counts.floor().to(torch.int64)
        counts[-1] += tokens - counts.sum()
        offsets = counts.cumsum(0).to(torch.int32).to(DEV)
        layer = kt.GroupedLinear(experts, k, n, bias=False, recipe=recipe, device=DEV)
        w, x, dy = step_tensors(layer, tokens, n, k)

        def run_kiln():
            x.grad = None
            layer.weight.grad = None
            layer(x, offsets).backward(dy)

        def run_torch():
            x.grad = w.grad = None
            torch._grouped_mm(x, w.transpose(1, 2), offs=offsets).backward(dy)

        run_kiln()
        got = (x.grad.clone(), layer.weight.grad.clone())
        run_torch()
        err = max(rel(g, r) for g, r in zip(got, (x.grad, w.grad)))
        t_kiln, t_torch = step_ms(run_kiln, reps), step_ms(run_torch, reps)
        rows.append({"case": f"grouped {recipe} fwd+bwd", "experts": experts, "m": tokens, "n": n, "k": k,
                     "kiln_ms": t_kiln, "anchor": "torch._grouped_mm bf16", "anchor_ms": t_torch,
                     "speedup": t_torch / t_kiln, "tflops": 6 * tokens * n * k / t_kiln / 1e9, "max_rel_err": err})
        print(json.dumps(rows[-1]), flush=True)
    return rows


# ---- one gpt-oss-20b MoE block ----------------------------------------------------------------------

E, TOPK, H, I = 32, 4, 2880, 2880
_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def to_bf16(codes, scales):
    lut = torch.tensor(_E2M1, device=codes.device)
    v = torch.stack([lut[(codes & 15).long()], lut[(codes >> 4).long()]], -1).flatten(-2)
    v = v.unflatten(-1, (-1, 32)) * torch.exp2(scales.float() - 127).unsqueeze(-1)
    return v.flatten(-2).to(torch.bfloat16)


def swiglu(h):
    gate, up = h[..., 0::2].clamp(max=7.0), h[..., 1::2].clamp(-7.0, 7.0)
    return gate * torch.sigmoid(1.702 * gate) * (up + 1)


def routing(tokens):
    """Slots sorted by expert: (source token of each sorted slot, offsets, the routing weight of each
    sorted slot, the inverse order that puts the sorted slots back as [tokens, TOPK])."""
    top, ids = torch.randn(tokens, E, device=DEV).topk(TOPK, dim=1)
    weights = torch.softmax(top, dim=1).to(torch.bfloat16)
    flat = ids.flatten()
    order = torch.argsort(flat, stable=True)
    offsets = torch.bincount(flat, minlength=E).cumsum(0).to(torch.int32)
    return order // TOPK, offsets, weights.flatten()[order], torch.argsort(order), ids, weights


def block(x, r, gate_up, down):
    """gate_up / down: callables (rows sorted by expert, offsets) -> rows; the rest is shared."""
    src, offsets, slot_w, inverse = r[:4]
    h = swiglu(gate_up(x[src], offsets))
    y = down(h, offsets) * slot_w[:, None]
    return y[inverse].unflatten(0, (-1, TOPK)).sum(dim=1)


def moe_cases(reps, token_counts):
    rows = []
    torch.manual_seed(0)
    gu_codes = torch.randint(0, 256, (E, 2 * I, H // 2), device=DEV, dtype=torch.uint8)
    gu_scales = torch.randint(118, 124, (E, 2 * I, H // 32), device=DEV, dtype=torch.uint8)
    dn_codes = torch.randint(0, 256, (E, H, I // 2), device=DEV, dtype=torch.uint8)
    dn_scales = torch.randint(118, 124, (E, H, I // 32), device=DEV, dtype=torch.uint8)
    b1 = torch.randn(E, 2 * I, device=DEV, dtype=torch.bfloat16) * 0.01
    b2 = torch.randn(E, H, device=DEV, dtype=torch.bfloat16) * 0.01
    gu = kt.GroupedLinear(E, H, 2 * I, recipe="mxfp4_frozen", device=DEV).load_packed(
        kt.PackedWeight(gu_codes, gu_scales), b1)
    dn = kt.GroupedLinear(E, I, H, recipe="mxfp4_frozen", device=DEV).load_packed(
        kt.PackedWeight(dn_codes, dn_scales), b2)
    kt.prepare(gu)
    kt.prepare(dn)
    # The same weights as kiln.torch.MoEExperts takes them from a checkpoint ([E, N, K/32, 16] blocks).
    experts = kt.MoEExperts.from_gpt_oss(gu_codes.view(E, 2 * I, H // 32, 16), gu_scales, b1,
                                         dn_codes.view(E, H, I // 32, 16), dn_scales, b2)
    packed_mb = sum(t.numel() * t.element_size() for t in (gu_codes, gu_scales, dn_codes, dn_scales, b1, b2)) / 1e6
    for tokens in token_counts:
        torch.manual_seed(tokens)
        r = routing(tokens)
        x = torch.randn(tokens, H, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        dout = torch.randn(tokens, H, device=DEV, dtype=torch.bfloat16)
        results = {}

        def kiln_step():
            x.grad = None
            block(x, r, gu, dn).backward(dout)

        def measure(name, step, extra_mb=0.0):
            step()
            torch.cuda.synchronize()
            grad = x.grad.clone()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            ms = step_ms(step, reps)
            peak = (torch.cuda.max_memory_allocated() - base) / 1e6
            results[name] = (ms, peak, grad, extra_mb)

        measure("kiln mxfp4_frozen", kiln_step)

        def experts_step():
            x.grad = None
            experts(x, r[4], r[5]).backward(dout)

        measure("kiln MoEExperts (routing inside)", experts_step)
        w1, w2 = to_bf16(gu_codes, gu_scales), to_bf16(dn_codes, dn_scales)
        copy_mb = (w1.numel() + w2.numel()) * 2 / 1e6

        def grouped_step():
            x.grad = None
            block(x, r, lambda a, o: torch._grouped_mm(a, w1.transpose(1, 2), offs=o) + b1[expert_of(o, a)],
                  lambda a, o: torch._grouped_mm(a, w2.transpose(1, 2), offs=o) + b2[expert_of(o, a)]).backward(dout)

        measure("torch._grouped_mm on a bf16 copy", grouped_step, copy_mb)
        del w1, w2
        torch.cuda.empty_cache()

        def eager_step():
            x.grad = None
            src, offsets, slot_w, inverse = r[:4]
            xs = x[src]
            ends = offsets.tolist()
            outs, start = [], 0
            for e, end in enumerate(ends):
                if end > start:
                    h = swiglu(xs[start:end] @ to_bf16(gu_codes[e], gu_scales[e]).T + b1[e])
                    outs.append(h @ to_bf16(dn_codes[e], dn_scales[e]).T + b2[e])
                start = end
            y = torch.cat(outs) * slot_w[:, None]
            y[inverse].unflatten(0, (-1, TOPK)).sum(dim=1).backward(dout)

        measure("eager dequantize per expert", eager_step)
        # float64 reference of the same block (the dequantized weights are exact in float64)
        x64 = x.detach().double().requires_grad_()
        w1, w2 = to_bf16(gu_codes, gu_scales).double(), to_bf16(dn_codes, dn_scales).double()
        block(x64, r, lambda a, o: per_expert(a, o, w1, b1.double()),
              lambda a, o: per_expert(a, o, w2, b2.double())).backward(dout.double())
        ref = x64.grad
        del w1, w2
        torch.cuda.empty_cache()
        for name, (ms, peak, grad, extra) in results.items():
            rows.append({"case": "gpt-oss-20b MoE block fwd+bwd(x), frozen MXFP4", "tokens": tokens, "impl": name,
                         "ms": ms, "vs_grouped_bf16": ms / results["torch._grouped_mm on a bf16 copy"][0],
                         "peak_transient_mb": peak, "bf16_copy_mb": extra, "packed_mb": packed_mb,
                         "dx_rel_err_vs_f64": rel(grad, ref)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


_expert_cache = {}


def per_expert(rows, offsets, w, b):
    """rows [M, K] sorted by expert -> rows @ w[e].T + b[e] per expert (a loop: the float64 reference)."""
    outs, start = [], 0
    for e, end in enumerate(offsets.tolist()):
        outs.append(rows[start:end] @ w[e].T + b[e])
        start = end
    return torch.cat(outs)


def expert_of(offsets, rows):
    """The expert of each sorted row (for the bias), computed once per routing."""
    key = (offsets.data_ptr(), rows.shape[0])
    if key not in _expert_cache:
        _expert_cache[key] = torch.repeat_interleave(
            torch.arange(E, device=DEV), torch.diff(offsets.long(), prepend=offsets.new_zeros(1).long()),
            output_size=rows.shape[0])
    return _expert_cache[key]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="dense,fp8,grouped,moe")
    ap.add_argument("--tokens", default="256,4096", help="MoE block token counts")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", help="directory for rows.json")
    args = ap.parse_args()
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}), flush=True)
    rows = []
    cases = args.cases.split(",")
    if "dense" in cases:
        rows += dense_cases(args.reps)
    if "fp8" in cases:
        rows += fp8_cases(args.reps)
        rows += grouped_cases(args.reps, "fp8_block")
    for recipe in ("mxfp8", "fp8_tensor", "fp8_rowwise"):
        if recipe in cases:
            rows += fp8_cases(args.reps, recipe)
    if "grouped" in cases:
        rows += grouped_cases(args.reps)
    if "moe" in cases:
        rows += moe_cases(args.reps, [int(t) for t in args.tokens.split(",")])
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "rows.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

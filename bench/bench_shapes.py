"""kiln vs the anchors on every shape of bench/shapes.json, in one process, timed the same way.

Usage (GPU machine, after building; kiln through libkiln.so via KILN_LIBRARY or the repo build dir):
    python3 bench/bench_shapes.py [--shapes PATH] [--out DIR] [--only dense|moe] [--quick]
                                  [--min-m M] [--max-m M] [--repeats R] [--settle S]
The anchors are bench/anchors.py; --shapes defaults to bench/shapes.json.

Dense shapes [M, N, K]: kiln bf16, FP8 tensor, FP8 row (m x n), FP8 DeepSeek blocks (K % 128 == 0),
MXFP8 and bf16 x MXFP4 weights, against anchors.dense_anchors (cuBLAS bf16 / FP8 block; its FP8 tensor / row
calls, which promote, stay in the table), cuBLAS FP8 tensor / row with fast accumulation (fast_accum_anchors:
the anchors of kiln's FP8 tensor / row rows where the plan's bucket accumulates fast, per its describe_json;
promoted buckets keep the promoted anchors), kiln's own FP8 block path (MXFP8: Hopper has no MXFP8 in
cuBLAS) and anchors.mxfp4_eager_anchor. MoE layers (one expert GEMM of a routed layer, rows = tokens x topk
routed by anchors.routing, the same split for kiln): kiln grouped bf16, FP8 row, FP8 blocks (K % 128 == 0),
bf16 x MXFP4 and W4A8 (e4m3 per-token x MXFP4), against anchors.grouped_anchors (torch _grouped_mm bf16,
_scaled_grouped_mm FP8 rowwise, a per-expert loop) and, for FP8 blocks, a per-expert loop of cuBLAS's
block-scaled GEMM (block_loop_anchor).
Every kiln path timed is first checked against a float64 torch reference on the same inputs (relative
Frobenius error; NaN-poisoned output must be fully written). Timing: anchors.bench_graph for both
sides (CUDA-graph replay, inputs rotated past L2). Writes results.json and RESULTS.fragment.md
(date, GPU, command, a table with ms, TFLOP/s, GB/s and the ratio to the named anchor) to --out.
--repeats R (dense shapes): the anchors and every kiln path are timed R times, in turn, on each shape;
the table gives the medians and a last column with the range of the R per-repeat ratios. On the H200
(700 W) one timing of a shape moves by up to ~10% from one run to the next while the same-repeat ratio
moves less, so ratios near 1.0 want R >= 3.
--settle S (default 0.3): every timing, the anchors' and kiln's alike, starts after S seconds idle
(bench_slice.settle_timings). Without it a timing takes the clock that the work before it left at the
700 W limit: on an H200, cuBLAS's block anchor timed after three other heavy timings ran 22% slower
than after a pause, and the repeats of one shape spread by ~10%; with it they agree within ~1%. Sustained,
power-limited throughput is a different question: bench/clock_probe.py measures it (time, clock, power).
"""
import argparse, datetime, json, math, os, statistics, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# bench_slice puts bench/ (anchors.py) and kiln's Python package on the path when it is imported.
from bench_slice import anchor_calls, anchors, block_dequantize, block_quantize_w, block_quantize_x, kiln, kiln_dense, \
    settle_timings, torch  # noqa: E402
from plan_list import DENSE_SPECS, GROUPED_FMTS, MXFP4_DENSE_SPEC, compile_all, dense_shapes, fmt_fits, \
    grouped_spec, moe_layers, plans  # noqa: E402

DEV = "cuda"
E2M1 = [0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6]


def mxfp4_weights(rows, k, gen=None):
    """Random MXFP4 weights: packed codes [rows, K/2] uint8, E8M0 scales [rows, K/32] uint8, and the
    exact dequantized values in float64 (for the reference)."""
    blocks = torch.randint(0, 256, (rows, k // 2), device=DEV, dtype=torch.uint8, generator=gen)
    scales = torch.randint(120, 130, (rows, k // 32), device=DEV, dtype=torch.uint8, generator=gen)
    lut = torch.tensor(E2M1, device=DEV, dtype=torch.float64)
    w = torch.stack([lut[(blocks & 15).long()], lut[(blocks >> 4).long()]], -1).reshape(rows, k // 32, 32)
    w = (w * torch.pow(2.0, scales.double() - 127).unsqueeze(-1)).reshape(rows, k)
    return blocks, scales, w


def bucket_of(desc, rows):
    """The describe_json bucket a plan runs for `rows` (rows per expert for grouped plans): the first with
    m_max >= rows, the last past it (as the runtime picks), {} without buckets."""
    buckets = desc.get("buckets", [])
    return next((b for b in buckets if rows <= b["m_max"]), buckets[-1] if buckets else {})


def family_of(desc, rows):
    """The family of the kernel a plan runs for `rows`: a bucket may name its own (Plan::family_for), else
    the plan's."""
    return bucket_of(desc, rows).get("family", desc.get("family", "?"))


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm().clamp(min=1e-300)).item()


def kiln_mxfp4_dense(rt, M, N, K):
    plan = rt.plan(MXFP4_DENSE_SPEC, n=N, k=K, m_hint=M)
    n_copies = anchors.copies_for(2 * M * K + N * K // 2)
    xs = [torch.randn(M, K, device=DEV, dtype=torch.bfloat16) for _ in range(n_copies)]
    ws = [mxfp4_weights(N, K) for _ in range(n_copies)]
    outs = [torch.empty(M, N, device=DEV, dtype=torch.bfloat16) for _ in xs]
    outs[0].fill_(float("nan"))
    plan.run(xs[0], ws[0][0], out=outs[0], b_scale=ws[0][1])
    torch.cuda.synchronize()
    ref = xs[0].double() @ ws[0][2].t()
    err, unwritten = rel_err(outs[0], ref), int(torch.isnan(outs[0]).sum())
    calls = [lambda x=x, w=w, o=o: plan.run(x, w[0], out=o, b_scale=w[1]) for x, w, o in zip(xs, ws, outs)]
    return anchors.bench_graph(calls), err, unwritten, plan.describe()


def kiln_grouped(rt, fmt, T, topk, E, N, K, seed=0):
    """One routed expert GEMM on kiln: rows = T * topk sorted by expert (anchors.routing's split)."""
    counts, offs = anchors.routing(T, topk, E, seed)
    rows = T * topk
    plan = rt.plan(grouped_spec(fmt, E), n=N, k=K, m_hint=rows)
    x = torch.randn(rows, K, device=DEV, dtype=torch.bfloat16)
    a_scale = b_scale = None
    if fmt == "bf16":
        w = torch.randn(E, N, K, device=DEV, dtype=torch.bfloat16)
        a, b, wd = x, w, w.double()
        xd = x.double()
    elif fmt == "fp8_row":
        sx = x.abs().amax(dim=1).float().clamp(min=1e-4) / 448.0
        w = torch.randn(E, N, K, device=DEV, dtype=torch.bfloat16)
        sw = w.abs().amax(dim=2).float().clamp(min=1e-4) / 448.0
        a = (x.float() / sx[:, None]).to(torch.float8_e4m3fn)
        b = (w.float() / sw[:, :, None]).to(torch.float8_e4m3fn)
        a_scale, b_scale = sx.contiguous(), sw.reshape(E * N).contiguous()
        xd = a.double() * sx.double()[:, None]
        wd = b.double() * sw.double()[:, :, None]
    elif fmt == "fp8_block":  # DeepSeek: x 1x128 blocks [rows, K/128], w 128x128 blocks [E, ceil(N/128), K/128]
        a, a_scale = block_quantize_x(x)
        b, b_scale = block_quantize_w(torch.randn(E, N, K, device=DEV, dtype=torch.bfloat16))
        xd, wd = block_dequantize(a, a_scale, 1), block_dequantize(b, b_scale, 128)
    else:  # mxfp4 weights; w4a8: with e4m3 per-token activations
        blocks, scales, wd = mxfp4_weights(E * N, K)
        a, b, b_scale = x, blocks.reshape(E, N, K // 2), scales.reshape(E, N, K // 32)
        wd = wd.reshape(E, N, K)
        xd = x.double()
        if fmt == "w4a8":
            sx = x.abs().amax(dim=1).float().clamp(min=1e-4) / 448.0
            a = (x.float() / sx[:, None]).to(torch.float8_e4m3fn)
            a_scale = sx.contiguous()
            xd = a.double() * sx.double()[:, None]
    out = torch.full((rows, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    plan.run(a, b, out=out, a_scale=a_scale, b_scale=b_scale, offsets=offs)
    torch.cuda.synchronize()
    bounds = [0] + offs.tolist()
    ref = torch.zeros(rows, N, device=DEV, dtype=torch.float64)
    for e in range(E):
        if bounds[e + 1] > bounds[e]:
            ref[bounds[e]:bounds[e + 1]] = xd[bounds[e]:bounds[e + 1]] @ wd[e].t()
    err, unwritten = rel_err(out, ref), int(torch.isnan(out).sum())
    ms = anchors.bench_graph([lambda: plan.run(a, b, out=out, a_scale=a_scale, b_scale=b_scale, offsets=offs)])
    active = int((counts > 0).sum())
    wbits = {"bf16": 16, "fp8_row": 8, "fp8_block": 8, "mxfp4": 4, "w4a8": 4}[fmt]
    weight_bytes = active * N * K * wbits / 8
    return ms, err, unwritten, plan.describe(), weight_bytes


def block_loop_anchor(T, topk, E, N, K, seed=0):
    """(ms per call, rows padding) of what a Hopper user runs today for a DeepSeek block-scaled grouped GEMM:
    torch has no block-scaled grouped GEMM there, so one cuBLAS block-scaled scaled_mm (1x128 x 128x128, as
    anchors.dense_anchors calls it) per expert that has rows, over anchors.routing's split. Each expert's rows
    are its own tensors, padded up to a multiple of `pad` rows with the first of 2, 4, 16 that cuBLAS takes
    (unpadded expert slices gave CUBLAS_STATUS_NOT_SUPPORTED on the H200); the padding is extra work for
    the anchor, at most pad - 1 rows per expert."""
    from torch.nn.functional import scaled_mm, ScalingType
    counts, _ = anchors.routing(T, topk, E, seed)
    wq, sw = block_quantize_w(torch.randn(E, N, K, device=DEV, dtype=torch.bfloat16))
    active = [e for e in range(E) if int(counts[e]) > 0]

    def calls_for(pad):
        calls = []
        for e in active:
            rows = -(-max(2, int(counts[e])) // pad) * pad
            aq, sa = block_quantize_x(torch.randn(rows, K, device=DEV, dtype=torch.bfloat16))
            s1 = sa.t().contiguous().t()  # M-major, as cuBLAS's 1x128 scales want
            calls.append(lambda a=aq, s1=s1, b=wq[e], s2=sw[e].contiguous(): scaled_mm(
                a, b.t(), s1, ScalingType.BlockWise1x128, s2.t(), ScalingType.BlockWise128x128,
                output_dtype=torch.bfloat16))
        return calls

    why = []
    for pad in (2, 4, 16):
        calls = calls_for(pad)
        try:
            for c in calls:
                c()
            torch.cuda.synchronize()
        except Exception as e:  # the next padding; all failing is the caller's error string
            why.append(f"pad {pad}: {str(e)[:120]}")
            continue

        def loop(calls=calls):
            for c in calls:
                c()
        return anchors.bench_graph([loop]), pad
    raise RuntimeError("; ".join(why))


def fast_accum_anchors(M, N, K):
    """ms per call: cuBLAS FP8 tensor / row scales with fast accumulation (no promotion), the like-for-like
    anchors of kiln's unpromoted FP8 tensor / row paths. anchors.dense_anchors times the promoted default;
    these are the same calls with use_fast_accum=True, inputs built the same way (bench_slice.anchor_calls)."""
    r = {}
    for key, calls in anchor_calls(M, N, K, ("fp8_tensor_fast", "fp8_row_fast")).items():
        try:
            r[key] = anchors.bench_graph(calls)
        except Exception as e:  # report, do not hide: those rows then have no anchor
            r[key + "_error"] = str(e)[:300]
    return r


def time_dense_shape(rt, M, N, K):
    """One pass over a dense shape: the anchors (a dict of ms, or of errors) and every kiln path in table
    order: a dict from a stable key (the path, whether or not it ran) to {name, ms, err, unwritten, desc,
    anchor, nbytes} or {name, error}."""
    anc = anchors.dense_anchors(M, N, K)
    anc.update(anchors.mxfp4_eager_anchor(M, N, K))
    anc.update(fast_accum_anchors(M, N, K))
    paths = {}
    for name, spec, fmt, anchor_key, ab, bb in DENSE_SPECS:
        if not fmt_fits(fmt, K):
            continue
        nbytes = M * K * ab + N * K * bb + M * N * 2
        try:
            ms, err, unwritten, desc = kiln_dense(rt, spec, M, N, K, fmt)
        except Exception as e:  # report, do not hide
            paths[name] = {"name": name, "error": str(e)[:300]}
            continue
        # FP8 tensor / row: the anchor that accumulates as the kernel kiln runs here does: cuBLAS fast
        # accumulation where kiln's bucket adds into wgmma's FP8 accumulator, cuBLAS's promoted default
        # where it promotes or accumulates in f32.
        if anchor_key.endswith("_fast") and bucket_of(desc, M).get("fp8_accumulation") != "fast":
            anchor_key = anchor_key[:-len("_fast")]
        paths[name] = {"name": f"kiln {name} [{family_of(desc, M)}]", "ms": ms, "err": err, "unwritten": unwritten,
                       "desc": desc, "anchor": anchor_key, "nbytes": nbytes}
        # MXFP8 at large M: also through the bf16 pre-pass (the caller's workspace; runtime/mx_prepass.hpp),
        # against the same anchor (kiln's FP8 block path).
        if fmt == "mxfp8" and "mx_prepass" in desc and M >= desc["mx_prepass"]["min_m"]:
            try:
                ms, err, unwritten, desc2 = kiln_dense(rt, spec, M, N, K, fmt, mx_prepass=True)
                paths[name + " pre-pass"] = {"name": "kiln mxfp8 pre-pass [sm90 bf16]", "ms": ms, "err": err,
                                             "unwritten": unwritten, "desc": desc2, "anchor": anchor_key,
                                             "nbytes": nbytes}
            except Exception as e:
                paths[name + " pre-pass"] = {"name": "mxfp8 pre-pass", "error": str(e)[:300]}
    try:
        ms, err, unwritten, desc = kiln_mxfp4_dense(rt, M, N, K)
        paths["bf16 x mxfp4"] = {"name": f"kiln bf16 x mxfp4 [{family_of(desc, M)}]", "ms": ms, "err": err,
                                 "unwritten": unwritten, "desc": desc, "anchor": "mxfp4_eager",
                                 "nbytes": M * K * 2 + N * K // 2 + N * K // 32 + M * N * 2}
    except Exception as e:
        paths["bf16 x mxfp4"] = {"name": "bf16 x mxfp4", "error": str(e)[:300]}
    return anc, paths


def median_anchors(runs):
    """Per key, the median of the repeats' anchor times. A key that is not a time in every repeat (an
    anchor that failed in some) is kept as the first repeat's value where no repeat timed it, and as an
    error string where only some did: such an anchor has no median, and rows against it no ratio."""
    out, partial = {}, {}
    for key in dict.fromkeys(k for r in runs for k in r):
        vals = [r.get(key) for r in runs]
        timed = sum(isinstance(v, float) for v in vals)
        if timed == len(vals):
            out[key] = statistics.median(vals)
        elif timed == 0:
            out[key] = next(v for v in vals if v is not None)
        else:
            partial[key] = timed
    for key, timed in partial.items():  # after the loop: this message wins over one repeat's own error
        why = next((r[key + "_error"] for r in runs if key + "_error" in r), None)
        out[key + "_error"] = f"timed in {timed} of {len(runs)} repeats" + (f" ({why})" if why else "")
    return out


def worst_error(errs):
    """The largest relative error of the repeats, NaN (an unusable result) above every number."""
    return math.nan if any(math.isnan(e) for e in errs) else max(errs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=os.path.join(HERE, "shapes.json"), help="default: bench/shapes.json")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--only", choices=["dense", "moe"], default=None)
    ap.add_argument("--quick", action="store_true", help="the first 4 dense shapes and 1 MoE layer only")
    ap.add_argument("--jobs", type=int, default=8, help="parallel compiles before timing starts")
    ap.add_argument("--min-m", type=int, default=0, help="dense shapes with at least this M only")
    ap.add_argument("--max-m", type=int, default=0, help="dense shapes with at most this M only (0: no bound)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="dense shapes: time the anchors and kiln this many times in turn; medians, ratio ranges")
    ap.add_argument("--settle", type=float, default=0.3,
                    help="seconds idle before every timing, anchors and kiln alike (0: none; see below)")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error(f"--repeats must be at least 1, got {args.repeats}")
    if not 0 <= args.settle <= 10:
        ap.error(f"--settle must be between 0 and 10 seconds, got {args.settle}")
    settle_timings(args.settle)
    path = args.shapes
    shapes = json.load(open(path))
    shapes["dense"] = [s for s in shapes["dense"] if s[0] >= args.min_m and (args.max_m <= 0 or s[0] <= args.max_m)]
    rt = kiln.Runtime()
    gpu = torch.cuda.get_device_name()
    rows, results = [], []
    t0 = time.time()
    meta = {"date": datetime.date.today().isoformat(), "gpu": gpu, "torch": torch.__version__,
            "command": "python3 " + " ".join(sys.argv), "shapes": path, "settle_s": args.settle}

    def log(*a, **kw):
        print(f"[{time.time() - t0:6.1f} s]", *a, flush=True)

    def add(shape, name, ms, flop, nbytes, err, unwritten, desc, anchor_key, anchor_ms):
        r = {"shape": shape, "name": name, "ms": ms, "tflops": flop / ms / 1e9, "gbps": nbytes / ms / 1e6,
             "rel_err": err, "unwritten": unwritten, "plan": desc, "anchor": anchor_key, "anchor_ms": anchor_ms}
        results.append(r)
        rows.append(r)

    # Compile (or find in the carried cache) every kernel first, on a thread pool: timing starts warm.
    compile_all(rt, plans(shapes, args.only, args.quick), jobs=args.jobs, log=log)

    dense = [] if args.only == "moe" else dense_shapes(shapes, args.quick)
    for M, N, K in dense:
        flop = 2.0 * M * N * K
        # --repeats R: the anchors and every kiln path R times over, in turn (anchors, kiln, anchors, kiln,
        # ...), so both sides see the same spread of clocks (a 700 W GPU moves by several percent from one
        # timing to the next); the table gives medians and the range of the per-repeat ratios.
        reps = [time_dense_shape(rt, M, N, K) for _ in range(args.repeats)]
        anc = median_anchors([r[0] for r in reps])
        if args.repeats > 1:
            anc["repeats"] = [r[0] for r in reps]
        results.append({"shape": [M, N, K], "anchors": anc})
        keys = list(dict.fromkeys(k for r in reps for k in r[1]))  # table order; a path any repeat ran
        for key in keys:
            runs = [r[1].get(key, {"name": key, "error": "not run in every repeat"}) for r in reps]
            bad = next((x for x in runs if "error" in x), None)
            if bad is not None:  # report, do not hide
                results.append({"shape": [M, N, K], "name": bad["name"], "error": bad["error"]})
                continue
            path = runs[0]
            ms = statistics.median(x["ms"] for x in runs)
            anchor_key = path["anchor"]
            if anchor_key.startswith("kiln "):  # a kiln path timed on this shape, in the same repeats
                twin = next((k for k in keys if reps[0][1].get(k, {}).get("name", "").startswith(anchor_key + " [")),
                            None)
                anchor_runs = None if twin is None else [r[1].get(twin, {}).get("ms") for r in reps]
            else:
                anchor_runs = [r[0].get(anchor_key) for r in reps]
            anchor_ms = None
            if anchor_runs and all(isinstance(a, float) for a in anchor_runs):
                anchor_ms = statistics.median(anchor_runs)
            add([M, N, K], path["name"], ms, flop, path["nbytes"], worst_error([x["err"] for x in runs]),
                max(x["unwritten"] for x in runs), path["desc"], anchor_key, anchor_ms)
            if args.repeats > 1:
                rows[-1]["ms_runs"] = [x["ms"] for x in runs]
                if anchor_ms is not None:
                    rows[-1]["ratio_range"] = (min(a / x["ms"] for a, x in zip(anchor_runs, runs)),
                                               max(a / x["ms"] for a, x in zip(anchor_runs, runs)))
        for key, val in anc.items():
            if isinstance(val, float):
                rows.append({"shape": [M, N, K], "name": "anchor " + key, "ms": val, "tflops": flop / val / 1e9})
        write_outputs(args.out, meta, results, rows)  # after every shape: a time-out keeps what ran
        log(f"dense {M}x{N}x{K} done" + (f" ({args.repeats} repeats)" if args.repeats > 1 else ""))

    moe = [] if args.only == "dense" else moe_layers(shapes, args.quick)
    for layer in moe:
        E, topk, N, K = layer["experts"], layer["topk"], layer["n"], layer["k"]
        for T in layer["tokens"]:
            shape = [f"{layer['name']} T={T}", T * topk, N, K]
            flop = 2.0 * T * topk * N * K
            anc = anchors.grouped_anchors(T, topk, E, N, K)
            if fmt_fits("fp8_block", K):  # kiln's grouped FP8 block path and its per-expert cuBLAS loop
                try:
                    anc["fp8_block_loop"], anc["fp8_block_loop_pad"] = block_loop_anchor(T, topk, E, N, K)
                except Exception as e:  # reported, not hidden
                    anc["fp8_block_loop_error"] = str(e)[:300]
            results.append({"shape": shape, "anchors": anc})
            for fmt, anchor_key in GROUPED_FMTS:
                if not fmt_fits(fmt, K):
                    continue
                try:
                    ms, err, unwritten, desc, wbytes = kiln_grouped(rt, fmt, T, topk, E, N, K)
                except Exception as e:
                    results.append({"shape": shape, "name": fmt, "error": str(e)[:300]})
                    continue
                # GB/s here: the active experts' weight bytes (the decode floor: every active expert's
                # weights are read once).
                add(shape, f"kiln grouped {fmt} [{family_of(desc, -(-T * topk // E))}]", ms, flop, wbytes, err, unwritten, desc,
                    anchor_key, anc.get(anchor_key))
            for key in ("bf16_grouped", "fp8_row_grouped", "bf16_loop", "fp8_block_loop"):
                if isinstance(anc.get(key), float):
                    rows.append({"shape": shape, "name": "anchor " + key, "ms": anc[key], "tflops": flop / anc[key] / 1e9})
            write_outputs(args.out, meta, results, rows)
            log(f"moe {shape[0]} done")
    print(write_outputs(args.out, meta, results, rows))


def write_outputs(out_dir, meta, results, rows):
    """results.json and RESULTS.fragment.md (the table); returns the table's text."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    fmt = lambda v, p=3: "" if v is None else (f"{v:.{p}g}" if isinstance(v, float) else str(v))
    ranged = any("ratio_range" in r for r in rows)  # --repeats: medians, and the per-repeat ratios' range
    lines = [f"Run {meta['date']} on {meta['gpu']} (torch {meta['torch']}): `{meta['command']}`" +
             (f" ({meta['settle_s']:g} s idle before every timing)" if meta.get("settle_s") else ""), "",
             "| shape | path | ms | TFLOP/s | GB/s | rel err | anchor | anchor ms | kiln / anchor |" +
             (" range |" if ranged else ""),
             "|---|---|---|---|---|---|---|---|---|" + ("---|" if ranged else "")]
    for r in rows:
        ratio = r["anchor_ms"] / r["ms"] if r.get("anchor_ms") else None
        shape = r["shape"] if isinstance(r["shape"][0], str) else "x".join(map(str, r["shape"]))
        if isinstance(shape, list):
            shape = f"{shape[0]} ({shape[1]}x{shape[2]}x{shape[3]})"
        span = ""
        if ranged:
            lo_hi = r.get("ratio_range")
            span = f" {lo_hi[0]:.3g}-{lo_hi[1]:.3g} |" if lo_hi else " |"
        lines.append(f"| {shape} | {r['name']} | {r['ms']:.4f} | {r['tflops']:.1f} | {fmt(r.get('gbps'), 4)} | "
                     f"{fmt(r.get('rel_err'))} | {fmt(r.get('anchor'))} | {fmt(r.get('anchor_ms'))} | {fmt(ratio)} |" +
                     span)
    errors = [r for r in results if "error" in r]
    if errors:
        lines += ["", "Errors (kiln paths that did not run):"] + [f"- {e['shape']} {e['name']}: {e['error']}" for e in errors]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "RESULTS.fragment.md"), "w") as f:
        f.write(text)
    return text


if __name__ == "__main__":
    main()

"""The kiln plans bench_shapes.py times, as (spec, n, k, m) tuples, without torch.

bench/precompile.py uses it to fill a kernel cache on a machine without a GPU (KILN_TUNING_DEVICE=h200),
and bench_shapes.py to compile every plan on a thread pool before it times anything.
"""

DENSE_SPECS = (
    # (name, spec, fmt, anchor key, bytes per A element, bytes per B element)
    ("bf16", "gemm a=bf16 b=bf16 out=bf16", "bf16", "bf16", 2, 2),
    # FP8 tensor / row: kiln's wide sm90 tiles add into wgmma's FP8 accumulator (cuBLAS's fast
    # accumulation), narrower ones promote; bench_shapes.py takes "fp8_tensor_fast" / "fp8_row_fast"
    # (torch _scaled_mm with use_fast_accum=True, bench_shapes.fast_accum_anchors) where the plan's bucket
    # says "fast" (describe_json's fp8_accumulation) and the promoted default anchor otherwise.
    ("e4m3 tensor", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "e4m3", "fp8_tensor_fast", 1, 1),
    ("e4m3 row", "gemm a=e4m3:m b=e4m3:n out=bf16", "fp8_row", "fp8_row_fast", 1, 1),
    ("e4m3 block", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "fp8_block", "fp8_block", 1, 1),
    # MXFP8 against kiln's own FP8 block path on the same shape (there is no cuBLAS MXFP8 on Hopper).
    # An anchor key "kiln NAME" names a kiln row of the same shape.
    ("mxfp8", "gemm a=mxfp8 b=mxfp8 out=bf16", "mxfp8", "kiln e4m3 block", 1 + 1 / 32, 1 + 1 / 32),
)
MXFP4_DENSE_SPEC = "gemm a=bf16 b=mxfp4 out=bf16"


def grouped_spec(fmt, experts):
    return {"bf16": f"grouped_gemm[experts={experts},layout=offsets] a=bf16 b=bf16 out=bf16",
            "fp8_row": f"grouped_gemm[experts={experts},layout=offsets] a=e4m3:m b=e4m3:n out=bf16",
            "fp8_block": f"grouped_gemm[experts={experts},layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 "
                         "out=bf16",
            "mxfp4": f"grouped_gemm[experts={experts},layout=offsets] a=bf16 b=mxfp4 out=bf16",
            "w4a8": f"grouped_gemm[experts={experts},layout=offsets] a=e4m3:m b=mxfp4 out=bf16"}[fmt]


# w4a8: e4m3 per-token activations x MXFP4 weights (the portable mixed mainloop) against cuBLAS's grouped
# FP8 row GEMM (same activations, twice the weight bytes). fp8_block (DeepSeek blocks, layers with K % 128 == 0
# only) against the grouped FP8 row GEMM (torch has no block-scaled grouped GEMM on Hopper); bench_shapes.py
# also times a per-expert loop of cuBLAS's block-scaled GEMM ("fp8_block_loop").
GROUPED_FMTS = (("bf16", "bf16_grouped"), ("fp8_row", "fp8_row_grouped"), ("fp8_block", "fp8_row_grouped"),
                ("mxfp4", "bf16_grouped"), ("w4a8", "fp8_row_grouped"))


def fmt_fits(fmt, k):
    """Whether kiln's path `fmt` runs a problem with reduction length k: DeepSeek blocks need K % 128 == 0."""
    return fmt != "fp8_block" or k % 128 == 0


def dense_shapes(shapes, quick=False):
    return shapes["dense"][: 4 if quick else None]


def moe_layers(shapes, quick=False):
    return shapes["moe"][: 1 if quick else None]


def plans(shapes, only=None, quick=False):
    """Every (spec, n, k, m) bench_shapes.py plans, in the order it runs them (duplicates removed)."""
    out = []
    if only != "moe":
        for M, N, K in dense_shapes(shapes, quick):
            for _, spec, fmt, _, _, _ in DENSE_SPECS:
                if not fmt_fits(fmt, K):
                    continue
                out.append((spec, N, K, M))
            out.append((MXFP4_DENSE_SPEC, N, K, M))
    if only != "dense":
        for layer in moe_layers(shapes, quick):
            for T in layer["tokens"]:
                for fmt, _ in GROUPED_FMTS:
                    if not fmt_fits(fmt, layer["k"]):
                        continue
                    out.append((grouped_spec(fmt, layer["experts"]), layer["n"], layer["k"], T * layer["topk"]))
    seen, unique = set(), []
    for p in out:
        if p not in seen:
            seen.add(p)
            unique.append(p)
    return unique


def compile_all(rt, plan_tuples, jobs=8, log=print):
    """Plans and compiles each tuple on a thread pool (kiln's compiles release the GIL: ctypes).
    Returns {tuple: plan} for those that planned, and prints one line per failure."""
    import concurrent.futures, time
    t0 = time.time()

    def one(p):
        spec, n, k, m = p
        plan = rt.plan(spec, n=n, k=k, m_hint=m)
        plan.compile(m)
        return plan

    done = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(one, p): p for p in plan_tuples}
        for i, f in enumerate(concurrent.futures.as_completed(futs)):
            p = futs[f]
            try:
                done[p] = f.result()
            except Exception as e:  # reported, and bench_shapes reports the shape's error again
                log(f"compile failed: {p}: {str(e)[:300]}")
            if (i + 1) % 10 == 0 or i + 1 == len(futs):
                log(f"compiled {i + 1}/{len(futs)} plans in {time.time() - t0:.1f} s", flush=True)
    return done

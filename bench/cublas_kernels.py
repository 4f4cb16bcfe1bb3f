"""Which kernels cuBLAS runs for the bench's anchors (the torch profiler's CUDA kernel names): the names
carry the tile, the ring depth, the cluster and the schedule (e.g. `nvjet_sm90_qqtst_128x128_128x6_2x1_v`:
128 x 128 tiles, 128-K stages x 6, clusters of 2x1, not "coop"), which is what to compare kiln's configs
with before probing them.

Usage (GPU machine, torch; anchors.py found as bench_slice finds it):
    python3 bench/cublas_kernels.py [--paths bf16,fp8_tensor_fast,...] [--shape MxNxK ...]
Default: every path below on the dense shapes of shapes.json with M >= 4096.
"""
import argparse, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_slice import anchors, torch  # noqa: E402

PATHS = ("bf16", "fp8_tensor", "fp8_tensor_fast", "fp8_row", "fp8_row_fast", "fp8_block")


def calls_for(M, N, K):
    """The anchors' calls (as anchors.dense_anchors and bench_shapes.fast_accum_anchors make them), by path."""
    x = torch.randn(M, K, device=anchors.dev, dtype=torch.bfloat16)
    w = torch.randn(N, K, device=anchors.dev, dtype=torch.bfloat16)
    xq, wq = anchors.fp8_rowwise(x), anchors.fp8_rowwise(w)
    one = torch.ones((), device=anchors.dev)
    mm = torch._scaled_mm
    calls = {
        "bf16": lambda: x @ w.t(),
        "fp8_tensor": lambda: mm(xq[0], wq[0].t(), one, one, out_dtype=torch.bfloat16),
        "fp8_tensor_fast": lambda: mm(xq[0], wq[0].t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True),
        "fp8_row": lambda: mm(xq[0], wq[0].t(), xq[1], wq[1].t(), out_dtype=torch.bfloat16),
        "fp8_row_fast": lambda: mm(xq[0], wq[0].t(), xq[1], wq[1].t(), out_dtype=torch.bfloat16,
                                   use_fast_accum=True),
    }
    if K % 128 == 0:
        from torch.nn.functional import scaled_mm, ScalingType
        sa = (torch.rand(M, K // 128, device=anchors.dev) + 0.5).t().contiguous().t()
        sb = torch.rand((N + 127) // 128, K // 128, device=anchors.dev) + 0.5
        calls["fp8_block"] = lambda: scaled_mm(xq[0], wq[0].t(), sa, ScalingType.BlockWise1x128, sb.t(),
                                               ScalingType.BlockWise128x128, output_dtype=torch.bfloat16)
    return calls


def kernel_names(call):
    call()  # warm: cuBLAS's heuristics and workspace before the profiled call
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    return sorted({e.key for e in prof.key_averages() if "Memcpy" not in e.key and "Memset" not in e.key})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}")
    ap.add_argument("--shape", action="append", default=[], help="MxNxK (repeatable); default: large-M dense")
    ap.add_argument("--shapes", default=None, help="shapes.json (default: the one next to anchors.py)")
    args = ap.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        ap.error(f"--paths: unknown {', '.join(unknown)}; choose from {', '.join(PATHS)}")
    if args.shape:
        try:
            shapes = [tuple(int(v) for v in s.lower().split("x")) for s in args.shape]
        except ValueError:
            ap.error(f"--shape: expected MxNxK with integers, got {args.shape}")
        if any(len(s) != 3 or min(s) < 1 for s in shapes):
            ap.error(f"--shape: expected MxNxK with positive integers, got {args.shape}")
    else:
        path = args.shapes or os.path.join(os.path.dirname(anchors.__file__), "shapes.json")
        shapes = [tuple(s) for s in json.load(open(path))["dense"] if s[0] >= 4096]
    for M, N, K in shapes:
        calls = calls_for(M, N, K)
        for p in paths:
            if p not in calls:
                print(f"{M}x{N}x{K} {p}: not timed by the bench here (K % 128 != 0)", flush=True)
                continue
            try:
                print(f"{M}x{N}x{K} {p}: {' | '.join(kernel_names(calls[p]))}", flush=True)
            except Exception as e:  # report, go on
                print(f"{M}x{N}x{K} {p}: error {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    main()

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
from bench_slice import anchor_calls, anchors, torch  # noqa: E402

PATHS = ("bf16", "fp8_tensor", "fp8_tensor_fast", "fp8_row", "fp8_row_fast", "fp8_block")


def calls_for(M, N, K, paths):
    """One call per path, on one input set built as the bench's anchors build theirs (bench_slice.anchor_calls)."""
    return {p: calls[0] for p, calls in anchor_calls(M, N, K, paths, copies=1).items()}


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
        calls = calls_for(M, N, K, paths)
        for p in paths:
            if p not in calls:
                print(f"{M}x{N}x{K} {p}: not timed by the bench here (K % 128 != 0 or M = 1)", flush=True)
                continue
            try:
                print(f"{M}x{N}x{K} {p}: {' | '.join(kernel_names(calls[p]))}", flush=True)
            except Exception as e:  # report, go on
                print(f"{M}x{N}x{K} {p}: error {str(e)[:200]}", flush=True)


if __name__ == "__main__":
    main()

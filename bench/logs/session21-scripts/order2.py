"""bench_graph with and without an idle settle before every timing (anchors and kiln alike): ratio medians
and spreads over alternating orders."""
import statistics, sys, time
sys.path.insert(0, "bench")
import bench_slice
from bench_slice import anchors, kiln, kiln_dense, torch
from bench_shapes import fast_accum_anchors
orig = anchors.bench_graph
SETTLE = [0.0]
def settled(calls, reps=30):
    torch.cuda.synchronize()
    if SETTLE[0] > 0:
        time.sleep(SETTLE[0])
    return orig(calls, reps)
anchors.bench_graph = settled
rt = kiln.Runtime()
SH = [("gemm a=bf16 b=bf16 out=bf16", "bf16", "bf16", 4096, 4096, 7168),
      ("gemm a=bf16 b=bf16 out=bf16", "bf16", "bf16", 4096, 24576, 1536),
      ("gemm a=bf16 b=bf16 out=bf16", "bf16", "bf16", 4096, 7168, 16384),
      ("gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "e4m3", "fp8_tensor_fast", 4096, 7168, 16384),
      ("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "fp8_block", "fp8_block", 4096, 7168, 16384),
      ("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "fp8_block", "fp8_block", 4096, 7168, 2048)]
for spec, fmt, key, M, N, K in SH:
    for settle in (0.0, 0.3):
        SETTLE[0] = settle
        an, kl = [], []
        for r in range(4):
            def A():
                d = fast_accum_anchors(M, N, K) if key.endswith("_fast") else anchors.dense_anchors(M, N, K)
                an.append(d[key])
            def Kf():
                ms, err, unw, _ = kiln_dense(rt, spec, M, N, K, fmt)
                assert err < 1e-2 and unw == 0, (err, unw)
                kl.append(ms)
            for f in ((A, Kf) if r % 2 == 0 else (Kf, A)):
                f()
        ratios = sorted(a / k for a, k in zip(an, kl))
        print(f"{spec} {M}x{N}x{K} settle {settle}: anchor {statistics.median(an)*1e3:.1f} us "
              f"({min(an)*1e3:.1f}-{max(an)*1e3:.1f}) kiln {statistics.median(kl)*1e3:.1f} us "
              f"({min(kl)*1e3:.1f}-{max(kl)*1e3:.1f}) ratio of medians {statistics.median(an)/statistics.median(kl):.3f} "
              f"per-pair {ratios[0]:.3f}-{ratios[-1]:.3f}", flush=True)

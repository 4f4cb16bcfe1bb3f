"""Sustained replay with the GPU's clock and power beside the time: kiln's configs of one shape against its
cuBLAS anchor, each replayed for --seconds on rotated inputs while a thread reads the SM clock and the board
power through NVML. A kernel that moves more DRAM bytes draws more power; at the power limit the clock
drops, and the same kernel takes longer than it does alone (ncu times one launch at whatever clock it
finds). Cycles per call (time x mean clock) separate the two: equal cycles at a lower clock is power, not
the kernel's schedule.

Usage (GPU machine; KILN_CLI, KILN_LIBRARY as bench/device_run.sh sets them):
    python3 bench/clock_probe.py CANDIDATES.json [--seconds 2] [--rounds 2]
CANDIDATES.json: probe_graph_configs.py's format; "fmt" bf16, e4m3 (per tensor), fp8_row or fp8_block; the
anchor is cuBLAS bf16, FP8 per tensor / per row with fast accumulation, or FP8 blocks (scaled_mm BlockWise). Each round times the anchor, the plan's own config, then every
candidate; every kiln config is checked against float64 torch once before it is timed.
NVML reads the GPU whose index torch uses: on a machine with several GPUs, run it with one visible GPU in
the same order (CUDA_DEVICE_ORDER=PCI_BUS_ID). Meant for large M (FP8 against fast accumulation).
"""
import argparse, json, os, statistics, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_slice import anchor_calls, anchors, kiln, kiln_inputs, reference, torch  # noqa: E402
import probe_graph_configs as probe  # noqa: E402

# The anchor path of each fmt (bench_slice.anchor_calls). FP8 tensor / row: cuBLAS's fast accumulation, the
# like-for-like anchor of kiln's large-M FP8 tiles (which do not promote); a promoted kiln bucket (small M)
# would want the promoted anchor: bench_shapes.py picks it.
ANCHOR_PATH = {"bf16": "bf16", "e4m3": "fp8_tensor_fast", "fp8_row": "fp8_row_fast", "fp8_block": "fp8_block"}


class Sampler:
    """SM clock (MHz) and board power (W) every `period` seconds, from NVML, while running."""

    def __init__(self, period=0.02):
        import pynvml
        self.nvml = pynvml
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.period, self.clocks, self.watts, self.stop = period, [], [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.clocks.append(self.nvml.nvmlDeviceGetClockInfo(self.h, self.nvml.NVML_CLOCK_SM))
            self.watts.append(self.nvml.nvmlDeviceGetPowerUsage(self.h) / 1000.0)
            time.sleep(self.period)


def sustained(calls, seconds):
    """(ms per call, mean SM MHz, mean W) over about `seconds` of back-to-back graph replays of `calls`."""
    g = anchors.capture_graph(calls)
    g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    g.replay()
    torch.cuda.synchronize()
    reps = max(3, int(seconds / max(time.perf_counter() - t0, 1e-6)))
    sampler = Sampler()
    th = threading.Thread(target=sampler.run, daemon=True)
    th.start()
    try:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            g.replay()
        b.record()
        b.synchronize()
    finally:
        sampler.stop.set()
        th.join()
    ms = a.elapsed_time(b) / (reps * len(calls))
    # The replays are queued faster than they run, so the samples cover them; the first tenth is dropped
    # (it can predate the first replay). The clock is that of the run's last 90%, the time of all of it.
    c, w = sampler.clocks[len(sampler.clocks) // 10:], sampler.watts[len(sampler.watts) // 10:]
    nan = float("nan")
    return ms, statistics.mean(c) if c else nan, statistics.mean(w) if w else nan


def kiln_calls(d, shape):
    """The rotated calls of kiln's plan in cache directory d, after one run checked against float64 torch."""
    M, N, K, fmt = shape["m"], shape["n"], shape["k"], shape["fmt"]
    plan = kiln.Runtime(cache_dir=d).plan(shape["spec"], n=N, k=K, m_hint=M)
    args = kiln_inputs(fmt, M, N, K)
    outs = [torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in args]
    a, b, sa, sb = args[0]
    outs[0].fill_(float("nan"))
    plan.run(a, b, out=outs[0], a_scale=sa, b_scale=sb)
    torch.cuda.synchronize()
    ref = reference(fmt, a, b, sa, sb, M, N, K)
    err = ((outs[0].double() - ref).norm() / ref.norm()).item()
    if not err < 1e-2 or torch.isnan(outs[0]).any():
        raise RuntimeError(f"relative error {err:.2e} against float64 torch (or unwritten output)")
    name = probe.ran_bucket(plan.describe(), M).get("config", "?")
    return name, [lambda a=a, b=b, sa=sa, sb=sb, o=o: plan.run(a, b, out=o, a_scale=sa, b_scale=sb)
                  for (a, b, sa, sb), o in zip(args, outs)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates")
    ap.add_argument("--seconds", type=float, default=2.0, help="replay time per config and round")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.seconds <= 0 or args.rounds < 1:
        ap.error(f"--seconds must be > 0 and --rounds >= 1, got {args.seconds} and {args.rounds}")
    for shape in json.load(open(args.candidates)):
        if shape["fmt"] not in ANCHOR_PATH:
            print(f"=== {shape['spec']}: fmt {shape['fmt']!r} not timed here ({', '.join(ANCHOR_PATH)})")
            continue
        M, N, K = shape["m"], shape["n"], shape["k"]
        print(f"=== {shape['spec']} {M}x{N}x{K} ({args.seconds:g} s sustained per line)", flush=True)
        entries = []
        try:
            path = ANCHOR_PATH[shape["fmt"]]
            calls = anchor_calls(M, N, K, (path,))
            if path not in calls:
                raise ValueError(f"cuBLAS's {path} anchor needs K % 128 == 0 and M > 1, got M={M} K={K}")
            entries.append((f"cuBLAS {path}", calls[path]))
        except Exception as e:  # no block scaling in this torch, a shape it refuses: say so, go on
            print(f"  cuBLAS anchor: error: {e}", flush=True)
        for cfg in [None] + shape["configs"]:
            label = "plan's own" if cfg is None else json.dumps(cfg, separators=(",", ":"))
            d, why = probe.prepared_or_error(shape, cfg)
            if d is None:
                print(f"  {label}: {why}", flush=True)
                continue
            try:
                name, calls = kiln_calls(d, shape)
            except Exception as e:  # a refused config or a wrong result: say so, go on
                print(f"  {label}: error: {e}", flush=True)
                continue
            entries.append((("plan's own " if cfg is None else "") + name, calls))
        flop = 2.0 * M * N * K
        for r in range(args.rounds):
            for label, calls in entries:
                try:
                    ms, mhz, watts = sustained(calls, args.seconds)
                except Exception as e:  # a failed capture or launch: say so, go on with the others
                    print(f"  round {r + 1} {label:44s} error: {e}", flush=True)
                    continue
                print(f"  round {r + 1} {label:44s} {ms * 1e3:8.2f} us {flop / ms / 1e9:7.1f} TFLOP/s "
                      f"{mhz:6.0f} MHz {watts:5.0f} W {ms * 1e-3 * mhz * 1e6 / 1e3:8.1f} kcycles", flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

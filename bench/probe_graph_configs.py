"""Time explicit tile configs of one shape the way bench_shapes.py times kiln (CUDA-graph replay, inputs
rotated past L2), instead of the tuner's CUDA events. Each config is imported as the only tuning row of a
fresh cache directory (`kiln cache import`), so the plan picks it exactly as it would a tuned winner.

Usage (GPU machine; KILN_CLI, KILN_LIBRARY as bench/device_run.sh sets them):
    python3 bench/probe_graph_configs.py CANDIDATES.json [--repeat 2] [--rounds 3]
CANDIDATES.json: [{"spec": ..., "fmt": "fp8_block", "m": 64, "n": 2112, "k": 7168,
                   "configs": [{"block_m": 64, ...}, ...]}, ...]
A grouped (MoE) shape names its routing instead of "m": {"spec": "grouped_gemm[experts=32,layout=offsets] ...",
"fmt": "bf16" | "fp8_row" | "fp8_block", "tokens": 4096, "topk": 4, "experts": 32, "n": ..., "k": ...,
"configs": [...]}, where spec must be bench_shapes.py's spec for that fmt and expert count; it
runs as bench_shapes.py's MoE rows do (T * topk rows routed by anchors.routing), and its tuning row is keyed
by the rows per expert (ceil(T * topk / E)), as the runtime buckets a grouped plan.
Prints one line per config: us, GB/s (A + W + output bytes, as bench_shapes.py counts them), the relative
error against float64 torch, and the config the plan ran. The plan's own config (no tuning row but the
built-in table) is timed first and last as the baseline.
Each candidate keeps its cache directory for the whole probe (compiled once, by --jobs parallel `kiln
compile` runs before the first round; the plan's own config compiles in its first run), so rounds after the
first do not compile. A run whose output is wrong (relative error >= 1e-2 or unwritten elements) is
reported as an error line and not timed.
--rounds R times the whole list of a shape R times over, round-robin (own, candidates, own; again ...),
then prints each config's median and its spread: configs a few percent apart need that, since one
timing of a shape moves by several percent with the GPU's clock (docs/performance.md).
"""
import argparse, concurrent.futures, json, os, re, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_slice import kiln, kiln_dense, settle_timings  # noqa: E402

# The tuning rows' device identity: the one kiln's H200 table is keyed by (tuner/pretuned/h200.json).
with open(os.path.join(os.path.dirname(HERE), "tuner", "pretuned", "h200.json")) as f:
    DEVICE = json.load(f)["tunings"][0]["device"]


def is_grouped(shape):
    return "tokens" in shape


def bucket_rows(shape):
    """The rows the plan buckets by: M, or for a grouped shape the rows per expert, ceil(T * topk / E)."""
    if is_grouped(shape):
        return -(-shape["tokens"] * shape["topk"] // shape["experts"])
    return shape["m"]


def total_rows(shape):
    return shape["tokens"] * shape["topk"] if is_grouped(shape) else shape["m"]


def shape_name(shape):
    if is_grouped(shape):
        return f"T={shape['tokens']} topk={shape['topk']} E={shape['experts']} ({total_rows(shape)}x{shape['n']}x{shape['k']})"
    return f"{shape['m']}x{shape['n']}x{shape['k']}"


def ran_bucket(desc, m):
    """The plan's M bucket for m rows (Plan.describe: buckets are the first m_max >= m)."""
    return next((b for b in desc.get("buckets", []) if m <= b["m_max"]), desc.get("buckets", [{}])[-1])


def prepare_dir(shape, cfg):
    """A cache directory whose only tuning row is cfg for shape (cfg None: no row, the plan's own config);
    returns (directory, None) or (None, why the import failed). Rounds reuse it, so each kernel is
    compiled once per probe, not once per round."""
    d = tempfile.mkdtemp(prefix="kiln-probe-")
    if cfg is None:
        return d, None
    # (Planned in a cache of its own: d's tuning store must first be opened after the import.)
    desc = kiln.Runtime(cache_dir=tempfile.mkdtemp(prefix="kiln-probe-")).plan(
        shape["spec"], n=shape["n"], k=shape["k"]).describe()
    m_bucket = ran_bucket(desc, bucket_rows(shape))["m_max"]
    # Tuning rows key a grouped problem by its expert count beside the spec text with experts=0.
    experts = shape["experts"] if is_grouped(shape) else 0
    spec = re.sub(r"experts=\d+", "experts=0", shape["spec"])
    row = {"candidates": 1, "config": cfg, "device": DEVICE, "experts": experts, "family": "sm90_gemm",
           "k": shape["k"], "m_bucket": m_bucket, "median_us": 1.0, "n": shape["n"],
           "spec": spec, "tuned_unix": 1800000000}
    path = os.path.join(d, "row.json")
    with open(path, "w") as f:
        json.dump({"format": "kiln-tunings", "version": 1, "tunings": [row]}, f)
    r = subprocess.run([os.environ.get("KILN_CLI", "kiln"), "cache", "import", path],
                       env=dict(os.environ, KILN_CACHE_DIR=d), capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"import failed: {r.stdout.strip()} {r.stderr.strip()}"
    return d, None


def prepared_or_error(shape, cfg):
    """prepare_dir, with an exception (the plan refuses the shape, no kiln CLI) as the reason instead."""
    try:
        return prepare_dir(shape, cfg)
    except Exception as e:  # every run of it then says so
        return None, f"error: {e}"


def precompile(shape, dirs, jobs):
    """Compiles every candidate's kernel into its directory with `kiln compile`, jobs at a time, so the
    first round does not compile them one after the other in this process. A failure here is not
    reported: the timed run compiles again and reports it."""
    def one(item):
        cfg, d = item
        try:
            subprocess.run([os.environ.get("KILN_CLI", "kiln"), "compile", shape["spec"], "--m", str(total_rows(shape)),
                            "--n", str(shape["n"]), "--k", str(shape["k"]), "--config",
                            json.dumps(cfg, separators=(",", ":"))],
                           env=dict(os.environ, KILN_CACHE_DIR=d), capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError):
            pass  # the timed run compiles again and reports what fails
    items = [(cfg, d) for cfg, d in dirs if cfg is not None and d is not None]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, items))


def run_one(shape, d):
    """Times the shape with cache directory d (prepare_dir's); returns (ms, the line to print)."""
    rt = kiln.Runtime(cache_dir=d)
    M, N, K = total_rows(shape), shape["n"], shape["k"]
    elem = 1 if shape["fmt"] != "bf16" else 2
    if is_grouped(shape):
        from bench_shapes import kiln_grouped  # torch and the anchors: imported where a GPU runs
        from plan_list import grouped_spec
        # kiln_grouped plans grouped_spec(fmt, E): a different spec's tuning row would never be used.
        want = grouped_spec(shape["fmt"], shape["experts"])
        if shape["spec"] != want:
            return None, f"error: spec {shape['spec']!r} is not {want!r}, the spec fmt {shape['fmt']!r} runs"
        ms, err, unwritten, desc, weight_bytes = kiln_grouped(rt, shape["fmt"], shape["tokens"], shape["topk"],
                                                              shape["experts"], N, K)
        nbytes = M * K * elem + weight_bytes + M * N * 2
    else:
        ms, err, unwritten, desc = kiln_dense(rt, shape["spec"], M, N, K, shape["fmt"])
        nbytes = M * K * elem + N * K * elem + M * N * 2
    if not err < MAX_ERR or unwritten:  # a wrong result is a line, never a timing
        return None, f"error: relative error {err:.2e} against float64 torch, {unwritten} outputs unwritten"
    ran = ran_bucket(desc, bucket_rows(shape))
    name = ran.get("config", "?")
    gbs = nbytes / (ms * 1e-3) / 1e9
    return ms, f"{ms * 1e3:8.2f} us {gbs:7.0f} GB/s err {err:.2e} unwritten {unwritten} ran {name}"


MAX_ERR = 1e-2  # relative error against float64 torch above which a run is reported, not timed
OWN = "plan's own"  # the label of the plan's own config (the built-in table's, no tuning row)


def summary(label_times):
    """Lines of 'median us (min-max, n)' per label, in first-seen order; labels without a time say so."""
    out = []
    for label, times in label_times.items():
        if times:
            t = sorted(times)
            out.append(f"  {label}: median {statistics.median(t) * 1e3:.2f} us "
                       f"({t[0] * 1e3:.2f}-{t[-1] * 1e3:.2f}, {len(t)} timings)")
        else:
            out.append(f"  {label}: no timing (every run failed)")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates")
    ap.add_argument("--repeat", type=int, default=1, help="time each candidate this many times in a row")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time a shape's whole list this many times, round-robin, then print medians")
    ap.add_argument("--jobs", type=int, default=8,
                    help="compile a shape's candidates this many at a time before timing (1: in the timed runs)")
    ap.add_argument("--settle", type=float, default=0.3,
                    help="seconds idle before every timing (bench_slice.settle_timings; 0: none)")
    args = ap.parse_args()
    if args.repeat < 1 or args.rounds < 1:
        ap.error(f"--repeat and --rounds must be at least 1, got {args.repeat} and {args.rounds}")
    if not 0 <= args.settle <= 10:
        ap.error(f"--settle must be between 0 and 10 seconds, got {args.settle}")
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    settle_timings(args.settle)

    def timed(shape, prepared, times, label):
        """One run's line; its time joins label's list (an error: a line saying so, no time)."""
        d, why = prepared
        if d is None:
            return why
        try:
            ms, line = run_one(shape, d)
        except Exception as e:  # a config the plan refuses, a failed compile: say so, go on
            return f"error: {e}"
        if isinstance(ms, float):
            times.setdefault(label, []).append(ms)
        return line

    for shape in json.load(open(args.candidates)):
        print(f"=== {shape['spec']} {shape_name(shape)}", flush=True)
        times = {OWN: []}
        own = prepared_or_error(shape, None)
        dirs = []
        for cfg in shape["configs"]:
            times.setdefault(json.dumps(cfg, separators=(",", ":")), [])
            dirs.append((cfg, prepared_or_error(shape, cfg)))
        if args.jobs > 1:
            precompile(shape, [(cfg, p[0]) for cfg, p in dirs], args.jobs)
        for r in range(args.rounds):
            if args.rounds > 1:
                print(f" round {r + 1} of {args.rounds}", flush=True)
            print(f"  plan's own      {timed(shape, own, times, OWN)}", flush=True)
            for cfg, prepared in dirs:
                label = json.dumps(cfg, separators=(",", ":"))
                for _ in range(args.repeat):
                    print(f"  {label}\n      {timed(shape, prepared, times, label)}", flush=True)
            print(f"  plan's own      {timed(shape, own, times, OWN)}", flush=True)
        if args.rounds > 1 or args.repeat > 1:
            print(" medians", flush=True)
            for line in summary(times):
                print(line, flush=True)


if __name__ == "__main__":
    main()

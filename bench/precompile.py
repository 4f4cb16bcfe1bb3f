"""Fills a kernel cache with every kernel bench_shapes.py runs, on a machine without a GPU.

    KILN_TUNING_DEVICE=h200 KILN_LIBRARY=build/capi/libkiln.so python3 bench/precompile.py \
        --cache-dir carry-cache [--shapes bench/shapes.json] [--jobs 2] [--quick]

The cache then travels to the GPU machine (KILN_CACHE_DIR), so device minutes go to timing.
Plans pick the same configs there as here as long as KILN_TUNING_DEVICE names the GPU they run on.
"""
import argparse, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)
import kiln  # noqa: E402
from plan_list import plans, compile_all  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=os.path.join(HERE, "shapes.json"), help="default: bench/shapes.json")
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not os.environ.get("KILN_TUNING_DEVICE"):
        sys.exit("precompile.py: set KILN_TUNING_DEVICE to the GPU the cache is for (e.g. h200)")
    shapes = json.load(open(args.shapes))
    rt = kiln.Runtime(cache_dir=args.cache_dir)
    todo = plans(shapes, quick=args.quick)
    done = compile_all(rt, todo, jobs=args.jobs)
    print(f"{len(done)}/{len(todo)} plans compiled into {args.cache_dir}")
    return 0 if len(done) == len(todo) else 1


if __name__ == "__main__":
    sys.exit(main())

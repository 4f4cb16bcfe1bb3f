#!/usr/bin/env python3
"""The shape sweep: kiln on shapes sampled from real model families, not the ones it was tuned on.

Two steps around bench_shapes.py (which times every kiln path against its same-run anchor and checks it
against float64):

    python3 bench/sweep.py shapes --out out/sweep_shapes.json [--part fit|held_out|all] [--max-dense N]
    python3 bench/bench_shapes.py --shapes out/sweep_shapes.json --out out/sweep [--min-m M --max-m M]
    python3 bench/sweep.py summarize --shapes out/sweep_shapes.json --results out/sweep/results.json

The strata are fixed here, before anything is fitted or tuned on the sweep:
- model families (FAMILIES: published layer sizes of open models, dense and MoE); every family is in
  exactly one part: "fit" (what a tuner or a cost model may learn from) or "held_out" (never used for
  fitting; reported separately, so a number on shapes kiln has not seen stays honest). The split is by
  family, not by shape, so no held-out shape shares its N and K with a fitted one;
- layers: the attention's fused QKV and output projections, the MLP's fused gate|up and down projections
  (dense), and one expert GEMM of each MoE layer (gate|up and down, rows = tokens x top-k);
- M ranges (RANGES): decode (M <= 16), mid (17 .. 384: prefill chunks and small batches), large (> 384),
  with fixed M values in each (M_VALUES; MoE: TOKENS).
`summarize` gives, per kiln path, part and M range, the number of shapes and the geometric mean and the
worst of kiln time / anchor time (below 1.0: kiln is faster), from bench_shapes.py's results.json.
"""

import argparse
import json
import math
import os
import sys
from collections import defaultdict

# name -> (part, kind, sizes). Dense: hidden, q (heads x head_dim), kv (kv_heads x head_dim, per K and V),
# intermediate. MoE: hidden, expert intermediate, experts, top-k (only the routed experts' GEMMs).
FAMILIES = {
    "llama-3.1-8b": ("fit", "dense", dict(hidden=4096, q=4096, kv=1024, inter=14336)),
    "llama-3.1-70b": ("fit", "dense", dict(hidden=8192, q=8192, kv=1024, inter=28672)),
    "qwen2.5-7b": ("fit", "dense", dict(hidden=3584, q=3584, kv=512, inter=18944)),
    "qwen2.5-32b": ("held_out", "dense", dict(hidden=5120, q=5120, kv=1024, inter=27648)),
    "mistral-nemo-12b": ("fit", "dense", dict(hidden=5120, q=4096, kv=1024, inter=14336)),
    "gemma-2-9b": ("held_out", "dense", dict(hidden=3584, q=4096, kv=2048, inter=14336)),
    "phi-3-mini": ("fit", "dense", dict(hidden=3072, q=3072, kv=3072, inter=8192)),
    "phi-4": ("held_out", "dense", dict(hidden=5120, q=5120, kv=1280, inter=17920)),
    "qwen3-4b": ("fit", "dense", dict(hidden=2560, q=4096, kv=1024, inter=9728)),
    "mixtral-8x7b": ("fit", "moe", dict(hidden=4096, inter=14336, experts=8, topk=2)),
    "qwen3-30b-a3b": ("held_out", "moe", dict(hidden=2048, inter=768, experts=128, topk=8)),
    "olmoe-1b-7b": ("fit", "moe", dict(hidden=2048, inter=1024, experts=64, topk=8)),
    "deepseek-v2-lite": ("held_out", "moe", dict(hidden=2048, inter=1408, experts=64, topk=6)),
    "qwen2-57b-a14b": ("fit", "moe", dict(hidden=3584, inter=2560, experts=64, topk=8)),
}

RANGES = (("decode", 1, 16), ("mid", 17, 384), ("large", 385, 1 << 30))
M_VALUES = (1, 8, 16, 48, 96, 200, 384, 1000, 2048, 4096, 8192, 16384)
TOKENS = (16, 128, 512, 2048, 8192)


def m_range(m: int) -> str:
    return next(name for name, lo, hi in RANGES if lo <= m <= hi)


def dense_layers(sizes):
    """(layer, N, K) of a dense family: weights are [N, K]."""
    h, q, kv, inter = sizes["hidden"], sizes["q"], sizes["kv"], sizes["inter"]
    return [("qkv", q + 2 * kv, h), ("o", h, q), ("gate_up", 2 * inter, h), ("down", h, inter)]


def make_shapes(part="all", max_dense=0):
    """The sweep in bench_shapes.py's format, plus "dense_meta" / "moe" entries that name each shape's
    family, layer and part. max_dense > 0 keeps every k-th dense shape (spread over families, layers
    and M), for a shorter run."""
    dense, meta, moe, seen = [], [], [], set()
    for family, (fam_part, kind, sizes) in FAMILIES.items():
        if part != "all" and fam_part != part:
            continue
        if kind == "dense":
            for layer, n, k in dense_layers(sizes):
                for m in M_VALUES:
                    if (m, n, k) in seen:  # the same layer size in two families of one part: timed once
                        continue
                    seen.add((m, n, k))
                    dense.append([m, n, k])
                    meta.append({"shape": [m, n, k], "family": family, "layer": layer, "part": fam_part})
        else:
            for layer, n, k in (("gate_up", 2 * sizes["inter"], sizes["hidden"]),
                                ("down", sizes["hidden"], sizes["inter"])):
                moe.append({"name": f"{family} {layer}", "family": family, "part": fam_part,
                            "experts": sizes["experts"], "topk": sizes["topk"], "n": n, "k": k,
                            "tokens": list(TOKENS)})
    if max_dense and len(dense) > max_dense:
        step = len(dense) / max_dense
        keep = sorted({int(i * step) for i in range(max_dense)})
        dense, meta = [dense[i] for i in keep], [meta[i] for i in keep]
    return {"about": "bench/sweep.py: shapes of open model families, split by family into fit and held_out "
                     "(docstring of bench/sweep.py); dense [M, N, K] with weights (N, K); moe: one expert GEMM "
                     "of a routed layer, rows = tokens x topk",
            "dense": dense, "dense_meta": meta, "moe": moe}


def _path(name: str) -> str:
    """The kiln path of a results row: 'kiln fp8 block [sm90_gemm]' -> 'fp8 block'."""
    return name.split(" [", 1)[0].removeprefix("kiln ")


def summarize(shapes, results):
    """{(path, part, range): [kiln / anchor ratios]} from bench_shapes.py's results rows."""
    dense_part = {tuple(m["shape"]): m["part"] for m in shapes.get("dense_meta", [])}
    moe_part = {layer["name"]: layer["part"] for layer in shapes.get("moe", []) if "part" in layer}
    groups = defaultdict(list)
    for r in results:
        if not r.get("name", "").startswith("kiln ") or not r.get("anchor_ms") or not r.get("ms"):
            continue
        if math.isnan(r.get("rel_err", 0.0) or 0.0):
            continue  # an unusable result has no ratio (bench_shapes.py reports it)
        shape = r["shape"]
        if isinstance(shape[0], str):  # MoE: ["<family> <layer> T=<tokens>", rows, N, K]
            part = moe_part.get(shape[0].rsplit(" T=", 1)[0])
            m = int(shape[0].rsplit(" T=", 1)[1])  # ranged by tokens, as a serving batch is
        else:
            part = dense_part.get(tuple(shape))
            m = shape[0]
        if part is None:
            continue
        groups[(_path(r["name"]), part, m_range(m))].append(r["ms"] / r["anchor_ms"])
    return groups


def table(groups) -> str:
    lines = ["| kiln path | part | M range | shapes | kiln / anchor geomean | worst |", "|---|---|---|---|---|---|"]
    order = {name: i for i, (name, _, _) in enumerate(RANGES)}
    for (path, part, rng), ratios in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], order[kv[0][2]])):
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines.append(f"| {path} | {part} | {rng} | {len(ratios)} | {geo:.3f} | {max(ratios):.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("shapes", help="write the sweep's shapes file")
    s.add_argument("--out", required=True)
    s.add_argument("--part", choices=("fit", "held_out", "all"), default="all")
    s.add_argument("--max-dense", type=int, default=0, help="keep about this many dense shapes (0: all)")
    t = sub.add_parser("summarize", help="geomean and worst kiln / anchor per path, part and M range")
    t.add_argument("--shapes", required=True)
    t.add_argument("--results", required=True, help="bench_shapes.py's results.json")
    args = ap.parse_args(argv)
    if args.cmd == "shapes":
        made = make_shapes(args.part, args.max_dense)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(made, f, indent=1)
        print(f"sweep.py: {len(made['dense'])} dense shapes, {len(made['moe'])} MoE layers x {len(TOKENS)} token "
              f"counts -> {args.out}")
        return 0
    with open(args.shapes) as f:
        shapes = json.load(f)
    with open(args.results) as f:
        results = json.load(f)["results"]
    groups = summarize(shapes, results)
    if not groups:
        sys.exit("sweep.py: no kiln row with an anchor matched a shape of the sweep")
    print(table(groups), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

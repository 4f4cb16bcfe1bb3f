"""bench/sweep.py: the strata and the split (no layer size in both parts), and the summary's arithmetic."""
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sweep  # noqa: E402


def weight_sizes(shapes, part):
    dense = {(n, k) for m, n, k in (x["shape"] for x in shapes["dense_meta"] if x["part"] == part)}
    moe = {(layer["n"], layer["k"]) for layer in shapes["moe"] if layer["part"] == part}
    return dense | moe


def test_every_family_is_in_one_part_and_no_weight_size_is_in_both():
    shapes = sweep.make_shapes()
    assert {part for part, _, _ in sweep.FAMILIES.values()} == {"fit", "held_out"}
    assert not weight_sizes(shapes, "fit") & weight_sizes(shapes, "held_out")
    assert len(shapes["dense"]) == len(shapes["dense_meta"]) == len({tuple(s) for s in shapes["dense"]})
    for rng, lo, hi in sweep.RANGES:  # every M range is sampled
        assert any(lo <= m <= hi for m, _, _ in shapes["dense"]), rng


def test_parts_and_subsampling():
    held = sweep.make_shapes("held_out")
    assert {x["part"] for x in held["dense_meta"]} == {"held_out"}
    small = sweep.make_shapes(max_dense=40)
    assert len(small["dense"]) == 40
    assert len({x["family"] for x in small["dense_meta"]}) >= 5  # spread over families, not the first ones


def test_summary_geomean_and_worst_per_path_part_and_range():
    shapes = sweep.make_shapes()
    fit = next(x["shape"] for x in shapes["dense_meta"] if x["part"] == "fit" and x["shape"][0] == 1)
    fit_mid = next(x["shape"] for x in shapes["dense_meta"] if x["part"] == "fit" and x["shape"][0] == 200)
    held = next(x["shape"] for x in shapes["dense_meta"] if x["part"] == "held_out" and x["shape"][0] == 4096)
    layer = next(layer for layer in shapes["moe"] if layer["part"] == "held_out")
    results = [
        {"shape": fit, "name": "kiln bf16 [sm90_decode]", "ms": 2.0, "anchor_ms": 1.0, "rel_err": 1e-3},
        {"shape": fit, "name": "kiln bf16 [sm90_decode]", "ms": 0.5, "anchor_ms": 1.0, "rel_err": 1e-3},
        {"shape": fit_mid, "name": "kiln bf16 [sm90_gemm]", "ms": 1.0, "anchor_ms": 1.0, "rel_err": float("nan")},
        {"shape": held, "name": "kiln fp8 block [sm90_gemm]", "ms": 0.9, "anchor_ms": 1.0, "rel_err": 1e-3},
        {"shape": held, "name": "anchor bf16", "ms": 1.0},
        {"shape": [f"{layer['name']} T=512", 512 * layer["topk"], layer["n"], layer["k"]],
         "name": "kiln grouped bf16 [sm90_gemm]", "ms": 1.1, "anchor_ms": 1.0, "rel_err": 1e-3},
    ]
    groups = sweep.summarize(shapes, results)
    assert groups == {("bf16", "fit", "decode"): [2.0, 0.5], ("fp8 block", "held_out", "large"): [0.9],
                      ("grouped bf16", "held_out", "large"): [1.1]}
    text = sweep.table(groups)
    assert "| bf16 | fit | decode | 2 | 1.000 | 2.000 |" in text  # geomean of 2 and 0.5
    assert math.isclose(float(text.split("| fp8 block | held_out | large | 1 | ")[1][:5]), 0.9)

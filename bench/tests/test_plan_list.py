"""plan_list.plans: which (spec, n, k, m) tuples bench_shapes.py compiles, without a GPU or torch."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import plan_list  # noqa: E402

SHAPES = {"dense": [[64, 2112, 7168], [16, 5760, 2880]],
          "moe": [{"name": "blocky", "experts": 32, "topk": 8, "n": 4096, "k": 7168, "tokens": [16, 512]},
                  {"name": "odd k", "experts": 32, "topk": 4, "n": 5760, "k": 2880, "tokens": [1]}]}
BLOCK = "a=e4m3:block1x128 b=e4m3:block128x128"


def test_block_scaled_plans_only_where_k_is_a_multiple_of_128():
    got = plan_list.plans(SHAPES)
    block = [(n, k, m) for spec, n, k, m in got if BLOCK in spec]
    # dense 64 x 2112 x 7168 and the grouped layer with K = 7168 at both token counts; nothing at K = 2880
    assert block == [(2112, 7168, 64), (4096, 7168, 16 * 8), (4096, 7168, 512 * 8)]
    grouped_block = [spec for spec, *_ in got if spec.startswith("grouped_gemm") and BLOCK in spec]
    assert grouped_block == [plan_list.grouped_spec("fp8_block", 32)] * 2


def test_every_grouped_fmt_plans_on_a_layer_that_takes_it():
    got = plan_list.plans(SHAPES, only="moe")
    specs = {spec for spec, n, k, m in got if k == 7168}
    assert specs == {plan_list.grouped_spec(fmt, 32) for fmt, _ in plan_list.GROUPED_FMTS}
    odd = {spec for spec, n, k, m in got if k == 2880}
    assert odd == {plan_list.grouped_spec(fmt, 32) for fmt, _ in plan_list.GROUPED_FMTS if fmt != "fp8_block"}


def test_plans_are_unique_and_in_run_order():
    got = plan_list.plans({"dense": [[64, 2112, 7168], [64, 2112, 7168]], "moe": []})
    assert len(got) == len(set(got)) == len(plan_list.DENSE_SPECS) + 1

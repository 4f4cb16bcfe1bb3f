"""bench_shapes.py's --repeats bookkeeping, without a GPU or torch: bench_slice (torch, anchors, kiln) is
replaced by a fake whose timings are scripted per repeat, and the table / results.json are checked."""
import importlib
import json
import math
import os
import sys
import types

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)

# Anchor ms per repeat, kiln ms per (path, repeat): ratios are anchor / kiln.
ANCHORS = [{"bf16": 1.0, "fp8_tensor": 0.5, "fp8_row": 0.5, "fp8_block": 0.8},
           {"bf16": 1.2, "fp8_tensor": 0.5, "fp8_row": 0.5, "fp8_block": 0.9},
           {"bf16": 0.9, "fp8_tensor": 0.5, "fp8_row": 0.5, "fp8_block": 1.0}]
KILN = {"bf16": [1.0, 1.1, 0.95], "e4m3": [0.4, 0.42, 0.41], "fp8_row": [0.45, 0.5, 0.44],
        "fp8_block": [0.7, 0.75, 0.8], "mxfp8": [1.5, 1.6, 1.4]}
DESC = {"buckets": [{"m_max": 1 << 30, "family": "sm90_gemm", "fp8_accumulation": "fast"}]}


class FakeSlice(types.ModuleType):
    def __init__(self, fail=None, nan=None, drop=None):
        super().__init__("bench_slice")
        self.rep = {"anchors": 0}
        self.calls = {}
        self.fail = fail or set()  # (fmt, repeat) pairs whose kiln call raises
        self.nan = nan or set()  # (fmt, repeat) pairs whose relative error is NaN
        self.drop = drop or set()  # (anchor key, repeat) pairs that fail (an error string, as anchors.py)
        self.torch = types.SimpleNamespace(__version__="fake",
                                           cuda=types.SimpleNamespace(get_device_name=lambda: "FakeGPU"))
        self.kiln = types.SimpleNamespace(Runtime=lambda **kw: object())
        self.anchor_calls = None  # used only by fast_accum_anchors, which the tests replace
        # used only by the MoE rows (kiln_grouped, block_loop_anchor), which these tests do not run
        self.block_quantize_x = self.block_quantize_w = self.block_dequantize = None
        self.settled = []  # settle_timings' arguments, in call order
        self.settle_timings = self.settled.append
        self.anchors = types.SimpleNamespace(dev="cuda", copies_for=lambda n: 1,
                                             dense_anchors=self._dense_anchors,
                                             mxfp4_eager_anchor=lambda M, N, K: {"mxfp4_eager": 3.0})

    def _dense_anchors(self, M, N, K):
        i = self.rep["anchors"]
        r = dict(ANCHORS[i % len(ANCHORS)])
        for key, rep in self.drop:
            if rep == i:
                del r[key]
                r[key + "_error"] = "scripted anchor failure"
        self.rep["anchors"] += 1
        return r

    def kiln_dense(self, rt, spec, M, N, K, fmt, mx_prepass=False):
        i = self.calls.get(fmt, 0)
        self.calls[fmt] = i + 1
        if (fmt, i) in self.fail:
            raise RuntimeError(f"scripted failure of {fmt} in repeat {i}")
        return KILN[fmt][i], float("nan") if (fmt, i) in self.nan else 1e-3, 0, DESC


def run(tmp_path, monkeypatch, repeats, fail=None, nan=None, drop=None, extra=(), fake=None):
    fake = fake or FakeSlice(fail, nan, drop)
    monkeypatch.setitem(sys.modules, "bench_slice", fake)
    monkeypatch.syspath_prepend(BENCH)
    sys.modules.pop("bench_shapes", None)
    bs = importlib.import_module("bench_shapes")
    monkeypatch.setattr(bs, "fast_accum_anchors", lambda M, N, K: {"fp8_tensor_fast": 0.45, "fp8_row_fast": 0.45})
    monkeypatch.setattr(bs, "kiln_mxfp4_dense", lambda rt, M, N, K: (2.0, 1e-3, 0, DESC))
    monkeypatch.setattr(bs, "compile_all", lambda *a, **kw: None)
    shapes = tmp_path / "shapes.json"
    shapes.write_text(json.dumps({"dense": [[4096, 7168, 2048]], "moe": []}))
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["bench_shapes.py", "--shapes", str(shapes), "--out", str(out),
                                      "--only", "dense", "--repeats", str(repeats), *extra])
    bs.main()
    results = json.loads((out / "results.json").read_text())["results"]
    return results, (out / "RESULTS.fragment.md").read_text()


def row(results, prefix):
    return next(r for r in results if r.get("name", "").startswith(prefix) and "ms" in r)


def test_repeats_give_medians_and_the_per_repeat_ratio_range(tmp_path, monkeypatch):
    results, table = run(tmp_path, monkeypatch, 3)
    bf16 = row(results, "kiln bf16 [")
    assert bf16["ms"] == pytest.approx(1.0)  # median of 1.0, 1.1, 0.95
    assert bf16["anchor_ms"] == pytest.approx(1.0)  # median of 1.0, 1.2, 0.9
    ratios = [1.0 / 1.0, 1.2 / 1.1, 0.9 / 0.95]
    assert bf16["ratio_range"] == pytest.approx([min(ratios), max(ratios)])
    assert bf16["ms_runs"] == pytest.approx(KILN["bf16"])
    # A kiln-anchored row (MXFP8 against kiln's block path) takes the block path's median, repeat by repeat.
    mx = row(results, "kiln mxfp8 [")
    assert mx["anchor_ms"] == pytest.approx(0.75)
    mx_ratios = [a / b for a, b in zip(KILN["fp8_block"], KILN["mxfp8"])]
    assert mx["ratio_range"] == pytest.approx([min(mx_ratios), max(mx_ratios)])
    anc = next(r for r in results if "anchors" in r)["anchors"]
    assert anc["fp8_block"] == pytest.approx(0.9) and len(anc["repeats"]) == 3
    header = next(line for line in table.splitlines() if line.startswith("| shape"))
    assert header.endswith("| kiln / anchor | range |")
    assert "| kiln bf16 [sm90_gemm] |" in table and "| 0.947-1.09 |" in table  # bf16's range, 3 digits


def test_a_path_failing_in_one_repeat_is_reported_not_timed(tmp_path, monkeypatch):
    results, table = run(tmp_path, monkeypatch, 3, fail={("fp8_row", 1)})
    assert not any(r.get("name", "").startswith("kiln e4m3 row [") for r in results)
    errors = [r for r in results if "error" in r]
    assert [e["name"] for e in errors] == ["e4m3 row"]
    assert "scripted failure of fp8_row in repeat 1" in errors[0]["error"]
    assert "Errors (kiln paths that did not run):" in table


def test_one_repeat_keeps_the_table_as_before(tmp_path, monkeypatch):
    results, table = run(tmp_path, monkeypatch, 1)
    header = next(line for line in table.splitlines() if line.startswith("| shape"))
    assert header == "| shape | path | ms | TFLOP/s | GB/s | rel err | anchor | anchor ms | kiln / anchor |"
    bf16 = row(results, "kiln bf16 [")
    assert bf16["ms"] == pytest.approx(1.0) and "ratio_range" not in bf16 and "ms_runs" not in bf16
    assert "repeats" not in next(r for r in results if "anchors" in r)["anchors"]


def test_repeats_below_one_are_refused(tmp_path, monkeypatch):
    with pytest.raises(SystemExit):
        run(tmp_path, monkeypatch, 0)


def test_a_nan_in_any_repeat_is_the_rows_error(tmp_path, monkeypatch):
    results, table = run(tmp_path, monkeypatch, 3, nan={("bf16", 2)})
    assert math.isnan(row(results, "kiln bf16 [")["rel_err"])
    assert row(results, "kiln e4m3 tensor [")["rel_err"] == pytest.approx(1e-3)


def test_an_anchor_failing_in_some_repeats_has_no_median_and_no_ratio(tmp_path, monkeypatch):
    results, table = run(tmp_path, monkeypatch, 3, drop={("fp8_block", 1)})
    anc = next(r for r in results if "anchors" in r)["anchors"]
    assert "fp8_block" not in anc
    assert anc["fp8_block_error"] == "timed in 2 of 3 repeats (scripted anchor failure)"
    block = row(results, "kiln e4m3 block [")
    assert block["anchor_ms"] is None and "ratio_range" not in block
    assert "| anchor fp8_block |" not in table
    # The other anchors are unaffected.
    assert row(results, "kiln bf16 [")["anchor_ms"] == pytest.approx(1.0)


def test_every_timing_settles_by_default_and_the_table_says_so(tmp_path, monkeypatch):
    fake = FakeSlice()
    results, table = run(tmp_path, monkeypatch, 1, fake=fake)
    assert fake.settled == [0.3]
    assert "(0.3 s idle before every timing)" in table.splitlines()[0]
    fake = FakeSlice()
    results, table = run(tmp_path, monkeypatch, 1, extra=("--settle", "0"), fake=fake)
    assert fake.settled == [0.0] and "idle before" not in table


def test_a_settle_out_of_range_is_refused(tmp_path, monkeypatch):
    for value in ("-1", "10.5"):
        with pytest.raises(SystemExit):
            run(tmp_path, monkeypatch, 1, extra=("--settle", value))


def import_bench_slice(monkeypatch, fake_torch, fake_anchors):
    """bench_slice itself, imported with torch, anchors and kiln replaced by fakes."""
    for name, mod in (("torch", fake_torch), ("anchors", fake_anchors), ("kiln", types.ModuleType("kiln"))):
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.syspath_prepend(BENCH)
    # None first, so that monkeypatch removes the real module (bound to the fakes) again afterwards.
    monkeypatch.setitem(sys.modules, "bench_slice", None)
    del sys.modules["bench_slice"]
    return importlib.import_module("bench_slice")


def test_settle_timings_wraps_bench_graph_once_and_undoes_it(monkeypatch):
    """bench_slice.settle_timings itself, with torch, anchors and kiln replaced by fakes."""
    events = []
    fake_torch = types.ModuleType("torch")
    fake_torch.cuda = types.SimpleNamespace(synchronize=lambda: events.append("sync"))
    fake_anchors = types.ModuleType("anchors")

    def bench_graph(calls, reps=30):
        events.append(("time", reps))
        return 0.5

    fake_anchors.bench_graph = bench_graph
    bs = import_bench_slice(monkeypatch, fake_torch, fake_anchors)
    import time
    monkeypatch.setattr(time, "sleep", lambda s: events.append(("sleep", s)))
    bs.settle_timings(0.25)
    bs.settle_timings(0.5)  # replaces the first: one pause per timing, not two
    assert fake_anchors.bench_graph([], reps=7) == 0.5
    assert events == ["sync", ("sleep", 0.5), ("time", 7)]
    bs.settle_timings(0)
    assert fake_anchors.bench_graph is bench_graph


def test_anchor_calls_build_each_path_on_every_input_set(monkeypatch):
    """bench_slice.anchor_calls with torch and anchors faked: which cuBLAS call each path makes."""
    made = []

    class T:
        def t(self):
            return self

        def __matmul__(self, other):
            made.append(("matmul",))

    fake_torch = types.ModuleType("torch")
    fake_torch.bfloat16 = "bf16"
    fake_torch.randn = lambda *shape, **kw: T()
    fake_torch.ones = lambda *shape, **kw: "one"
    fake_torch._scaled_mm = lambda a, b, sa, sb, out_dtype, use_fast_accum: made.append(
        ("scaled_mm", "row" if sa != "one" else "tensor", use_fast_accum))
    fake_anchors = types.ModuleType("anchors")
    fake_anchors.dev, fake_anchors.copies_for = "cuda", lambda nbytes: 3
    fake_anchors.fp8_rowwise = lambda t: (T(), T())  # (values, scales)
    bs = import_bench_slice(monkeypatch, fake_torch, fake_anchors)
    paths = ("bf16", "fp8_tensor", "fp8_tensor_fast", "fp8_row", "fp8_row_fast", "fp8_block")
    calls = bs.anchor_calls(64, 128, 100, paths)  # K % 128 != 0: no block anchor
    assert sorted(calls) == sorted(paths[:5]) and all(len(c) == 3 for c in calls.values())
    for p in paths[:5]:
        made.clear()
        calls[p][2]()
        want = {"bf16": ("matmul",), "fp8_tensor": ("scaled_mm", "tensor", False),
                "fp8_tensor_fast": ("scaled_mm", "tensor", True), "fp8_row": ("scaled_mm", "row", False),
                "fp8_row_fast": ("scaled_mm", "row", True)}[p]
        assert made == [want], p
    assert len(bs.anchor_calls(64, 128, 100, ("fp8_row_fast",), copies=1)["fp8_row_fast"]) == 1
    with pytest.raises(ValueError):
        bs.anchor_calls(64, 128, 128, ("fp8_rows",))

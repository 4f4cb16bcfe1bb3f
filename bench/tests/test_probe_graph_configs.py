"""probe_graph_configs.py's --rounds bookkeeping, without a GPU or torch: bench_slice (kiln, kiln_dense) and
`kiln cache import` are replaced by fakes whose timings are scripted."""
import importlib
import json
import os
import subprocess
import sys
import types

import pytest

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakePlan:
    def describe(self):
        return {"buckets": [{"m_max": 4096, "config": "fake_cfg"}]}


def load(monkeypatch, times, import_rc=0):
    """The module with kiln_dense returning `times` in call order (ms); a time of None raises."""
    calls = iter(times)

    def kiln_dense(rt, spec, M, N, K, fmt):
        t = next(calls)
        if t is None:
            raise RuntimeError("scripted compile failure")
        t, err = t if isinstance(t, tuple) else (t, 1e-3)  # (ms, relative error): a wrong result
        return t, err, 0, FakePlan().describe()

    fake = types.ModuleType("bench_slice")
    fake.kiln = types.SimpleNamespace(Runtime=lambda cache_dir=None: types.SimpleNamespace(
        plan=lambda spec, n, k: FakePlan()))
    fake.kiln_dense = kiln_dense
    fake.settled = []
    fake.settle_timings = fake.settled.append
    monkeypatch.setitem(sys.modules, "bench_slice", fake)
    monkeypatch.syspath_prepend(BENCH)
    monkeypatch.setattr(subprocess, "run", lambda *a, **kw: types.SimpleNamespace(
        returncode=import_rc, stdout="", stderr="bad row" if import_rc else ""))
    sys.modules.pop("probe_graph_configs", None)
    return importlib.import_module("probe_graph_configs")


def probe(tmp_path, monkeypatch, capsys, times, n_configs, *flags, import_rc=0):
    """Runs main() on one shape with n_configs candidates; returns what it printed."""
    mod = load(monkeypatch, times, import_rc)
    cands = [{"spec": "gemm a=bf16 b=bf16 out=bf16", "fmt": "bf16", "m": 4096, "n": 4096, "k": 4096,
              "configs": [{"block_m": 128, "block_n": 128 + 16 * i} for i in range(n_configs)]}]
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(cands))
    monkeypatch.setattr(sys, "argv", ["probe", str(path), *flags])
    mod.main()
    return capsys.readouterr().out


def test_rounds_time_the_list_round_robin_and_print_medians(tmp_path, monkeypatch, capsys):
    # Per round: own, config 0, config 1, own.
    times = [0.100, 0.090, 0.095, 0.102,
             0.110, 0.091, 0.097, 0.108,
             0.104, 0.089, 0.096, 0.106]
    out = probe(tmp_path, monkeypatch, capsys, times, 2, "--rounds", "3")
    assert out.count("round ") == 3
    assert "plan's own: median 105.00 us (100.00-110.00, 6 timings)" in out
    assert '{"block_m":128,"block_n":128}: median 90.00 us (89.00-91.00, 3 timings)' in out
    assert '{"block_m":128,"block_n":144}: median 96.00 us (95.00-97.00, 3 timings)' in out


def test_failures_are_lines_not_timings(tmp_path, monkeypatch, capsys):
    out = probe(tmp_path, monkeypatch, capsys, [0.100, None, 0.095, 0.102, 0.101, None, 0.094, 0.103], 2,
                "--rounds", "2")
    assert out.count("error: scripted compile failure") == 2
    assert '{"block_m":128,"block_n":128}: no timing (every run failed)' in out


def test_a_failed_import_is_reported_and_not_timed(tmp_path, monkeypatch, capsys):
    out = probe(tmp_path, monkeypatch, capsys, [0.100, 0.101], 1, "--repeat", "2", import_rc=1)
    assert out.count("import failed:") == 2
    assert "plan's own: median" in out and "no timing (every run failed)" in out


def test_one_round_prints_no_medians(tmp_path, monkeypatch, capsys):
    out = probe(tmp_path, monkeypatch, capsys, [0.100, 0.090, 0.101], 1)
    assert "medians" not in out and out.count("plan's own") == 2


def test_rounds_below_one_are_refused(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit):
        probe(tmp_path, monkeypatch, capsys, [], 1, "--rounds", "0")


def test_each_config_is_imported_and_compiled_once_across_rounds(tmp_path, monkeypatch, capsys):
    mod = load(monkeypatch, [0.100, 0.090, 0.095, 0.102] * 3)
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd[1]) or types.SimpleNamespace(
        returncode=0, stdout="", stderr=""))
    cands = [{"spec": "gemm a=bf16 b=bf16 out=bf16", "fmt": "bf16", "m": 4096, "n": 4096, "k": 4096,
              "configs": [{"block_m": 128, "block_n": 128}, {"block_m": 128, "block_n": 144}]}]
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(cands))
    monkeypatch.setattr(sys, "argv", ["probe", str(path), "--rounds", "3", "--jobs", "4"])
    mod.main()
    assert sorted(calls) == ["cache", "cache", "compile", "compile"]
    assert capsys.readouterr().out.count(" timings)") == 3


def test_a_wrong_result_is_a_line_not_a_timing(tmp_path, monkeypatch, capsys):
    out = probe(tmp_path, monkeypatch, capsys, [0.100, (0.050, float("nan")), 0.101, 0.100, (0.050, 0.2), 0.101],
                1, "--rounds", "2")
    assert out.count("error: relative error") == 2
    assert '{"block_m":128,"block_n":128}: no timing (every run failed)' in out


def test_settle_reaches_bench_slice_and_bad_values_are_refused(tmp_path, monkeypatch, capsys):
    probe(tmp_path, monkeypatch, capsys, [0.100, 0.090, 0.101], 1, "--settle", "0.5")
    assert sys.modules["bench_slice"].settled == [0.5]
    for flags in (("--settle", "10.5"), ("--jobs", "0")):
        with pytest.raises(SystemExit):
            probe(tmp_path, monkeypatch, capsys, [], 1, *flags)


def test_a_grouped_shape_is_keyed_by_experts_and_rows_per_expert(tmp_path, monkeypatch, capsys):
    """A grouped candidate's tuning row: the spec with experts=0, the expert count beside it, the bucket of
    ceil(T * topk / E) rows; it is timed through bench_shapes.kiln_grouped with the routing's total rows."""
    mod = load(monkeypatch, [])
    rows_seen, compiled_m, grouped_calls = [], [], []

    def run(cmd, **kw):
        if cmd[1] == "cache":
            rows_seen.extend(json.load(open(cmd[3]))["tunings"])
        else:
            compiled_m.append(cmd[cmd.index("--m") + 1])
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    buckets = {"buckets": [{"m_max": 64, "config": "small"}, {"m_max": 512, "config": "mid"},
                           {"m_max": 4096, "config": "big"}]}
    monkeypatch.setattr(mod, "kiln", types.SimpleNamespace(Runtime=lambda cache_dir=None: types.SimpleNamespace(
        plan=lambda spec, n, k: types.SimpleNamespace(describe=lambda: buckets))))
    fake_shapes = types.ModuleType("bench_shapes")

    def kiln_grouped(rt, fmt, T, topk, E, N, K):
        grouped_calls.append((fmt, T, topk, E, N, K))
        return 0.2, 1e-3, 0, buckets, E * N * K * 2

    fake_shapes.kiln_grouped = kiln_grouped
    monkeypatch.setitem(sys.modules, "bench_shapes", fake_shapes)
    cands = [{"spec": "grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16", "fmt": "bf16",
              "tokens": 100, "topk": 4, "experts": 32, "n": 2880, "k": 2880,
              "configs": [{"block_m": 128, "block_n": 256}]}]
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(cands))
    monkeypatch.setattr(sys, "argv", ["probe", str(path), "--jobs", "2"])
    mod.main()
    out = capsys.readouterr().out
    assert len(rows_seen) == 1
    row = rows_seen[0]
    assert row["spec"] == "grouped_gemm[experts=0,layout=offsets] a=bf16 b=bf16 out=bf16"
    assert row["experts"] == 32 and row["m_bucket"] == 64  # ceil(400 / 32) = 13 rows per expert
    assert compiled_m == ["400"]
    assert grouped_calls == [("bf16", 100, 4, 32, 2880, 2880)] * 3  # own, the config, own
    assert "=== grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16 T=100 topk=4 E=32 (400x2880x2880)" in out
    assert out.count("ran small") == 3


def test_a_grouped_spec_that_is_not_the_fmt_s_is_an_error_not_a_timing(tmp_path, monkeypatch, capsys):
    """kiln_grouped plans bench_shapes' spec for the fmt: a row keyed by another spec would never be used."""
    mod = load(monkeypatch, [])
    monkeypatch.setattr(subprocess, "run", lambda *a, **kw: types.SimpleNamespace(returncode=0, stdout="", stderr=""))
    buckets = {"buckets": [{"m_max": 4096, "config": "big"}]}
    monkeypatch.setattr(mod, "kiln", types.SimpleNamespace(Runtime=lambda cache_dir=None: types.SimpleNamespace(
        plan=lambda spec, n, k: types.SimpleNamespace(describe=lambda: buckets))))
    fake_shapes = types.ModuleType("bench_shapes")
    fake_shapes.kiln_grouped = lambda *a: pytest.fail("timed a shape whose spec its fmt does not run")
    monkeypatch.setitem(sys.modules, "bench_shapes", fake_shapes)
    cands = [{"spec": "grouped_gemm[experts=32,layout=offsets] a=bf16 b=bf16 out=bf16", "fmt": "fp8_row",
              "tokens": 100, "topk": 4, "experts": 32, "n": 2880, "k": 2880, "configs": [{"block_m": 128}]}]
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(cands))
    monkeypatch.setattr(sys, "argv", ["probe", str(path), "--jobs", "1"])
    mod.main()
    out = capsys.readouterr().out
    assert out.count("is not 'grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16'") == 3

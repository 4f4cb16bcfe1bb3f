"""clock_probe.py's bookkeeping without a GPU or torch: bench_slice, probe_graph_configs and the sustained
replay are replaced by fakes; the printed lines (time, TFLOP/s, clock, power, cycles) and the error lines
are checked."""
import importlib
import json
import os
import sys
import types

import pytest

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(monkeypatch, prepared, kiln_error=None, anchor_error=None, sustained=None):
    """The module with fakes: prepared(cfg) -> (dir, why); kiln_calls raises kiln_error for dir "bad"."""
    fake_slice = types.ModuleType("bench_slice")
    fake_slice.anchors = types.SimpleNamespace()
    fake_slice.kiln = types.SimpleNamespace()
    fake_slice.kiln_inputs = fake_slice.reference = fake_slice.anchor_calls = None
    fake_slice.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(empty_cache=lambda: None))
    fake_probe = types.ModuleType("probe_graph_configs")
    fake_probe.prepared_or_error = lambda shape, cfg: prepared(cfg)
    monkeypatch.setitem(sys.modules, "bench_slice", fake_slice)
    monkeypatch.setitem(sys.modules, "probe_graph_configs", fake_probe)
    monkeypatch.syspath_prepend(BENCH)
    monkeypatch.setitem(sys.modules, "clock_probe", None)  # removed again after the test
    del sys.modules["clock_probe"]
    cp = importlib.import_module("clock_probe")

    def anchor_calls(M, N, K, paths):
        if anchor_error:
            raise RuntimeError(anchor_error)
        return {p: ["anchor"] for p in paths}

    def kiln_calls(d, shape):
        if d == "bad":
            raise RuntimeError(kiln_error)
        return f"cfg_{d}", [d]

    monkeypatch.setattr(cp, "anchor_calls", anchor_calls)
    monkeypatch.setattr(cp, "kiln_calls", kiln_calls)
    monkeypatch.setattr(cp, "sustained", sustained or (lambda calls, seconds: (0.5, 1500.0, 690.0)))
    return cp


def run(cp, tmp_path, monkeypatch, capsys, shapes, *flags):
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(shapes))
    monkeypatch.setattr(sys, "argv", ["clock_probe", str(path), *flags])
    cp.main()
    return capsys.readouterr().out


SHAPE = {"spec": "gemm a=bf16 b=bf16 out=bf16", "fmt": "bf16", "m": 1000, "n": 1000, "k": 1000,
         "configs": [{"block_m": 128}, {"block_m": 64}]}


def test_lines_give_time_rate_clock_power_and_cycles(tmp_path, monkeypatch, capsys):
    cp = load(monkeypatch, lambda cfg: ("own" if cfg is None else str(cfg["block_m"]), None))
    out = run(cp, tmp_path, monkeypatch, capsys, [SHAPE], "--rounds", "2", "--seconds", "0.1")
    lines = [line for line in out.splitlines() if line.startswith("  round")]
    assert len(lines) == 8  # (anchor, own, 2 configs) x 2 rounds
    assert lines[0].split()[2:4] == ["cuBLAS", "bf16"] and "plan's own cfg_own" in lines[1] and "cfg_64" in lines[3]
    # 0.5 ms: 500 us, 2e9 flop / 0.5 ms = 4.0 TFLOP/s, 1500 MHz x 0.5 ms = 750 kcycles.
    assert "500.00 us     4.0 TFLOP/s   1500 MHz   690 W    750.0 kcycles" in lines[0]


def test_refusals_are_lines_and_the_rest_still_runs(tmp_path, monkeypatch, capsys):
    def prepared(cfg):
        if cfg is None:
            return None, "error: no plan"
        return ("bad", None) if cfg["block_m"] == 128 else ("ok", None)

    cp = load(monkeypatch, prepared, kiln_error="relative error 5e-01", anchor_error="no block scaling")
    out = run(cp, tmp_path, monkeypatch, capsys, [SHAPE], "--rounds", "1")
    assert "  cuBLAS anchor: error: no block scaling" in out
    assert "  plan's own: error: no plan" in out
    assert '  {"block_m":128}: error: relative error 5e-01' in out
    lines = [line for line in out.splitlines() if line.startswith("  round")]
    assert len(lines) == 1 and "cfg_ok" in lines[0]


def test_a_failed_replay_is_a_line(tmp_path, monkeypatch, capsys):
    def sustained(calls, seconds):
        if calls == ["anchor"]:
            raise RuntimeError("graph capture failed")
        return 0.5, 1500.0, 690.0

    cp = load(monkeypatch, lambda cfg: ("own", None) if cfg is None else (None, "skip"), sustained=sustained)
    out = run(cp, tmp_path, monkeypatch, capsys, [dict(SHAPE, configs=[])], "--rounds", "1")
    assert "cuBLAS" in out and "error: graph capture failed" in out and "cfg_own" in out


def test_unknown_formats_and_bad_arguments(tmp_path, monkeypatch, capsys):
    cp = load(monkeypatch, lambda cfg: ("own", None))
    out = run(cp, tmp_path, monkeypatch, capsys, [dict(SHAPE, fmt="mxfp8")])
    assert "fmt 'mxfp8' not timed here" in out and "round" not in out
    for flags in (("--seconds", "0"), ("--rounds", "0")):
        with pytest.raises(SystemExit):
            run(cp, tmp_path, monkeypatch, capsys, [SHAPE], *flags)

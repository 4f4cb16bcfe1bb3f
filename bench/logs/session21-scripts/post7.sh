#!/usr/bin/env bash
# session 21 call 9: sustained (power-limited) kiln vs cuBLAS; the full bench (settled) follows.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 150 python3 bench/clock_probe.py carry-probe/s21/clock2.json --seconds 1.5 --rounds 2 2>&1 | grep -v Warn

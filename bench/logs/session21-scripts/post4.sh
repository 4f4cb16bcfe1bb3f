#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
timeout 400 python3 bench/clock_probe.py carry-probe/s21/clock.json --seconds 1.5 --rounds 2 2>&1

#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 400 python3 carry-probe/s21/order2.py 2>&1 | grep -v Warning

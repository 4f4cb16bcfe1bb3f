#!/usr/bin/env bash
# session 21 call 10: settled probes of the table's weakest large-M rows (3 rounds).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 40 python3 bench/cublas_kernels.py --paths fp8_block 2>&1 | grep -v "Warn\|_warn"
timeout 220 python3 bench/probe_graph_configs.py carry-probe/s21/final.json --rounds 3 --jobs 16 2>&1 | grep -v "^      [ 0-9.]* us \|^  {.*}$\|^  plan.s own  \|Warn"

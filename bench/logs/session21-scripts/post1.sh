#!/usr/bin/env bash
# session 21 call 1: which kernels cuBLAS runs for bf16 / FP8 row (fast) at large M, then bf16 probes.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
timeout 60 python3 bench/cublas_kernels.py --paths bf16,fp8_row_fast,fp8_tensor_fast 2>&1 | tail -60
timeout 200 python3 bench/probe_graph_configs.py ${PROBE_FILE:-carry-probe/s21/cands_bf16.json} --rounds ${ROUNDS:-2} --jobs 16

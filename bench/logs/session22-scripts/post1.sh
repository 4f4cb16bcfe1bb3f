#!/usr/bin/env bash
# session 22 call 1: settled probe of the 128x128 block layouts (cuBLAS's), clock probe, anchor_calls check.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
timeout 240 python3 bench/probe_graph_configs.py bench/tune/h200_block_128x128_probe.json --rounds 3 --jobs 16 > "$OUT/probe.log" 2>&1
echo "probe rc=$?"; grep -v Warning "$OUT/probe.log" | tail -60
timeout 120 python3 bench/clock_probe.py carry-probe/s22/clock.json --seconds 1.5 --rounds 2 > "$OUT/clock.log" 2>&1
echo "clock rc=$?"; grep -v Warning "$OUT/clock.log" | tail -20
export KILN_CACHE_DIR=$(mktemp -d)
timeout 150 python3 bench/bench_shapes.py --shapes carry-probe/s22/two_shapes.json --out "$OUT/two" --only dense --repeats 1 --jobs 16 > "$OUT/two.log" 2>&1
echo "bench rc=$?"; grep -E "^\| " "$OUT/two/RESULTS.fragment.md" | head -30
timeout 60 python3 bench/cublas_kernels.py --shape 4096x7168x16384 2>&1 | grep -v Warning | tail -12

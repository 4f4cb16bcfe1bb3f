#!/usr/bin/env bash
# bench/sm90_device_run.sh — one device call for the sm90 family (bench/NOTES.md records what it found).
#
# Runs on the GPU machine from the repo root, with the binaries built here by
#   cmake -S . -B build-h-p -DCMAKE_BUILD_TYPE=Release -DKILN_PORTABLE=ON
#   make -C build-h-p -j2 gpu_sm90_gemm_gpu_test kiln
# and copied into carry-h/ (git-ignored; `carry: ["carry-h", ".bench_shared"]`):
#   carry-h/gpu_sm90_gemm_gpu_test, carry-h/libkiln.so, carry-h/cubin/*.cubin (from `kiln compile
#   --emit cubin`), .bench_shared/anchors.py (a copy of shared/bench/anchors.py).
# Steps: GPU state; SASS of the default kernels (HGMMA/QGMMA present, no local memory); the gpu tier
# (numerics vs the reference + the 4096x7168x7168 timing table); kiln vs cuBLAS in one process
# (bench/bench_slice.py, CUDA-graph replay). Logs under $OUT.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/sm90-run}
C=carry-h
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
for f in $C/cubin/*.cubin; do
  s="$OUT/$(basename "$f" .cubin).sass"
  cuobjdump --dump-sass "$f" >"$s" 2>&1
  echo "$(basename "$f"): HGMMA $(grep -c HGMMA "$s") QGMMA $(grep -c QGMMA "$s") HMMA $(grep -c 'HMMA\.' "$s")" \
    "UTMALDG $(grep -c UTMALDG "$s") LDL $(grep -c 'LDL' "$s") STL $(grep -c 'STL' "$s")" \
    "WARPSYNC/serialize $(grep -c 'WARPGROUP.DEPBAR\|WARPGROUP.ARRIVE' "$s")" | tee -a "$OUT/gpu.txt"
done
chmod +x $C/gpu_sm90_gemm_gpu_test
# Two processes: everything without clusters first, then the cluster configs (the defaults at 4096 x
# 7168 x 7168 among them), so a hang in one cannot take the other's results with it.
timeout "${GPU_TEST_TIMEOUT:-60}" $C/gpu_sm90_gemm_gpu_test --gtest_filter='-*c2*:*Clusters*' \
  >"$OUT/gpu_test.log" 2>&1
echo "gpu test (no clusters) rc=$?" | tee -a "$OUT/gpu.txt"
timeout "${GPU_CLUSTER_TIMEOUT:-60}" $C/gpu_sm90_gemm_gpu_test --gtest_filter='*c2*:*Clusters*' \
  >"$OUT/gpu_test_clusters.log" 2>&1
echo "gpu test (clusters) rc=$?" | tee -a "$OUT/gpu.txt"
for f in "$OUT/gpu_test.log" "$OUT/gpu_test_clusters.log"; do
  grep -E "^\[  (PASSED|FAILED) |tests ran|precompiled" "$f" | tail -12
done
grep -hE "^\[ timing \]" "$OUT/gpu_test.log" "$OUT/gpu_test_clusters.log"
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  KILN_LIBRARY=$PWD/$C/libkiln.so KILN_CACHE_DIR=/tmp/kiln-cache timeout "${BENCH_TIMEOUT:-45}" \
    python3 bench/bench_slice.py --no-triton --out "$OUT/bench" >"$OUT/bench.log" 2>&1
  echo "bench rc=$?" | tee -a "$OUT/gpu.txt"
  tail -15 "$OUT/bench.log"
fi

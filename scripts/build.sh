#!/usr/bin/env bash
# Configures (Release) and builds kiln: build/tools/kiln, build/capi/libkiln.so and the tests.
#   KILN_BUILD_DIR  build directory (default: build)
#   KILN_JOBS       parallel jobs (default: 2, what CI machines have)
#   KILN_CUDA_HOME  CUDA toolkit (default: /usr/local/cuda)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${KILN_BUILD_DIR:-build}
jobs=${KILN_JOBS:-2}
cmake_args=(-S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release)
if [[ -n "${KILN_CUDA_HOME:-}" ]]; then cmake_args+=(-DKILN_CUDA_HOME="$KILN_CUDA_HOME"); fi

cmake "${cmake_args[@]}"
cmake --build "$build_dir" -j"$jobs"

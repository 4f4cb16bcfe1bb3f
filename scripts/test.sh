#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test tier: unit, nvrtc (compiles kernels with
# the toolkit, no GPU needed) and gpu (each test skips itself without a device), then the Python
# binding's tests. This is what CI runs (.ci/run).
#   KILN_BUILD_DIR, KILN_JOBS, KILN_CUDA_HOME: as for build.sh
#   KILN_CTEST_ARGS  extra ctest arguments, e.g. "-L unit" or "-L gpu"
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${KILN_BUILD_DIR:-build}
jobs=${KILN_JOBS:-2}

./scripts/setup.sh --with-python-tests
./scripts/build.sh

# Tests never touch the user's kernel cache.
KILN_CACHE_DIR=$(mktemp -d)
export KILN_CACHE_DIR
trap 'rm -rf "$KILN_CACHE_DIR"' EXIT

# Run every suite even when one fails, so one CI log shows all failures; fail at the end.
failed=0
# shellcheck disable=SC2086  # KILN_CTEST_ARGS is a list of words
ctest --test-dir "$build_dir" --output-on-failure -j"$jobs" ${KILN_CTEST_ARGS:-} || failed=1

case "$build_dir" in
  /*) lib="$build_dir/capi/libkiln.so" ;;
  *) lib="$PWD/$build_dir/capi/libkiln.so" ;;
esac
# The Debian python3 has the pytest that setup.sh installed; another python3 first on PATH
# (pyenv, conda) may not.
py=python3
if ! "$py" -c 'import pytest' 2>/dev/null && [[ -x /usr/bin/python3 ]]; then py=/usr/bin/python3; fi
KILN_LIBRARY="$lib" "$py" -m pytest -q python/tests || failed=1

if ((failed)); then
  echo "test.sh: FAILED (see above)" >&2
  exit 1
fi
echo "test.sh: all tests passed"

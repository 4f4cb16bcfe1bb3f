#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test tier: unit, nvrtc (compiles kernels with
# the toolkit, no GPU needed) and gpu (each test skips itself without a device), then the Python
# binding's tests against `pip install -e python/` in a throwaway venv and the bench driver's own tests
# (bench/tests), then the wheel (`pip wheel .`) installed into a fresh venv with the binding's tests
# against it, then the epilogue parser's libFuzzer target for a bounded time (installing clang when
# missing). This is what CI runs (.ci/run).
#   KILN_BUILD_DIR, KILN_JOBS, KILN_CUDA_HOME: as for build.sh
#   KILN_CTEST_ARGS    extra ctest arguments, e.g. "-L unit" or "-L gpu"
#   KILN_WHEEL         0: skip building and testing the wheel (default: build it)
#   KILN_FUZZ          0: skip the libFuzzer run (default: run it)
#   KILN_FUZZ_INSTALL  0: skip the run when clang / libFuzzer are missing instead of installing them
#   KILN_FUZZ_SECONDS  length of the libFuzzer run (default 45)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${KILN_BUILD_DIR:-build}
jobs=${KILN_JOBS:-2}

./scripts/setup.sh --with-python-tests
./scripts/build.sh

# Tests never touch the user's kernel cache; the venv and the rest go to a scratch directory.
KILN_CACHE_DIR=$(mktemp -d)
export KILN_CACHE_DIR
scratch=$(mktemp -d)
trap 'rm -rf "$KILN_CACHE_DIR" "$scratch"' EXIT

# Run every suite even when one fails, so one CI log shows all failures; fail at the end.
failed=0
# shellcheck disable=SC2086  # KILN_CTEST_ARGS is a list of words
ctest --test-dir "$build_dir" --output-on-failure -j"$jobs" ${KILN_CTEST_ARGS:-} || failed=1

case "$build_dir" in
  /*) lib="$build_dir/capi/libkiln.so" ;;
  *) lib="$PWD/$build_dir/capi/libkiln.so" ;;
esac

# The Python binding, installed the way users install it (pip install -e python/) into a throwaway
# venv: Debian 12's python3 is externally managed (PEP 668), so no --user or system install.
# --system-site-packages lets the venv see Debian's pytest and wheel (setup.sh installs them) and a
# system torch if there is one; --no-build-isolation --no-index keep pip off the network. Debian's
# python3 first: another python3 on PATH (pyenv, conda) may lack venv or pytest.
py=python3
if [[ -x /usr/bin/python3 ]]; then py=/usr/bin/python3; fi
venv="$scratch/venv"
if "$py" -m venv --system-site-packages "$venv" &&
   "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --no-index \
     -e python/; then
  # From outside the checkout, so the import can only resolve through the install.
  (cd "$scratch" && KILN_LIBRARY="$lib" "$venv/bin/python" -c \
    'import kiln; print("test.sh: kiln", kiln.__version__, "installed at", kiln.__file__, "over", kiln.library_path())') ||
    failed=1
  KILN_PYTEST_REQUIRE_INSTALLED=1 KILN_LIBRARY="$lib" "$venv/bin/python" -m pytest -q python/tests || failed=1
  # The benchmark driver's bookkeeping (bench_shapes.py --repeats), on scripted timings: no GPU, no torch.
  "$venv/bin/python" -m pytest -q bench/tests || failed=1
else
  echo "test.sh: pip install -e python/ into a venv failed (python3-venv and python3-wheel installed?)" >&2
  failed=1
fi

# The wheel (`pip wheel .` at the root: scikit-build-core builds libkiln, the CLI and the tuning module
# with CMake in its own build directory, about 5 minutes on 2 cores), installed into a fresh venv; the
# binding's tests then run against the installed package with no KILN_LIBRARY, from outside the
# checkout, and the installed `kiln` console script compiles a kernel. pip fetches scikit-build-core
# from the package index; without one (offline) the step says so and is skipped. KILN_WHEEL=0 skips it.
if [[ ${KILN_WHEEL:-1} != 0 ]]; then
  wheel_venv="$scratch/wheel-venv"
  if ! "$py" -m venv --system-site-packages "$wheel_venv" ||
     ! "$wheel_venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps -d "$scratch/probe" \
       "scikit-build-core>=0.10" >/dev/null 2>&1; then
    echo "test.sh: wheel step skipped: scikit-build-core cannot be fetched (no package index)"
  else
    wheel_start=$SECONDS
    if "$wheel_venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$scratch/wheel" \
         --config-settings=build-dir="$scratch/wheel-build" . &&
       "$wheel_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$scratch"/wheel/kiln-*.whl; then
      wheel_file=$(ls "$scratch"/wheel/kiln-*.whl)
      echo "test.sh: built $(basename "$wheel_file") ($(du -k "$wheel_file" | cut -f1) KiB) in $((SECONDS - wheel_start)) s"
      (cd "$scratch" && env -u KILN_LIBRARY "$wheel_venv/bin/python" -c \
        'import kiln; print("test.sh: wheel:", kiln.version(), kiln.library_path(), kiln.include_dir())') || failed=1
      (cd "$scratch" && env -u KILN_LIBRARY "$wheel_venv/bin/kiln" compile "gemm a=bf16 b=bf16 out=bf16" \
        --m 64 --n 256 --k 256 --arch sm_90a >/dev/null) || { echo "test.sh: the wheel's kiln CLI failed" >&2; failed=1; }
      env -u KILN_LIBRARY KILN_PYTEST_REQUIRE_INSTALLED=1 "$wheel_venv/bin/python" -m pytest -q python/tests || failed=1
    else
      echo "test.sh: building or installing the wheel failed" >&2
      failed=1
    fi
  fi
fi

# Fuzzing (CI fuzzes the parsers for a bounded time on every run: the epilogue parser reads user-written
# text, which must never crash it): the epilogue parser's and the cubin reader's libFuzzer targets
# (ASan + UBSan) run for KILN_FUZZ_SECONDS each from their seed corpora and must find nothing. fuzz.sh
# installs clang and libFuzzer's runtime when they are missing (about a minute of apt on a clean
# Debian 12, plus an ~20 s sanitizer build: CI stays well under 20 minutes).
# KILN_FUZZ_INSTALL=0 skips the run instead where clang cannot be installed; the deterministic
# driver (unit_epilogue_fuzz_test: 50,000 generated and mutated inputs plus the seed corpus, the same
# invariants) in the unit tier runs either way.
if [[ ${KILN_FUZZ:-1} != 0 ]]; then
  # libFuzzer logs every new input: keep the CI log to the verdict unless something was found.
  fuzz_rc=0
  fuzz_log="$scratch/fuzz.log"
  KILN_FUZZ_INSTALL=${KILN_FUZZ_INSTALL:-1} KILN_FUZZ_SECONDS=${KILN_FUZZ_SECONDS:-45} ./scripts/fuzz.sh >"$fuzz_log" 2>&1 || fuzz_rc=$?
  if ((fuzz_rc == 77)); then
    tail -n 1 "$fuzz_log"
    echo "test.sh: libFuzzer run skipped (KILN_FUZZ_INSTALL=0 and no clang with libFuzzer); the deterministic fuzz driver ran in the unit tier"
  elif ((fuzz_rc != 0)); then
    cat "$fuzz_log"
    failed=1
  else
    grep -E '^(fuzz\.sh:|Done |stat::number_of_executed_units|stat::new_units_added)' "$fuzz_log"
  fi
fi

if ((failed)); then
  echo "test.sh: FAILED (see above)" >&2
  exit 1
fi
echo "test.sh: all tests passed"

#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (libFuzzer + ASan + UBSan) and runs each for
# a bounded time from its checked-in seed corpus; fails if a target finds a crash, a leak or an
# invariant violation (the crashing input is saved in the build directory and named in the log).
# What CI runs for fuzzing.
#   KILN_FUZZ_BUILD_DIR  build directory (default build-fuzz)
#   KILN_FUZZ_SECONDS    run time per target in seconds (default 60)
#   KILN_FUZZ_CXX        the clang++ to use (default: the first of clang++, clang++-{19..14})
#   KILN_JOBS            build jobs (default 2)
#   KILN_FUZZ_INSTALL    0: never install clang or libFuzzer's runtime; exit 77 (skipped) when they
#                        are missing (what scripts/test.sh uses; default 1: install what is missing)
# Arguments go to the fuzzer: ./scripts/fuzz.sh -jobs=2 -workers=2, or reproduce a crash with
#   ./build-fuzz/epilogue_fuzz crash-<sha1>
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

build_dir=${KILN_FUZZ_BUILD_DIR:-build-fuzz}
seconds=${KILN_FUZZ_SECONDS:-60}
jobs=${KILN_JOBS:-2}

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
apt_install() {
  echo "fuzz.sh: installing $*"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

find_clang() {
  local c
  for c in ${KILN_FUZZ_CXX:-} clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then echo "$c"; return 0; fi
  done
  return 1
}

install=${KILN_FUZZ_INSTALL:-1}
skip() {
  echo "fuzz.sh: skipped: $* (KILN_FUZZ_INSTALL=0)"
  exit 77
}

if ! cxx=$(find_clang); then
  [[ $install == 0 ]] && skip "no clang++"
  apt_install clang
  cxx=$(find_clang)
fi
clang_major=$("$cxx" --version | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n1)
echo "fuzz.sh: $("$cxx" --version | head -n1)"

# libFuzzer's runtime ships separately on Debian (libclang-rt-<major>-dev); probe with a link.
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
probe() {
  printf '%s\n' 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
    >"$probe_dir/probe.cpp"
  "$cxx" -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cpp" -o "$probe_dir/probe" >/dev/null 2>&1
}
if ! probe; then
  [[ $install == 0 ]] && skip "$cxx cannot link -fsanitize=fuzzer (libclang-rt-${clang_major}-dev is missing)"
  apt_install "libclang-rt-${clang_major}-dev"
  probe || { echo "fuzz.sh: $cxx cannot link -fsanitize=fuzzer even with libclang-rt-${clang_major}-dev" >&2; exit 1; }
fi

cmake -S tests/fuzz -B "$build_dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKILN_FUZZ_SECONDS="$seconds"
cmake --build "$build_dir" -j"$jobs"

# Each target gets a work corpus in the build tree (the seeds stay untouched) and writes
# crash-*/leak-*/timeout-* files into the build directory.
failed=0
for target in epilogue cubin; do
  work="$build_dir/corpus/$target"
  mkdir -p "$work"
  echo "fuzz.sh: running ${target}_fuzz for ${seconds}s"
  (cd "$build_dir" && "./${target}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=20000 -print_final_stats=1 -dict="$root/tests/fuzz/$target.dict" "$@" "corpus/$target" "$root/tests/fuzz/corpus/$target") || failed=1
done
if ((failed)); then
  echo "fuzz.sh: FAILED (the crashing input is in $build_dir; see above)" >&2
  exit 1
fi
echo "fuzz.sh: no crashes"

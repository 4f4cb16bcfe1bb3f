#!/usr/bin/env bash
# bench/race_decode.sh: device side. racecheck of decode gpu test cases with every report
# (racecheck-report all) into OUT/race.txt, and the SASS of one pinned decode kernel (kiln compile, the
# same source as the test compiles) into OUT/race_sass.txt, to map report offsets to instructions.
#   RACE_FILTER="gtest filter" RACE_SPEC="spec" RACE_SHAPE="m n k" RACE_CONFIG="bm8_..._dw" bash bench/race_decode.sh
set -u
cd "$(dirname "$0")/.."
X=$(mktemp -d)
tar -C "$X" -xJf carry-all/bundle.tar.xz || exit 1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/kiln-race}
mkdir -p "$OUT"
SAN=/usr/local/cuda/bin/compute-sanitizer; [ -x "$SAN" ] || SAN=$(command -v compute-sanitizer)
KILN_CACHE_DIR=$(mktemp -d) timeout 200 "$SAN" --tool racecheck --racecheck-report all "$X/gpu_decode_gpu_test" \
  --gtest_filter="${RACE_FILTER:?}" >"$OUT/race.txt" 2>&1
read -r m n k <<<"${RACE_SHAPE:?}"
KILN_CACHE_DIR=$(mktemp -d) "$X/kiln" compile "${RACE_SPEC:?}" --arch sm_90a --m "$m" --n "$n" --k "$k" \
  --config "${RACE_CONFIG:?}" --emit cubin --out "$X/race.cubin" >/dev/null 2>&1
CUOBJ=/usr/local/cuda/bin/cuobjdump; [ -x "$CUOBJ" ] || CUOBJ=$(command -v cuobjdump)
"$CUOBJ" --dump-sass "$X/race.cubin" >"$OUT/race_sass.txt" 2>&1
echo "race reports: $(grep -c 'Race reported' "$OUT/race.txt")"
grep -A4 'Race reported' "$OUT/race.txt" | head -24

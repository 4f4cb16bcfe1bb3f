#!/usr/bin/env bash
# bench/probe_decode.sh: device side, after device_run.sh unpacked its bundle (KILN_CLI set). Quick
# kiln run timings (CUDA events, L2 flushed, median of 30) of pinned configs against the plan's own
# kernel on PROBE_SHAPES ("spec|m|n|k|cfg,cfg,...;..."; PROBE_SEED fixes the inputs), then Nsight Compute
# on NCU_PROBLEMS through bench/ncu_profile.sh (OUT/ncu.txt).
set -u
cd "$(dirname "$0")/.."
K=${KILN_CLI:?KILN_CLI is the bundle CLI}
one() {  # spec m n k [config]
  local extra=()
  [ -n "${5:-}" ] && extra=(--config "$5")
  [ -n "${PROBE_SEED:-}" ] && extra+=(--seed "$PROBE_SEED")
  KILN_CACHE_DIR=$(mktemp -d) "$K" run "$1" --m "$2" --n "$3" --k "$4" --check --repeats 30 "${extra[@]}" 2>&1 |
    grep -E 'median|config |FAIL|rror|check' | tr '\n' ' '
  echo
}
IFS=';' read -ra shapes <<<"${PROBE_SHAPES:-}"
for p in "${shapes[@]}"; do
  IFS='|' read -r spec m n k cfgs <<<"$p"
  echo "=== $spec M=$m N=$n K=$k"
  echo -n "  plan: "; one "$spec" "$m" "$n" "$k"
  IFS=',' read -ra cl <<<"$cfgs"
  for c in "${cl[@]}"; do echo -n "  $c: "; one "$spec" "$m" "$n" "$k" "$c"; done
done
# Nsight Compute on NCU_PROBLEMS (same format, bench/ncu_profile.sh): its summary lines.
[ -n "${NCU_PROBLEMS:-}" ] || exit 0
bash bench/ncu_profile.sh >/dev/null
grep -E '===|DRAM Throughput|Achieved Occupancy|Duration|Registers Per|Theoretical Occ|Waves Per|Issue Slots Busy|No Eligible' \
  "${OUT:-/tmp/kiln-ncu}/ncu.txt"

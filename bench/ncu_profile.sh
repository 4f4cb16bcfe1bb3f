#!/usr/bin/env bash
# bench/ncu_profile.sh — Nsight Compute on one launch of kiln's planned kernel per problem (device side).
# Usage (device, from the repo root, with the bundle of `bench/device_run.sh --prepare` in carry-all/):
#   NCU_PROBLEMS="spec|m|n|k[|config];..." bash bench/ncu_profile.sh   -> $OUT/ncu.txt
#   (config: a tile config as kiln prints it, run instead of the plan's own)
#   NCU_EXTRA="--section SourceCounters" adds sections (SourceCounters: the top stall locations by SASS
#   offset); NCU_TAIL (default 260: every section below; fewer lines cut off speed of light and the pipes)
#   is how many lines of each report are kept.
# Sections: speed of light, compute (pipe utilization), warp states, scheduler, memory. The clocks are
# left alone (--clock-control none: by default ncu locks them to the base clock, which the benchmark
# timings do not). One warm-up launch is skipped.
set -u
cd "$(dirname "$0")/.."
C=${CARRY_DIR:-carry-all}
X=$(mktemp -d)
tar -C "$X" -xJf $C/bundle.tar.xz || exit 1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/kiln-ncu}
mkdir -p "$OUT"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
IFS=';' read -ra problems <<<"${NCU_PROBLEMS:-}"
for p in "${problems[@]}"; do
  IFS='|' read -r spec m n k cfg <<<"$p"
  extra=()
  [ -n "${cfg:-}" ] && extra=(--config "$cfg")
  echo "=== $spec M=$m N=$n K=$k ${cfg:-plan}"
  KILN_CACHE_DIR=$X/cache timeout 120 "$NCU" --clock-control none -k regex:kiln_ --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
    ${NCU_EXTRA:-} --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio \
    "$X/kiln" run "$spec" --m "$m" --n "$n" --k "$k" --repeats 1 --warmup 1 "${extra[@]}" 2>&1 |
    grep -vE '^==PROF==|^\s*$' | tail -n "${NCU_TAIL:-260}"
done >"$OUT/ncu.txt" 2>&1
tail -c 3000 "$OUT/ncu.txt"

#!/usr/bin/env bash
# session 21 call 4: Nsight Compute, kiln's bf16 / FP8 tensor kernels against cuBLAS's at 4096x4096x7168.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KILN_ANCHORS_DIR=$(pwd)/.bench_shared
X=$(dirname "$KILN_CLI")
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats"
MET="--metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__inst_executed.sum"
kr() {  # spec m n k config
  echo "=== kiln $1 $2x$3x$4 $5"
  KILN_CACHE_DIR=$X/cache timeout 120 "$NCU" --clock-control none -k regex:kiln_ --launch-skip 2 --launch-count 1 $SECS $MET \
    "$X/kiln" run "$1" --m "$2" --n "$3" --k "$4" --repeats 3 --warmup 2 --config "$5" 2>&1 | grep -vE '^==PROF==|^\s*$|^    -----' | tail -n 200
}
cb() {  # path m n k
  echo "=== cuBLAS $1 $2x$3x$4"
  timeout 120 "$NCU" --clock-control none -k regex:nvjet --launch-skip 2 --launch-count 1 $SECS $MET python3 - "$1" "$2" "$3" "$4" <<'PY' 2>&1 | grep -vE '^==PROF==|^\s*$|^    -----' | tail -n 200
import sys, torch
path, M, N, K = sys.argv[1], *map(int, sys.argv[2:])
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16); w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
if path == "bf16":
    f = lambda: x @ w.t()
else:
    xq, wq = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn); one = torch.ones((), device="cuda")
    f = lambda: torch._scaled_mm(xq, wq.t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=True)
for _ in range(5): f()
torch.cuda.synchronize()
PY
}
{
cb bf16 4096 4096 7168
kr "gemm a=bf16 b=bf16 out=bf16" 4096 4096 7168 bm128_bn256_bk64_s3_w8x1_g8_t
kr "gemm a=bf16 b=bf16 out=bf16" 4096 4096 7168 bm128_bn256_bk64_s4_w8x1_g8_c2_th
cb fp8 4096 4096 7168
kr "gemm a=e4m3:tensor b=e4m3:tensor out=bf16" 4096 4096 7168 bm128_bn256_bk128_s3_w8x1_g8_t
} > "$OUT/ncu.txt" 2>&1
grep -E "^===|Duration|SM Frequency|gmma|Compute \(SM\) Throughput|Memory Throughput|stalled|bank_conflicts|Registers Per|Issue Slots Busy|No Eligible|inst_executed.sum|Block Limit|Dynamic Shared" "$OUT/ncu.txt" | head -150

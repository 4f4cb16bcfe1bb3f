// tuner/static_model.hpp — what a GPU can hold and roughly how long a config should take, with no GPU.
//
// The static model prunes and orders the tuner's candidates before anything is compiled: shared
// memory and registers bound the blocks resident per SM; tiles over (SMs x resident blocks) give the
// waves and how full the last one is; a roofline over the tensor-core rate (mma.sync for sm80_gemm,
// wgmma for the persistent sm90_gemm), the shared-memory and L2 feed of the tiles and the DRAM
// bandwidth the loads in flight can pull gives an estimated time. The estimate is a *ranking* model: it
// orders candidates so a time budget spends itself on the likely winners, and it never decides a
// winner (only CUDA events do). Limits per arch: CUDA C++ Programming Guide (CUDA 13.0),
// "Compute Capabilities", technical specifications table.
//
//   GpuModel gpu = kiln::gpu_model(arch, /*sm_count=*/132);
//   ConfigEstimate e = kiln::estimate_config(spec, gpu, family, cfg, {.m = 64, .n = 5760, .k = 2880});
//   // e.blocks_per_sm, e.tiles, e.waves, e.last_wave_fill, e.est_us
#pragma once

#include <cstdint>

#include "compiler/plan/plan.hpp"

namespace kiln {

struct GpuModel {
  Arch arch;
  int sm_count = 132;
  double dram_gbps = 3350;             // DRAM bandwidth (spec sheet)
  int smem_per_sm = 233472;            // bytes of shared memory per SM (the carve-out maximum)
  int smem_reserved_per_block = 1024;  // the runtime's per-block reservation (CUDA >= 11)
  int regs_per_sm = 65536;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  double mma_fma_per_clk = 1024;  // dense 16-bit mma.sync FMAs per SM per clock (FP8: twice, sm_89+)
  double smem_bytes_per_clk = 128;
  double l2_bytes_per_clk = 48;  // global (L2) load bandwidth an SM sustains, about 45-50 on sm_80/sm_90
  double dram_latency_ns = 800;  // a load's round trip to DRAM under load (order of magnitude)
  double clock_ghz = 1.5;        // a sustained clock; it scales every config alike
};
// The model of arch with sm_count SMs; dram_gbps 0 takes a typical part of that arch.
GpuModel gpu_model(const Arch& arch, int sm_count, double dram_gbps = 0);

struct ConfigEstimate {
  int smem_bytes = 0;         // dynamic shared memory per block
  int registers = 0;          // estimated per thread (check_config's model)
  int accumulators = 0;       // f32 accumulators per thread
  int blocks_per_sm = 0;      // resident blocks per SM (0: does not fit)
  int64_t tiles = 0;          // output tiles = blocks launched
  double waves = 0;           // tiles / (SMs x blocks_per_sm)
  double last_wave_fill = 0;  // fraction of the SMs the last wave keeps busy, (0, 1]
  double padding = 0;         // fraction of computed outputs outside M x N
  double est_us = 0;          // ranking estimate
};
// Registers per thread: sm80_gemm as check_config's base budget (compiler/plan/plan.cpp; without
// the promotion and mixed-input extras, so a lower bound there), sm90_gemm the consumer's
// accumulators plus the same fixed part.
int estimate_registers(const KernelSpec& spec, const Arch& arch, KernelFamily family, const TileConfig& cfg);
// sizes.m is the total row count (grouped: over all experts, spread evenly).
ConfigEstimate estimate_config(const KernelSpec& spec, const GpuModel& gpu, KernelFamily family,
                               const TileConfig& cfg, const ProblemSizes& sizes);

}  // namespace kiln

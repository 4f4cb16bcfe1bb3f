#include "tuner/static_model.hpp"

#include <algorithm>
#include <cmath>

#include "compiler/plan/sm90_plan.hpp"

namespace kiln {
namespace {

int elem_bytes(Format f) { return std::max(1, format_bits(f) / 8); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

GpuModel gpu_model(const Arch& arch, int sm_count, double dram_gbps) {
  GpuModel g;
  g.arch = arch;
  g.sm_count = std::max(1, sm_count);
  switch (arch.sm()) {
    case 80:  // A100: 164 KB shared per SM, 2048 threads, 32 blocks; third-gen tensor cores
      g.smem_per_sm = 167936;
      g.max_threads_per_sm = 2048;
      g.max_blocks_per_sm = 32;
      g.mma_fma_per_clk = 1024;
      g.dram_gbps = 2039;
      break;
    case 86:  // GA10x: 100 KB, 1536 threads, 16 blocks; half the A100 tensor rate per SM
      g.smem_per_sm = 102400;
      g.max_threads_per_sm = 1536;
      g.max_blocks_per_sm = 16;
      g.mma_fma_per_clk = 512;
      g.dram_gbps = 936;
      break;
    case 89:  // AD10x: 100 KB, 1536 threads, 24 blocks
      g.smem_per_sm = 102400;
      g.max_threads_per_sm = 1536;
      g.max_blocks_per_sm = 24;
      g.mma_fma_per_clk = 512;
      g.dram_gbps = 864;
      break;
    default:  // sm_90: 228 KB, 2048 threads, 32 blocks (mma.sync; wgmma would double the rate)
      g.smem_per_sm = 233472;
      g.max_threads_per_sm = 2048;
      g.max_blocks_per_sm = 32;
      g.mma_fma_per_clk = 1024;
      g.dram_gbps = 3350;
      break;
  }
  if (dram_gbps > 0) g.dram_gbps = dram_gbps;
  return g;
}

int estimate_registers(const KernelSpec& spec, const Arch& arch, KernelFamily family, const TileConfig& cfg) {
  if (family == KernelFamily::kSm90Gemm) {
    // Consumer threads: accumulators of its warpgroup's slab (and the promoted copy for FP8).
    const int wgs_m = std::max(1, cfg.warps_m / 4), wgs_n = std::max(1, cfg.warps_n);
    const int acc = (cfg.block_m / wgs_m) * (cfg.block_n / wgs_n) / 128;
    // Block-scaled 64 x 256 warpgroups promote through a half-width partial (templates/kernels/sm90/mainloop.cuh, half partials).
    const int part = !sm90_promotes(spec, cfg) ? 0 : sm90_half_partial(spec, cfg) ? acc / 2 : acc;
    // The kernel is compiled for one block per SM (__launch_bounds__): ptxas allots 65536 / threads per
    // thread, and the consumers take more through setmaxnreg; check_config refuses what would not fit.
    const int threads = sm90_threads(spec, cfg);  // 512 for MXFP8's dequantizing producer (two warpgroups)
    return std::min(acc + part + 40, (65536 / threads) & ~7);
  }
  // The same budget check_config applies (compiler/plan/plan.cpp; ptxas 13.0 measurements):
  // accumulators, double-buffered fragments, cp.async addresses, ~24 for indices and the epilogue,
  // and the converted fragments where FP8 is converted in registers (below sm_89).
  const int eb = elem_bytes(spec.a.format);
  const int warp_m = cfg.block_m / std::max(1, cfg.warps_m), warp_n = cfg.block_n / std::max(1, cfg.warps_n);
  const int acc = warp_m * warp_n / 32;
  const int row_bytes = cfg.block_k * eb;
  const int loads = ((cfg.block_m + cfg.block_n) * (row_bytes / 16) + cfg.threads() - 1) / cfg.threads();
  const bool int_fp8 = format_is_fp8(spec.a.format) && arch.sm() < 89;
  const int converted = int_fp8 ? 4 * (warp_n / 8) + 8 : 0;
  return acc + 2 * (4 * (warp_m / 16) + 2 * (warp_n / 8)) + 3 * loads + 24 + converted;
}

ConfigEstimate estimate_config(const KernelSpec& spec, const GpuModel& gpu, KernelFamily family,
                               const TileConfig& cfg, const ProblemSizes& sizes) {
  const bool sm90 = family == KernelFamily::kSm90Gemm;
  ConfigEstimate e;
  const int eb = elem_bytes(spec.a.format);
  const int out_bytes = std::max(1, format_bits(spec.out.format) / 8);
  const int64_t m = std::max<int64_t>(sizes.m, 1), n = std::max<int64_t>(sizes.n, 1),
                k = std::max<int64_t>(sizes.k, 1);
  const int threads = sm90 ? sm90_threads(spec, cfg) : cfg.threads();
  // The tile one warp (sm80: mma.sync) or one warpgroup (sm90: wgmma) computes.
  const int warp_m = sm90 ? cfg.block_m / std::max(1, cfg.warps_m / 4) : cfg.block_m / cfg.warps_m;
  const int warp_n = cfg.block_n / std::max(1, cfg.warps_n);
  e.smem_bytes = sm90 ? sm90_smem_bytes(spec, cfg) : smem_bytes(spec, cfg);
  e.registers = estimate_registers(spec, gpu.arch, family, cfg);
  e.accumulators = warp_m * warp_n / (sm90 ? 128 : 32);

  // Residency: shared memory (with the per-block reservation), registers (allocated per warp in
  // units of 256), threads and the block limit.
  const int by_smem = gpu.smem_per_sm / (e.smem_bytes + gpu.smem_reserved_per_block);
  const int regs_per_warp = ((std::min(255, e.registers) * 32 + 255) / 256) * 256;
  const int by_regs = (gpu.regs_per_sm / regs_per_warp) / std::max(1, threads / 32);
  const int by_threads = gpu.max_threads_per_sm / threads;
  e.blocks_per_sm = std::max(0, std::min({by_smem, by_regs, by_threads, gpu.max_blocks_per_sm}));
  // The persistent sm90 kernel launches one block per SM (at most) and walks the tiles.
  if (sm90 && e.blocks_per_sm > 0) e.blocks_per_sm = 1;

  // Tiles: a grouped problem with E experts and M rows in total runs ~M/E rows per expert
  // (uniform routing; the bucket is the host-known total).
  const int64_t groups = spec.experts > 0 ? std::min<int64_t>(spec.experts, m) : 1;
  const int64_t rows = ceil_div(m, groups);
  e.tiles = groups * ceil_div(rows, cfg.block_m) * ceil_div(n, cfg.block_n);
  e.padding = 1.0 - static_cast<double>(m * n) /
                        static_cast<double>(groups * ceil_div(rows, cfg.block_m) * cfg.block_m *
                                            ceil_div(n, cfg.block_n) * cfg.block_n);
  if (e.blocks_per_sm == 0) {
    e.est_us = INFINITY;
    return e;
  }
  // Split-K (sm90): every tile is split_k units of k / split_k each; the walk runs units.
  const int split = sm90 ? std::max(1, cfg.split_k) : 1;
  const int64_t units = e.tiles * split;
  const int64_t slots = static_cast<int64_t>(gpu.sm_count) * e.blocks_per_sm;
  e.waves = static_cast<double>(units) / static_cast<double>(slots);
  const int64_t full_waves = ceil_div(units, slots);
  // How many SMs the last wave keeps busy: an SM that runs fewer tiles than it could hold is still
  // busy, an SM with no tile idles for the whole wave.
  const int64_t last_tiles = units - (full_waves - 1) * slots;
  e.last_wave_fill = static_cast<double>(std::min<int64_t>(last_tiles, gpu.sm_count)) / gpu.sm_count;

  // Compute: every SM runs blocks_per_sm tiles of a wave side by side at its mma rate, slowed when
  // shared memory cannot feed the warp tile (ldmatrix bytes per FMA), when L2 cannot feed the block
  // tile (cp.async bytes per FMA: small tiles re-read the operands many times) or when too few warps
  // hide latency.
  // wgmma doubles mma.sync's dense rate per SM on sm_90 (H100: 989 vs ~495 TFLOP/s bf16); it reads
  // its operands from shared memory itself, so only the L2 feed limits it.
  const double fma_rate =
      gpu.mma_fma_per_clk * (sm90 ? 2 : 1) * (format_is_fp8(spec.a.format) && gpu.arch.sm() >= 89 ? 2 : 1);
  const double smem_need =
      sm90 ? 0 : fma_rate * eb * (warp_m + warp_n) / (static_cast<double>(warp_m) * warp_n);
  // Bytes of A and B one pipeline stage loads (4-bit weights and their scales included).
  const double stage_bytes = sm90 ? static_cast<double>(cfg.block_m + cfg.block_n) * cfg.block_k * eb
                                  : static_cast<double>(e.smem_bytes) / std::max(1, cfg.stages);
  const double l2_need =
      fma_rate * stage_bytes / (static_cast<double>(cfg.block_m) * cfg.block_n * std::max(1, cfg.block_k));
  const double feed = std::min(
      {1.0, smem_need > 0 ? gpu.smem_bytes_per_clk / smem_need : 1.0, gpu.l2_bytes_per_clk / l2_need});
  // Tiles a wave runs side by side on one SM: the resident limit, or fewer when the tiles run out.
  const int64_t per_sm = std::min<int64_t>(e.blocks_per_sm, ceil_div(units, gpu.sm_count));
  const int64_t warps_per_sm = per_sm * threads / 32;
  // Warp specialization (sm90) hides latency with its TMA ring, not with resident warps.
  const double latency =
      sm90 ? 1.0
           : std::min(1.0, 0.5 + static_cast<double>(warps_per_sm) / 16.0) * (cfg.stages >= 3 ? 1.0 : 0.85);
  const double sm_fma_per_us = fma_rate * feed * latency * gpu.clock_ghz * 1e3;
  const double tile_fma = static_cast<double>(cfg.block_m) * cfg.block_n * static_cast<double>(k) / split;
  const double compute_us =
      static_cast<double>(full_waves) * static_cast<double>(per_sm) * tile_fma / sm_fma_per_us;

  // Memory: each operand once from DRAM (L2 keeps the reuse). An SM streams at most what its loads
  // in flight cover over the DRAM latency (Little's law: stages - 1 tiles of A and B per block), and
  // at most ~2.5x its even share of the bandwidth; idle SMs pull nothing.
  const double a_bytes = format_bits(spec.a.format) / 8.0, b_bytes = format_bits(spec.b.format) / 8.0;
  // Split-K writes every split's f32 partial tile and the last split reads them all back, after the
  // mainloops (like an epilogue: not overlapped with them).
  const double split_bytes =
      split > 1 ? 2.0 * static_cast<double>(e.tiles) * cfg.block_m * cfg.block_n * 4.0 * split : 0.0;
  const double dram_bytes = static_cast<double>(m) * k * a_bytes +
                            static_cast<double>(groups) * n * k * b_bytes +
                            static_cast<double>(m) * n * out_bytes;
  const double active = std::min<double>(static_cast<double>(units), gpu.sm_count);
  const double in_flight = static_cast<double>(per_sm) * std::max(1, cfg.stages - 1) * stage_bytes;
  const double sm_gbps = std::min(in_flight / gpu.dram_latency_ns, 2.5 * gpu.dram_gbps / gpu.sm_count);
  const double bw = std::min(gpu.dram_gbps, active * sm_gbps);  // GB/s = bytes per ns
  const double memory_us = dram_bytes / (bw * 1e3);

  constexpr double kLaunchUs = 3.0;
  const double split_us = split_bytes / (bw * 1e3);
  e.est_us = std::max(compute_us, memory_us) + split_us + kLaunchUs;
  return e;
}

}  // namespace kiln

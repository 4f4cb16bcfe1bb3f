// compiler/plan/gpus.cpp — the named-GPU table (gpus.hpp).
#include "compiler/plan/gpus.hpp"

namespace kiln {

const std::vector<GpuInfo>& known_gpus() {
  constexpr long long kMiB = 1024 * 1024;
  // id, name, cc, SMs, smem/block, smem/SM, L2, DRAM GB/s, dense bf16 TFLOP/s
  static const std::vector<GpuInfo> kGpus = {
      {"h200", "NVIDIA H200", 90, 132, 232448, 233472, 60 * kMiB, 4800, 989},
      {"h100-sxm", "NVIDIA H100 80GB HBM3", 90, 132, 232448, 233472, 50 * kMiB, 3350, 989},
      {"h100-pcie", "NVIDIA H100 PCIe", 90, 114, 232448, 233472, 50 * kMiB, 2000, 756},
      {"h20", "NVIDIA H20", 90, 78, 232448, 233472, 60 * kMiB, 4000, 148},
      {"rtx4090", "NVIDIA GeForce RTX 4090", 89, 128, 101376, 102400, 72 * kMiB, 1008, 165},
      {"l40s", "NVIDIA L40S", 89, 142, 101376, 102400, 96 * kMiB, 864, 362},
      {"l4", "NVIDIA L4", 89, 58, 101376, 102400, 48 * kMiB, 300, 121},
      {"rtx3090", "NVIDIA GeForce RTX 3090", 86, 82, 101376, 102400, 6 * kMiB, 936, 71},
      {"a10", "NVIDIA A10", 86, 72, 101376, 102400, 6 * kMiB, 600, 125},
      {"a100", "NVIDIA A100-SXM4-80GB", 80, 108, 166912, 167936, 40 * kMiB, 2039, 312},
  };
  return kGpus;
}

const GpuInfo* find_gpu(std::string_view id) {
  for (const GpuInfo& g : known_gpus())
    if (g.id == id) return &g;
  return nullptr;
}

const GpuInfo* find_gpu(int cc, int sm_count) {
  for (const GpuInfo& g : known_gpus())
    if (g.cc == cc && g.sm_count == sm_count) return &g;
  return nullptr;
}

const GpuInfo* reference_gpu(const Arch& arch) {
  for (const GpuInfo& g : known_gpus())
    if (g.cc == arch.sm()) return &g;
  return nullptr;
}

Arch arch_with_gpu(const Arch& arch, const GpuInfo& gpu) {
  Arch a = arch;
  a.sm_count = gpu.sm_count;
  a.smem_per_block = gpu.smem_per_block;
  a.l2_bytes = gpu.l2_bytes;
  a.dram_gbps = gpu.dram_gbps;
  a.bf16_tflops = gpu.bf16_tflops;
  return a;
}

Arch arch_for_part(int cc, int sm_count) {
  Arch a = arch_for_device(cc / 10, cc % 10);
  if (const GpuInfo* g = find_gpu(cc, sm_count)) a = arch_with_gpu(a, *g);
  a.sm_count = sm_count;
  return a;
}

}  // namespace kiln

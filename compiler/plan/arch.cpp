// compiler/plan/arch.cpp — Arch names, NVRTC option, shared-memory limits.
#include "kiln/arch.hpp"

#include <algorithm>
#include <string>

#include "compiler/plan/gpus.hpp"

namespace kiln {

std::string Arch::name() const { return "sm_" + std::to_string(sm()) + (arch_specific ? "a" : ""); }

std::string Arch::nvrtc_option() const { return "--gpu-architecture=" + name(); }

int Arch::max_smem_per_block() const {
  if (smem_per_block > 0) return smem_per_block;
  // Opt-in dynamic shared memory per block (CUDA C++ Programming Guide, "Compute Capabilities",
  // technical specifications table; CUDA 13.0): sm_80/sm_87 163 KB, sm_86/sm_89 99 KB, sm_90 227 KB.
  switch (sm()) {
    case 80:
    case 87: return 166912;  // 163 KB
    case 86:
    case 89:
    case 120:
    case 121: return 101376;  // 99 KB
    case 90:
    case 100:
    case 103: return 232448;  // 227 KB
    case 75: return 65536;    // 64 KB
    default: return 49152;    // 48 KB: what every arch grants without opting in
  }
}

int Arch::sms() const {
  int n = sm_count;
  if (n <= 0) {
    const GpuInfo* g = reference_gpu(*this);
    n = g != nullptr ? g->sm_count : 108;
  }
  return sm_cap > 0 ? std::min(n, sm_cap) : n;
}

long long Arch::l2() const {
  if (l2_bytes > 0) return l2_bytes;
  const GpuInfo* g = reference_gpu(*this);
  return g != nullptr ? g->l2_bytes : 40ll << 20;
}

double Arch::dram() const {
  if (dram_gbps > 0) return dram_gbps;
  const GpuInfo* g = reference_gpu(*this);
  return g != nullptr ? g->dram_gbps : 2000;
}

double Arch::tensor_tflops() const {
  if (bf16_tflops > 0) return bf16_tflops;
  const GpuInfo* g = reference_gpu(*this);
  return g != nullptr ? g->bf16_tflops : 300;
}

StatusOr<Arch> parse_arch(std::string_view name) {
  std::string_view s = name;
  if (s.substr(0, 3) == "sm_") s.remove_prefix(3);
  struct Known {
    std::string_view text;
    Arch arch;
  };
  static constexpr Known kKnown[] = {
      {"90a", {9, 0, true}}, {"90", {9, 0, false}}, {"89", {8, 9, false}},
      {"86", {8, 6, false}}, {"80", {8, 0, false}},
  };
  for (const Known& k : kKnown) {
    if (s == k.text) return k.arch;
  }
  return InvalidArgument(
      "unknown arch '" + std::string(name) +
      "'; expected one of sm_90a, sm_90, sm_89, sm_86, sm_80 (the sm_ prefix is optional)");
}

Arch arch_for_device(int major, int minor) {
  // sm_90 gets the arch-specific target: wgmma and setmaxnreg exist only under sm_90a.
  return Arch{major, minor, major == 9 && minor == 0};
}

}  // namespace kiln

// compiler/plan/gpus.hpp — the GPUs kiln knows by name: the facts a plan needs, as data.
//
// A plan needs a few facts of the device it runs on: how many SMs share the tiles (waves, split-K),
// how much shared memory a block may take, the L2 size, and the DRAM and tensor-core rates the
// tuner's static model ranks candidates with. On a GPU the runtime reads the first three from the
// device (Runtime::device_arch, runtime/runtime.cpp) and takes the rates from this table when it knows the part; with
// no GPU a plan takes them from the named part (KILN_TUNING_DEVICE=h100-pcie, or the arch's reference
// part below). Sources: NVIDIA product pages and data sheets (SM counts, L2, DRAM bandwidth, dense
// tensor rates without sparsity) and the CUDA C++ Programming Guide's technical specifications table
// (shared memory per block and per SM).
//
//   const GpuInfo* g = kiln::find_gpu("h100-pcie");   // 114 SMs
//   Arch a = kiln::arch_with_gpu(*g);                  // sm_90a with the part's facts
//   int sms = a.sms();                                 // 114 (or the SM cap, when lower)
#pragma once

#include <string_view>
#include <vector>

#include "kiln/arch.hpp"

namespace kiln {

struct GpuInfo {
  std::string_view id;        // "h200": what KILN_TUNING_DEVICE and `kiln tune --device` take
  std::string_view gpu_name;  // "NVIDIA H200": the device's own name (cuDeviceGetName)
  int cc;                     // 90
  int sm_count;               // 132
  int smem_per_block;         // opt-in dynamic shared memory per block, bytes
  int smem_per_sm;            // shared memory per SM (the carve-out maximum), bytes
  long long l2_bytes;         // L2 cache
  double dram_gbps;           // DRAM bandwidth as specified (not measured)
  double bf16_tflops;         // dense 16-bit tensor rate as specified
};

// Every part of the table, in a fixed order (the first of each compute capability is its
// reference; the first with a given cc and SM count is what find_gpu(cc, sm_count) names).
const std::vector<GpuInfo>& known_gpus();
// By id ("h200"); null when unknown.
const GpuInfo* find_gpu(std::string_view id);
// By compute capability (90) and SM count; null when no part matches.
const GpuInfo* find_gpu(int cc, int sm_count);
// The part a named arch stands for when no device says otherwise: sm_90 -> H200 (132 SMs, as the
// H100 SXM), sm_89 -> RTX 4090, sm_86 -> RTX 3090, sm_80 -> A100; null for an arch without one.
const GpuInfo* reference_gpu(const Arch& arch);
// arch (its instruction set) with the facts of gpu.
Arch arch_with_gpu(const Arch& arch, const GpuInfo& gpu);
// The arch kiln compiles for on a part of compute capability cc (90) with sm_count SMs: that SM count,
// and the table's other facts where it knows the part (else the reference part's stand in).
Arch arch_for_part(int cc, int sm_count);

}  // namespace kiln

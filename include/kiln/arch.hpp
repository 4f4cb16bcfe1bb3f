// kiln/arch.hpp — the GPU architecture a kernel is generated for (compiler/plan/arch.cpp).
//
// Arch is a value, not a device handle: kiln compiles for a named arch with no GPU present
// ("sm_90a", "sm_89", "sm_86", "sm_80"). The runtime derives it from the device's compute capability
// and reads the device's facts into it (SM count, shared memory, L2); without a GPU the facts come from
// the named-GPU table (compiler/plan/gpus.hpp). sm_100 (tcgen05) slots in here as another value when
// its family exists.
#pragma once

#include <string>
#include <string_view>

#include "kiln/status.hpp"

namespace kiln {

struct Arch {
  int major = 9;
  int minor = 0;
  bool arch_specific = true;  // the "a" suffix (sm_90a: wgmma, setmaxnreg)

  // What the device has (0: not known, the arch's reference part in compiler/plan/gpus.cpp stands in).
  // The runtime fills them from the device; `kiln compile --arch sm_90a` and other plans without a GPU
  // take the part KILN_TUNING_DEVICE names, else the reference part. Planning reads them only through
  // the accessors below, so a default-constructed Arch plans as the reference part does.
  int sm_count = 0;          // streaming multiprocessors
  int sm_cap = 0;            // kiln's kernels use at most this many SMs (0: all; RuntimeOptions::max_sms)
  int smem_per_block = 0;    // opt-in dynamic shared memory per block, bytes
  long long l2_bytes = 0;    // L2 cache, bytes
  double dram_gbps = 0;      // DRAM bandwidth, GB/s
  double bf16_tflops = 0;    // dense 16-bit tensor-core rate, TFLOP/s

  int sm() const { return major * 10 + minor; }
  std::string name() const;                  // "sm_90a"
  std::string nvrtc_option() const;          // "--gpu-architecture=sm_90a"
  int max_smem_per_block() const;            // opt-in dynamic shared memory limit, bytes
  bool has_fp8_mma() const { return sm() >= 89; }
  // The SMs a plan spreads its tiles over: the device's (or the reference part's) SM count, capped by
  // sm_cap. Waves, split-K factors and persistent grids are counted in these.
  int sms() const;
  long long l2() const;       // l2_bytes, else the reference part's
  double dram() const;        // dram_gbps, else the reference part's
  double tensor_tflops() const;  // bf16_tflops, else the reference part's
  // Two Arch values are equal when they name the same instruction set (what a kernel is compiled
  // for); the device facts do not enter (a cubin for sm_90a runs on every sm_90 part).
  bool operator==(const Arch& o) const {
    return major == o.major && minor == o.minor && arch_specific == o.arch_specific;
  }
};

// "sm_90a", "sm_90", "sm_89", "sm_86", "sm_80" (also "90a", "89"). Anything else: INVALID_ARGUMENT
// listing the accepted names.
StatusOr<Arch> parse_arch(std::string_view name);
// The arch kiln compiles for on a device of compute capability major.minor (sm_90 -> sm_90a).
Arch arch_for_device(int major, int minor);

}  // namespace kiln

// compiler/plan/arch.hpp — the GPU architecture a kernel is generated for.
//
// Arch is a value, not a device handle: kiln compiles for a named arch with no GPU present
// ("sm_90a", "sm_89", "sm_86", "sm_80"). The runtime derives it from the device's compute capability.
// sm_100 (tcgen05) slots in here as another value when its family exists.
#pragma once

#include <string>
#include <string_view>

#include "kiln/status.hpp"

namespace kiln {

struct Arch {
  int major = 9;
  int minor = 0;
  bool arch_specific = true;  // the "a" suffix (sm_90a: wgmma, setmaxnreg)

  int sm() const { return major * 10 + minor; }
  std::string name() const;                  // "sm_90a"
  std::string nvrtc_option() const;          // "--gpu-architecture=sm_90a"
  int max_smem_per_block() const;            // opt-in dynamic shared memory limit, bytes
  bool has_fp8_mma() const { return sm() >= 89; }
  bool operator==(const Arch&) const = default;
};

// "sm_90a", "sm_90", "sm_89", "sm_86", "sm_80" (also "90a", "89"). Anything else: INVALID_ARGUMENT
// listing the accepted names.
StatusOr<Arch> parse_arch(std::string_view name);
// The arch kiln compiles for on a device of compute capability major.minor (sm_90 -> sm_90a).
Arch arch_for_device(int major, int minor);

}  // namespace kiln

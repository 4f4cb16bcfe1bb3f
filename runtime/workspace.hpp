// runtime/workspace.hpp — the device workspace a plan owns for kernels that need one (sm90 split-K:
// per-tile counters and partial sums; compiler/plan/sm90_plan.hpp sm90_workspace_bytes).
//
// One buffer per device, allocated zero-filled the first time a run needs it (or by Plan::prepare,
// before graph capture) and grown when a larger M needs more. Split-K kernels leave the counters zero
// after every completed launch, so the buffer is reused without a memset. A plan's workspace is shared
// by every run of that plan: runs of ONE plan on different streams at the same time must each pass
// their own workspace to Plan::run (zero-filled before its first use); runs on one stream, or of
// different plans, need nothing.
//
//   KILN_ASSIGN_OR_RETURN(void* ws, impl.workspace.get(d, device, bytes, stream));
#pragma once

#include <array>
#include <cstddef>
#include <mutex>

#include "kiln/status.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"

namespace kiln {

class PlanWorkspace {
 public:
  // A zero-filled buffer of at least `bytes` on `device` (the caller's context is current). Growing it
  // synchronizes the context first (the old buffer may still be in use); during graph capture nothing
  // is allocated: NOT_READY asks for Plan::prepare before capturing.
  StatusOr<void*> get(const Driver& d, int device, size_t bytes, CUstream stream) const;

 private:
  static constexpr int kMaxDevices = 64;
  mutable std::mutex mu_;
  mutable std::array<DeviceBuffer, kMaxDevices> buffers_{};
};

}  // namespace kiln

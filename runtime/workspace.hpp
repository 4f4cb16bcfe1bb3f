// runtime/workspace.hpp — the device workspace a plan owns for kernels that need one (sm90 split-K:
// per-tile counters and partial sums; compiler/plan/sm90_plan.hpp sm90_workspace_bytes).
//
// One buffer per device, allocated zero-filled the first time a run needs it (or by Plan::prepare,
// before graph capture) and grown when a larger M needs more (the outgrown one is kept until the plan is
// destroyed: a launch in flight or another thread may still use it). Split-K kernels keep their counters
// in a fixed region at the buffer's start and leave them zero after every completed launch, so the
// buffer is reused without a memset. A plan's workspace is shared
// by every run of that plan: runs of ONE plan on different streams at the same time must each pass
// their own workspace to Plan::run (zero-filled before its first use); runs on one stream, or of
// different plans, need nothing.
//
//   KILN_ASSIGN_OR_RETURN(void* ws, impl.workspace.get(d, device, bytes, stream));
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "kiln/status.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"

namespace kiln {

class PlanWorkspace {
 public:
  // A buffer of at least `bytes` on `device` whose split-K counters are zero (the caller's context is
  // current). During graph capture nothing is allocated: NOT_READY asks for Plan::prepare first.
  StatusOr<void*> get(const Driver& d, int device, size_t bytes, CUstream stream) const;

 private:
  static constexpr int kMaxDevices = 64;
  mutable std::mutex mu_;  // allocation only; run() reads the published pointer and size lock-free
  mutable std::array<DeviceBuffer, kMaxDevices> buffers_{};
  // Published after each allocation, pointer first: a size read (acquire) covers the pointer read after
  // it, which can only be that buffer or a larger one (buffers never shrink and outgrown ones live on).
  mutable std::array<std::atomic<void*>, kMaxDevices> ptr_{};
  mutable std::array<std::atomic<size_t>, kMaxDevices> size_{};
  mutable std::vector<DeviceBuffer> retired_;  // outgrown buffers, kept until the plan goes
};

}  // namespace kiln

// runtime/workspace.cpp — see workspace.hpp.
#include "runtime/workspace.hpp"

#include <string>

namespace kiln {

StatusOr<void*> PlanWorkspace::get(const Driver& d, int device, size_t bytes, CUstream stream) const {
  if (bytes == 0) return nullptr;
  if (device < 0 || device >= kMaxDevices)
    return InvalidArgument("workspace: device ordinal " + std::to_string(device) + " out of range");
  const size_t dev = static_cast<size_t>(device);
  if (size_[dev].load(std::memory_order_acquire) >= bytes) return ptr_[dev].load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(mu_);
  DeviceBuffer& buf = buffers_[dev];
  if (buf.size() >= bytes) return buf.data();
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  KILN_RETURN_IF_ERROR(d.check(d.cuStreamIsCapturing(stream, &capture), "cuStreamIsCapturing"));
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return NotReady("Plan::run during CUDA-graph capture needs a " + std::to_string(bytes) +
                    "-byte split-K workspace that is not allocated yet; call prepare() before capturing, or pass "
                    "a zero-filled workspace of Plan::workspace_bytes(m) bytes to run()");
  // Round up so that nearby M do not each grow it.
  const size_t rounded = (bytes + (size_t{1} << 20) - 1) & ~((size_t{1} << 20) - 1);
  KILN_ASSIGN_OR_RETURN(DeviceBuffer fresh, DeviceBuffer::alloc(rounded));
  KILN_RETURN_IF_ERROR(fresh.fill_bytes(0));
  // The fill runs on the legacy stream: finish it before a launch on any (possibly non-blocking) stream.
  KILN_RETURN_IF_ERROR(d.check(d.cuStreamSynchronize(nullptr), "cuStreamSynchronize (zero-filling the workspace)"));
  // The old buffer may still be in use by launches in flight, or about to be by another thread that got
  // its pointer: it is kept (freed with the plan), never freed here.
  if (buf.size() > 0) retired_.push_back(std::move(buf));
  buf = std::move(fresh);
  ptr_[dev].store(buf.data(), std::memory_order_release);
  size_[dev].store(buf.size(), std::memory_order_release);
  return buf.data();
}

}  // namespace kiln

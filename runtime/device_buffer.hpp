// runtime/device_buffer.hpp — a small RAII device allocation for tools and tests (not the hot path).
//
//   KILN_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::alloc(bytes));   // current context
//   KILN_RETURN_IF_ERROR(buf.upload(host.data(), bytes));
#pragma once

#include <cstddef>
#include <cstdint>

#include "kiln/status.hpp"

namespace kiln {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Allocates in the current context (callers hold a ScopedContext).
  static StatusOr<DeviceBuffer> alloc(size_t bytes);
  Status upload(const void* host, size_t bytes, size_t offset = 0);
  Status download(void* host, size_t bytes, size_t offset = 0) const;
  Status fill_bytes(uint8_t value);
  void* data() const { return reinterpret_cast<void*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace kiln

#include "runtime/device_buffer.hpp"

#include "runtime/driver/driver.hpp"

namespace kiln {

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) {
    auto d = Driver::get();
    if (d.ok()) (*d)->cuMemFree(static_cast<CUdeviceptr>(ptr_));
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = 0;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    this->~DeviceBuffer();
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

StatusOr<DeviceBuffer> DeviceBuffer::alloc(size_t bytes) {
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  DeviceBuffer b;
  CUdeviceptr p = 0;
  KILN_RETURN_IF_ERROR(d->check(d->cuMemAlloc(&p, bytes == 0 ? 16 : bytes), "cuMemAlloc"));
  b.ptr_ = p;
  b.bytes_ = bytes;
  return b;
}

Status DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  if (offset + bytes > bytes_) return InvalidArgument("DeviceBuffer::upload out of range");
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  return d->check(d->cuMemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD");
}

Status DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  if (offset + bytes > bytes_) return InvalidArgument("DeviceBuffer::download out of range");
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  return d->check(d->cuMemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

Status DeviceBuffer::fill_bytes(uint8_t value) {
  KILN_ASSIGN_OR_RETURN(const Driver* d, Driver::get());
  return d->check(d->cuMemsetD8(ptr_, value, bytes_), "cuMemsetD8");
}

}  // namespace kiln

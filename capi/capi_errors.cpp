// The C API's error plumbing: thread-local last error, status names, the boundary guard's slow path.
#include <cstring>

#include "capi/capi_internal.hpp"

namespace kiln::capi {
namespace {

thread_local std::string t_last_error;
// Used when recording the real message itself fails (no memory): a fixed string, never freed.
thread_local const char* t_fallback_error = nullptr;

}  // namespace

void set_last_error(const char* function, const std::string& message) noexcept {
  try {
    std::string text;
    text.reserve(std::strlen(function) + 2 + message.size());
    text.append(function).append(": ").append(message);
    t_last_error = std::move(text);
    t_fallback_error = nullptr;
  } catch (...) {
    t_fallback_error = "kiln: out of host memory while recording an error message";
  }
}

const char* last_error() noexcept {
  if (t_fallback_error != nullptr) return t_fallback_error;
  return t_last_error.c_str();
}

kiln_status to_c_status(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk: return KILN_OK;
    case StatusCode::kInvalidArgument: return KILN_ERROR_INVALID_ARGUMENT;
    case StatusCode::kUnsupported: return KILN_ERROR_UNSUPPORTED;
    case StatusCode::kCompileError: return KILN_ERROR_COMPILE;
    case StatusCode::kResourceExhausted: return KILN_ERROR_RESOURCE_EXHAUSTED;
    case StatusCode::kDriverError: return KILN_ERROR_DRIVER;
    case StatusCode::kCacheError: return KILN_ERROR_CACHE;
    case StatusCode::kNotReady: return KILN_ERROR_NOT_READY;
    case StatusCode::kNoDevice: return KILN_ERROR_NO_DEVICE;
    case StatusCode::kInternal: return KILN_ERROR_INTERNAL;
  }
  // A code added to StatusCode without a C counterpart: report it rather than pretend success.
  return KILN_ERROR_INTERNAL;
}

Status check_struct_size(size_t struct_size, size_t expected, const char* struct_name, const char* arg) {
  if (struct_size >= expected) return Status::Ok();
  return InvalidArgument(std::string(arg) + "->struct_size is " + std::to_string(struct_size) + " but " +
                         struct_name + " needs at least " + std::to_string(expected) +
                         " bytes; set it to sizeof(" + struct_name + ")");
}

Status copy_out(const std::string& text, char* buf, size_t buf_size, size_t* needed) {
  const size_t want = text.size() + 1;
  if (needed != nullptr) *needed = want;
  if (buf == nullptr) {
    if (buf_size == 0) return Status::Ok();  // size query
    return InvalidArgument("buf is NULL but buf_size is " + std::to_string(buf_size) +
                           "; pass buf_size 0 to query the size");
  }
  if (buf_size < want) {
    if (buf_size > 0) buf[0] = '\0';
    return InvalidArgument("buf_size " + std::to_string(buf_size) + " is too small: " + std::to_string(want) +
                           " bytes are needed (returned in *needed)");
  }
  std::memcpy(buf, text.c_str(), want);
  return Status::Ok();
}

kiln_status guard_failed(const char* function, const Status& status) noexcept {
  set_last_error(function, status.message());
  return to_c_status(status.code());
}

kiln_status guard_exception(const char* function, const char* what, bool out_of_memory) noexcept {
  if (out_of_memory) {
    set_last_error(function, what);
    return KILN_ERROR_RESOURCE_EXHAUSTED;
  }
  try {
    set_last_error(function, std::string("internal error (C++ exception): ") + what);
  } catch (...) {
    set_last_error(function, "internal error (C++ exception)");
  }
  return KILN_ERROR_INTERNAL;
}

}  // namespace kiln::capi

extern "C" {

const char* kiln_last_error(void) { return kiln::capi::last_error(); }

const char* kiln_status_name(kiln_status s) {
  switch (s) {
    case KILN_OK: return "OK";
    case KILN_ERROR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case KILN_ERROR_UNSUPPORTED: return "UNSUPPORTED";
    case KILN_ERROR_COMPILE: return "COMPILE_ERROR";
    case KILN_ERROR_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case KILN_ERROR_DRIVER: return "DRIVER_ERROR";
    case KILN_ERROR_CACHE: return "CACHE_ERROR";
    case KILN_ERROR_NOT_READY: return "NOT_READY";
    case KILN_ERROR_NO_DEVICE: return "NO_DEVICE";
    case KILN_ERROR_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

}  // extern "C"

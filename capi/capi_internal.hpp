// capi/capi_internal.hpp — what the C API's translation units share: handle types, the thread-local
// last error, the Status -> kiln_status mapping, and the boundary guard that keeps C++ exceptions
// from crossing into C.
//
// Every exported function has the same shape:
//
//   kiln_status kiln_plan_prepare(kiln_plan plan) {
//     return kiln::capi::guard("kiln_plan_prepare", [&]() -> kiln::Status {
//       KILN_RETURN_IF_ERROR(kiln::capi::require(plan, "plan"));
//       return plan->plan.prepare();
//     });
//   }
//
// guard() runs the body, catches everything, records "<function>: <message>" as the last error of
// this thread on failure and maps the code. The last error is left untouched on success (the
// convention of errno and cudaGetLastError's peers: read it only after a failure).
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "kiln/kiln.h"
#include "kiln/kiln.hpp"

struct kiln_runtime_s {
  std::shared_ptr<kiln::Runtime> runtime;
};

// A plan handle keeps its runtime alive: destroying the runtime handle first is allowed.
struct kiln_plan_s {
  std::shared_ptr<kiln::Runtime> runtime;
  kiln::Plan plan;
};

namespace kiln::capi {

// Records message as this thread's last error. Never throws.
void set_last_error(const char* function, const std::string& message) noexcept;
kiln_status to_c_status(StatusCode code) noexcept;
const char* last_error() noexcept;

// INVALID_ARGUMENT "<name> is NULL" when p is null.
inline Status require(const void* p, const char* name) {
  if (p == nullptr) return InvalidArgument(std::string(name) + " is NULL");
  return Status::Ok();
}

// Options structs begin with struct_size. Smaller than the version this library was built with is
// rejected (the fields we would read are missing); larger is accepted (a newer header's caller).
Status check_struct_size(size_t struct_size, size_t expected, const char* struct_name, const char* arg);

// Copies text (NUL-terminated) into buf; *needed (when not NULL) gets strlen(text) + 1.
// buf may be NULL only with buf_size 0: a pure size query. Too small: INVALID_ARGUMENT.
Status copy_out(const std::string& text, char* buf, size_t buf_size, size_t* needed);

kiln_status guard_failed(const char* function, const Status& status) noexcept;
kiln_status guard_exception(const char* function, const char* what, bool out_of_memory) noexcept;

template <typename Body>
kiln_status guard(const char* function, Body&& body) noexcept {
  try {
    Status s = std::forward<Body>(body)();
    if (s.ok()) return KILN_OK;
    return guard_failed(function, s);
  } catch (const std::bad_alloc&) {
    return guard_exception(function, "out of host memory", /*out_of_memory=*/true);
  } catch (const std::exception& e) {
    return guard_exception(function, e.what(), /*out_of_memory=*/false);
  } catch (...) {
    return guard_exception(function, "unknown C++ exception", /*out_of_memory=*/false);
  }
}

}  // namespace kiln::capi

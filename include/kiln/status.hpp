// kiln/status.hpp — Status and StatusOr<T>: how every kiln function reports failure.
//
// Library code never throws across module boundaries, never exits and never prints. A failing call
// returns a Status whose message says what was wrong, with which value, and what would be right:
//
//   kiln::StatusOr<kiln::KernelSpec> spec = kiln::parse_spec("gemm a=bf16 b=bf16 out=bf16");
//   if (!spec.ok()) { std::cerr << spec.status().to_string() << "\n"; return 1; }
//   KILN_ASSIGN_OR_RETURN(auto plan, runtime.plan(*spec, sizes));   // inside a Status function
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace kiln {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the caller passed something malformed (spec text, operand, size)
  kUnsupported,       // well-formed, but no kernel exists for it (yet); the message says what is missing
  kCompileError,      // NVRTC failed; the message holds the log
  kResourceExhausted, // registers, shared memory, device memory, cache size
  kDriverError,       // a CUDA driver call failed; the message names the CUresult
  kCacheError,        // SQLite failed; the message names the SQLite code
  kNotReady,          // the kernel is not compiled/loaded and may not be now (graph capture)
  kNoDevice,          // no CUDA driver or no GPU on this machine
  kInternal,          // a kiln bug
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: K=1000 is not a multiple of the mxfp4 block (32)"
  std::string to_string() const;
  // Adds context in front of the message: "plan: " + message.
  Status with_context(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status CompileError(std::string m) { return {StatusCode::kCompileError, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status DriverError(std::string m) { return {StatusCode::kDriverError, std::move(m)}; }
inline Status CacheError(std::string m) { return {StatusCode::kCacheError, std::move(m)}; }
inline Status NotReady(std::string m) { return {StatusCode::kNotReady, std::move(m)}; }
inline Status NoDevice(std::string m) { return {StatusCode::kNoDevice, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("StatusOr constructed from an OK status without a value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace kiln

#define KILN_STATUS_CONCAT_INNER(a, b) a##b
#define KILN_STATUS_CONCAT(a, b) KILN_STATUS_CONCAT_INNER(a, b)

#define KILN_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::kiln::Status kiln_status_ = (expr);          \
    if (!kiln_status_.ok()) return kiln_status_;   \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_STATUS_CONCAT(kiln_statusor_, __LINE__), lhs, expr)

// C API: spec canonicalization, backward specs, the version query and the tuner module's path. None needs a runtime or a GPU.
#include <string>

#include "capi/capi_internal.hpp"
#include "runtime/tuning_module.hpp"

#ifndef KILN_VERSION_STRING
#error "capi/CMakeLists.txt defines KILN_VERSION_STRING/MAJOR/MINOR/PATCH from project(VERSION)"
#endif

namespace {

kiln::StatusOr<kiln::Format> gradient_format(const char* name, const char* field, kiln::Format fallback,
                                             bool allow_f32) {
  if (name == nullptr) return fallback;
  const std::string n = name;
  if (n == "bf16") return kiln::Format::kBf16;
  if (n == "f16") return kiln::Format::kF16;
  if (n == "f32" && allow_f32) return kiln::Format::kF32;
  return kiln::InvalidArgument(std::string(field) + " '" + n.substr(0, 40) + "'; expected bf16, f16" +
                               (allow_f32 ? " or f32" : ""));
}

// One backward spec of fprop_spec; mode, grad and wgrad_out are names (NULL: the defaults).
kiln::Status derive(const char* fprop_spec, const char* mode, const char* grad, const char* wgrad_out,
                    const char* pass, char* buf, size_t buf_size, size_t* needed) {
  if (needed != nullptr) *needed = 0;
  KILN_RETURN_IF_ERROR(kiln::capi::require(fprop_spec, "fprop_spec"));
  KILN_RETURN_IF_ERROR(kiln::capi::require(pass, "pass"));
  const std::string p = pass, m = mode != nullptr ? mode : "high_precision";
  if (p != "dgrad" && p != "wgrad")
    return kiln::InvalidArgument("pass '" + p.substr(0, 40) + "'; expected dgrad or wgrad");
  kiln::BackwardOptions o;
  if (m == "dequantized") {
    o.mode = kiln::BackwardMode::kDequantized;
  } else if (m == "quantized") {
    o.mode = kiln::BackwardMode::kQuantized;
  } else if (m != "high_precision") {
    return kiln::InvalidArgument("mode '" + m.substr(0, 40) + "'; expected high_precision, dequantized or quantized");
  }
  KILN_ASSIGN_OR_RETURN(o.grad, gradient_format(grad, "grad", kiln::Format::kBf16, false));
  KILN_ASSIGN_OR_RETURN(o.wgrad_out, gradient_format(wgrad_out, "wgrad_out", kiln::Format::kF32, true));
  KILN_ASSIGN_OR_RETURN(kiln::KernelSpec fprop, kiln::parse_spec(fprop_spec));
  KILN_ASSIGN_OR_RETURN(kiln::BackwardSpecs b, kiln::derive_backward(fprop, o));
  return kiln::capi::copy_out(kiln::print_spec(p == "dgrad" ? b.dgrad : b.wgrad), buf, buf_size, needed);
}

}  // namespace

extern "C" {

const char* kiln_version_string(void) { return KILN_VERSION_STRING; }

void kiln_version(int* major, int* minor, int* patch) {
  if (major != nullptr) *major = KILN_VERSION_MAJOR;
  if (minor != nullptr) *minor = KILN_VERSION_MINOR;
  if (patch != nullptr) *patch = KILN_VERSION_PATCH;
}

kiln_status kiln_tuning_module_path(char* buf, size_t buf_size, size_t* needed) {
  return kiln::capi::guard("kiln_tuning_module_path", [&]() -> kiln::Status {
    if (needed != nullptr) *needed = 0;
    KILN_RETURN_IF_ERROR(kiln::load_tuning_module());
    KILN_ASSIGN_OR_RETURN(std::string path, kiln::tuning_module_path());
    return kiln::capi::copy_out(path, buf, buf_size, needed);
  });
}

kiln_status kiln_spec_canonicalize(const char* spec, char* buf, size_t buf_size, size_t* needed) {
  return kiln::capi::guard("kiln_spec_canonicalize", [&]() -> kiln::Status {
    if (needed != nullptr) *needed = 0;
    KILN_RETURN_IF_ERROR(kiln::capi::require(spec, "spec"));
    KILN_ASSIGN_OR_RETURN(kiln::KernelSpec parsed, kiln::parse_spec(spec));
    return kiln::capi::copy_out(kiln::print_spec(parsed), buf, buf_size, needed);
  });
}

kiln_status kiln_derive_backward(const char* fprop_spec, const char* mode, const char* pass, char* buf,
                                 size_t buf_size, size_t* needed) {
  return kiln::capi::guard("kiln_derive_backward", [&]() -> kiln::Status {
    return derive(fprop_spec, mode, nullptr, nullptr, pass, buf, buf_size, needed);
  });
}

kiln_status kiln_derive_backward_with(const char* fprop_spec, const kiln_backward_options* options,
                                      const char* pass, char* buf, size_t buf_size, size_t* needed) {
  return kiln::capi::guard("kiln_derive_backward_with", [&]() -> kiln::Status {
    if (needed != nullptr) *needed = 0;
    KILN_RETURN_IF_ERROR(kiln::capi::require(options, "options"));
    KILN_RETURN_IF_ERROR(kiln::capi::check_struct_size(options->struct_size, sizeof(kiln_backward_options),
                                                       "kiln_backward_options", "options"));
    return derive(fprop_spec, options->mode, options->grad, options->wgrad_out, pass, buf, buf_size, needed);
  });
}

}  // extern "C"

// compiler/nvrtc/nvrtc.cpp — NVRTC loaded with dlopen, and compile_cuda on top of it.
//
// NVRTC is resolved once per process (a function-local static: C++11 makes its initialisation
// thread-safe) and never unloaded. Only the function-pointer types come from <nvrtc.h>; nothing here
// links libnvrtc, so a process with a warm cache never needs the library at all.
// NVRTC's API is thread-safe for distinct programs (CUDA 13.0 NVRTC guide, "Thread Safety"), so
// compile_cuda may run on many threads at once: each call owns its nvrtcProgram.
#include "compiler/nvrtc/nvrtc.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "common/env.hpp"
#include "templates/templates.hpp"

namespace kiln {
namespace {

// The NVRTC entry points kiln uses. Types are taken from the toolkit header so a signature change
// is a compile error here, not a crash at run time.
struct NvrtcApi {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_program_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_program_log = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) get_ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) get_ptx = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcGetErrorString) get_error_string = nullptr;
  std::string library;  // the name or path that dlopen accepted
  std::string error;    // non-empty when NVRTC could not be loaded; then nothing above is set
};

std::vector<std::string> nvrtc_candidates() {
  if (auto p = env::get(env::kNvrtcPath)) return {*p};
  return {"libnvrtc.so.13", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
          "/usr/local/cuda/lib64/libnvrtc.so"};
}

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& fn, std::string& error) {
  dlerror();
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    const char* why = dlerror();
    error += std::string(error.empty() ? "" : "; ") + name + " (" + (why ? why : "null symbol") + ")";
    return false;
  }
  fn = reinterpret_cast<Fn>(sym);
  return true;
}

NvrtcApi load_nvrtc() {
  NvrtcApi api;
  std::string tried;
  void* handle = nullptr;
  for (const std::string& name : nvrtc_candidates()) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      api.library = name;
      break;
    }
    const char* why = dlerror();
    tried += "\n  " + name + ": " + (why ? why : "unknown dlopen error");
  }
  if (handle == nullptr) {
    const bool overridden = env::get(env::kNvrtcPath).has_value();
    api.error = "could not load NVRTC; tried:" + tried + "\n" +
                (overridden ? std::string(env::kNvrtcPath) + " is set; point it at an existing libnvrtc.so.13"
                            : "install the CUDA 13 NVRTC library (a CUDA toolkit, or from pip: "
                                  "pip install \"kiln[cu13]\" or nvidia-cuda-nvrtc) or set " +
                                  std::string(env::kNvrtcPath) + " to the full path of libnvrtc.so.13");
    return api;
  }
  std::string missing;
  bool ok = true;
  ok &= resolve(handle, "nvrtcVersion", api.version, missing);
  ok &= resolve(handle, "nvrtcCreateProgram", api.create_program, missing);
  ok &= resolve(handle, "nvrtcCompileProgram", api.compile_program, missing);
  ok &= resolve(handle, "nvrtcGetProgramLogSize", api.get_program_log_size, missing);
  ok &= resolve(handle, "nvrtcGetProgramLog", api.get_program_log, missing);
  ok &= resolve(handle, "nvrtcGetCUBINSize", api.get_cubin_size, missing);
  ok &= resolve(handle, "nvrtcGetCUBIN", api.get_cubin, missing);
  ok &= resolve(handle, "nvrtcGetPTXSize", api.get_ptx_size, missing);
  ok &= resolve(handle, "nvrtcGetPTX", api.get_ptx, missing);
  ok &= resolve(handle, "nvrtcDestroyProgram", api.destroy_program, missing);
  ok &= resolve(handle, "nvrtcGetErrorString", api.get_error_string, missing);
  if (!ok) {
    // Keep the handle open: unloading a library another component may also use buys nothing.
    NvrtcApi failed;
    failed.library = api.library;
    failed.error = "NVRTC library " + api.library + " lacks required symbols: " + missing;
    return failed;
  }
  return api;
}

StatusOr<const NvrtcApi*> nvrtc_api() {
  static const NvrtcApi kApi = load_nvrtc();
  if (!kApi.error.empty()) return CompileError(kApi.error);
  return &kApi;
}

std::string result_name(const NvrtcApi& api, nvrtcResult r) {
  const char* s = api.get_error_string(r);
  return std::string(s ? s : "NVRTC_ERROR_UNKNOWN") + " (" + std::to_string(static_cast<int>(r)) + ")";
}

// Owns one nvrtcProgram; destroys it on every path out of compile_program().
class Program {
 public:
  explicit Program(const NvrtcApi& api) : api_(api) {}
  ~Program() {
    if (prog_ != nullptr) api_.destroy_program(&prog_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram* out() { return &prog_; }
  nvrtcProgram get() const { return prog_; }

 private:
  const NvrtcApi& api_;
  nvrtcProgram prog_ = nullptr;
};

std::string program_log(const NvrtcApi& api, nvrtcProgram prog) {
  size_t size = 0;
  if (api.get_program_log_size(prog, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (api.get_program_log(prog, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();  // the size counts the terminator
  return log;
}

enum class Output { kCubin, kPtx };

struct ProgramOutput {
  std::string code;  // cubin bytes or PTX text
  std::string log;
};

// Compiles source once with options and returns the requested output and the program log.
StatusOr<ProgramOutput> compile_program(const NvrtcApi& api, const std::string& source,
                                        const std::vector<std::string>& options, const std::string& target,
                                        Output output) {
  // Every embedded template is visible as an in-memory header under its templates/-relative name.
  const std::vector<EmbeddedTemplate>& templates = embedded_templates();
  std::vector<const char*> header_names, header_sources;
  header_names.reserve(templates.size());
  header_sources.reserve(templates.size());
  for (const EmbeddedTemplate& t : templates) {
    header_names.push_back(t.name);
    header_sources.push_back(t.contents);
  }
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& o : options) argv.push_back(o.c_str());

  Program prog(api);
  nvrtcResult r = api.create_program(prog.out(), source.c_str(), "kiln_kernel.cu",
                                     static_cast<int>(header_sources.size()), header_sources.data(),
                                     header_names.data());
  if (r != NVRTC_SUCCESS) {
    return CompileError("nvrtcCreateProgram failed for kiln_kernel.cu (" + target + "): " + result_name(api, r));
  }
  r = api.compile_program(prog.get(), static_cast<int>(argv.size()), argv.data());
  ProgramOutput out;
  out.log = program_log(api, prog.get());
  if (r != NVRTC_SUCCESS) {
    std::string opts;
    for (const std::string& o : options) opts += " " + o;
    return CompileError("NVRTC could not compile kiln_kernel.cu for " + target + ": " + result_name(api, r) +
                        "\noptions:" + opts + "\nprogram log:\n" + out.log);
  }
  size_t size = 0;
  if (output == Output::kCubin) {
    r = api.get_cubin_size(prog.get(), &size);
    if (r == NVRTC_SUCCESS) {
      out.code.resize(size);
      if (size > 0) r = api.get_cubin(prog.get(), out.code.data());
    }
  } else {
    r = api.get_ptx_size(prog.get(), &size);
    if (r == NVRTC_SUCCESS) {
      out.code.resize(size);
      if (size > 0) r = api.get_ptx(prog.get(), out.code.data());
      while (!out.code.empty() && out.code.back() == '\0') out.code.pop_back();
    }
  }
  if (r != NVRTC_SUCCESS) {
    return CompileError(std::string("NVRTC compiled kiln_kernel.cu for ") + target + " but returned no " +
                        (output == Output::kCubin ? "cubin" : "PTX") + ": " + result_name(api, r));
  }
  if (out.code.empty()) {
    return CompileError(std::string("NVRTC returned an empty ") + (output == Output::kCubin ? "cubin" : "PTX") +
                        " for kiln_kernel.cu (" + target + ")");
  }
  return out;
}

// The cubin options with the real target swapped for the virtual one ("--gpu-architecture=sm_90a" ->
// "--gpu-architecture=compute_90a"), whose output is PTX. No ptxas runs, so -Xptxas=-v goes too.
std::vector<std::string> ptx_options(const Arch& arch, const std::vector<std::string>& options) {
  const std::string real = arch.nvrtc_option();
  std::string name = arch.name();  // "sm_90a"
  if (name.rfind("sm_", 0) == 0) name = "compute_" + name.substr(3);
  std::vector<std::string> out;
  for (const std::string& o : options) {
    if (o == real) {
      out.push_back("--gpu-architecture=" + name);
    } else if (o != "-Xptxas=-v") {
      out.push_back(o);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> nvrtc_options(const Arch& arch, const CompileOptions& opts) {
  // Deliberately absent: --use_fast_math (kiln's numerics are bitwise contracts: docs/numerics.md) and
  // -lineinfo (changes the cubin bytes without changing the code). -default-device makes plain
  // functions in the templates device functions, so they need no __device__ noise.
  std::vector<std::string> options = {arch.nvrtc_option(), "--std=c++17", "-Xptxas=-v", "-default-device"};
  options.insert(options.end(), opts.extra.begin(), opts.extra.end());
  std::sort(options.begin(), options.end());
  return options;
}

StatusOr<CompiledKernel> compile_cuda(const std::string& source, const Arch& arch,
                                      const CompileOptions& opts) {
  KILN_ASSIGN_OR_RETURN(const NvrtcApi* api, nvrtc_api());
  const std::vector<std::string> options = nvrtc_options(arch, opts);
  const std::string target = arch.name();

  CompiledKernel result;
  const auto start = std::chrono::steady_clock::now();
  KILN_ASSIGN_OR_RETURN(ProgramOutput cubin, compile_program(*api, source, options, target, Output::kCubin));
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.cubin = std::move(cubin.code);
  result.log = std::move(cubin.log);
  parse_ptxas_report(result.log, result);
  // NVRTC's own cache (CUDA 12.9+, where the driver is installed) returns a program it compiled before
  // with an empty log: read what the cubin records instead.
  if (result.registers < 0) read_cubin_resources(result.cubin, result);

  if (opts.want_ptx) {
    KILN_ASSIGN_OR_RETURN(ProgramOutput ptx,
                          compile_program(*api, source, ptx_options(arch, options), target + " (PTX)", Output::kPtx));
    result.ptx = std::move(ptx.code);
  }
  return result;
}

StatusOr<std::string> nvrtc_version() {
  KILN_ASSIGN_OR_RETURN(const NvrtcApi* api, nvrtc_api());
  int major = 0, minor = 0;
  nvrtcResult r = api->version(&major, &minor);
  if (r != NVRTC_SUCCESS) return CompileError("nvrtcVersion failed: " + result_name(*api, r));
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kiln

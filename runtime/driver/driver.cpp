#include "runtime/driver/driver.hpp"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "common/env.hpp"

namespace kiln {

namespace {

// Primary contexts are retained once per device for the process lifetime (never released:
// releasing at exit would race with other static destructors that may still free memory). Every
// Plan::run looks its device's up (ScopedContext::enter), so a retained one is read with one atomic
// load, no lock (dispatch cost); the lock only orders the first retain per device.
constexpr int kMaxDevices = 64;  // as RuntimeImpl::prepare_on_device's per-device bit mask
std::mutex g_ctx_mu;
std::array<std::atomic<CUcontext>, kMaxDevices> g_primary{};

// The retained primary context of `device`, or null when it is not retained yet (or out of range).
CUcontext retained_primary_context(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  return g_primary[static_cast<size_t>(device)].load(std::memory_order_acquire);
}

StatusOr<CUcontext> primary_context(const Driver* d, int device) {
  if (device < 0) return InvalidArgument("device ordinal " + std::to_string(device) + " out of range");
  std::lock_guard<std::mutex> lock(g_ctx_mu);
  if (CUcontext ctx = retained_primary_context(device)) return ctx;
  // An ordinal the driver does not know fails here with its own message (CUDA_ERROR_INVALID_DEVICE).
  CUdevice dev;
  KILN_RETURN_IF_ERROR(d->check(d->cuDeviceGet(&dev, device), "cuDeviceGet"));
  if (device >= kMaxDevices) return InvalidArgument("device ordinal " + std::to_string(device) + " out of range");
  CUcontext ctx;
  KILN_RETURN_IF_ERROR(d->check(d->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain"));
  g_primary[static_cast<size_t>(device)].store(ctx, std::memory_order_release);
  return ctx;
}

}  // namespace

Status Driver::check(CUresult r, const char* what) const {
  if (r == CUDA_SUCCESS) return Status::Ok();
  const char* name = nullptr;
  const char* desc = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &desc);
  return DriverError(std::string(what) + ": " + (name ? name : "CUDA_ERROR_UNKNOWN") + " (" +
                     std::to_string(static_cast<int>(r)) + "): " + (desc ? desc : "no description"));
}

const StatusOr<const Driver*>& Driver::get() {
  static const StatusOr<const Driver*> loaded = load();  // C++ guarantees thread-safe init
  return loaded;
}

StatusOr<const Driver*> Driver::load() {
  std::vector<std::string> tried;
  void* lib = nullptr;
  std::string last_error;
  std::vector<std::string> candidates;
  if (auto p = env::get(env::kCudaPath)) candidates.push_back(*p);
  candidates.push_back("libcuda.so.1");
  candidates.push_back("libcuda.so");
  for (const auto& c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    tried.push_back(c);
    if (lib) break;
    const char* e = dlerror();
    last_error = e ? e : "";
  }
  if (!lib) {
    std::string list;
    for (auto& t : tried) list += (list.empty() ? "" : ", ") + t;
    return NoDevice("no CUDA driver on this machine: could not dlopen " + list + " (" + last_error +
                    "); kiln can still parse, plan and compile kernels");
  }
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    return DriverError("the CUDA driver has no cuGetProcAddress_v2: it is older than CUDA 12.0; kiln "
                       "needs a driver for CUDA >= 13.0");
  }
  // The ABI version to request per entry point: CUDA_VERSION, except where CUDA 13.0 changed a
  // signature under an unchanged name while cuda.h still declares the old one (cudaTypedefs.h:
  // PFN_cuCtxSynchronize_v13000 takes a CUcontext, PFN_cuCtxGetDevice_v13000 too). Asking for 13000
  // there returns the new ABI and a call through the old prototype passes garbage (seen on the
  // H200, 2026-11-29: CUDA_ERROR_CONTEXT_IS_DESTROYED from cuCtxSynchronize).
  auto abi_version = [](const char* name) {
    std::string n(name);
    if (n == "cuCtxSynchronize" || n == "cuCtxGetDevice") return 2000;
    return CUDA_VERSION;
  };
  auto* d = new Driver();  // lives for the process
  std::string missing;
#define KILN_DRIVER_RESOLVE(name)                                                                  \
  {                                                                                                \
    void* fn = nullptr;                                                                            \
    CUdriverProcAddressQueryResult q;                                                              \
    if (get_proc(#name, &fn, abi_version(#name), CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !fn) \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                                 \
    else                                                                                           \
      d->name = reinterpret_cast<decltype(d->name)>(fn);                                           \
  }
  KILN_DRIVER_FUNCTIONS(KILN_DRIVER_RESOLVE)
#undef KILN_DRIVER_RESOLVE
  if (d->cuDriverGetVersion) d->cuDriverGetVersion(&d->version);
  if (!missing.empty()) {
    return DriverError("the CUDA driver (version " + std::to_string(d->version / 1000) + "." +
                       std::to_string(d->version % 1000 / 10) + ") lacks entry points kiln needs for CUDA " +
                       std::to_string(CUDA_VERSION / 1000) + ".x: " + missing);
  }
  if (d->version < kMinDriverVersion) {
    return DriverError("the CUDA driver supports CUDA " + std::to_string(d->version / 1000) + "." +
                       std::to_string(d->version % 1000 / 10) +
                       "; kiln's cubins come from NVRTC 13 and need a driver for CUDA >= 13.0 (R580 or newer)");
  }
  CUresult r = d->cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) return NoDevice("the CUDA driver is installed but reports no GPU");
  KILN_RETURN_IF_ERROR(d->check(r, "cuInit"));
  KILN_RETURN_IF_ERROR(d->check(d->cuDeviceGetCount(&d->device_count), "cuDeviceGetCount"));
  if (d->device_count == 0) return NoDevice("the CUDA driver reports no GPU");
  return static_cast<const Driver*>(d);
}

Status ScopedContext::enter(const Driver* d, int device) {
  CUcontext ctx = retained_primary_context(device);
  if (ctx == nullptr) {
    KILN_ASSIGN_OR_RETURN(ctx, primary_context(d, device));
  }
  CUcontext cur = nullptr;
  const CUresult r = d->cuCtxGetCurrent(&cur);
  if (r != CUDA_SUCCESS) return d->check(r, "cuCtxGetCurrent");
  if (cur == ctx) return Status::Ok();
  KILN_RETURN_IF_ERROR(d->check(d->cuCtxPushCurrent(ctx), "cuCtxPushCurrent"));
  d_ = d;
  pushed_ = true;
  return Status::Ok();
}

ScopedContext::~ScopedContext() {
  if (pushed_) {
    CUcontext popped;
    d_->cuCtxPopCurrent(&popped);
  }
}

}  // namespace kiln

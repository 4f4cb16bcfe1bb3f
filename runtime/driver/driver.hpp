// runtime/driver/driver.hpp — the CUDA driver, loaded with dlopen: the only place naming cu* symbols.
//
// kiln links no CUDA library. libcuda.so.1 (or $KILN_CUDA_PATH) is dlopen'd once; only
// cuGetProcAddress is taken with dlsym, and every other entry point is resolved through it for the
// CUDA_VERSION of the headers kiln was built with (a plain dlsym of e.g. cuMemAlloc would return the
// legacy v1 ABI). The driver's version is checked against what NVRTC 13 cubins need (CUDA >= 13.0).
//
//   KILN_ASSIGN_OR_RETURN(const Driver* d, kiln::Driver::get());
//   KILN_RETURN_IF_ERROR(d->check(d->cuMemAlloc(&ptr, bytes), "cuMemAlloc"));
#pragma once

#include <cuda.h>

#include <string>

#include "kiln/status.hpp"

namespace kiln {

// clang-format off
#define KILN_DRIVER_FUNCTIONS(X)                                                               \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute)    \
  X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) \
  X(cuCtxSetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) \
  X(cuLibraryLoadData) X(cuLibraryUnload) X(cuLibraryGetKernel) X(cuKernelSetAttribute)          \
  X(cuKernelGetFunction) X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD)              \
  X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD8) X(cuMemsetD32) X(cuMemsetD2D8Async) X(cuPointerGetAttribute) \
  X(cuStreamSynchronize) X(cuStreamIsCapturing) X(cuStreamCreate) X(cuStreamDestroy)            \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) \
  X(cuGetErrorName) X(cuGetErrorString) X(cuMemGetInfo)                                        \
  /* TMA tensor maps and cluster occupancy for the sm90 family (sm90_launch.cpp); */              \
  /* its launch with programmatic dependent launch (a launch attribute: cuLaunchKernelEx). */      \
  X(cuTensorMapEncodeTiled) X(cuOccupancyMaxActiveClusters) X(cuLaunchKernelEx)                  \
  /* Stream capture into CUDA graphs (the gpu tier's PDL chain replays one). */                   \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)   \
  X(cuGraphExecDestroy) X(cuGraphDestroy)
// clang-format on

// Minimum driver: NVRTC 13.0 emits cubins for the CUDA 13.0 ABI.
inline constexpr int kMinDriverVersion = 13000;

class Driver {
 public:
  // Loads the driver once (thread-safe). NO_DEVICE when libcuda cannot be loaded or has no GPU
  // support (cuInit fails with CUDA_ERROR_NO_DEVICE); DRIVER_ERROR when it is too old. The result is
  // the process's one copy (a reference: Plan::run asks on every launch and copies nothing).
  static const StatusOr<const Driver*>& get();

#define KILN_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_DRIVER_FUNCTIONS(KILN_DRIVER_MEMBER)
#undef KILN_DRIVER_MEMBER

  int version = 0;       // cuDriverGetVersion, e.g. 13000
  int device_count = 0;

  // OK for CUDA_SUCCESS, else DRIVER_ERROR "what: CUDA_ERROR_X (code): description".
  Status check(CUresult r, const char* what) const;

 private:
  Driver() = default;
  static StatusOr<const Driver*> load();
};

// Makes the primary context of `device` current on this thread for the scope and restores the
// previous context after. Per enter: one atomic load (the retained context) and one cuCtxGetCurrent;
// a push and a pop only when another context is current.
class ScopedContext {
 public:
  ScopedContext() = default;
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  Status enter(const Driver* d, int device);

 private:
  const Driver* d_ = nullptr;
  bool pushed_ = false;
};

}  // namespace kiln

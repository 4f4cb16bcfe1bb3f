// tests/common/fake_cuda_driver.cpp — a stand-in libcuda.so for host-only tests of the dispatch path.
//
// kiln dlopens libcuda (KILN_CUDA_PATH first) and resolves every entry point through
// cuGetProcAddress_v2 (runtime/driver/driver.cpp). This library exports that one symbol and hands
// out fakes: one device (compute capability 9.0, 132 SMs), primary contexts with a per-thread
// current-context stack, libraries and kernels as opaque handles, "device" memory that is host
// memory (malloc, memcpy, memset), and launches that do nothing but count: nothing here runs a
// kernel, and events and graphs are unsupported (CUDA_ERROR_NOT_SUPPORTED). Every call is counted per entry
// point, so a test can check how many driver calls one Plan::run makes, and time kiln's own host
// work with the driver's taken out.
//
//   setenv("KILN_CUDA_PATH", KILN_FAKE_CUDA_PATH, 1);   // before the first kiln::Driver::get()
//   auto calls = reinterpret_cast<long long (*)(const char*)>(dlsym(lib, "kiln_fake_cuda_calls"));
//   calls("cuLaunchKernel");                            // launches so far
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

// The entry points kiln resolves (runtime/driver/driver.hpp KILN_DRIVER_FUNCTIONS), by base name.
// clang-format off
#define FAKE_ENTRY_POINTS(X)                                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute)               \
  X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent)            \
  X(cuCtxSetCurrent) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize)           \
  X(cuLibraryLoadData) X(cuLibraryUnload) X(cuLibraryGetKernel) X(cuKernelSetAttribute)                     \
  X(cuKernelGetFunction) X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)       \
  X(cuMemcpyDtoD) X(cuMemsetD8) X(cuMemsetD32) X(cuMemsetD2D8Async) X(cuPointerGetAttribute) X(cuStreamSynchronize) \
  X(cuStreamIsCapturing) X(cuStreamCreate) X(cuStreamDestroy) X(cuEventCreate) X(cuEventDestroy)           \
  X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuGetErrorName) X(cuGetErrorString)        \
  X(cuMemGetInfo) X(cuTensorMapEncodeTiled) X(cuOccupancyMaxActiveClusters) X(cuLaunchKernelEx)            \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)            \
  X(cuGraphExecDestroy) X(cuGraphDestroy)
// clang-format on

enum Entry {
#define FAKE_ENUM(name) k_##name,
  FAKE_ENTRY_POINTS(FAKE_ENUM)
#undef FAKE_ENUM
  kEntryCount
};
const char* const kEntryNames[kEntryCount] = {
#define FAKE_NAME(name) #name,
    FAKE_ENTRY_POINTS(FAKE_NAME)
#undef FAKE_NAME
};

std::atomic<long long> g_calls[kEntryCount];
void count(Entry e) { g_calls[e].fetch_add(1, std::memory_order_relaxed); }

constexpr int kDevices = 1;
struct FakeContext {
  int device;
};
FakeContext g_contexts[kDevices] = {{0}};
struct FakeLibrary {
  int kernels = 0;
};
char g_kernels[64];  // kernel handles point into this (opaque to kiln)

thread_local CUcontext t_stack[16];
thread_local int t_depth = 0;

CUresult fake_cuInit(unsigned int) { return count(k_cuInit), CUDA_SUCCESS; }
CUresult fake_cuDriverGetVersion(int* v) { return count(k_cuDriverGetVersion), *v = 13000, CUDA_SUCCESS; }
CUresult fake_cuDeviceGetCount(int* n) { return count(k_cuDeviceGetCount), *n = kDevices, CUDA_SUCCESS; }
CUresult fake_cuDeviceGet(CUdevice* dev, int ordinal) {
  count(k_cuDeviceGet);
  if (ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  count(k_cuDeviceGetAttribute);
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetName(char* name, int len, CUdevice) {
  count(k_cuDeviceGetName);
  std::strncpy(name, "kiln fake CUDA driver", static_cast<size_t>(len));
  if (len > 0) name[len - 1] = '\0';
  return CUDA_SUCCESS;
}
CUresult fake_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  count(k_cuDevicePrimaryCtxRetain);
  if (dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = reinterpret_cast<CUcontext>(&g_contexts[dev]);
  return CUDA_SUCCESS;
}
CUresult fake_cuDevicePrimaryCtxRelease(CUdevice) { return count(k_cuDevicePrimaryCtxRelease), CUDA_SUCCESS; }
CUresult fake_cuCtxGetCurrent(CUcontext* ctx) {
  count(k_cuCtxGetCurrent);
  *ctx = t_depth > 0 ? t_stack[t_depth - 1] : nullptr;
  return CUDA_SUCCESS;
}
CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
  count(k_cuCtxSetCurrent);
  if (ctx == nullptr) {
    if (t_depth > 0) --t_depth;
  } else if (t_depth == 0) {
    t_stack[t_depth++] = ctx;
  } else {
    t_stack[t_depth - 1] = ctx;
  }
  return CUDA_SUCCESS;
}
CUresult fake_cuCtxPushCurrent(CUcontext ctx) {
  count(k_cuCtxPushCurrent);
  if (t_depth == 16) return CUDA_ERROR_INVALID_VALUE;
  t_stack[t_depth++] = ctx;
  return CUDA_SUCCESS;
}
CUresult fake_cuCtxPopCurrent(CUcontext* ctx) {
  count(k_cuCtxPopCurrent);
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext top = t_stack[--t_depth];
  if (ctx) *ctx = top;
  return CUDA_SUCCESS;
}
CUresult fake_cuCtxGetDevice(CUdevice* dev) {
  count(k_cuCtxGetDevice);
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = reinterpret_cast<FakeContext*>(t_stack[t_depth - 1])->device;
  return CUDA_SUCCESS;
}
CUresult fake_cuCtxSynchronize() { return count(k_cuCtxSynchronize), CUDA_SUCCESS; }
CUresult fake_cuLibraryLoadData(CUlibrary* lib, const void*, CUjit_option*, void**, unsigned int,
                                CUlibraryOption*, void**, unsigned int) {
  count(k_cuLibraryLoadData);
  *lib = reinterpret_cast<CUlibrary>(new FakeLibrary());  // loaded for the process, as kiln keeps them
  return CUDA_SUCCESS;
}
CUresult fake_cuLibraryUnload(CUlibrary lib) {
  count(k_cuLibraryUnload);
  delete reinterpret_cast<FakeLibrary*>(lib);
  return CUDA_SUCCESS;
}
CUresult fake_cuLibraryGetKernel(CUkernel* k, CUlibrary lib, const char*) {
  count(k_cuLibraryGetKernel);
  auto* l = reinterpret_cast<FakeLibrary*>(lib);
  *k = reinterpret_cast<CUkernel>(&g_kernels[(reinterpret_cast<uintptr_t>(l) / 16 + l->kernels++) % 64]);
  return CUDA_SUCCESS;
}
CUresult fake_cuKernelSetAttribute(CUfunction_attribute, int, CUkernel, CUdevice) {
  return count(k_cuKernelSetAttribute), CUDA_SUCCESS;
}
CUresult fake_cuKernelGetFunction(CUfunction* f, CUkernel k) {
  count(k_cuKernelGetFunction);
  *f = reinterpret_cast<CUfunction>(k);
  return CUDA_SUCCESS;
}
CUresult fake_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int, CUstream, void** params, void**) {
  count(k_cuLaunchKernel);
  if (f == nullptr || params == nullptr || gx * gy * gz == 0 || bx * by * bz == 0) return CUDA_ERROR_INVALID_VALUE;
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  return CUDA_SUCCESS;
}
// cuLaunchKernelEx launches that carried CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION with a
// non-zero value (kiln_fake_cuda_programmatic_launches).
std::atomic<long long> g_programmatic_launches{0};
CUresult fake_cuLaunchKernelEx(const CUlaunchConfig* cfg, CUfunction f, void** params, void**) {
  count(k_cuLaunchKernelEx);
  if (cfg == nullptr || f == nullptr || params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (cfg->gridDimX * cfg->gridDimY * cfg->gridDimZ == 0 ||
      cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (cfg->numAttrs > 0 && cfg->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (t_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  for (unsigned i = 0; i < cfg->numAttrs; ++i) {
    const CUlaunchAttribute& a = cfg->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
        a.value.programmaticStreamSerializationAllowed)
      g_programmatic_launches.fetch_add(1, std::memory_order_relaxed);
  }
  return CUDA_SUCCESS;
}
void* host(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
CUresult fake_cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  count(k_cuMemAlloc);
  void* m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (m == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(m));
  return CUDA_SUCCESS;
}
CUresult fake_cuMemFree(CUdeviceptr p) { return count(k_cuMemFree), std::free(host(p)), CUDA_SUCCESS; }
CUresult fake_cuMemcpyHtoD(CUdeviceptr d, const void* s, size_t n) {
  return count(k_cuMemcpyHtoD), std::memcpy(host(d), s, n), CUDA_SUCCESS;
}
CUresult fake_cuMemcpyDtoH(void* d, CUdeviceptr s, size_t n) {
  return count(k_cuMemcpyDtoH), std::memcpy(d, host(s), n), CUDA_SUCCESS;
}
CUresult fake_cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return count(k_cuMemcpyDtoD), std::memmove(host(d), host(s), n), CUDA_SUCCESS;
}
CUresult fake_cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) {
  return count(k_cuMemsetD8), std::memset(host(d), v, n), CUDA_SUCCESS;
}
CUresult fake_cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n) {
  count(k_cuMemsetD32);
  auto* w = static_cast<unsigned int*>(host(d));
  for (size_t i = 0; i < n; ++i) w[i] = v;
  return CUDA_SUCCESS;
}
CUresult fake_cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t width, size_t height, CUstream) {
  count(k_cuMemsetD2D8Async);
  for (size_t r = 0; r < height; ++r) std::memset(static_cast<char*>(host(d)) + r * pitch, v, width);
  return CUDA_SUCCESS;
}
CUresult fake_cuPointerGetAttribute(void*, CUpointer_attribute, CUdeviceptr) {
  return count(k_cuPointerGetAttribute), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_cuStreamSynchronize(CUstream) { return count(k_cuStreamSynchronize), CUDA_SUCCESS; }
CUresult fake_cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* s) {
  count(k_cuStreamIsCapturing);
  *s = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
// Streams are opaque handles that nothing waits on (the fake runs no work).
char g_streams[1];
CUresult fake_cuStreamCreate(CUstream* s, unsigned int) {
  count(k_cuStreamCreate);
  *s = reinterpret_cast<CUstream>(&g_streams[0]);
  return CUDA_SUCCESS;
}
CUresult fake_cuStreamDestroy(CUstream) { return count(k_cuStreamDestroy), CUDA_SUCCESS; }
// Graphs are unsupported: nothing here captures or replays.
CUresult fake_cuStreamBeginCapture(CUstream, CUstreamCaptureMode) {
  return count(k_cuStreamBeginCapture), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_cuStreamEndCapture(CUstream, CUgraph*) {
  return count(k_cuStreamEndCapture), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long) {
  return count(k_cuGraphInstantiateWithFlags), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_cuGraphLaunch(CUgraphExec, CUstream) {
  return count(k_cuGraphLaunch), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_cuGraphExecDestroy(CUgraphExec) {
  return count(k_cuGraphExecDestroy), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_cuGraphDestroy(CUgraph) { return count(k_cuGraphDestroy), CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_cuEventCreate(CUevent*, unsigned int) { return count(k_cuEventCreate), CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_cuEventDestroy(CUevent) { return count(k_cuEventDestroy), CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_cuEventRecord(CUevent, CUstream) { return count(k_cuEventRecord), CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_cuEventSynchronize(CUevent) { return count(k_cuEventSynchronize), CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_cuEventElapsedTime(float*, CUevent, CUevent) {
  return count(k_cuEventElapsedTime), CUDA_ERROR_NOT_SUPPORTED;
}
CUresult fake_cuGetErrorName(CUresult r, const char** s) {
  count(k_cuGetErrorName);
  switch (r) {
    case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; break;
  }
  return CUDA_SUCCESS;
}
CUresult fake_cuGetErrorString(CUresult, const char** s) {
  count(k_cuGetErrorString);
  *s = "(kiln fake CUDA driver)";
  return CUDA_SUCCESS;
}
CUresult fake_cuMemGetInfo(size_t*, size_t*) { return count(k_cuMemGetInfo), CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                     const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                     CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  count(k_cuTensorMapEncodeTiled);
  std::memset(map, 0, sizeof *map);
  return CUDA_SUCCESS;
}
CUresult fake_cuOccupancyMaxActiveClusters(int* n, CUfunction, const CUlaunchConfig*) {
  count(k_cuOccupancyMaxActiveClusters);
  *n = 66;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                                                     CUdriverProcAddressQueryResult* status) {
#define FAKE_LOOKUP(name)                                  \
  if (std::strcmp(symbol, #name) == 0) {                   \
    *pfn = reinterpret_cast<void*>(&fake_##name);          \
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;     \
    return CUDA_SUCCESS;                                   \
  }
  FAKE_ENTRY_POINTS(FAKE_LOOKUP)
#undef FAKE_LOOKUP
  *pfn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

// Calls of entry point `name` so far (-1 for a name this library does not fake).
__attribute__((visibility("default"))) long long kiln_fake_cuda_calls(const char* name) {
  for (int i = 0; i < kEntryCount; ++i) {
    if (std::strcmp(name, kEntryNames[i]) == 0) return g_calls[i].load(std::memory_order_relaxed);
  }
  return -1;
}

// cuLaunchKernelEx launches so far that allowed programmatic stream serialization (PDL).
__attribute__((visibility("default"))) long long kiln_fake_cuda_programmatic_launches() {
  return g_programmatic_launches.load(std::memory_order_relaxed);
}

}  // extern "C"

// kiln/kernel.hpp — one compiled kernel: what NVRTC produced, what the kernel cache stores, what
// Runtime::compile returns.
//
// The one record of a kernel along the whole compile path: compile_cuda (compiler/nvrtc) fills the
// compiler's fields (cubin, ptx, log, resources, compile_ms), the compile service
// (compiler/service/compile_service.hpp) adds the emitted kernel's and the cache row's, and the kernel
// cache (cache/kernel_cache.hpp) stores and returns the same record. Resource fields are -1 where
// neither ptxas nor the cubin reported them. A row read straight from the cache (KernelCache::get,
// list) has no source, ptx or log, stack_frame -1 and threads, smem_dynamic 0; Runtime::compile
// always fills the emitted fields.
//
//   KILN_ASSIGN_OR_RETURN(kiln::CompiledKernel k, rt->compile(spec, family, cfg, arch));
//   // k.cubin, k.entry, k.threads, k.smem_dynamic, k.registers, k.from_cache
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct CompiledKernel {
  std::string key;            // content key (hex sha256 of source, templates, NVRTC, options, arch)
  std::string entry;          // extern "C" kernel symbol
  std::string source;         // the generated CUDA C++ translation unit
  std::string arch;           // target arch name, "sm_90a"
  std::string spec;           // canonical spec text
  std::string config;         // TileConfig::to_string(), or the family name for families without one
  std::string cubin;          // ELF bytes
  std::string ptx;            // PTX text, when asked for (the cache never keeps it)
  std::string log;            // NVRTC program log with ptxas's -v report (the cache never keeps it)
  int registers = -1;         // per thread
  int smem_static = -1;       // bytes of static shared memory
  int stack_frame = -1;       // bytes per thread (the cache does not keep it)
  int spill_stores = -1;      // bytes (from the cache: the larger of stores and loads)
  int spill_loads = -1;       // bytes (from the cache: the larger of stores and loads)
  int threads = 0;            // block size
  int smem_dynamic = 0;       // bytes of dynamic shared memory a launch asks for
  double compile_ms = 0;      // NVRTC time of the cubin compile (from the cache: the original compile's)
  bool from_cache = false;    // found in the kernel cache, not compiled by this call
  int64_t created_unix = 0;   // cache row: when it was stored (0: not from the cache)
  int64_t last_used_unix = 0; // cache row: when it was last used (0: not from the cache)
};

}  // namespace kiln

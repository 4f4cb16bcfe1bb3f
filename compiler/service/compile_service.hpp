// compiler/service/compile_service.hpp — spec + config -> compiled kernel, through the kernel cache.
//
// One call: emit the source (compiler/emit), compute its content key (cache/cache_key.hpp: source,
// template tree, NVRTC version and options, arch), look the key up in the kernel cache, and on a miss
// compile with NVRTC (compiler/nvrtc) and store the result. The answer is the one kernel record
// (include/kiln/kernel.hpp) with the emitted kernel's fields (key, entry, source, threads,
// smem_dynamic, arch, spec, config) always set. The Runtime holds one service; the tuner compiles
// its candidates through it (Runtime::compile). No GPU is needed.
// Invariants:
//   - single flight: calls with the same flight key (the content key, + "+ptx" with want_ptx) that
//     overlap share one NVRTC compile, the first caller's; the others wait for it and share its
//     result (a failed compile is shared too, and not memoized: a later call compiles again);
//   - with a cache, a key is compiled once per service however the threads interleave: the owner of
//     a flight reads the cache again after joining, and writes the cache before leaving the flight
//     table;
//   - want_ptx bypasses the cache both ways (PTX is never stored): such a call compiles unless it
//     joins another want_ptx call's flight;
//   - the cache is an optimisation: a failing read counts as a miss and a failing write (a full
//     disk) is ignored; neither fails the compile;
//   - the cache row's config text is TileConfig::to_string(), or the family name for the families
//     without a tile config (the reference GEMM, the MXFP8 dequantizer);
//   - the KernelCache passed in outlives the service (the service does not own it).
//
//   kiln::CompileService service(cache.get());        // nullptr: no cache
//   KILN_ASSIGN_OR_RETURN(kiln::CompiledKernel k, service.compile(spec, family, cfg, arch, nullptr, false));
//   // k.cubin, k.entry, k.from_cache; service.compiles(), service.cache_hits()
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "cache/kernel_cache.hpp"
#include "common/flight_table.hpp"
#include "compiler/epilogue/epilogue.hpp"
#include "compiler/plan/plan.hpp"
#include "kiln/kernel.hpp"

namespace kiln {

class CompileService {
 public:
  // cache: where kernels are looked up and stored; null: compile in memory only.
  explicit CompileService(KernelCache* cache) : cache_(cache) {}
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  // Generates and compiles (or finds in the cache) one kernel. epilogue: the spec's lowered epilogue
  // where the caller has it (spec_epilogue_program(spec)'s value); null: emit_kernel lowers
  // spec.epilogue itself. want_ptx: also produce PTX (then the cache is neither read nor written).
  StatusOr<CompiledKernel> compile(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                   const Arch& arch, const EpilogueProgram* epilogue, bool want_ptx);

  int64_t compiles() const { return compiles_.load(); }     // NVRTC compilations performed
  int64_t cache_hits() const { return cache_hits_.load(); } // kernels found in the cache
  KernelCache* cache() const { return cache_; }             // null without a cache

 private:
  KernelCache* const cache_;
  std::atomic<int64_t> compiles_{0}, cache_hits_{0};
  // flight key -> the owner's result, while its compile is in progress.
  FlightTable<StatusOr<CompiledKernel>> flights_;
};

}  // namespace kiln

// runtime/runtime_impl.hpp — what a Runtime and a Plan hold (private to runtime/).
//
// Invariants:
// - One compile per content key per runtime however many threads ask (the compile service's single
//   flight, compiler/service/compile_service.hpp); one cuLibraryLoadData per load key per runtime.
// - A Plan is immutable after creation except for its per-bucket kernel pointers, which are set
//   once (atomically) and point into the Runtime's store, which outlives every Plan (shared_ptr).
// - Plan::run does no allocation, no SQLite and no compile when its kernel is loaded: an atomic
//   load per bucket, operand checks, one cuLaunchKernelEx.
#pragma once

#include <array>
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "common/flight_table.hpp"
#include "compiler/epilogue/epilogue.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/plan/planner.hpp"
#include "compiler/service/compile_service.hpp"
#include "kiln/kiln.hpp"
#include "runtime/driver/driver.hpp"
#include "runtime/workspace.hpp"

namespace kiln {

struct LoadedKernel {
  CompiledKernel compiled;
  CUlibrary library = nullptr;
  CUkernel kernel = nullptr;
  std::mutex device_mu;
  std::atomic<uint64_t> smem_set_devices{0};  // bit d: dynamic smem limit set on device d
};

class RuntimeImpl {
 public:
  RuntimeOptions options;
  std::unique_ptr<KernelCache> cache;  // null when disabled or unusable
  Status cache_status;                 // why the cache is unusable (kept for messages)
  // Emit -> cache -> NVRTC, single flight per content key, and the compiles / cache_hits counters
  // (compiler/service/compile_service.hpp). Built by Runtime::create over cache.get(); declared
  // after `cache`, so it is destroyed first.
  std::unique_ptr<CompileService> compile_service;

  std::atomic<int64_t> loads{0};

  Status device_status() const;
  // arch with the device facts a plan counts with (Runtime::plan; runtime.cpp).
  Arch with_facts(const Arch& arch, const StatusOr<Arch>& device) const;
  const StatusOr<const Driver*>& driver() const;  // Driver::get(): the process's one copy

  // Compiles (or finds) through compile_service and loads; single flight per key. epilogue: the spec's
  // lowered epilogue where the caller has it (spec_epilogue_program(spec)'s value); null: lowered
  // again by emit_kernel.
  StatusOr<LoadedKernel*> load(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, const Arch& arch,
                               const EpilogueProgram* epilogue = nullptr);
  // Sets the dynamic shared memory limit of k on device (once per device).
  Status prepare_on_device(LoadedKernel* k, int device);

 private:
  FlightTable<StatusOr<LoadedKernel*>> loaded_;  // load key -> the kernel (kept for the process)
};

// A plan as the runtime holds it: the planner's record (compiler/plan/planner.hpp: configs, families,
// launch rules, the lowered epilogue, the MXFP8 pre-pass's plan) and the kernels loaded for it.
class PlanImpl : public PlanRecord {
 public:
  PlanImpl(std::shared_ptr<RuntimeImpl> runtime, PlanRecord record);

  std::shared_ptr<RuntimeImpl> rt;
  mutable std::array<std::atomic<LoadedKernel*>, kMBuckets.size()> kernels{};
  PlanWorkspace workspace;  // split-K's counters and partials (runtime/workspace.hpp)
  // MXFP8 at large M (runtime/mx_prepass.hpp): prepass_plan as a runnable plan, and the conversion
  // kernel (loaded once). Null where the plan has no pre-pass.
  std::shared_ptr<const PlanImpl> prepass_gemm;
  mutable std::atomic<LoadedKernel*> prepass_convert{nullptr};
  // Quantized dgrad (runtime/dgrad_transpose.hpp): W's transpose kernel (loaded once).
  mutable std::atomic<LoadedKernel*> transpose_kernel{nullptr};

  // The spec's epilogue vector operands in slot order (empty without an epilogue).
  const std::vector<EpilogueOperand>& epilogue_operands() const;
  // The workspace bytes run() needs for m rows with the bucket's config (0 for most configs): split-K's,
  // then a quantized dgrad's transposed W (TransposedWLayout).
  size_t workspace_bytes(int bucket, int64_t m) const;

  StatusOr<LoadedKernel*> kernel_for(int bucket) const;
};

// NOT_READY when `stream` is being captured into a CUDA graph: a run never compiles or loads then.
// `what` names the kernel that is not loaded (built only on that error path by the caller's choice).
Status not_capturing(const Driver& d, CUstream_st* stream, const std::string& what);

// Plan::run on an impl (the MXFP8 pre-pass runs its bf16 plan through it).
Status run_plan(const PlanImpl& p, const Operands& ops, void* workspace, size_t workspace_bytes,
                CUstream_st* stream);

}  // namespace kiln

// runtime/runtime_impl.hpp — what a Runtime and a Plan hold (private to runtime/).
//
// Invariants:
// - One compile per content key per process however many threads ask (single flight through a
//   shared_future per key); one cuLibraryLoadData per key per process.
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
#include "compiler/epilogue/epilogue.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/plan.hpp"
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

  std::atomic<int64_t> compiles{0}, cache_hits{0}, loads{0};

  Status device_status() const;
  // arch with the device facts a plan counts with (Runtime::plan; runtime.cpp).
  Arch with_facts(const Arch& arch, const StatusOr<Arch>& device) const;
  const StatusOr<const Driver*>& driver() const;  // Driver::get(): the process's one copy

  StatusOr<CompiledKernel> compile(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                   const Arch& arch, bool want_ptx);
  // Compiles (or finds) and loads; single flight per key.
  StatusOr<LoadedKernel*> load(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, const Arch& arch);
  // Sets the dynamic shared memory limit of k on device (once per device).
  Status prepare_on_device(LoadedKernel* k, int device);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_future<StatusOr<LoadedKernel*>>> loaded_;
  std::unordered_map<std::string, std::shared_future<StatusOr<CompileResult>>> compiling_;
};

// The M buckets (kMBuckets, bucket_index) and the launch rules are compiler/plan/launch_rule.hpp's.

class PlanImpl {
 public:
  std::shared_ptr<RuntimeImpl> rt;
  KernelSpec spec;
  std::string canonical;
  ProblemSizes sizes;
  Arch arch;
  KernelFamily family;
  std::array<TileConfig, kMBuckets.size()> configs;
  // The family of each bucket's kernel: `family`, except buckets that measured faster on
  // the portable family (compiler/plan/sm90_plan.hpp sm90_portable_bucket).
  std::array<KernelFamily, kMBuckets.size()> families;
  std::vector<EpilogueOperand> epilogue_operands;  // the spec's vectors in slot order
  // Each bucket's launch as a function of M (grid, split-K slots, workspace, TMA boxes), recorded by the
  // planner when the plan is made: run() evaluates these and never calls back into planning.
  std::array<LaunchRule, kMBuckets.size()> launch;
  mutable std::array<std::atomic<LoadedKernel*>, kMBuckets.size()> kernels{};
  PlanWorkspace workspace;  // split-K's counters and partials (runtime/workspace.hpp)
  // MXFP8 at large M (runtime/mx_prepass.hpp): the same problem on bf16 operands, and the
  // conversion kernel (loaded once). Null where the plan has no pre-pass.
  std::shared_ptr<const PlanImpl> prepass_gemm;
  KernelSpec prepass_convert_spec;  // the conversion kernel's spec
  LaunchRule prepass_convert_launch;
  MxPrepassLayout prepass_layout;   // its workspace layout and from which M it applies
  mutable std::atomic<LoadedKernel*> prepass_convert{nullptr};
  // The workspace bytes run() needs for m rows with the bucket's config (0 for most configs).
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

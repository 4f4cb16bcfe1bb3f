// kiln/kiln.hpp — the C++ API of kiln.
//
// A Runtime owns the driver table, the kernel cache and the loaded kernels; a Plan is an immutable
// (spec, n, k) problem that covers every M and may be run on several streams at once.
// Without a GPU, kiln still parses, plans and compiles; run() returns NO_DEVICE saying so.
//
//   KILN_ASSIGN_OR_RETURN(auto rt, kiln::Runtime::create({}));
//   KILN_ASSIGN_OR_RETURN(kiln::KernelSpec spec, kiln::parse_spec("gemm a=bf16 b=bf16 out=bf16"));
//   KILN_ASSIGN_OR_RETURN(kiln::Plan plan, rt->plan(spec, {.m = 4096, .n = 7168, .k = 7168}));
//   kiln::Operands ops{.a = &x, .b = &w, .out = &y};      // DLTensors on the GPU
//   KILN_RETURN_IF_ERROR(plan.run(ops, nullptr, 0, stream));
#pragma once

#include <dlpack/dlpack.h>

#include <memory>
#include <optional>
#include <string>

#include "kiln/arch.hpp"
#include "kiln/config.hpp"
#include "kiln/kernel.hpp"  // CompiledKernel: what compile() returns
#include "kiln/spec.hpp"
#include "kiln/status.hpp"

struct CUstream_st;

namespace kiln {

struct RuntimeOptions {
  std::string cache_dir;      // empty: KernelCache::default_dir()
  bool disable_cache = false; // compile in memory only
  // At most this many SMs for kiln's kernels (0: all): plans count waves and split-K over the cap and
  // persistent kernels launch at most that many CTAs, leaving the other SMs to concurrent work (e.g.
  // expert-parallel communication).
  int max_sms = 0;
};

// Shapes and dtypes per spec: runtime/operands.hpp. Grouped problems: X [M_total, K] (offsets layout)
// or [E, max_m, K] (masked), W [E, N, K], Y like X with N columns (N / 2 with gate_up: a GLU's output).
struct Operands {
  const DLTensor* a = nullptr;        // X [M, K]
  const DLTensor* b = nullptr;        // W [N, K]
  DLTensor* out = nullptr;            // Y [M, N]
  const DLTensor* a_scale = nullptr;  // per the spec's granularity (f32, or E8M0 bytes)
  const DLTensor* b_scale = nullptr;  // per the spec's granularity (f32, E8M0 or UE4M3 bytes)
  const DLTensor* offsets = nullptr;  // grouped layout=offsets: int32 [E] cumulative row ends
  const DLTensor* counts = nullptr;   // grouped layout=masked: int32 [E] rows per expert
  const DLTensor* b_global = nullptr; // nvfp4 b: f32 global decode scale, [1] or [E] (nvfp4_global=expert)
  // quantize specs (a = X, out = the codes; compiler/plan/quantize_plan.hpp, docs/formats.md):
  DLTensor* out_scale = nullptr;      // the written scales: f32 [1] | f32 [M] | [M, K/block] | transposed [K, M/block]
  DLTensor* out_global = nullptr;     // out=nvfp4: f32 [1], written: the global decode scale amax / (6 * bound)
  // The vectors the spec's epilogue reads, named as in the epilogue language
  // (docs/epilogue.md). Each is f32, bf16 or f16 on the device, any strides (e.g. gpt-oss's
  // interleaved [E, 2I] bias as the views bias[:, 0::2] / bias[:, 1::2]); shapes by the index the
  // epilogue reads it with ([n] counts OUTPUT columns: N / 2 with gate_up):
  //   [m] [M] (masked: [E * max_m] or [E, max_m])   [n] [N_out]   [e] [E]   [e,n] [E, N_out]
  //   [m,n] [M, N_out] (masked: also [E, max_m, N_out]); residual may not overlap out.
  // A vector the epilogue does not read must be NULL.
  const DLTensor* bias = nullptr;          // bias[n] | bias[e,n]
  const DLTensor* scale = nullptr;         // scale[m]: per-token factors (MoE router weights)
  const DLTensor* colscale = nullptr;      // colscale[n] | colscale[e,n]
  const DLTensor* expert_scale = nullptr;  // expert_scale[e]
  const DLTensor* residual = nullptr;      // residual[m,n]
  const DLTensor* gate_bias = nullptr;     // gate_bias[n] | gate_bias[e,n] (GLU)
  const DLTensor* up_bias = nullptr;       // up_bias[n] | up_bias[e,n] (GLU)
};

// Statistics a caller (tests, CLI, tuner) can read; counts are per Runtime.
struct RuntimeCounters {
  int64_t compiles = 0;      // NVRTC compilations performed
  int64_t cache_hits = 0;    // kernels found in the SQLite cache
  int64_t loads = 0;         // cuLibraryLoadData calls
};

class Runtime;
class PlanImpl;

class Plan {
 public:
  const KernelSpec& spec() const;
  const ProblemSizes& sizes() const;
  KernelFamily family() const;
  const Arch& arch() const;
  // The config run() uses for m rows.
  TileConfig config_for(int64_t m) const;
  // The family of the kernel run() uses for m rows: family(), or the portable family for the buckets
  // where it measured faster (grouped FP8 at a few rows per expert on sm_90a).
  KernelFamily family_for(int64_t m) const;
  // Device workspace run() needs for m rows: split-K's counters and partials, and a quantized dgrad's
  // transposed W (kiln.h kiln_plan_workspace_size); 0 for most plans.
  size_t workspace_bytes(int64_t m) const;
  // MXFP8 at large M (runtime/mx_prepass.hpp): the workspace bytes with which run() converts X and W to
  // bf16 first and runs the bf16 kernel (faster at large M; 1 MiB + 2 (M + N) K bytes, grouped 2 (M + E N)
  // K); 0 where the plan has no such path for m rows of X (grouped: every expert's rows; masked: E x max_m).
  // run() takes it when its workspace has at least this many bytes (no zero fill needed; the first MiB,
  // the split-K counters' place, is never written); without, or with codes not 16-byte aligned, the
  // fused MXFP8 kernel runs and nothing is allocated for it.
  size_t mx_prepass_workspace_bytes(int64_t m) const;
  // The bf16 kernel's config and family the pre-pass runs for m rows of X (grouped: the bucket of m / E
  // rows per expert; meaningful where mx_prepass_workspace_bytes(m) > 0).
  TileConfig mx_prepass_config_for(int64_t m) const;
  KernelFamily mx_prepass_family_for(int64_t m) const;
  // Compiles and loads the plan's kernels (before graph capture).
  Status prepare() const;
  Status run(const Operands& ops, void* workspace, size_t workspace_bytes, CUstream_st* stream) const;
  // JSON: spec, family, arch, n, k, and per M bucket its m_max and config (+ "family" where the bucket runs
  // another family; + "fp8_accumulation": "promoted" or "fast" for e4m3 / e5m2 kernels of the sm90 family,
  // "fast" meaning wgmma's own FP8 accumulator as in cuBLAS's fast accumulation; other buckets accumulate in
  // f32 or always promote); "mx_prepass" where it applies.
  std::string describe_json() const;

 private:
  friend class Runtime;
  explicit Plan(std::shared_ptr<const PlanImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const PlanImpl> impl_;
};

class RuntimeImpl;

class Runtime {
 public:
  static StatusOr<std::shared_ptr<Runtime>> create(const RuntimeOptions& options);
  ~Runtime();

  // OK when a GPU is usable; NO_DEVICE (or DRIVER_ERROR) with the reason otherwise.
  Status device_status() const;
  // The arch of the current device; NO_DEVICE without one.
  StatusOr<Arch> device_arch() const;
  // Plans spec for sizes (n, k fixed; m a hint for the default config). No GPU needed.
  // arch: the device's when omitted (sm_90a when there is no device).
  StatusOr<Plan> plan(const KernelSpec& spec, const ProblemSizes& sizes,
                      std::optional<Arch> arch = std::nullopt);
  // The same with a pinned config or family (PlanOptions, kiln/config.hpp).
  StatusOr<Plan> plan(const KernelSpec& spec, const ProblemSizes& sizes, const PlanOptions& options);
  // Generates and compiles (or finds in the cache) one kernel without loading it. No GPU needed.
  StatusOr<CompiledKernel> compile(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                                   const Arch& arch, bool want_ptx = false);
  RuntimeCounters counters() const;
  std::string cache_path() const;  // empty when the cache is disabled

 private:
  friend struct RuntimeAccess;  // kiln's own modules (runtime/runtime_access.hpp), not part of the API
  explicit Runtime(std::shared_ptr<RuntimeImpl> impl);
  std::shared_ptr<RuntimeImpl> impl_;
};

}  // namespace kiln

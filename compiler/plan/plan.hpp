// compiler/plan/plan.hpp — KernelSpec + Arch -> kernel family, can_implement, tile configs.
//
// The planner decides whether kiln has a kernel for a spec on an arch, and says why not when it
// has none (UNSUPPORTED naming the missing piece). It owns TileConfig — a self-describing tuple,
// never an index — and the pure host heuristic that picks a default config for a shape.
//
//   KILN_ASSIGN_OR_RETURN(KernelFamily fam, kiln::select_family(spec, arch));
//   KILN_RETURN_IF_ERROR(kiln::can_implement(spec, arch, sizes));
//   TileConfig cfg = kiln::default_config(spec, arch, sizes);
//   LaunchShape ls = kiln::launch_shape(spec, cfg, sizes);   // grid, block, dynamic smem
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "compiler/plan/launch_rule.hpp"  // LaunchShape, LaunchRule
#include "kiln/arch.hpp"
#include "kiln/config.hpp"  // KernelFamily, TileConfig
#include "kiln/spec.hpp"

namespace kiln {

nlohmann::json config_to_json(const TileConfig& c);
StatusOr<TileConfig> config_from_json(const nlohmann::json& j);


// Which family implements spec on arch; UNSUPPORTED names what is missing
// ("mxfp4 weights: the sm80 family supports bf16/f16/e4m3/e5m2 operands with tensor scales so far").
StatusOr<KernelFamily> select_family(const KernelSpec& spec, const Arch& arch);
// The family a plan's heuristic runs the M bucket of `rows_per_expert` rows on (rows for a dense
// problem): select_family's, except the sm90 family's grouped FP8 decode buckets, which run on the
// portable family (sm90_portable_bucket). The tuner tunes each bucket in this family's space.
StatusOr<KernelFamily> select_bucket_family(const KernelSpec& spec, const Arch& arch, int64_t rows_per_expert);
// Whether the reference family (templates/kernels/reference_gemm.cuh) computes spec on arch: dense
// fprop GEMM, bf16/f16/e4m3/e5m2 operands in any combination, unscaled or per-tensor scales, bf16/f16/f32
// out. Callers choose the reference explicitly; emit_kernel checks this for it.
Status check_reference_spec(const KernelSpec& spec, const Arch& arch);
// Sizes and alignment for the chosen family: which operand, which value, what would be accepted.
Status can_implement(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);
// The same for a spec validate_spec accepted (not validated again: make_plan validates once).
Status can_implement_valid_spec(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);
// Static checks of a config against the family and arch (shared memory, warp tiling, block_k bytes).
// The three-argument forms use select_family's family; the others name it (e.g. the portable family on
// sm_90a, which KILN_FAMILY=sm80 forces).
Status check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg);
Status check_config(const KernelSpec& spec, const Arch& arch, KernelFamily family, const TileConfig& cfg);
// The relative error a check allows the kernel of (family, cfg) against the reference, given the
// format's `base` (verify/check.cpp): more where wgmma accumulates FP8 in a register narrower than f32
// (the sm90 family: sm90_check_tolerance; the warpgroup decode kernel, decode 2), else base.
double kernel_check_tolerance(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, int64_t k,
                              double base);
// Pure host heuristic: a valid config for this shape.
TileConfig default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);
TileConfig default_config(const KernelSpec& spec, const Arch& arch, KernelFamily family,
                          const ProblemSizes& sizes);
LaunchShape launch_shape(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                         const ProblemSizes& sizes);
int smem_bytes(const KernelSpec& spec, const TileConfig& cfg);
// A config field's value and its allowed range (lo == hi: that value only).
struct ConfigRange {
  const char* field;
  int v, lo, hi;
};
// Ok, or INVALID_ARGUMENT "<name><field>=<v> is out of range (lo..hi)" for the first field out of range.
Status check_config_ranges(const std::string& name, std::initializer_list<ConfigRange> ranges);

// Small M: whether the portable family's decode kernel (TileConfig::decode) computes spec
// on arch: dense or grouped (offsets / masked) fprop GEMM without gate|up, two equal 16-bit operands or
// two FP8 operands (sm_89+) with tensor, m / n or DeepSeek block scales; bf16 / f16 / f32 out. (Plans
// run it by default on dense buckets only: decode_bucket.)
bool decode_supports(const KernelSpec& spec, const Arch& arch);
// The decode kernel's heuristic config for sizes.m <= 16 rows (8 or 16 tokens per CTA, 16 weight rows,
// two 64-byte segments per warp step, two steps in flight, 4 warps: the best of an H200 sweep, or within
// 5% of it, on every decode shape; bench/RESULTS.md). Only meaningful where decode_supports(spec, arch).
TileConfig decode_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);
// Small M with 4-bit weights: whether the 4-bit decode kernel (TileConfig::decode = 1,
// templates/kernels/sm80_decode_w4.cuh) computes spec on arch: dense or grouped fprop without gate|up, bf16 X
// and an MXFP4 or NVFP4 W, bf16 / f16 / f32 out, sm_80+. Plans run it by default up to 16 rows per token
// tile (per expert when grouped); block_m 8, 16 or 32, block_n 16..64, block_k 128 or 256.
bool decode_w4_supports(const KernelSpec& spec, const Arch& arch);
// Whether the M bucket of `rows` rows of spec runs the decode kernel by default: a dense GEMM of 1..16
// rows that decode_supports, on an arch where select_family picks the sm90 family (there the decode kernel
// measured faster than the sm90 kernels on every decode shape; elsewhere the portable family's tiled
// kernels stay the default). select_bucket_family then names the portable family, default_config for
// it returns decode_default_config, and the tuner searches the decode grid (tuner/config_space.hpp).
bool decode_bucket(const KernelSpec& spec, const Arch& arch, int64_t rows);

}  // namespace kiln

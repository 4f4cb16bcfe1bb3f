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
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "compiler/plan/arch.hpp"
#include "compiler/spec/kernel_spec.hpp"

namespace kiln {

enum class KernelFamily : uint8_t {
  kSm80Gemm,       // cp.async multi-stage + mma.sync; portable sm_80..sm_90
  kReferenceGemm,  // naive one-thread-per-output reference (tests, tuner checks)
  kSm90Gemm,       // TMA + warp-specialized wgmma, persistent; sm_90a (compiler/plan/sm90_plan.hpp)
  kQuantize,       // quantize specs: FP8 / MX / NVFP4 quantizers, sm_80+ (compiler/plan/quantize_plan.hpp)
  kMxDequant,      // MXFP8 operands -> bf16 (the pre-pass of an MXFP8 GEMM; no tile config;
                   // runtime/mx_prepass.hpp)
};
// "sm80_gemm", "reference_gemm", "sm90_gemm", "quantize", "mx_dequant"
const char* family_name(KernelFamily f);

// A tile configuration for the sm80 family. block_k is in K *elements* per pipeline stage.
struct TileConfig {
  int block_m = 128;
  int block_n = 128;
  int block_k = 32;
  int stages = 4;
  int warps_m = 2;
  int warps_n = 4;
  int group_m = 8;   // rasterization: column-major swizzle over groups of group_m tile rows (L2 reuse)
  // Hopper issue (sm90 family only): CTAs per thread-block cluster along M that share each B tile
  // through TMA multicast (1 or 2). Optional in JSON and in to_string ("_c2") so existing rows and keys
  // stay as they are when it is 1.
  int cluster_m = 1;
  // Hopper issue (sm90 family only): CTAs that share one output tile's K range (split-K for small M:
  // more CTAs read the weights; the last to finish sums the partials in a fixed order). Optional in
  // JSON and to_string ("_k4") when it is 1.
  int split_k = 1;
  // Hopper issue (sm90 family only): 1 = the epilogue writes each output tile to shared memory and
  // stores it with TMA, asynchronously, while the consumers go on to the next tile (dense, no gate|up).
  // Optional in JSON and to_string ("_t") when 0. 2 = the same through a buffer of half the output
  // tile, stored in two column chunks (the second waits until the first's stores have read the buffer),
  // which leaves shared memory for a deeper ring ("_th"); 4 = in four chunks through a quarter-size
  // buffer ("_tq").
  int tma_store = 0;
  // Hopper issue (sm90 family only): 1 = ping-pong consumers: two consumer warpgroups that each own
  // whole block_m x block_n tiles (warps 4 x 1) and take the CTA's tiles in turn, one's epilogue under
  // the other's wgmmas (unpromoted accumulation, dense, no split-K). Optional in JSON and to_string
  // ("_p") when 0.
  int pingpong = 0;
  // Hopper issue, small M (sm80 family only): 1 = the decode kernel (templates/kernels/sm80_decode.cuh):
  // W streamed from global memory straight into mma fragments (W is the mma's A operand), no shared-
  // memory ring. block_m = tokens per CTA (8 or 16), block_n = weight rows per CTA (16..64), block_k = K
  // elements per warp step (a multiple of 64 bytes), warps_m = 1, warps_n = warps splitting K, stages =
  // warp steps in flight (1 or 2 register sets), group_m = 1. Optional in JSON and to_string ("_d") when 0.
  // 2 = the warpgroup decode kernel (templates/kernels/sm90_decode.cuh, sm_90a, FP8 with tensor / m / n
  // scales): W rows into the registers of wgmma's A operand (64 rows per warpgroup: block_n 64), X staged
  // in shared memory as its B operand (block_m 8 or 16 tokens = wgmma N), warpgroups split K (warps_n 4..16),
  // block_k 128 / 256 / 512 FP8 elements per warpgroup step; printed "_dw".
  int decode = 0;

  bool operator==(const TileConfig&) const = default;
  std::string to_string() const;  // "bm128_bn128_bk32_s4_w2x4_g8" (+ "_c2", "_k4" when not 1, "_t" / "_th" /
                                  // "_tq", "_p", "_d", "_dw")
  int threads() const { return warps_m * warps_n * 32; }
};

// TileConfig::tma_store's values: 0 (direct stores), 1 (the whole slab), 2 or 4 (that many chunks).
constexpr bool tma_store_value_ok(int v) { return v == 0 || v == 1 || v == 2 || v == 4; }
nlohmann::json config_to_json(const TileConfig& c);
StatusOr<TileConfig> config_from_json(const nlohmann::json& j);
// The inverse of TileConfig::to_string: "bm128_bn256_bk64_s3_w8x1_g8" (+ "_c2", "_k4", "_t", "_p"), as kiln
// prints configs (CLI --config). Ranges as config_from_json; whether a family takes it is check_config's.
StatusOr<TileConfig> config_from_name(const std::string& name);

struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1;
  int dynamic_smem = 0;
};

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
// Static checks of a config against the family and arch (shared memory, warp tiling, block_k bytes).
// The three-argument forms use select_family's family; the others name it (e.g. the portable family on
// sm_90a, which KILN_FAMILY=sm80 forces).
Status check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg);
Status check_config(const KernelSpec& spec, const Arch& arch, KernelFamily family, const TileConfig& cfg);
// The relative error a check allows the kernel of (family, cfg) against the reference, given the
// format's `base` (runtime/check.cpp): more where wgmma accumulates FP8 in a register narrower than f32
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
// Hopper issue, small M: whether the portable family's decode kernel (TileConfig::decode) computes spec
// on arch: dense or grouped (offsets / masked) fprop GEMM without gate|up, two equal 16-bit operands or
// two FP8 operands (sm_89+) with tensor, m / n or DeepSeek block scales; bf16 / f16 / f32 out. (Plans
// run it by default on dense buckets only: decode_bucket.)
bool decode_supports(const KernelSpec& spec, const Arch& arch);
// The decode kernel's heuristic config for sizes.m <= 16 rows (8 or 16 tokens per CTA, 16 weight rows,
// two 64-byte segments per warp step, two steps in flight, 4 warps: the H200 sweep's best or within 5% of it on every decode
// shape, bench/RESULTS.md session 9). Only meaningful where decode_supports(spec, arch).
TileConfig decode_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes);
// Whether the M bucket of `rows` rows of spec runs the decode kernel by default: a dense GEMM of 1..16
// rows that decode_supports, on an arch where select_family picks the sm90 family (there the decode kernel
// measured faster than the sm90 kernels on every decode shape; elsewhere the portable family's tiled
// kernels stay the default). select_bucket_family then names the portable family, default_config for
// it returns decode_default_config, and the tuner searches the decode grid (tuner/config_space.hpp).
bool decode_bucket(const KernelSpec& spec, const Arch& arch, int64_t rows);

}  // namespace kiln

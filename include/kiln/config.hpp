// kiln/config.hpp — kernel families and tile configurations: what a plan chooses per M bucket.
//
// A TileConfig is a self-describing tuple, never an index into a table: it prints to a stable name
// ("bm128_bn256_bk64_s4_w8x1_g8", config_from_name reads it back), keys tunings and cubins, and every
// family checks it against its own rules (compiler/plan: check_config).
//
//   KILN_ASSIGN_OR_RETURN(kiln::TileConfig c, kiln::config_from_name("bm128_bn128_bk64_s4_w8x1_g8_t"));
//   std::string name = c.to_string();
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/arch.hpp"
#include "kiln/status.hpp"

namespace kiln {

enum class KernelFamily : uint8_t {
  kSm80Gemm,       // cp.async multi-stage + mma.sync; portable sm_80..sm_90
  kReferenceGemm,  // naive one-thread-per-output reference (tests, tuner checks)
  kSm90Gemm,       // TMA + warp-specialized wgmma, persistent; sm_90a (compiler/plan/sm90_plan.hpp)
  kQuantize,       // quantize specs: FP8 / MX / NVFP4 quantizers, sm_80+ (compiler/plan/quantize_plan.hpp)
  kMxDequant,      // MXFP8 operands -> bf16 (the pre-pass of an MXFP8 GEMM; no tile config;
                   // runtime/mx_prepass.hpp)
  kFp8Transpose,   // an FP8 weight's transposed copy (the pre-pass of a quantized dgrad; no tile config;
                   // runtime/dgrad_transpose.hpp)
};
// "sm80_gemm", "reference_gemm", "sm90_gemm", "quantize", "mx_dequant", "fp8_transpose"
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
  // sm90 family only: CTAs per thread-block cluster along M that share each B tile
  // through TMA multicast (1 or 2). Optional in JSON and in to_string ("_c2") so existing rows and keys
  // stay as they are when it is 1.
  int cluster_m = 1;
  // sm90 family only: CTAs that share one output tile's K range (split-K for small M:
  // more CTAs read the weights; the last to finish sums the partials in a fixed order). Optional in
  // JSON and to_string ("_k4") when it is 1.
  int split_k = 1;
  // sm90 family only: 1 = the epilogue writes each output tile to shared memory and
  // stores it with TMA, asynchronously, while the consumers go on to the next tile (dense, no gate|up).
  // Optional in JSON and to_string ("_t") when 0. 2 = the same through a buffer of half the output
  // tile, stored in two column chunks (the second waits until the first's stores have read the buffer),
  // which leaves shared memory for a deeper ring ("_th"); 4 = in four chunks through a quarter-size
  // buffer ("_tq").
  int tma_store = 0;
  // sm90 family only: 1 = ping-pong consumers: two consumer warpgroups that each own
  // whole block_m x block_n tiles (warps 4 x 1) and take the CTA's tiles in turn, one's epilogue under
  // the other's wgmmas (unpromoted accumulation, dense, no split-K). Optional in JSON and to_string
  // ("_p") when 0.
  int pingpong = 0;
  // Small M (sm80 family only): 1 = the decode kernel (templates/kernels/sm80_decode.cuh):
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
// The inverse of TileConfig::to_string: "bm128_bn256_bk64_s3_w8x1_g8" (+ "_c2", "_k4", "_t", "_p"), as kiln
// prints configs (CLI --config). Ranges as config_from_json; whether a family takes it is check_config's.
StatusOr<TileConfig> config_from_name(const std::string& name);

// How Runtime::plan chooses beyond its defaults.
//
//   kiln::PlanOptions o;
//   o.config = *kiln::config_from_name("bm128_bn256_bk64_s4_w8x1_g8_t");  // every M bucket runs it
//   KILN_ASSIGN_OR_RETURN(kiln::Plan p, rt->plan(spec, sizes, o));
struct PlanOptions {
  // The arch to plan for; default: the current device's (sm_90a with the H200's facts without one).
  std::optional<Arch> arch;
  // Every M bucket runs this config and no tuning is consulted (`kiln run --config`, the tuner timing a
  // candidate). The plan fails with INVALID_ARGUMENT when the family refuses it (check_config).
  std::optional<TileConfig> config;
  // The family `config` is for; default: the plan's family, or the portable family for a decode config.
  std::optional<KernelFamily> family;
};

}  // namespace kiln

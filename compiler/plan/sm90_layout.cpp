// compiler/plan/sm90_layout.cpp — sm90 family: what a config occupies and launches. Block size,
// dynamic shared memory, split-K's workspace, the launch shape, and the sizes of MXFP8's bf16 pre-pass.
//
// The formulas mirror templates/kernels/sm90/config.cuh (kThreads, kSmemBytes), whose static_asserts
// check the host's figure against the kernel's.
#include <algorithm>
#include <cstdint>

#include "compiler/plan/sm90_internal.hpp"
#include "compiler/plan/sm90_plan.hpp"

namespace kiln {

using namespace sm90_internal;

namespace {

constexpr int kBarrierBytes = 16;  // full + empty mbarrier per stage
constexpr int kAlignSlack = 1024;  // the ring starts on a 1024-byte boundary
// The dequantizing producer (the kernel's MXFP8 block_k 64 path, sm90/mx_dequant.cuh): two warpgroups
// (warp 0 stages, the other seven convert) and a staging ring of two 128-K atoms.
constexpr int kDqProducerWgs = 2;
constexpr int kDqStg = 2;

// The TMA-store staging buffers (tma_store = 1, 2 or 4 chunks): every consumer warpgroup's buffer of
// one chunk, ceil(boxes / chunks) of its slab's boxes (tma_store 1: the whole slab).
int out_chunk_bytes(const KernelSpec& spec, const TileConfig& cfg) {
  const int box_cols = out_box_cols(spec, cfg), chunks = cfg.tma_store;
  return consumers(cfg) * ((wg_tile_n(cfg) / box_cols + chunks - 1) / chunks) * wg_tile_m(cfg) * box_cols *
         elem_bytes(spec.out.format);
}

}  // namespace

namespace sm90_internal {

int out_box_cols(const KernelSpec& spec, const TileConfig& cfg) {
  const int ob = elem_bytes(spec.out.format);
  return (wg_tile_n(cfg) * ob) % 128 == 0 ? 128 / ob : 16;
}

int sm90_smem_bytes_with_slots(const KernelSpec& spec, const TileConfig& cfg, bool staged_slots) {
  const bool dq = sm90_mx_dequant(spec, cfg);  // bf16 stages of 64 K (the dequantizing producer)
  const int row_bytes = dq ? kRowBytes : cfg.block_k * elem_bytes(spec.a.format);
  // Staged block scales: per stage and atom, one word per tile row + 4 (b's words, padded). MXFP8
  // promoted per 32 K (sm90/mx.cuh): per stage and k-step (4 per atom), an f32 per tile row and per
  // column, the columns in 4 runs per consumer warpgroup padded by 4 floats each.
  int scale_slot = staged_slots ? atoms(spec, cfg) * 4 * (cfg.block_m + 4) : 0;
  if (sm90_mx(spec) && !dq) scale_slot = 4 * 4 * (cfg.block_m + cfg.block_n + 16 * std::max(1, cfg.warps_n));
  // Quantized wgrad's per-column b scales: one such k-step per stage (one atom, f32 values).
  if (sm90_col_blocks(spec)) scale_slot = 4 * (cfg.block_m + cfg.block_n + 16 * std::max(1, cfg.warps_n));
  // Grouped: the per-CTA expert table (cluster-tile ends, row bases, row counts: int32 each).
  const int group_table = spec.layout == GroupLayout::kDense ? 0 : 12 * spec.experts;
  const int split_flags = cfg.split_k > 1 ? 16 : 0;  // split-K: a "last split" flag per consumer warpgroup
  // TMA-store epilogue (sm90/epilogue_tma_store.cuh): each consumer warpgroup's output slab, staged
  // before its TMA store, and with per-channel (n) scales its columns' scales (f32 each).
  const int out_tile = cfg.tma_store ? out_chunk_bytes(spec, cfg) : 0;
  const int col_scales =
      cfg.tma_store && spec.b.scale == ScaleGranularity::kN ? consumers(cfg) * 4 * wg_tile_n(cfg) : 0;
  // The dequantizing producer's FP8 staging ring: 2 stages of one 128-K atom and its decoded scales
  // (16 bytes per tile row), their barriers, and its own 1024-byte alignment.
  const int staging =
      dq ? kDqStg * ((cfg.block_m + cfg.block_n) * (kRowBytes + 16)) + kDqStg * kBarrierBytes + kAlignSlack
         : 0;
  // Warpgroup tiles of 64 rows dequantize A into registers: the bf16 ring holds B only.
  const bool rega = sm90_mx_reg_a(spec, cfg);
  return cfg.stages * (((rega ? 0 : cfg.block_m) + cfg.block_n) * row_bytes + scale_slot) +
         kBarrierBytes * cfg.stages + group_table + split_flags + out_tile + col_scales + staging +
         kAlignSlack;
}

}  // namespace sm90_internal

int sm90_threads(const KernelSpec& spec, const TileConfig& cfg) {
  return 128 * ((sm90_mx_dequant(spec, cfg) ? kDqProducerWgs : 1) + consumers(cfg));
}

int sm90_smem_bytes(const KernelSpec& spec, const TileConfig& cfg) {
  return sm90_smem_bytes_with_slots(spec, cfg, sm90_staged_scales(spec, cfg));
}

int64_t sm90_split_slots(const TileConfig& cfg, const ProblemSizes& sizes) {
  return tile_grid(cfg, sizes.n).split_slots(sizes.m);
}

int64_t sm90_workspace_bytes(const KernelSpec& spec, const TileConfig& cfg, const ProblemSizes& sizes) {
  return make_launch_rule(spec, KernelFamily::kSm90Gemm, cfg, sizes.n, sizes.k).workspace_bytes(sizes.m);
}

LaunchShape sm90_launch_shape(const KernelSpec& spec, const TileConfig& cfg, const ProblemSizes& sizes) {
  return make_launch_rule(spec, KernelFamily::kSm90Gemm, cfg, sizes.n, sizes.k).shape(sizes.m);
}

// ---- MXFP8's bf16 pre-pass (runtime/mx_prepass.hpp) ----

bool sm90_mx_prepass_supported(const KernelSpec& spec, const Arch& arch) {
  // The forward's: its layout holds X's M rows and W's N rows of K (an MXFP8 backward's copies are not).
  if (!sm90_mx(spec) || spec.pass != Pass::kFprop) return false;
  const StatusOr<KernelFamily> family = select_family(spec, arch);
  return family.ok() && *family == KernelFamily::kSm90Gemm;
}

int64_t sm90_mx_prepass_a_offset() { return MxPrepassLayout{}.a_offset(); }

int64_t sm90_mx_prepass_b_offset(const ProblemSizes& sizes) {
  MxPrepassLayout l;
  l.k = sizes.k;
  return l.b_offset(sizes.m);
}

int64_t sm90_mx_prepass_bytes(const KernelSpec& spec, const ProblemSizes& sizes) {
  return make_mx_prepass_layout(spec, sizes.n, sizes.k).bytes(sizes.m);
}

int64_t sm90_mx_prepass_workspace_bytes(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  return sm90_mx_prepass_supported(spec, arch) ? sm90_mx_prepass_bytes(spec, sizes) : 0;
}

KernelSpec sm90_mx_prepass_gemm_spec(const KernelSpec& spec) {
  KernelSpec s = spec;
  s.a = OperandSpec{};  // bf16, unscaled
  s.b = OperandSpec{};
  return s;
}

KernelSpec sm90_mx_prepass_convert_spec(const KernelSpec& spec) {
  KernelSpec s;  // a dense bf16-out GEMM: only the operands' formats reach the conversion kernel
  s.a = spec.a;
  s.b = spec.b;
  return s;
}

}  // namespace kiln

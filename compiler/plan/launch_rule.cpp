// compiler/plan/launch_rule.cpp — the launch rules a plan records (launch_rule.hpp).
#include "compiler/plan/launch_rule.hpp"

#include <algorithm>

#include "compiler/plan/gemm_view.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/plan/quantize_plan.hpp"
#include "compiler/plan/sm90_internal.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "templates/common/quantize_params.cuh"

namespace kiln {
namespace {

constexpr int kReferenceTile = 16;  // templates/kernels/reference_gemm.cuh: 16 x 16 outputs per CTA
constexpr int kQuantThreads = 256;  // kiln_dev::kQuantThreads
constexpr int kTransposeCols = 64;  // kiln_dev::kTransposeCols
constexpr int64_t kAmaxBlocks = 1024;  // the amax pass walks the tensor with at most this many CTAs
constexpr int kColAmaxRows = 256;     // kiln_dev::kColAmaxRows

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void add_phase(LaunchRule& r, PhaseRule p) { r.phases[static_cast<size_t>(r.phase_count++)] = p; }

LaunchRule make_gemm_rule(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, const GemmView& v,
                          int64_t k);

}  // namespace

LaunchRule sm90_internal::tile_grid(const TileConfig& cfg, int64_t n) {
  LaunchRule r;
  r.grid = LaunchRule::Grid::kPersistent;
  r.block_m = cfg.block_m;
  r.tiles_n = ceil_div(std::max<int64_t>(n, 1), cfg.block_n);
  r.cluster_m = cfg.cluster_m;
  r.split_k = cfg.split_k;
  r.consumers = consumers(cfg);
  return r;
}

LaunchRule make_launch_rule(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, int64_t n, int64_t k) {
  LaunchRule r = make_gemm_rule(spec, family, cfg, gemm_view(spec, ProblemSizes{0, n, k}), k);
  if (spec.pass == Pass::kWgrad) {
    r.fixed_m = std::max<int64_t>(n, 1);
    // Grouped wgrad (kernels/sm80_backward.cuh, the reference): every expert's N rows tiled on their own, as
    // the masked layout tiles its max_m rows: E x ceil(N / block_m) tile rows.
    if (spec.op == Op::kGroupedGemm && spec.experts > 0) {
      r.fixed_m *= spec.experts;
      r.experts = spec.experts;
      r.masked = true;
    }
  }
  return r;
}

namespace {

// The rule for the pass's GEMM: v.n columns (fprop N, backward K); k: the forward's K (the MX pre-pass and
// the quantizers, fprop-only).
LaunchRule make_gemm_rule(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, const GemmView& v,
                          int64_t k) {
  const int64_t n = v.n;
  LaunchRule r;
  const int64_t n1 = std::max<int64_t>(n, 1);
  const bool grouped = spec.op == Op::kGroupedGemm;
  switch (family) {
    case KernelFamily::kSm80Gemm:
      // templates/scheduler/group_tile.cuh: offsets add one partial tile row per expert; masked tiles
      // each expert's max_m rows. (Decode configs use the same grid; smem_bytes is their reduction buffer.)
      r.grid = LaunchRule::Grid::kTiles;
      r.block_m = cfg.block_m;
      r.tiles_n = ceil_div(n1, cfg.block_n);
      r.experts = spec.layout == GroupLayout::kDense ? 0 : spec.experts;
      r.masked = spec.layout == GroupLayout::kMasked;
      r.block_x = static_cast<unsigned>(cfg.threads());
      r.dynamic_smem = smem_bytes(spec, cfg);
      break;
    case KernelFamily::kSm90Gemm: {
      // One CTA per tile (cluster_m per cluster tile) and split; the runtime caps the grid at what the
      // device holds at once. Grouped: sum_e ceil(r_e / block_m) <= M / block_m + E bounds the tile rows
      // of both layouts (masked: M = E * max_m).
      r = sm90_internal::tile_grid(cfg, n);
      r.experts = spec.layout == GroupLayout::kDense ? 0 : spec.experts;
      const int wg_rows = sm90_internal::wg_tile_m(cfg);
      r.partial_bytes = int64_t{wg_rows} * sm90_internal::wg_tile_n(cfg) * 4;
      r.block_x = static_cast<unsigned>(sm90_threads(spec, cfg));
      r.dynamic_smem = sm90_smem_bytes(spec, cfg);
      // TMA boxes: one 128-byte swizzle atom of K; B rows per CTA of a cluster (multicast to its peers);
      // the output slab of a consumer warpgroup in 128-byte swizzled boxes, or 16-column unswizzled ones
      // where its columns are not a whole number of 128-byte boxes (e.g. 176).
      r.box_k = sm90_atom_k(spec);
      r.box_b_rows = cfg.block_n / cfg.cluster_m;
      r.out_box_rows = wg_rows;
      r.out_box_cols = sm90_internal::out_box_cols(spec, cfg);
      break;
    }
    case KernelFamily::kReferenceGemm:
      r.grid = LaunchRule::Grid::kReference;
      r.block_m = kReferenceTile;
      r.tiles_n = ceil_div(n1, kReferenceTile);
      r.block_x = kReferenceTile * kReferenceTile;
      break;
    case KernelFamily::kFp8Transpose:  // no rule: its grid is TransposedWLayout::shape()
      break;
    case KernelFamily::kMxDequant:
      // One thread per 8-element unit of both operands ((M + N) K / 8; grouped W: E x N rows); the runtime
      // caps the grid at what the device holds at once (the kernel walks the rest grid-stride).
      r.grid = LaunchRule::Grid::kMxDequant;
      r.w_rows = n1 * (grouped ? std::max(spec.experts, 1) : 1);
      r.k = k;
      r.block_x = 256;
      break;
    case KernelFamily::kQuantize: {
      r.grid = LaunchRule::Grid::kPhases;
      r.block_x = kQuantThreads;
      r.main_phase = kiln_dev::kPhaseQuantize;
      const int64_t k8 = std::max<int64_t>(k, 8);
      const QuantizeShape qs = quantize_shape(spec);
      for (int phase : quantize_phases(spec)) {
        PhaseRule p;
        p.phase = phase;
        if (qs.mode == QuantizeMode::kColumns && phase != kiln_dev::kPhaseQuantize) {
          // Per-column scales: the init and finalize phases cover the K slots; the amax phase is one CTA
          // per 64 columns x kColAmaxRows rows (not grid-strided: no cap).
          if (phase == kiln_dev::kPhaseAmax) {
            p.num = 1;
            p.den = kColAmaxRows;
            p.mult = ceil_div(k8, kTransposeCols);
          } else {
            p.add = ceil_div(k8, kQuantThreads);
          }
        } else if (phase == kiln_dev::kPhaseAmax) {
          p.num = k8 / 8;
          p.den = kQuantThreads;
          p.cap = kAmaxBlocks;
        } else if (phase == kiln_dev::kPhaseQuantize) {
          switch (qs.mode) {
            case QuantizeMode::kRow: p.den = kQuantThreads / 32; p.num = 1; break;
            case QuantizeMode::kBlock2d: p.num = 1; p.den = 128; p.mult = k8 / 128; break;
            case QuantizeMode::kTransposed:
              // One CTA per block of rows x 64 columns; grouped: per block of the padded copy, ceil(M /
              // block) + E of them at most (the CTAs past the experts' blocks return at once).
              p.num = 1;
              p.den = qs.block;
              p.floor = spec.experts == 0;
              p.add = spec.experts;
              p.mult = ceil_div(k8, kTransposeCols);
              break;
            case QuantizeMode::kColumns:
              // The transposed tile walk over the copy's out_cols (M <= out_cols < M + 128) columns.
              p.num = 1;
              p.den = qs.block;
              p.add = 1;
              p.mult = ceil_div(k8, kTransposeCols);
              break;
            case QuantizeMode::kTensor:
            case QuantizeMode::kBlockK:
              p.num = k8 / (spec.out.format == Format::kNvfp4 ? 16 : 8);
              p.den = kQuantThreads;
              break;
          }
        }  // other phases (scale finalisation): one CTA (num 0)
        add_phase(r, p);
      }
      break;
    }
  }
  return r;
}

}  // namespace

TransposedWLayout make_transposed_w_layout(const KernelSpec& spec, int64_t n, int64_t k) {
  TransposedWLayout l;
  if (!dgrad_reads_transposed_w(spec)) return l;
  l.experts = spec.op == Op::kGroupedGemm ? std::max(spec.experts, 1) : 1;
  l.n = n;
  l.k = k;
  if (spec.b.scale == ScaleGranularity::kBlock128x128) l.scale_bytes = spec.b.scale_type == ScaleType::kUe8m0 ? 1 : 4;
  return l;
}

MxPrepassLayout make_mx_prepass_layout(const KernelSpec& spec, int64_t n, int64_t k) {
  MxPrepassLayout l;
  l.experts = spec.op == Op::kGroupedGemm ? std::max(spec.experts, 1) : 1;
  l.min_rows = kMxPrepassMinM * l.experts;
  l.n = n;
  l.k = k;
  l.k_ok = k % 32 == 0;
  return l;
}

}  // namespace kiln

// compiler/plan/sm90_plan.cpp — sm90 family: supported specs, config checks, default heuristic, launch.
//
// The rules mirror the static_asserts of templates/kernels/sm90_gemm.cuh: a config that passes
// sm90_check_config instantiates and compiles without spills (tests/nvrtc/sm90_gemm_nvrtc_test.cpp).
#include "compiler/plan/sm90_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "common/env.hpp"

namespace kiln {
namespace {

using std::string;
using std::to_string;

constexpr int kRowBytes = 128;     // one 128-byte swizzle atom of K per stage
constexpr int kMaxAccRegs = 128;   // f32 accumulators (+ partials) per consumer thread
// Ping-pong consumers hold one whole tile each and no partials: 128 x 176 and 128 x 192 tiles fit the
// consumers' 232 registers without spills (the nvrtc tier checks).
constexpr int kMaxPingPongAccRegs = 192;
constexpr int kMaxPromotedBlockRegs = 192;  // the same for block-scaled one-atom tiles (64 x 192 per warpgroup)
constexpr int kBarrierBytes = 16;  // full + empty mbarrier per stage
constexpr int kAlignSlack = 1024;  // the ring starts on a 1024-byte boundary
constexpr int kSms = 132;  // H100 SXM / H200: only to judge "enough tiles"; the launch uses the device's
// The dequantizing producer (the kernel's section 13): two warpgroups (warp 0 stages, the other seven
// convert) and a staging ring of two 128-K atoms.
constexpr int kDqProducerWgs = 2;
constexpr int kDqStg = 2;

int elem_bytes(Format f) { return std::max(1, format_bits(f) / 8); }

// Consumer warpgroups: warps_m / 4 x warps_n sharing each tile, or two taking whole tiles in turn
// (pingpong; warps 4 x 1).
int consumers(const TileConfig& c) { return c.pingpong ? 2 : (c.warps_m / 4) * c.warps_n; }

// 128-byte swizzle atoms of K per stage (1 or 2 for a valid config; MXFP8 with block_k 64 stages one
// atom of bf16, the kernel's section 13).
int atoms(const KernelSpec& spec, const TileConfig& c) {
  if (sm90_mx_dequant(spec, c)) return 1;
  return c.block_k * elem_bytes(spec.a.format) / kRowBytes;
}

// One consumer warpgroup's tile: block_m / (warps_m / 4) x block_n / warps_n (the whole tile with
// ping-pong's warps 4 x 1).
int wg_tile_m(const TileConfig& c) { return c.block_m / std::max(1, c.warps_m / 4); }
int wg_tile_n(const TileConfig& c) { return c.block_n / std::max(1, c.warps_n); }

// Accumulator registers per consumer thread: the warpgroup tile over 128 threads.
int acc_regs(const TileConfig& c) { return wg_tile_m(c) * wg_tile_n(c) / 128; }

int64_t tiles(const ProblemSizes& s, const TileConfig& c) {
  const int64_t m = std::max<int64_t>(s.m, 1), n = std::max<int64_t>(s.n, 1);
  return ((m + c.block_m - 1) / c.block_m) * ((n + c.block_n - 1) / c.block_n);
}

// Cluster tiles (cluster_m tile rows x 1 tile column): what the persistent walk distributes.
int64_t cluster_tiles(const ProblemSizes& s, const TileConfig& c) {
  const int64_t m = std::max<int64_t>(s.m, 1), n = std::max<int64_t>(s.n, 1);
  const int64_t tiles_m = (m + c.block_m - 1) / c.block_m;
  return ((tiles_m + c.cluster_m - 1) / c.cluster_m) * ((n + c.block_n - 1) / c.block_n);
}

// The deepest ring (<= 8 stages) that fits the arch's shared memory.
int max_stages(const KernelSpec& spec, const Arch& arch, const TileConfig& c) {
  TileConfig t = c;
  for (t.stages = 8; t.stages > 2; --t.stages) {
    if (sm90_smem_bytes(spec, t) <= arch.max_smem_per_block()) break;
  }
  return t.stages;
}

TileConfig make(const KernelSpec& spec, int bm, int bn, int warps_m, int warps_n, int atoms = 1) {
  TileConfig c;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = atoms * kRowBytes / elem_bytes(spec.a.format);
  c.warps_m = warps_m;
  c.warps_n = warps_n;
  c.group_m = 8;
  return c;
}

}  // namespace

bool sm90_supports(const KernelSpec& spec, const Arch& arch) {
  if (!(arch.sm() == 90 && arch.arch_specific)) return false;
  // Dense, and grouped with offsets or masked layouts (the kernel's section 9) up to kMaxExperts.
  const bool dense = spec.op == Op::kGemm && spec.layout == GroupLayout::kDense;
  const bool grouped = spec.op == Op::kGroupedGemm &&
                       (spec.layout == GroupLayout::kOffsets || spec.layout == GroupLayout::kMasked) &&
                       spec.experts >= 1 && spec.experts <= kSm90MaxExperts;
  if (!(dense || grouped) || spec.pass != Pass::kFprop) return false;
  const Format a = spec.a.format, b = spec.b.format, o = spec.out.format;
  const bool same16 = (a == Format::kBf16 || a == Format::kF16) && a == b &&
                      spec.a.scale == ScaleGranularity::kNone && spec.b.scale == ScaleGranularity::kNone;
  // FP8 scales (the kernel's section 7): tensor or per-row f32 factors in the epilogue, DeepSeek blocks
  // (f32 or ue8m0) promoted per 128-K tile; a: tensor | m | block1x128, b: tensor | n | block128x128.
  auto fp8_scale_ok = [](const OperandSpec& op, bool is_a) {
    if (!format_is_fp8(op.format)) return false;
    const ScaleGranularity row = is_a ? ScaleGranularity::kM : ScaleGranularity::kN;
    const ScaleGranularity block = is_a ? ScaleGranularity::kBlock1x128 : ScaleGranularity::kBlock128x128;
    if (op.scale == ScaleGranularity::kTensor || op.scale == row) return op.scale_type == ScaleType::kF32;
    if (op.scale == block) return op.scale_type == ScaleType::kF32 || op.scale_type == ScaleType::kUe8m0;
    return false;
  };
  const bool fp8 = fp8_scale_ok(spec.a, true) && fp8_scale_ok(spec.b, false);
  // MXFP8 x MXFP8 (the kernel's section 11): each k-step's partial promoted with its E8M0 scales.
  const bool mx = sm90_mx(spec);
  const bool out_ok = (o == Format::kBf16 || o == Format::kF16 || o == Format::kF32) &&
                      spec.out.scale == ScaleGranularity::kNone;
  // Epilogue functors run in the kernel's epilogue (section 4), gate|up pairs when interleaved: a
  // thread holds columns 2t, 2t + 1 of the wgmma accumulator. Stacked halves stay on the portable
  // family (its cp.async rows are permuted; a TMA box cannot be).
  return (same16 || fp8 || mx) && out_ok && spec.gate_up != GateUp::kStacked;
}

bool sm90_portable_bucket(const KernelSpec& spec, int64_t rows_per_expert) {
  return spec.op == Op::kGroupedGemm && format_is_fp8(spec.a.format) && format_is_fp8(spec.b.format) &&
         !sm90_block_scaled(spec) && rows_per_expert <= 16;
}

bool sm90_mx(const KernelSpec& spec) {
  return spec.a.format == Format::kMxfp8 && spec.b.format == Format::kMxfp8 &&
         spec.a.scale == ScaleGranularity::kBlock1x32 && spec.b.scale == ScaleGranularity::kBlock1x32;
}

bool sm90_mx_dequant(const KernelSpec& spec, const TileConfig& cfg) { return sm90_mx(spec) && cfg.block_k == 64; }

bool sm90_mx_reg_a(const KernelSpec& spec, const TileConfig& cfg) {
  return sm90_mx_dequant(spec, cfg) && cfg.block_m / std::max(1, cfg.warps_m / 4) == 64;
}

bool sm90_mx_prepass_supported(const KernelSpec& spec, const Arch& arch) {
  if (!sm90_mx(spec)) return false;
  const StatusOr<KernelFamily> family = select_family(spec, arch);
  return family.ok() && *family == KernelFamily::kSm90Gemm;
}

namespace {
int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }
}  // namespace

int64_t sm90_mx_prepass_a_offset() { return kSm90SplitCounterSlots * 4; }

int64_t sm90_mx_prepass_b_offset(const ProblemSizes& sizes) {
  return sm90_mx_prepass_a_offset() + align256(sizes.m * sizes.k * 2);
}

int64_t sm90_mx_prepass_bytes(const KernelSpec& spec, const ProblemSizes& sizes) {
  const int64_t experts = spec.op == Op::kGroupedGemm ? std::max(spec.experts, 1) : 1;
  if (sizes.m < kMxPrepassMinM * experts || sizes.k % 32 != 0) return 0;
  return sm90_mx_prepass_b_offset(sizes) + align256(experts * sizes.n * sizes.k * 2);
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

bool sm90_block_scaled(const KernelSpec& spec) {
  return spec.a.scale == ScaleGranularity::kBlock1x128 || spec.b.scale == ScaleGranularity::kBlock128x128;
}

bool sm90_disabled_by_env() {
  const std::optional<string> v = env::get(env::kFamily);
  return v && *v == "sm80";
}

Status sm90_can_implement(const KernelSpec& spec, const ProblemSizes& sizes) {
  // can_implement already bounds M, N, K below 2^31 (TMA takes dimensions < 2^32) and K * elem_bytes
  // to a multiple of 16 (TMA global strides); row strides and base alignment are per run
  // (runtime/operands.cpp, runtime/sm90_launch.cpp). Nothing else limits this family today.
  (void)spec;
  (void)sizes;
  return Status::Ok();
}

int sm90_threads(const KernelSpec& spec, const TileConfig& cfg) {
  return 128 * ((sm90_mx_dequant(spec, cfg) ? kDqProducerWgs : 1) + consumers(cfg));
}

namespace {

// Columns per TMA-store box (the kernel's section 12): 128 bytes of a row where a warpgroup's columns
// are a whole number of those, else 16.
int out_box_cols(const KernelSpec& spec, const TileConfig& cfg) {
  const int ob = elem_bytes(spec.out.format);
  return (wg_tile_n(cfg) * ob) % 128 == 0 ? 128 / ob : 16;
}

// The TMA-store staging buffers (tma_store = 1, 2 or 4 chunks): every consumer warpgroup's buffer of
// one chunk, ceil(boxes / chunks) of its slab's boxes (tma_store 1: the whole slab).
int out_chunk_bytes(const KernelSpec& spec, const TileConfig& cfg) {
  const int box_cols = out_box_cols(spec, cfg), chunks = cfg.tma_store;
  return consumers(cfg) * ((wg_tile_n(cfg) / box_cols + chunks - 1) / chunks) * wg_tile_m(cfg) * box_cols *
         elem_bytes(spec.out.format);
}

// Shared memory of cfg's kernel, with or without the staged block-scale slots.
int sm90_smem_bytes_with_slots(const KernelSpec& spec, const TileConfig& cfg, bool staged_slots) {
  const bool dq = sm90_mx_dequant(spec, cfg);  // bf16 stages of 64 K (the kernel's section 13)
  const int row_bytes = dq ? kRowBytes : cfg.block_k * elem_bytes(spec.a.format);
  // Staged block scales: per stage and atom, one word per tile row + 4 (b's words, padded). MXFP8 (the
  // kernel's section 11): per stage and k-step (4 per atom), an f32 per tile row and per column, the
  // columns in 4 runs per consumer warpgroup padded by 4 floats each.
  int scale_slot = staged_slots ? atoms(spec, cfg) * 4 * (cfg.block_m + 4) : 0;
  if (sm90_mx(spec) && !dq) scale_slot = 4 * 4 * (cfg.block_m + cfg.block_n + 16 * std::max(1, cfg.warps_n));
  // Grouped: the per-CTA expert table (cluster-tile ends, row bases, row counts: int32 each).
  const int group_table = spec.layout == GroupLayout::kDense ? 0 : 12 * spec.experts;
  const int split_flags = cfg.split_k > 1 ? 16 : 0;  // split-K: a "last split" flag per consumer warpgroup
  // TMA-store epilogue (the kernel's section 12): each consumer warpgroup's output slab, staged before
  // its TMA store, and with per-channel (n) scales its columns' scales (f32 each).
  const int out_tile = cfg.tma_store ? out_chunk_bytes(spec, cfg) : 0;
  const int col_scales =
      cfg.tma_store && spec.b.scale == ScaleGranularity::kN ? consumers(cfg) * 4 * wg_tile_n(cfg) : 0;
  // The dequantizing producer's FP8 staging ring (the kernel's section 13): 2 stages of one 128-K atom
  // and its decoded scales (16 bytes per tile row), their barriers, and its own 1024-byte alignment.
  const int staging =
      dq ? kDqStg * ((cfg.block_m + cfg.block_n) * (kRowBytes + 16)) + kDqStg * kBarrierBytes + kAlignSlack
         : 0;
  // Warpgroup tiles of 64 rows dequantize A into registers: the bf16 ring holds B only (section 13).
  const bool rega = sm90_mx_reg_a(spec, cfg);
  return cfg.stages * (((rega ? 0 : cfg.block_m) + cfg.block_n) * row_bytes + scale_slot) +
         kBarrierBytes * cfg.stages + group_table + split_flags + out_tile + col_scales + staging +
         kAlignSlack;
}

}  // namespace

int sm90_smem_bytes(const KernelSpec& spec, const TileConfig& cfg) {
  return sm90_smem_bytes_with_slots(spec, cfg, sm90_staged_scales(spec, cfg));
}

int64_t sm90_split_slots(const TileConfig& cfg, const ProblemSizes& sizes) {
  return cluster_tiles(sizes, cfg) * consumers(cfg);
}

int64_t sm90_workspace_bytes(const KernelSpec& spec, const TileConfig& cfg, const ProblemSizes& sizes) {
  if (cfg.split_k <= 1) return 0;
  // The kernel's section 10: the fixed counter region, then the f32 partials of every split of every tile.
  (void)spec;
  const int64_t slots = sm90_split_slots(cfg, sizes);
  return kSm90SplitCounterSlots * 4 + slots * cfg.split_k * int64_t{cfg.block_m / std::max(1, cfg.warps_m / 4)} *
                                          (cfg.block_n / std::max(1, cfg.warps_n)) * 4;
}

bool sm90_promotes(const KernelSpec& spec, const TileConfig& cfg) {
  if (!format_is_fp8(spec.a.format) && !(sm90_mx(spec) && !sm90_mx_dequant(spec, cfg))) return false;
  if (2 * acc_regs(cfg) <= kMaxAccRegs) return true;
  // Block-scaled tiles with one atom per stage and 1 or 2 consumer warpgroups also promote 64 x 192 per
  // warpgroup: 96 accumulators + 96 partials in the consumers' 232 registers (the kernel's section 7).
  // Other FP8 tiles that wide accumulate fast (unpromoted), as before.
  return (sm90_block_scaled(spec) && atoms(spec, cfg) == 1 && consumers(cfg) <= 2 &&
          2 * acc_regs(cfg) <= kMaxPromotedBlockRegs) ||
         sm90_half_partial(spec, cfg);
}

bool sm90_half_partial(const KernelSpec& spec, const TileConfig& cfg) {
  if (!sm90_block_scaled(spec) || atoms(spec, cfg) != 1 || consumers(cfg) > 2 || cfg.split_k != 1)
    return false;
  const int wgs_m = std::max(1, cfg.warps_m / 4), wgs_n = std::max(1, cfg.warps_n);
  return cfg.block_m / wgs_m == 64 && cfg.block_n / wgs_n == 256;
}

int sm90_atom_k(const KernelSpec& spec) { return kRowBytes / elem_bytes(spec.a.format); }

bool sm90_staged_scales(const KernelSpec& spec, const TileConfig& cfg) {
  if (!sm90_block_scaled(spec)) return false;
  if (atoms(spec, cfg) == 2 || consumers(cfg) == 3) return true;
  // One-atom tiles with 1 or 2 consumers (session 17): staged wherever the slots fit beside the ring
  // (4 (block_m + 4) bytes per stage), which was 3-11% faster than the consumers' own global loads at
  // M = 128 .. 8192 (bench/NOTES.md session 17). A ring that fills shared memory keeps those loads.
  // (The sm90 family compiles for sm_90a only.)
  return sm90_smem_bytes_with_slots(spec, cfg, /*staged_slots=*/true) <=
         Arch{9, 0, true}.max_smem_per_block();
}

namespace {

// The problems the heuristic and the tuner's space give TMA-store configs (the kernel's section 12): no
// gate|up (check_config refuses it), and not grouped MXFP8 (never run with TMA stores; dense MXFP8 and
// every other grouped format were measured, bench/NOTES.md sessions 5, 15 and 23).
bool offers_tma_store(const KernelSpec& spec) {
  return spec.gate_up == GateUp::kNone && (spec.layout == GroupLayout::kDense || !sm90_mx(spec));
}

// c one stage shallower where its ring fills shared memory so that its block scales are not staged and one
// stage fewer stages them (the kernel then reads them from the slot instead of issuing per-thread global
// loads); c itself otherwise (every spec without block scales, rings that stage already or cannot).
TileConfig with_staged_scales(const KernelSpec& spec, const TileConfig& c) {
  if (c.stages < 4 || sm90_staged_scales(spec, c)) return c;
  TileConfig fewer = c;
  fewer.stages = c.stages - 1;
  return sm90_staged_scales(spec, fewer) ? fewer : c;
}

}  // namespace

Status sm90_check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  const string name = "config " + cfg.to_string() + " (sm90_gemm): ";
  if (cfg.decode != 0)
    return InvalidArgument(name + "decode=" + to_string(cfg.decode) + " names a decode kernel of the portable family (KILN_FAMILY=sm80, or a "
                           "plan's small-M bucket); the sm90 family takes decode 0");
  if (!sm90_supports(spec, arch))
    return Unsupported(name + "the sm90 family needs sm_90a and two bf16, two f16, two FP8 (scales: a tensor, m "
                       "or block1x128; b tensor, n or block128x128) or two MXFP8 operands, and no stacked "
                       "gate|up (" + arch.name() + ")");
  const struct {
    const char* field;
    int v, lo, hi;
  } ranges[] = {{"block_m", cfg.block_m, 64, 256}, {"block_n", cfg.block_n, 64, 256},
                {"warps_m", cfg.warps_m, 4, 12},   {"warps_n", cfg.warps_n, 1, 2},
                {"stages", cfg.stages, 2, 16},     {"group_m", cfg.group_m, 1, 64},
                {"cluster_m", cfg.cluster_m, 1, 2},  {"split_k", cfg.split_k, 1, 64}};
  for (const auto& r : ranges) {
    if (r.v < r.lo || r.v > r.hi)
      return InvalidArgument(name + r.field + "=" + to_string(r.v) + " is out of range (" + to_string(r.lo) +
                             ".." + to_string(r.hi) + ")");
  }
  const int eb = elem_bytes(spec.a.format);
  const bool dq = sm90_mx_dequant(spec, cfg);
  if (!dq && cfg.block_k * eb != kRowBytes && cfg.block_k * eb != 2 * kRowBytes)
    return InvalidArgument(
        name + "block_k=" + to_string(cfg.block_k) + " is " + to_string(cfg.block_k * eb) +
        " bytes of K; a stage of the TMA/wgmma ring holds one or two 128-byte swizzle atoms (block_k " +
        to_string(kRowBytes / eb) + " or " + to_string(2 * kRowBytes / eb) + " for " + format_name(spec.a.format) +
        ")" + (sm90_mx(spec) ? string("; a=mxfp8 also takes block_k 64: the producer dequantizes to bf16") : string()));
  if (cfg.warps_m % 4 != 0)
    return InvalidArgument(name + "warps_m=" + to_string(cfg.warps_m) +
                           " is not a multiple of 4: consumer warps come in warpgroups stacked along M");
  const int n_consumers = consumers(cfg);
  if (n_consumers < 1 || n_consumers > 3 || (n_consumers == 3 && cfg.warps_n != 1))
    return InvalidArgument(name + to_string(n_consumers) + " consumer warpgroups (warps_m / 4 * warps_n = " +
                           to_string(cfg.warps_m) + " / 4 * " + to_string(cfg.warps_n) +
                           "); the kernel takes 1 or 2, or 3 stacked along M (warps 12x1)");
  const int wgs_m = cfg.warps_m / 4, wgs_n = cfg.warps_n;
  if (cfg.block_m % (64 * wgs_m) != 0)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) + " is not a multiple of 64 * " +
                           to_string(wgs_m) + ": each consumer warpgroup owns whole m64 wgmma slabs");
  const int wg_n = cfg.block_n / wgs_n;
  // The wgmma N the kernel spells out (ptx/wgmma.cuh): powers of two, and the widths between them that
  // let 132 SMs fill (e.g. N = 2112 = 11 x 192).
  const bool wg_n_ok = wg_n == 64 || wg_n == 96 || wg_n == 112 || wg_n == 128 || wg_n == 144 || wg_n == 160 ||
                       wg_n == 176 || wg_n == 192 || wg_n == 208 || wg_n == 256;
  if (cfg.block_n % wgs_n != 0 || !wg_n_ok)
    return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) + " over " + to_string(wgs_n) +
                           " warpgroups is not a wgmma N of 64, 96, 112, 128, 144, 160, 176, 192, 208 or 256 per "
                           "warpgroup");
  if (acc_regs(cfg) > (cfg.pingpong ? kMaxPingPongAccRegs : kMaxAccRegs))
    return InvalidArgument(name + "a consumer warpgroup tile of " + to_string(cfg.block_m / wgs_m) + "x" +
                           to_string(wg_n) + " needs " + to_string(acc_regs(cfg)) +
                           " f32 accumulators per thread; at most " +
                           to_string(cfg.pingpong ? kMaxPingPongAccRegs : kMaxAccRegs) +
                           (cfg.pingpong ? string(" for a ping-pong warpgroup (a smaller tile, or pingpong 0 "
                                                  "with two warpgroups sharing it)")
                                         : string(" (use two warpgroups or a smaller tile)")));
  // Three consumer warpgroups have 160 registers each (the kernel's section 8).
  if (n_consumers == 3 && (acc_regs(cfg) > 64 || atoms(spec, cfg) != 1))
    return InvalidArgument(name + "3 consumer warpgroups of " + to_string(cfg.block_m / wgs_m) + "x" +
                           to_string(wg_n) + " with block_k=" + to_string(cfg.block_k) +
                           ": their 160 registers hold warpgroup tiles of at most 64x128 (64 accumulators + 64 "
                           "partials) and one 128-byte atom per stage");
  // Promoted two-atom stages alternate two partials (the kernel's section 8); unpromoted ones (bf16, f16,
  // fast-accumulating FP8) issue both atoms into the accumulators.
  if (atoms(spec, cfg) == 2 && sm90_promotes(spec, cfg) && 3 * acc_regs(cfg) > 192)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) +
                           " (two 128-byte atoms per stage) alternates two promoted FP8 partials: warpgroup tiles "
                           "of at most 64x128 (accumulators + 2 partials <= 192 registers), not " +
                           to_string(cfg.block_m / wgs_m) + "x" + to_string(wg_n) + " (use block_k " +
                           to_string(kRowBytes / eb) + ")");
  // Block scales multiply each K tile's promoted partial (the kernel's section 7).
  if (sm90_block_scaled(spec)) {
    const string scales = string("a=") + format_name(spec.a.format) + ":" + scale_granularity_name(spec.a.scale) +
                          " b=" + format_name(spec.b.format) + ":" + scale_granularity_name(spec.b.scale);
    const bool one_block = wg_n <= 128 && 128 % wg_n == 0;
    if (wg_n == 256 && atoms(spec, cfg) == 1 && cfg.split_k != 1)
      return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with " + scales +
                             " on 256-column warpgroups (promoted in two halves, the kernel's section 14): "
                             "split-K is not supported there; use split_k 1, or block_n 64 / 128");
    if (spec.b.scale == ScaleGranularity::kBlock128x128 && !one_block && !sm90_half_partial(spec, cfg) &&
        (wg_n % 64 != 0 || wg_n > 192 || atoms(spec, cfg) == 2 || consumers(cfg) == 3))
      return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) + " gives each consumer warpgroup " +
                             to_string(wg_n) + " columns; with " + scales +
                             " a warpgroup's columns must lie in one 128-column scale block (64 or 128 per "
                             "warpgroup), or in 64-column segments with one atom per stage and 1 or 2 "
                             "consumer warpgroups (192 per warpgroup: block_n 192 with warps 8x1; 64x256 per "
                             "warpgroup: block_n 256 with warps 8x1 or 4x1, block_k 128)");
    if (!sm90_promotes(spec, cfg))
      return InvalidArgument(
          name + "a consumer warpgroup tile of " + to_string(cfg.block_m / wgs_m) + "x" + to_string(wg_n) +
          " cannot be promoted (" + to_string(2 * acc_regs(cfg)) +
          " f32 registers for accumulators + partials, at most " + to_string(kMaxAccRegs) + ", or " +
          to_string(kMaxPromotedBlockRegs) + " with one atom per stage and 1 or 2 consumer warpgroups); " +
          scales +
          " scales are applied to each 128-K tile's promoted partial: use warpgroup tiles of "
          "at most 64x192 (e.g. 128x128 or 128x192 with warps 8x1), or 64x256 with one atom "
          "per stage (block_n 256, block_k 128, promoted in two halves)");
  }
  // MXFP8 promotes every k-step (the kernel's section 11): the accumulators, the partial and a k-step's
  // column scales share the consumer's 232 registers.
  // With block_k 64 (the kernel's section 13) the producer warpgroup dequantizes both operands to bf16
  // stages and two consumer warpgroups accumulate them unpromoted.
  if (dq && (n_consumers != 2 || cfg.cluster_m != 1 || cfg.split_k != 1))
    return InvalidArgument(name + "a=mxfp8 b=mxfp8 with block_k 64 (the producer dequantizes to bf16) takes two "
                           "consumer warpgroups (warps 8x1 or 4x2), no clusters and no split-K (cluster_m 1, "
                           "split_k 1); this config: " + to_string(n_consumers) + " warpgroups, cluster_m " +
                           to_string(cfg.cluster_m) + ", split_k " + to_string(cfg.split_k));
  if (sm90_mx(spec) && !dq && (atoms(spec, cfg) != 1 || acc_regs(cfg) > 64 || n_consumers > 2))
    return InvalidArgument(name + "a=mxfp8 b=mxfp8 promotes every 32-K step: one 128-byte atom per stage "
                           "(block_k " + to_string(kRowBytes / eb) + "), warpgroup tiles of at most 64 "
                           "accumulators per thread (64x128 or 128x64; this config: " +
                           to_string(cfg.block_m / wgs_m) + "x" + to_string(wg_n) + ", block_k " +
                           to_string(cfg.block_k) + ") and 1 or 2 consumer warpgroups (e.g. 128x128 with warps 8x1)");
  // The TMA-store epilogue (the kernel's section 12): a GLU writes N / 2 columns from column pairs. (Grouped
  // problems take it: a warpgroup whose slab crosses its expert's last row stores that slab directly.)
  // Boxes of 128 bytes where the warpgroup's columns are a whole number of them, else of 16 columns.
  if (cfg.tma_store != 0 && wg_n % 16 != 0)
    return InvalidArgument(
        name + "tma_store=" + to_string(cfg.tma_store) + " with " + to_string(wg_n) +
        " columns per warpgroup: the staged slab is stored in boxes of 128 bytes or of 16 columns; use "
        "tma_store 0 or a multiple of 16 columns");
  const bool tma_value_ok = tma_store_value_ok(cfg.tma_store);
  if (cfg.tma_store != 0 && (!tma_value_ok || spec.gate_up != GateUp::kNone))
    return InvalidArgument(name + "tma_store=" + to_string(cfg.tma_store) + " with " +
                           (!tma_value_ok ? string("a value other than 0, 1, 2 or 4") : string("gate_up")) +
                           ": the TMA-store epilogue takes problems without gate|up (tma_store 0)");
  // tma_store = 2 / 4 stores the slab in two / four chunks of whole boxes (128 bytes of a row, or 16
  // columns), each of ceil(boxes / chunks) but the last, which must not be empty (5 boxes in 4 chunks
  // would be 2 + 2 + 1 + 0: a wait and a commit for nothing, through the buffer of 3 chunks).
  if (cfg.tma_store >= 2 && wg_n % 16 == 0) {
    const int box_cols = out_box_cols(spec, cfg);
    const int boxes = wg_n / box_cols, chunks = cfg.tma_store;
    if ((chunks - 1) * ((boxes + chunks - 1) / chunks) >= boxes)
      return InvalidArgument(name + "tma_store=" + to_string(chunks) + " with " + to_string(wg_n) +
                             " columns per warpgroup: " + to_string(boxes) + " output box(es) of " +
                             to_string(box_cols) + " columns do not fill " + to_string(chunks) +
                             " chunks of ceil(" + to_string(boxes) + " / " + to_string(chunks) +
                             ") boxes; use tma_store 1" + (chunks == 4 && boxes >= 2 ? " or 2" : ""));
  }
  // Split-K with unpromoted two-atom stages: ptxas serializes the wgmmas (C7520, the conditional second
  // atom of a split's odd tail), so that pairing is refused.
  if (cfg.split_k > 1 && atoms(spec, cfg) == 2 && !sm90_promotes(spec, cfg))
    return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with block_k=" + to_string(cfg.block_k) +
                           " (two unpromoted atoms per stage): ptxas serializes that kernel's wgmmas; use block_k " +
                           to_string(kRowBytes / eb) + " or split_k 1");
  // Split-K on block-scaled 192-column warpgroups (96 accumulators + 96 partials) spills in ptxas
  // (measured: 24-28 B of spill stores at 128 x 192 and 64 x 192 with k2 / k4): refused.
  if (cfg.split_k > 1 && sm90_block_scaled(spec) && cfg.block_n / std::max(1, cfg.warps_n) == 192)
    return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with block scales on 192 columns per "
                           "warpgroup: the promoted 64x192 tile and the split's partial sums do not fit the "
                           "registers; use split_k 1 or block_n 64 / 128 for split-K");
  // Ping-pong consumers (the kernel's section 16): each of the two warpgroups owns the whole tile and
  // adds into its accumulators without promotion; the consumers find each tile's stages in the ring by
  // counting, so every tile has the same K range (dense, no split-K).
  if (cfg.pingpong != 0 && (cfg.pingpong != 1 || cfg.warps_m != 4 || cfg.warps_n != 1 ||
                            (cfg.block_m != 64 && cfg.block_m != 128) || sm90_promotes(spec, cfg) ||
                            sm90_mx(spec) || spec.layout != GroupLayout::kDense || cfg.split_k != 1))
    return InvalidArgument(
        name + "pingpong=" + to_string(cfg.pingpong) + ": " +
        (cfg.pingpong != 1 ? string("a value other than 0 or 1")
         : cfg.warps_m != 4 || cfg.warps_n != 1
             ? "warps " + to_string(cfg.warps_m) + "x" + to_string(cfg.warps_n) +
                   " (ping-pong warpgroups each own the whole tile: warps 4x1)"
         : cfg.block_m != 64 && cfg.block_m != 128
             ? "block_m=" + to_string(cfg.block_m) + " (ping-pong tiles have 64 or 128 rows)"
         : sm90_mx(spec) ? string("a=mxfp8 (promoted every 32-K step)")
         : sm90_promotes(spec, cfg)
             ? "a promoted FP8 tile of " + to_string(cfg.block_m) + "x" + to_string(cfg.block_n) +
                   " (block scales, or at most 64 accumulators)"
         : spec.layout != GroupLayout::kDense ? string("a grouped problem")
                                              : "split_k=" + to_string(cfg.split_k)) +
        "; ping-pong consumers need a dense problem, warps 4x1, split_k 1 and unpromoted "
        "accumulation: bf16 or f16, or FP8 with tensor / per-row scales on a tile of more "
        "than 64 accumulators per thread (e.g. 128x128, 64x256, 128x176); otherwise use "
        "pingpong 0");
  // Split-K (the kernel's section 10): dense problems, no clusters.
  if (cfg.split_k > 1 && (spec.layout != GroupLayout::kDense || cfg.cluster_m != 1))
    return InvalidArgument(name + "split_k=" + to_string(cfg.split_k) + " with " +
                           (cfg.cluster_m != 1 ? "cluster_m=" + to_string(cfg.cluster_m)
                                               : string("a grouped problem")) +
                           ": split-K runs on dense problems without clusters (split_k 1, or cluster_m 1)");
  const int smem = sm90_smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(
        name + "stages * (block_m + block_n) * 128 bytes + barriers" +
        (cfg.tma_store ? string(cfg.pingpong ? " + a staged output tile per consumer (tma_store, pingpong)"
                                             : " + the staged output tile (tma_store)") +
                             (spec.b.scale == ScaleGranularity::kN ? " + the staged column scales" : "")
                       : string()) +
        " = " + to_string(smem) + " bytes of shared memory; " + arch.name() + " allows " +
        to_string(arch.max_smem_per_block()) + " per block (fewer stages or smaller tiles)");
  return Status::Ok();
}

TileConfig sm90_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  const int64_t m = std::max<int64_t>(sizes.m, 1);
  // Large dense problems without gate|up store through shared memory and TMA (the kernel's section 12),
  // one stage fewer where the staged tile needs it. Measured on the H200 (2026-11-29 session 5, run 4,
  // the plan's config against the same config with TMA stores): 4096 x 32768 x 512 bf16 0.357 -> 0.213
  // ms, FP8 tensor 0.314 -> 0.134, FP8 block 0.306 -> 0.152; 4096 x 24576 x 1536 bf16 0.500 -> 0.404;
  // 4096 x 7168 x 2048 FP8 row 0.137 -> 0.098, block 0.136 -> 0.112; 4096 x 7168 x 16384 FP8 tensor
  // 0.677 -> 0.632. From 64 rows since session 22 (bench/NOTES.md): the same tile with TMA stores against
  // direct stores, settled graph replay, 64 x 24576 x 1536 FP8 tensor 15.42 -> 14.83 us and FP8 row
  // 22.98 -> 14.38; the block-scaled 128 x 128 square at 128 .. 512 rows 6-10% faster (session 18); and
  // every one of the 15 bf16 / FP8 tensor / FP8 row M-bucket 64 / 128 rows probed took a TMA-store tile.
  // Grouped problems (rows per expert, bf16 / f16 / FP8 tensor and per-row scales) since session 23: a
  // warpgroup's slab that crosses its expert's last row goes out directly, the rest through TMA. Settled
  // graph replay on the H200 (bench/NOTES.md session 23, run 3), 32 experts x 512 rows (T = 4096, top-4):
  // 16384 x 2880 x 2880 FP8 row 352 -> 269 us, bf16 470 -> 429; x 5760 x 2880 FP8 row 684 -> 543, bf16 947
  // -> 858; 32 x 1024 rows (top-8) x 7168 x 2048 FP8 row 1283 -> 883, bf16 1590 -> 1394; FP8 block scales
  // (run 6) through the 128 x 256 rule below. MXFP8 grouped problems keep direct stores (not measured).
  const bool tma_store = m >= kSm90TmaStoreMinRows && offers_tma_store(spec);
  // Grouped problems are planned per M bucket of rows PER EXPERT (runtime/operands.hpp bucket_rows):
  // every expert brings its own tiles.
  const int64_t groups = spec.layout == GroupLayout::kDense ? 1 : std::max(1, spec.experts);
  auto tiles = [&](const ProblemSizes& s, const TileConfig& c) { return kiln::tiles(s, c) * groups; };
  // The share of the SMs' tile slots doing useful work, M N / (ceil(tiles / SMs) SMs tile_M tile_N): counts
  // both the last wave and the padding of the last tile column.
  auto useful = [&](const TileConfig& c) {
    const double waves = std::ceil(static_cast<double>(tiles(sizes, c)) / kSms);
    const double slots = waves * kSms * c.block_m * c.block_n;
    return static_cast<double>(m) * static_cast<double>(std::max<int64_t>(sizes.n, 1)) * groups / slots;
  };
  // At most one stage is given up for the staged tile (measured: 4 -> 3 on the wide tile, 3 -> 2 on the
  // two-atom block tile); an f32 tile that would halve the wide ring keeps the direct epilogue.
  // Block-scaled rings that fill shared memory leave no room for the scale slots (the kernel then loads
  // each K block's scales per thread from global memory); one stage fewer stages them. Measured on the
  // H200 for the 128 x 128 square (bench/NOTES.md session 18, `kiln run --repeats 30`, twice each):
  // 300 x 7168 x 7168 63.6 -> 54.4 us with TMA stores (6 -> 5 stages), 69.0 -> 57.5 without (7 -> 6);
  // 128 x 7168 x 7168 35.3 -> 31.8 / 37.7 -> 31.4; 512 x 4096 x 7168 34.6 -> 31.2 / 38.4 -> 33.2;
  // 300 x 2112 x 7168 32.9 -> 29.0 / 35.2 -> 29.8.
  // (with_staged_scales, applied after the TMA-store choice below, which compares the full rings.)
  auto finish_with = [&](TileConfig c, bool store) {
    c.stages = max_stages(spec, arch, c);
    if (store) {
      TileConfig t = c;
      t.tma_store = 1;
      t.stages = max_stages(spec, arch, t);
      if (t.stages >= c.stages - 1 && sm90_check_config(spec, arch, t).ok())
        return with_staged_scales(spec, t);
    }
    return with_staged_scales(spec, c);
  };
  auto finish = [&](const TileConfig& c) { return finish_with(c, tma_store); };
  // Large problems: 128 x 256, two consumer warpgroups of 64 x 256 (128 accumulators each: the widest
  // wgmma, the least shared-memory traffic per FLOP), 4 stages. FP8 keeps 128 x 256 too (fast
  // accumulation: a promoted partial would need 256 registers); bench/NOTES.md has the measurements.
  // Not in clusters (cluster_m = 1): the clustered variant measured slower so far (bench/NOTES.md,
  // v2: a fence in its remote arrive, since removed but not yet measured on a GPU).
  // MXFP8 at large M and long K: the dequantizing mainloop (block_k 64, the kernel's section 13) with A
  // in registers, 128 x 256 with 3 stages of B. Measured on the H200 against the promoted square that
  // this rule replaces (bench/NOTES.md session 15): 2.14 vs 2.47 ms at 4096 x 7168 x 16384, 2.50 vs 2.84
  // at 8192^3, 553 vs 614 us at 4096 x 4096 x 7168 (run 2's tune log). Shorter K is left to the tuner
  // (its space holds these tiles; at K = 512 .. 2048 it chose 128 x 160 / 192 with TMA stores, 1.09-1.20x
  // the square). Dense problems without gate|up only: grouped and GLU MXFP8 were not measured with it.
  // Enough tiles for two waves, and waves that waste no more than 128 x 128's (within 5%).
  if (m > 64 && sm90_mx(spec) && sizes.k >= 4096 && spec.layout == GroupLayout::kDense &&
      spec.gate_up == GateUp::kNone) {
    TileConfig dq = make(spec, 128, 256, 8, 1);
    dq.block_k = 64;
    dq = finish(dq);
    if (tiles(sizes, dq) >= 2 * kSms && 1.05 * useful(dq) >= useful(make(spec, 128, 128, 8, 1)) &&
        sm90_check_config(spec, arch, dq).ok())
      return dq;
  }
  const TileConfig wide = finish(make(spec, 128, 256, 8, 1));
  // (Block-scaled 128 x 256 promotes in two halves, the kernel's section 14: block-scaled problems take
  // it by their own rule below, where N fills whole 256-column tiles.)
  if (m > 64 && tiles(sizes, wide) >= kSms && !sm90_half_partial(spec, wide) &&
      sm90_check_config(spec, arch, wide).ok()) {
    // 128 x 192 where its waves waste clearly less: the share of the SMs' tile slots doing useful work,
    // M N / (ceil(tiles / SMs) SMs 128 N_tile), counts both the last wave and the padding of the last
    // tile column. 4096 x 2112: 0.67 in 128 x 256 tiles (9 columns of which the last is 1/4 used, 2.2
    // waves), 0.89 in 128 x 192 (11 exact columns, 2.7 waves); measured on the H200 (session 6 tuning,
    // bench/logs/2026-11-29-session6-run1-*): bf16 0.222 -> 0.172 ms, FP8 tensor 0.121 -> 0.094, row
    // 0.124 -> 0.096. The 5% margin keeps the wider tile (less shared-memory traffic per FLOP) on ties.
    // 128 x 176 likewise (2112 = 12 x 176: 0.97 useful, 2.9 waves): with TMA stores in 16-column boxes
    // 5-6% faster than 128 x 192 there for bf16 and FP8 tensor (bench/NOTES.md, session 11).
    // Grouped problems take 128 x 192 by the same rule (tiles counted per expert), not 128 x 176 (measured
    // on dense problems only): gpt-oss-20b's down projection, 32 experts x 512 rows x 2880 x 2880 (2880 =
    // 15 x 192, 11.25 x 256), direct stores, bf16 511 -> 470 us and FP8 row 376 -> 351 by settled graph
    // replay (bench/NOTES.md session 23).
    const bool dense = spec.layout == GroupLayout::kDense;
    TileConfig narrow = finish(make(spec, 128, 192, 8, 1));
    const TileConfig n176 = finish(make(spec, 128, 176, 8, 1));
    if (dense && useful(n176) > 1.05 * useful(narrow) && sm90_check_config(spec, arch, n176).ok())
      narrow = n176;
    if (useful(narrow) > 1.05 * useful(wide) && sm90_check_config(spec, arch, narrow).ok()) return narrow;
    return wide;
  }
  // Block-scaled problems promote at most 64 x 192 per warpgroup: 128 x 192 (one atom per stage) where
  // its waves waste clearly less than 128 x 128's, as above (4096 x 2112: 0.89 vs 0.80 useful; measured
  // 121 vs 132 us against the two-atom 128 x 128 below, and slower at 4096 x {4096, 7168, 24576},
  // bench/NOTES.md session 11).
  if (m > 64 && sm90_block_scaled(spec) && spec.layout == GroupLayout::kDense) {
    const TileConfig b192 = finish(make(spec, 128, 192, 8, 1));
    const TileConfig b128 = make(spec, 128, 128, 8, 1);
    if (tiles(sizes, b192) >= kSms && useful(b192) > 1.05 * useful(b128) &&
        sm90_check_config(spec, arch, b192).ok())
      return b192;
  }
  // Medium problems, and large block-scaled ones the rules above did not take (N not a multiple of 256,
  // f32 outputs): 128 x 128, two warpgroups of 64 x 128 (FP8 promoted), 7 stages (6 with block scales, so
  // that their slots fit: with_staged_scales).
  // Large block-scaled problems with f32 scales: 128 x 128 with two 128-K atoms per stage (the second
  // atom's wgmmas overlap the first's promotion) and scales staged in shared memory, in clusters of 2
  // (B multicast). Measured on the H200 (2026-11-29, bench/NOTES.md v4): 1170 vs 967 TFLOP/s at
  // 4096 x 7168 x 7168, 1120 vs 1016 at K = 16384. ue8m0 scales too since their staging copies one
  // word per row and stage (session 12: 0.86-0.87 ms against 1.03 for the one-atom square at
  // 4096 x 7168 x 16384; before, two copies per row and stage measured no faster, 910 vs 923 TFLOP/s).
  // Large block-scaled problems whose N fills whole 256-column tiles: 128 x 256 promoted in two halves
  // (the kernel's section 14) with TMA stores, its block scales staged beside the ring, in clusters of 2
  // from K = 2048, where its waves waste no more than 128 x 128's (within 5%; 128 x 192 keeps the shapes
  // its own rule above prefers). Tuned on the H200 after the one-atom tiles' scales were staged (session
  // 17, 25 candidates per shape): 755 against 793 us for the two-atom 128 x 128 below at 4096 x 7168 x
  // 16384 (f32 scales), and the 128 x 256 tile won at 4096 x {4096 x 7168, 7168 x 2048, 32768 x 512}
  // too. E8M0 scales took it before (session 13, K >= 8192 only). f32 outputs have no room for the
  // staged output tile and keep the two-atom 128 x 128. Grouped problems (rows per expert) take it
  // unclustered since session 23: DeepSeek-V3's MoE layers, 32 experts x 1024 rows, settled graph replay
  // against the two-atom 128 x 128 in clusters of 2 below (bench/NOTES.md session 23, run 6): 32768 x 7168
  // x 2048 1129 -> 862 us (908 in clusters of 2), 32768 x 4096 x 7168 1825 -> 1656 (1709). Grouped ones
  // from 128 rows per expert since session 24: DeepSeek-V3 at T = 512 (32 experts x 128 rows), settled
  // graph replay against the two-atom 128 x 128 in clusters of 2 that those buckets took (bench/NOTES.md
  // session 24, run 3): 4096 x 7168 x 2048 270.6 -> 188.3 us, 4096 x 4096 x 7168 439.8 -> 335.6.
  const int64_t half_min_rows = spec.layout == GroupLayout::kDense ? 256 : 128;
  if (m >= half_min_rows && sm90_block_scaled(spec) && sizes.n % 256 == 0) {
    TileConfig half = finish(make(spec, 128, 256, 8, 1));
    if (half.tma_store && tiles(sizes, half) >= 2 * kSms &&
        1.05 * useful(half) >= useful(make(spec, 128, 128, 8, 1)) &&
        sm90_check_config(spec, arch, half).ok()) {
      TileConfig clustered = half;
      clustered.cluster_m = 2;
      if (spec.layout == GroupLayout::kDense && sizes.k >= 2048 &&
          sm90_check_config(spec, arch, clustered).ok())
        return clustered;
      return half;
    }
  }
  if (m > 64 && sm90_block_scaled(spec) && tiles(sizes, make(spec, 128, 128, 8, 1)) >= 2 * kSms) {
    TileConfig overlapped = make(spec, 128, 128, 8, 1);
    overlapped.block_k = 2 * overlapped.block_k;  // two atoms per stage
    overlapped.cluster_m = 2;
    // TMA stores from 256 rows only here: its two-stage store ring was measured at M = 4096 (session 12),
    // never below 256 rows, where this tile keeps the three-stage direct ring it had.
    overlapped = finish_with(overlapped, tma_store && m >= 256);
    // Long K: a third stage beats the TMA-store epilogue (whose staged output tile leaves room for two):
    // at 4096 x 7168 x 16384 787 vs 814 us, level at K = 7168 and 8192, and the TMA store stays ahead
    // at K <= 2048 (H200 tuning, bench/NOTES.md session 12).
    if (overlapped.tma_store && sizes.k >= 8192) {
      TileConfig deep = overlapped;
      deep.tma_store = 0;
      deep.stages = max_stages(spec, arch, deep);
      if (deep.stages > overlapped.stages && sm90_check_config(spec, arch, deep).ok()) overlapped = deep;
    }
    if (sm90_check_config(spec, arch, overlapped).ok()) return overlapped;
  }
  const TileConfig square = finish(make(spec, 128, 128, 8, 1));
  // MXFP8 (pre-tuned for the H200's benchmark shapes since session 6): a square that leaves most SMs idle
  // goes to the small-M path below (64-row tiles, split-K), as measured on the H200 (128 x 2112 x 7168:
  // 0.14x of the block path).
  const bool mx_few_tiles = sm90_mx(spec) && tiles(sizes, square) < kSms;
  if (m > 64 && !mx_few_tiles && sm90_check_config(spec, arch, square).ok()) return square;
  // Small M: one consumer warpgroup of 64 rows; narrower N when that leaves SMs idle.
  auto small_tile = [&](bool store) {
    TileConfig c = finish_with(make(spec, 64, 128, 4, 1), store);
    if (tiles(sizes, c) < kSms) c = finish_with(make(spec, 64, 64, 4, 1), store);
    return c;
  };
  TileConfig small = small_tile(tma_store);
  // Still fewer tiles than SMs (decode: M <= 64 with N of a few thousand): split K so that about one
  // unit per SM reads the weights (the kernel's section 10), keeping >= 8 stages of K per split.
  // Dense only; the last split of a tile sums the partials through a workspace. Split tiles keep the
  // direct epilogue (measured that way; the tuner's split-K variants have no TMA-store form).
  if (spec.layout == GroupLayout::kDense) {
    const TileConfig direct = small_tile(false);
    const int64_t t = tiles(sizes, direct);
    const int64_t steps = (std::max<int64_t>(sizes.k, 1) + direct.block_k - 1) / direct.block_k;
    const int64_t split = std::min<int64_t>({kSms / std::max<int64_t>(t, 1), steps / 8, 16});
    if (split >= 2) {
      TileConfig s = direct;
      s.split_k = static_cast<int>(split);
      if (sm90_check_config(spec, arch, s).ok()) small = s;  // its flags need 16 bytes more
    }
  }
  return small;
}

LaunchShape sm90_launch_shape(const KernelSpec& spec, const TileConfig& cfg, const ProblemSizes& sizes) {
  LaunchShape ls;
  // One CTA per tile (cluster_m per cluster tile); the runtime caps it at what the device holds at once.
  // Grouped: the per-expert row counts live on the device; sum_e ceil(r_e / block_m) <= M / block_m + E
  // bounds the tile rows (masked: M = E * max_m, the same bound holds).
  int64_t ctiles = cluster_tiles(sizes, cfg) * cfg.split_k;  // split-K: a unit per split of each tile
  if (spec.layout != GroupLayout::kDense) {
    const int64_t m = std::max<int64_t>(sizes.m, 1), n = std::max<int64_t>(sizes.n, 1);
    ctiles = ((m + cfg.block_m - 1) / cfg.block_m + spec.experts) * ((n + cfg.block_n - 1) / cfg.block_n);
  }
  ls.grid_x = static_cast<unsigned>(std::min<int64_t>(ctiles * cfg.cluster_m, (int64_t{1} << 31) - 2));
  ls.block_x = static_cast<unsigned>(sm90_threads(spec, cfg));
  ls.dynamic_smem = sm90_smem_bytes(spec, cfg);
  return ls;
}

double sm90_check_tolerance(const KernelSpec& spec, const TileConfig& cfg, int64_t k, double base) {
  // MXFP8's elements are e4m3 on the same wgmma (each 32-K partial in the truncated accumulator).
  if (!format_is_fp8(spec.a.format) && !sm90_mx(spec)) return base;
  // A model of the truncated accumulator (bench/NOTES.md, 2026-12: e8m13, truncation, per k32 step)
  // on run_check's data gives ~1e-4 promoted at any K, and 2e-4 .. 1.8e-3 unpromoted for K = 272 ..
  // 7168 (growing ~linearly with K). Allow 5x the promoted figure, and K-proportional slack when not.
  // Per-row and block scales change nothing here: the kernel applies them in the reference's order
  // (acc * (row * col); fma(part, sa * sb, acc) per 128-K block, always promoted: check_config
  // enforces it), so only the wgmma partial sums differ from the reference's. The unpromoted intercept
  // is 7e-4: with 5e-4 a one-row problem (256 outputs, a noisy Frobenius estimate) measured 1.064e-3
  // against 1.02e-3 at K = 1040 (session 17, seed 193575209313).
  const double fp8 = sm90_promotes(spec, cfg) ? 5e-4 : 7e-4 + 5e-7 * static_cast<double>(k);
  return std::max(base, fp8);
}

std::vector<TileConfig> sm90_config_space(const KernelSpec& spec, const Arch& arch) {
  std::vector<TileConfig> out;
  const int shapes[][5] = {// block_m, block_n, warps_m, warps_n, atoms per stage
                           {64, 64, 4, 1, 1},   {64, 128, 4, 1, 1},  {64, 256, 4, 1, 1},  {128, 64, 8, 1, 1},
                           {128, 128, 8, 1, 1}, {128, 256, 8, 1, 1}, {128, 128, 4, 1, 1}, {128, 256, 4, 2, 1},
                           {256, 128, 8, 1, 1}, {128, 128, 4, 2, 1},
                           // N tiles between the powers of two (two warpgroups of 64 x N): N = 2112 = 11 x
                           // 192, 7168 = 56 x 128 ~ 34.5 x 208, ... so the last wave fills more SMs.
                           {128, 192, 8, 1, 1}, {128, 160, 8, 1, 1}, {128, 208, 8, 1, 1}, {128, 144, 8, 1, 1},
                           {128, 112, 8, 1, 1},
                           // 2112 = 12 x 176: 2.9 waves of 128-row tiles at M = 4096 (192: 2.7); with TMA
                           // stores in 16-column boxes, 5-6% faster than 128 x 192 there (bench/NOTES.md,
                           // session 11).
                           {128, 176, 8, 1, 1},
                           // v4 (the kernel's section 8), offered for block-scaled specs: two-atom stages
                           // with overlapped promotion, and three consumer warpgroups.
                           {128, 128, 8, 1, 2}, {64, 128, 4, 1, 2},  {64, 256, 4, 2, 2},  {192, 128, 12, 1, 1},
                           {64, 64, 4, 1, 2}};
  const bool block = sm90_block_scaled(spec);
  for (const auto& s : shapes) {
    // v4 shapes are for block scales, except the 64-row two-atom tiles: unpromoted, they read 256 bytes of
    // every W row per stage (decode bandwidth) for any spec.
    const bool v4 = s[4] == 2 || s[2] == 12;
    if (v4 && !block && !(s[0] == 64 && s[4] == 2)) continue;
    for (int cluster_m : {1, 2}) {
      for (int group_m : {4, 8, 16}) {
        TileConfig c = make(spec, s[0], s[1], s[2], s[3], s[4]);
        c.group_m = group_m;
        c.cluster_m = cluster_m;
        const int deepest = max_stages(spec, arch, c);
        for (int stages = 3; stages <= deepest; ++stages) {
          c.stages = stages;
          if (sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        }
      }
    }
  }
  // The TMA-store epilogue (the kernel's section 12) for problems without gate|up: each non-v4 shape at the
  // deepest ring that fits beside the staged output tile, unclustered and in clusters of 2; and the
  // block-scaled two-atom 128 x 128 at its two stages, as the heuristic takes it at large M (before, the
  // heuristic's config was outside the space there and `kiln tune` had no baseline).
  if (offers_tma_store(spec)) {
    for (const auto& s : shapes) {
      const bool two_atom_square = block && s[0] == 128 && s[1] == 128 && s[4] == 2;
      if ((s[4] == 2 || s[2] == 12) && !two_atom_square) continue;
      for (int cluster_m : {1, 2}) {
        TileConfig c = make(spec, s[0], s[1], s[2], s[3], s[4]);
        c.cluster_m = cluster_m;
        c.tma_store = 1;
        c.stages = max_stages(spec, arch, c);
        if (c.stages >= (two_atom_square ? 2 : 3) && sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        // Block scales: where the deepest ring leaves no room for the staged scale slots, one stage fewer
        // that has it (128 x 32768 x 512, 128 x 128: 13.2 us staged at 5 stages against 14.3 at 6 with
        // per-thread loads; bench/NOTES.md session 17).
        const TileConfig fewer = with_staged_scales(spec, c);
        if (fewer.stages != c.stages && sm90_check_config(spec, arch, fewer).ok()) out.push_back(fewer);
      }
    }
  }
  // Ping-pong consumers (the kernel's section 16) for dense problems that accumulate unpromoted: two
  // warpgroups taking whole 128 x 128, 64 x 256 or 128 x 176 tiles in turn, with direct stores, TMA
  // stores, or TMA stores through a half- or quarter-size buffer (a stage more), at the deepest ring that
  // fits, unclustered and in clusters of 2 (check_config refuses the rest). 128 x 176 is N = 2112's tile
  // (12 x 176; cuBLAS's FP8 kernel there is a 5-stage ping-pong of it).
  if (spec.layout == GroupLayout::kDense) {
    for (const auto& s : {std::pair{128, 128}, std::pair{64, 256}, std::pair{128, 176}}) {
      for (int tma : {0, 1, 2, 4}) {
        if (tma && spec.gate_up != GateUp::kNone) continue;
        for (int cluster_m : {1, 2}) {
          TileConfig c = make(spec, s.first, s.second, 4, 1);
          c.pingpong = 1;
          c.tma_store = tma;
          c.cluster_m = cluster_m;
          c.stages = max_stages(spec, arch, c);
          if (c.stages >= 3 && sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        }
      }
    }
  }
  // MXFP8 through the dequantizing mainloop (block_k 64, the kernel's section 13) on 64-row warpgroups
  // (A in registers): 128 x N for the N tiles above, every ring depth that fits, with and without the
  // TMA store (no clusters, no split-K: check_config refuses them).
  if (sm90_mx(spec)) {
    for (int bn : {128, 144, 160, 176, 192, 208, 256}) {
      for (int tma : {0, 1}) {
        if (tma && !offers_tma_store(spec)) continue;
        TileConfig c = make(spec, 128, bn, 8, 1);
        c.block_k = 64;
        c.tma_store = tma;
        const int deepest = max_stages(spec, arch, c);
        for (int stages = 2; stages <= deepest; ++stages) {
          c.stages = stages;
          if (sm90_check_config(spec, arch, c).ok()) out.push_back(c);
        }
      }
    }
  }
  // Split-K (the kernel's section 10) for small M: the 64-row tiles at their deepest ring, K split 2..16
  // ways (dense problems only: check_config refuses the rest).
  for (const auto& s : shapes) {
    if (s[0] != 64 || ((s[4] == 2 || s[2] == 12) && !block && !(s[0] == 64 && s[4] == 2))) continue;
    for (int split : {2, 4, 8, 16}) {
      TileConfig c = make(spec, s[0], s[1], s[2], s[3], s[4]);
      c.split_k = split;
      c.stages = max_stages(spec, arch, c);
      if (sm90_check_config(spec, arch, c).ok()) out.push_back(c);
    }
  }
  return out;
}

}  // namespace kiln

// compiler/plan/plan.cpp — family selection, can_implement, TileConfig checks and the default heuristic.
//
// The rules here mirror the static_asserts of templates/kernels/sm80_gemm.cuh: a config that passes
// check_config instantiates and compiles without spills (tests/nvrtc/sm80_gemm_nvrtc_test.cpp proves
// it for a sample), and a problem that passes can_implement is one the kernel handles.
#include "compiler/plan/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using std::string;
using std::to_string;

constexpr int64_t kMaxIndex = (int64_t{1} << 31) - 1;  // the kernels index rows/columns/K with int
constexpr int kReferenceTile = 16;                     // templates/kernels/reference_gemm.cuh
constexpr int kReferenceThreads = kReferenceTile * kReferenceTile;
constexpr unsigned kMaxGridY = 65535;

// Bytes per stored element of a format the sm80 family reads (1 for FP8, 2 for bf16/f16).
int elem_bytes(Format f) { return std::max(1, format_bits(f) / 8); }

string operand_text(const char* role, const OperandSpec& o) {
  string s = string(role) + "=" + format_name(o.format);
  if (o.scale != ScaleGranularity::kNone) s += string(":") + scale_granularity_name(o.scale);
  return s;
}

// Why an operand format is not (yet) an sm80 operand; empty when it is.
string operand_gap(const char* role, const OperandSpec& o) {
  const string what = operand_text(role, o);
  switch (o.format) {
    case Format::kBf16:
    case Format::kF16:
      if (o.scale != ScaleGranularity::kNone) return what + ": scaled 16-bit operands are not supported";
      return "";
    case Format::kE4m3:
    case Format::kE5m2:
      if (o.scale != ScaleGranularity::kTensor)
        return what +
               ": the sm80 family supports per-tensor FP8 scales only so far (row and block scales: formats "
               "issue)";
      if (o.scale_type != ScaleType::kF32)
        return what + ": the sm80 family supports f32 FP8 scales only so far (scale type " +
               scale_type_name(o.scale_type) + ")";
      return "";
    case Format::kF32: return what + ": f32 operands are not supported (use bf16 or f16)";
    case Format::kMxfp8: return what + ": MX block-scaled operands are not implemented yet (formats issue)";
    case Format::kMxfp4:
    case Format::kNvfp4:
      return what +
             ": 4-bit operands are not implemented yet (formats issue); the sm80 family supports "
             "bf16/f16/e4m3/e5m2 operands with tensor scales so far";
  }
  return what + ": unknown format";
}

// Shared by the sm80 family and the reference: operation, pass, layout, epilogue, output.
Status check_problem_kind(const KernelSpec& spec, const Arch& arch) {
  if (arch.sm() < 80)
    return Unsupported(arch.name() + ": kiln's kernels need sm_80 or newer (cp.async, bf16 mma.sync)");
  if (spec.op == Op::kGroupedGemm)
    return Unsupported("grouped_gemm: the grouped schedulers are not implemented yet (formats issue)");
  if (spec.op != Op::kGemm)
    return Unsupported(string(op_name(spec.op)) + ": no kernel family implements this operation yet");
  if (spec.pass != Pass::kFprop)
    return Unsupported(
        string("pass=") + pass_name(spec.pass) +
        ": the sm80 family implements fprop only so far (dgrad/wgrad need transposed operands)");
  if (spec.layout != GroupLayout::kDense)
    return Unsupported(string("layout=") + group_layout_name(spec.layout) +
                       ": only dense problems are implemented");
  if (spec.gate_up != GateUp::kNone)
    return Unsupported(string("gate_up=") + gate_up_name(spec.gate_up) +
                       ": fused gate|up epilogues are not implemented yet");
  const Format o = spec.out.format;
  if (o != Format::kBf16 && o != Format::kF16 && o != Format::kF32)
    return Unsupported(string("out=") + format_name(o) +
                       ": quantized outputs are not implemented yet; out must be bf16, f16 or f32");
  if (spec.out.scale != ScaleGranularity::kNone)
    return Unsupported(operand_text("out", spec.out) + ": scaled outputs are not implemented yet");
  return Status::Ok();
}

}  // namespace

const char* family_name(KernelFamily f) {
  switch (f) {
    case KernelFamily::kSm80Gemm: return "sm80_gemm";
    case KernelFamily::kReferenceGemm: return "reference_gemm";
  }
  return "unknown";
}

std::string TileConfig::to_string() const {
  return "bm" + std::to_string(block_m) + "_bn" + std::to_string(block_n) + "_bk" + std::to_string(block_k) +
         "_s" + std::to_string(stages) + "_w" + std::to_string(warps_m) + "x" + std::to_string(warps_n) +
         "_g" + std::to_string(group_m);
}

nlohmann::json config_to_json(const TileConfig& c) {
  return nlohmann::json{{"block_m", c.block_m}, {"block_n", c.block_n}, {"block_k", c.block_k},
                        {"stages", c.stages},   {"warps_m", c.warps_m}, {"warps_n", c.warps_n},
                        {"group_m", c.group_m}};
}

StatusOr<TileConfig> config_from_json(const nlohmann::json& j) {
  if (!j.is_object())
    return InvalidArgument("tile config: expected a JSON object, got " + string(j.type_name()));
  TileConfig c;
  struct Field {
    const char* key;
    int TileConfig::*member;
  };
  static constexpr Field kFields[] = {
      {"block_m", &TileConfig::block_m}, {"block_n", &TileConfig::block_n}, {"block_k", &TileConfig::block_k},
      {"stages", &TileConfig::stages},   {"warps_m", &TileConfig::warps_m}, {"warps_n", &TileConfig::warps_n},
      {"group_m", &TileConfig::group_m},
  };
  for (const Field& f : kFields) {
    auto it = j.find(f.key);
    if (it == j.end()) return InvalidArgument(string("tile config: missing field '") + f.key + "'");
    if (!it->is_number_integer())
      return InvalidArgument(string("tile config: field '") + f.key + "' must be an integer, got " +
                             it->dump());
    const int64_t v = it->get<int64_t>();
    if (v < 1 || v > 4096)
      return InvalidArgument(string("tile config: ") + f.key + "=" + to_string(v) +
                             " is out of range (1..4096)");
    c.*(f.member) = static_cast<int>(v);
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const bool known = std::any_of(std::begin(kFields), std::end(kFields),
                                   [&](const Field& f) { return it.key() == f.key; });
    if (!known) return InvalidArgument("tile config: unknown field '" + it.key() + "'");
  }
  return c;
}

StatusOr<KernelFamily> select_family(const KernelSpec& spec, const Arch& arch) {
  KILN_RETURN_IF_ERROR(check_problem_kind(spec, arch));
  if (string gap = operand_gap("a", spec.a); !gap.empty()) return Unsupported(gap);
  if (string gap = operand_gap("b", spec.b); !gap.empty()) return Unsupported(gap);
  const Format a = spec.a.format, b = spec.b.format;
  const bool a16 = a == Format::kBf16 || a == Format::kF16;
  const bool b16 = b == Format::kBf16 || b == Format::kF16;
  if (a16 != b16)
    return Unsupported(
        string("a=") + format_name(a) + " b=" + format_name(b) +
        ": mixed 16-bit x FP8 operands are not implemented yet (formats issue); use two 16-bit "
        "operands of one format or two FP8 operands");
  if (a16 && a != b)
    return Unsupported(string("a=") + format_name(a) + " b=" + format_name(b) +
                       ": 16-bit operands must have the same format (both bf16 or both f16)");
  return KernelFamily::kSm80Gemm;
}

Status can_implement(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  KILN_RETURN_IF_ERROR(validate_spec(spec));
  KILN_RETURN_IF_ERROR(select_family(spec, arch).status());
  KILN_RETURN_IF_ERROR(validate_sizes(spec, sizes));  // also M >= 0, N >= 1, K >= 1
  const struct {
    char dim;
    int64_t v;
  } dims[] = {{'M', sizes.m}, {'N', sizes.n}, {'K', sizes.k}};
  for (const auto& d : dims) {
    if (d.v > kMaxIndex)
      return InvalidArgument(string(1, d.dim) + "=" + to_string(d.v) +
                             " is too large; the sm80 family indexes with 32-bit integers (" +
                             string(1, d.dim) + " < 2^31)");
  }
  // cp.async copies 16-byte chunks: every operand row must be a whole number of them.
  const struct {
    const char* role;
    Format f;
  } operands[] = {{"a", spec.a.format}, {"b", spec.b.format}};
  for (const auto& o : operands) {
    const int eb = elem_bytes(o.f);
    if ((sizes.k * eb) % 16 != 0) {
      return InvalidArgument(string("operand ") + o.role + ": K=" + to_string(sizes.k) + " elements is " +
                             to_string(sizes.k * eb) +
                             " bytes per row; rows must be a multiple of 16 bytes (K % " +
                             to_string(16 / eb) + " == 0 for " + format_name(o.f) + ")");
    }
  }
  // The grid is one block per output tile; with the smallest tile check_config allows (16 x 16) it
  // must fit in gridDim.x.
  const int64_t tiles = ((std::max<int64_t>(sizes.m, 1) + 15) / 16) * ((sizes.n + 15) / 16);
  if (tiles > kMaxIndex)
    return InvalidArgument("M x N = " + to_string(sizes.m) + " x " + to_string(sizes.n) +
                           " needs more than 2^31 - 1 output tiles of 16 x 16");
  return Status::Ok();
}

Status check_reference_spec(const KernelSpec& spec, const Arch& arch) {
  KILN_RETURN_IF_ERROR(check_problem_kind(spec, arch));
  const struct {
    const char* role;
    const OperandSpec& o;
  } operands[] = {{"a", spec.a}, {"b", spec.b}};
  for (const auto& op : operands) {
    const Format f = op.o.format;
    if (f != Format::kBf16 && f != Format::kF16 && f != Format::kE4m3 && f != Format::kE5m2)
      return Unsupported(operand_text(op.role, op.o) +
                         ": the reference kernel decodes bf16/f16/e4m3/e5m2 operands only so far");
    if (op.o.scale != ScaleGranularity::kNone && op.o.scale != ScaleGranularity::kTensor)
      return Unsupported(operand_text(op.role, op.o) +
                         ": the reference kernel applies per-tensor scales only so far");
  }
  return Status::Ok();
}

int smem_bytes(const KernelSpec& spec, const TileConfig& cfg) {
  return cfg.stages * (cfg.block_m + cfg.block_n) * cfg.block_k * elem_bytes(spec.a.format);
}

Status check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  KILN_RETURN_IF_ERROR(select_family(spec, arch).status());
  const string name = "config " + cfg.to_string() + ": ";
  const struct {
    const char* field;
    int v;
    int lo, hi;
  } ranges[] = {{"block_m", cfg.block_m, 16, 256}, {"block_n", cfg.block_n, 16, 256},
                {"warps_m", cfg.warps_m, 1, 8},    {"warps_n", cfg.warps_n, 1, 8},
                {"stages", cfg.stages, 2, 8},      {"group_m", cfg.group_m, 1, 64}};
  for (const auto& r : ranges) {
    if (r.v < r.lo || r.v > r.hi)
      return InvalidArgument(name + r.field + "=" + to_string(r.v) + " is out of range (" + to_string(r.lo) +
                             ".." + to_string(r.hi) + ")");
  }
  if (cfg.threads() > 1024)
    return InvalidArgument(name + "warps_m * warps_n = " + to_string(cfg.warps_m * cfg.warps_n) +
                           " warps is more than a block holds (32)");
  if (cfg.block_m % (16 * cfg.warps_m) != 0)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) +
                           " is not a multiple of 16 * warps_m (" + to_string(16 * cfg.warps_m) +
                           "): each warp owns whole m16 mma tiles");
  if (cfg.block_n % (16 * cfg.warps_n) != 0)
    return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) +
                           " is not a multiple of 16 * warps_n (" + to_string(16 * cfg.warps_n) +
                           "): each warp owns pairs of n8 mma tiles");
  const int eb = elem_bytes(spec.a.format);
  const int row_bytes = cfg.block_k * eb;
  if (row_bytes != 64 && row_bytes != 128)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) + " is " + to_string(row_bytes) +
                           " bytes per row for " + format_name(spec.a.format) +
                           "; must be 64 or 128 bytes (block_k " + to_string(64 / eb) + " or " +
                           to_string(128 / eb) + ")");
  // Registers: the accumulators of a warp tile, f32, spread over 32 lanes.
  const int warp_m = cfg.block_m / cfg.warps_m, warp_n = cfg.block_n / cfg.warps_n;
  const int acc = warp_m * warp_n / 32;
  const bool int_fp8 = format_is_fp8(spec.a.format) && arch.sm() < 89;
  const int acc_max = int_fp8 ? 64 : 128;
  if (acc > acc_max)
    return InvalidArgument(name + "warp tile " + to_string(warp_m) + "x" + to_string(warp_n) + " needs " +
                           to_string(acc) + " f32 accumulators per thread; at most " + to_string(acc_max) +
                           (int_fp8 ? " when FP8 is converted in registers (below sm_89)" : "") +
                           " (use more warps or smaller blocks)");
  // The rest of the register budget (ptxas 13.0 measurements, tests/nvrtc/sm80_gemm_nvrtc_test.cpp):
  // double-buffered fragments (4 registers per m16 tile, 2 per n8 tile), per cp.async a 64-bit source
  // and a 32-bit destination, about 24 for indices and the epilogue. Past ~240 ptxas spills, and a
  // block of T threads gets at most 65536 / T registers per thread (the register file of one SM).
  const int loads = ((cfg.block_m + cfg.block_n) * (row_bytes / 16) + cfg.threads() - 1) / cfg.threads();
  // Converting FP8 in registers (below sm_89) adds the converted B fragments and one converted A tile.
  const int converted = int_fp8 ? 4 * (warp_n / 8) + 8 : 0;
  const int regs = acc + 2 * (4 * (warp_m / 16) + 2 * (warp_n / 8)) + 3 * loads + 24 + converted;
  const int budget = std::min(240, 65536 / cfg.threads() - 8);
  if (regs > budget)
    return InvalidArgument(name + "an estimated " + to_string(regs) + " registers per thread (" +
                           to_string(acc) + " accumulators, " + to_string(loads) + " copies per stage); " +
                           to_string(cfg.threads()) + " threads allow " + to_string(budget) +
                           " (use fewer warps or smaller blocks)");
  const int smem = smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(name + "stages * (block_m + block_n) * block_k bytes = " + to_string(smem) +
                             " bytes of shared memory; " + arch.name() + " allows " +
                             to_string(arch.max_smem_per_block()) +
                             " per block (fewer stages or smaller tiles)");
  return Status::Ok();
}

TileConfig default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  // Rough SM counts (A100, RTX 3090, RTX 4090 / L40, H100 / H200): only used to avoid launching far
  // fewer tiles than SMs; tuning replaces the heuristic where it matters.
  const int sms = arch.sm() == 90 ? 132 : arch.sm() == 89 ? 128 : arch.sm() == 86 ? 82 : 108;
  const int eb = elem_bytes(spec.a.format);
  const int64_t m = std::max<int64_t>(sizes.m, 1);
  const int64_t n = std::max<int64_t>(sizes.n, 1);
  auto tiles = [&](const TileConfig& c) {
    return ((m + c.block_m - 1) / c.block_m) * ((n + c.block_n - 1) / c.block_n);
  };

  TileConfig c;         // 128 x 128, 4 stages, 2 x 4 warps (64 x 32 warp tiles), group 8
  c.block_k = 64 / eb;  // 64-byte rows: 32 bf16 / 64 FP8 elements per stage
  // Large problems: 128 x 256 with 64 x 64 warp tiles (8 warps, 96 KB in 4 stages: fits every arch).
  // Less shared-memory traffic per mma than 64 x 32 warp tiles; measured on an H200 (2026-11-29,
  // 4096x7168x7168): bf16 470 vs 391 TFLOP/s, e4m3 476 vs 448. Not where FP8 is converted in
  // registers (check_config caps those warp tiles at 64 accumulators).
  TileConfig wide = c;
  wide.block_n = 256;
  if (m > 64 && tiles(wide) >= sms && check_config(spec, arch, wide).ok()) return wide;
  if (m <= 64) {
    // Small M (decode): short, wide tiles, one warp row.
    c.block_m = m <= 16 ? 16 : m <= 32 ? 32 : 64;
    c.warps_m = 1;
  }
  if (tiles(c) < sms && n > 64) {
    // Fewer tiles than SMs: halve the N tile to fill more of the machine.
    c.block_n = 64;
    c.warps_n = 4;  // warp tile n = 16
  }
  if (check_config(spec, arch, c).ok()) return c;
  // Unreachable for the formats select_family accepts; keep a small config that is valid everywhere.
  TileConfig fallback;
  fallback.block_m = 64;
  fallback.block_n = 64;
  fallback.block_k = 64 / eb;
  fallback.stages = 2;
  fallback.warps_m = 2;
  fallback.warps_n = 2;
  return fallback;
}

LaunchShape launch_shape(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                         const ProblemSizes& sizes) {
  LaunchShape ls;
  const int64_t m = std::max<int64_t>(sizes.m, 1);
  const int64_t n = std::max<int64_t>(sizes.n, 1);
  switch (family) {
    case KernelFamily::kSm80Gemm: {
      const int64_t tiles = ((m + cfg.block_m - 1) / cfg.block_m) * ((n + cfg.block_n - 1) / cfg.block_n);
      ls.grid_x = static_cast<unsigned>(std::min<int64_t>(tiles, kMaxIndex));
      ls.block_x = static_cast<unsigned>(cfg.threads());
      ls.dynamic_smem = smem_bytes(spec, cfg);
      break;
    }
    case KernelFamily::kReferenceGemm: {
      ls.grid_x =
          static_cast<unsigned>(std::min<int64_t>((n + kReferenceTile - 1) / kReferenceTile, kMaxIndex));
      ls.grid_y =
          static_cast<unsigned>(std::min<int64_t>((m + kReferenceTile - 1) / kReferenceTile, kMaxGridY));
      ls.block_x = kReferenceThreads;
      ls.dynamic_smem = 0;
      break;
    }
  }
  return ls;
}

}  // namespace kiln

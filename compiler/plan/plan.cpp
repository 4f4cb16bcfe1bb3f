// compiler/plan/plan.cpp — family selection, can_implement, TileConfig checks and the default heuristic.
//
// The rules here mirror the static_asserts of templates/kernels/sm80_gemm.cuh: a config that passes
// check_config instantiates and compiles without spills (tests/nvrtc/sm80_gemm_nvrtc_test.cpp proves
// it for a sample), and a problem that passes can_implement is one the kernel handles.
#include "compiler/plan/plan.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/plan/gemm_view.hpp"  // backward passes
#include "compiler/plan/sm80_backward.hpp"
#include "compiler/plan/sm80_formats.hpp"  // the sm80 family's pairings
#include "compiler/plan/quantize_plan.hpp"  // quantize specs
#include "compiler/plan/sm90_plan.hpp"  // the sm90 family's rules
#include "compiler/spec/spec.hpp"
#include "templates/common/quantize_params.cuh"

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

// Shared by the sm80 family and the reference: operation, pass, layout, epilogue, output.
Status check_problem_kind(const KernelSpec& spec, const Arch& arch) {
  if (arch.sm() < 80)
    return Unsupported(arch.name() + ": kiln's kernels need sm_80 or newer (cp.async, bf16 mma.sync)");
  if (spec.op != Op::kGemm && spec.op != Op::kGroupedGemm)
    return Unsupported(string(op_name(spec.op)) + ": no kernel family implements this operation yet");
  // A GLU spec computes (gate, up) column pairs that only an epilogue can combine.
  if (spec.gate_up != GateUp::kNone && spec.epilogue.empty())
    return Unsupported(string("gate_up=") + gate_up_name(spec.gate_up) +
                       ": the GEMM's (gate, up) column pairs must be combined into one output column by an "
                       "epilogue; add e.g. epilogue=\"out = silu(gate) * up\"");
  const Format o = spec.out.format;
  if (o != Format::kBf16 && o != Format::kF16 && o != Format::kF32)
    return Unsupported(string("out=") + format_name(o) +
                       ": quantized outputs are not implemented yet; out must be bf16, f16 or f32");
  if (spec.out.scale != ScaleGranularity::kNone)
    return Unsupported(operand_text("out", spec.out) + ": scaled outputs are not implemented yet");
  return Status::Ok();
}

bool has_epilogue(const KernelSpec& spec) { return !spec.epilogue.empty() || spec.gate_up != GateUp::kNone; }

// What the portable family's epilogue (kernels/sm80_epilogue.cuh) and its stacked
// gate|up row mapping (epilogue/glu.cuh) take beyond check_problem_kind.
Status check_sm80_epilogue(const KernelSpec& spec) {
  if (spec.gate_up == GateUp::kStacked && spec.b.scale == ScaleGranularity::kBlock128x128)
    return Unsupported(string("gate_up=stacked with ") + operand_text("b", spec.b) +
                       ": the stacked halves put two 128-row scale blocks into one warp tile; use "
                       "gate_up=interleaved (W rows in gpt-oss order) or per-channel (n) weight scales");
  return Status::Ok();
}

// A backward spec's stored rows (compiler/plan/gemm_view.hpp pass_shapes): dY's of N elements, W's / X's
// of K, each a whole number of 16 bytes (TMA row strides).
Status check_backward_rows(const KernelSpec& spec, const ProblemSizes& sizes) {
  // A quantized wgrad's rows hold M elements (the column-wise copies): checked per run (runtime/operands.cpp).
  if (wgrad_reads_columnwise(spec)) return Status::Ok();
  const PassShapes sh = pass_shapes(spec, sizes);
  const bool w_copy = dgrad_reads_w_copy(spec);  // b = Wᵀ [K, N]: rows of N elements
  const struct {
    const char* role;
    const char* what;
    char dim;
    Format f;
    int64_t cols;
  } rows[] = {{"a", "dY", 'N', spec.a.format, sh.a.cols},
              {"b", spec.pass == Pass::kWgrad ? "X" : w_copy ? "W's column-wise copy" : "W", w_copy ? 'N' : 'K',
               spec.b.format, sh.b.cols}};
  for (const auto& r : rows) {
    const int64_t bytes = format_span_bytes(r.f, r.cols);
    if (bytes % 16 != 0)
      return InvalidArgument(string("operand ") + r.role + " (" + r.what + "): " + string(1, r.dim) + "=" +
                             to_string(r.cols) + " elements is " + to_string(bytes) +
                             " bytes per row; rows must be a multiple of 16 bytes (" + string(1, r.dim) + " % " +
                             to_string(16 / elem_bytes(r.f)) + " == 0 for " + format_name(r.f) + ")");
  }
  return Status::Ok();
}

// Backward specs (docs/backward.md): the families that compute them. The sm90 family reads bf16 / f16
// operands MN-major with TMA and wgmma (high_precision: dgrad and wgrad, dense or grouped) on sm_90a;
// the portable family's backward kernel (compiler/plan/sm80_backward.hpp) takes the rest on sm_80+:
// mode dequantized, other archs, KILN_FAMILY=sm80.
StatusOr<KernelFamily> backward_family(const KernelSpec& spec, const Arch& arch) {
  const string head = string("pass=") + pass_name(spec.pass) + " " + operand_text("a", spec.a) + " " +
                      operand_text("b", spec.b) + ": ";
  if (has_epilogue(spec))
    return Unsupported(head + "a backward spec computes the plain GEMM (dX or dW); the epilogue's own backward "
                              "(GLU, bias, routing weights) is not a dgrad/wgrad epilogue: drop epilogue and gate_up");
  StatusOr<BackwardMode> mode = backward_mode(spec);
  if (!mode.ok()) return mode.status();
  if (arch.sm() == 90 && arch.arch_specific && !sm90_disabled_by_env() && sm90_supports(spec, arch))
    return KernelFamily::kSm90Gemm;
  // Mode quantized: the sm90 family's wgrad of two FP8 1x128 column-wise copies (sm90_col_blocks), its
  // dgrad of FP8 dY with W scaled per tensor or in 128x128 blocks (dgrad_reads_transposed_w), and the
  // passes that are its forward GEMM of copies (backward_runs_forward_gemm).
  if (*mode == BackwardMode::kQuantized)
    return Unsupported(head + "mode quantized runs on sm_90a: pass=wgrad (dense or grouped) with a=e4m3|e5m2:block1x128 "
                              "b=e4m3|e5m2:block1x128 (the column-wise copies of dY and X); pass=wgrad dense with "
                              "a=e4m3|e5m2:tensor|m b=e4m3|e5m2:tensor|n (dYᵀ and Xᵀ, one scale per tensor or per row "
                              "of each copy: a per-token X is b=...:n here) or a=mxfp8 b=mxfp8; pass=dgrad with "
                              "a=e4m3|e5m2:tensor|m|block1x128 (dY) and b=e4m3|e5m2:tensor|block128x128 (W) or "
                              "b=e4m3|e5m2:n (W's column-wise copy [K, N]), or a=mxfp8 b=mxfp8 (W's column-wise "
                              "copy), dense or grouped; other quantized backward specs have no kernel: compute them "
                              "in mode high_precision (two bf16 or two f16 operands) or dequantized (bf16 dY, b in "
                              "its stored format)");
  KILN_RETURN_IF_ERROR(sm80_backward_supports(spec));
  return KernelFamily::kSm80Gemm;
}
}  // namespace

const char* family_name(KernelFamily f) {
  switch (f) {
    case KernelFamily::kSm80Gemm: return "sm80_gemm";
    case KernelFamily::kReferenceGemm: return "reference_gemm";
    case KernelFamily::kSm90Gemm: return "sm90_gemm";
    case KernelFamily::kQuantize: return "quantize";
    case KernelFamily::kMxDequant: return "mx_dequant";
    case KernelFamily::kFp8Transpose: return "fp8_transpose";
  }
  return "unknown";
}

std::string TileConfig::to_string() const {
  return "bm" + std::to_string(block_m) + "_bn" + std::to_string(block_n) + "_bk" + std::to_string(block_k) +
         "_s" + std::to_string(stages) + "_w" + std::to_string(warps_m) + "x" + std::to_string(warps_n) +
         "_g" + std::to_string(group_m) + (cluster_m != 1 ? "_c" + std::to_string(cluster_m) : "") +
         (split_k != 1 ? "_k" + std::to_string(split_k) : "") +
         (tma_store == 1   ? "_t"
          : tma_store == 2 ? "_th"
          : tma_store == 4 ? "_tq"
                           : "") +
         (pingpong != 0 ? "_p" : "") +
         (decode == 1   ? "_d"
          : decode == 2 ? "_dw"
                        : "");
}

nlohmann::json config_to_json(const TileConfig& c) {
  nlohmann::json j{{"block_m", c.block_m}, {"block_n", c.block_n}, {"block_k", c.block_k},
                   {"stages", c.stages},   {"warps_m", c.warps_m}, {"warps_n", c.warps_n},
                   {"group_m", c.group_m}};
  if (c.cluster_m != 1) j["cluster_m"] = c.cluster_m;  // optional, absent = 1
  if (c.split_k != 1) j["split_k"] = c.split_k;        // optional, absent = 1
  if (c.tma_store != 0) j["tma_store"] = c.tma_store;  // optional, absent = 0
  if (c.pingpong != 0) j["pingpong"] = c.pingpong;     // optional, absent = 0
  if (c.decode != 0) j["decode"] = c.decode;           // small M: optional, absent = 0
  return j;
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
  // ---- The optional cluster_m (absent = 1).
  if (auto it = j.find("cluster_m"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 16)
      return InvalidArgument("tile config: cluster_m must be an integer in 1..16, got " + it->dump());
    c.cluster_m = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("split_k"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 64)
      return InvalidArgument("tile config: split_k must be an integer in 1..64, got " + it->dump());
    c.split_k = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("tma_store"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 4 ||
        !tma_store_value_ok(static_cast<int>(it->get<int64_t>())))
      return InvalidArgument("tile config: tma_store must be 0, 1, 2 or 4, got " + it->dump());
    c.tma_store = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("pingpong"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 1)
      return InvalidArgument("tile config: pingpong must be 0 or 1, got " + it->dump());
    c.pingpong = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("decode"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 2)
      return InvalidArgument("tile config: decode must be 0, 1 or 2, got " + it->dump());
    c.decode = static_cast<int>(it->get<int64_t>());
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const bool known = it.key() == "cluster_m" || it.key() == "split_k" || it.key() == "tma_store" ||
                       it.key() == "pingpong" || it.key() == "decode" ||
                       std::any_of(std::begin(kFields), std::end(kFields),
                                   [&](const Field& f) { return it.key() == f.key; });
    if (!known) return InvalidArgument("tile config: unknown field '" + it.key() + "'");
  }
  return c;
}

StatusOr<TileConfig> config_from_name(const std::string& name) {
  const string form =
      "bm<rows>_bn<cols>_bk<k>_s<stages>_w<warps_m>x<warps_n>_g<group>[_c<cluster_m>][_k<split_k>]"
      "[_t|_th|_tq][_p][_d|_dw]";
  auto bad = [&](const string& why) {
    return InvalidArgument("config '" + name + "': " + why + "; expected " + form + " (as kiln prints configs)");
  };
  // Digits at s[pos..], as an int (at most 6 of them: every field is far below that).
  auto number = [](const string& s, size_t pos, int* out) {
    if (pos >= s.size() || s.size() - pos > 6) return false;
    int v = 0;
    for (size_t i = pos; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
  };
  std::vector<string> tokens;
  for (size_t start = 0;;) {
    const size_t end = name.find('_', start);
    tokens.push_back(name.substr(start, end == string::npos ? string::npos : end - start));
    if (end == string::npos) break;
    start = end + 1;
  }
  static constexpr const char* kRequired[] = {"bm", "bn", "bk", "s", "w", "g"};
  static constexpr const char* kKeys[] = {"block_m", "block_n", "block_k", "stages", "warps_m", "group_m"};
  if (tokens.size() < 6) return bad("it has " + to_string(tokens.size()) + " of the 6 required parts");
  nlohmann::json j;
  for (size_t i = 0; i < 6; ++i) {
    const string& t = tokens[i];
    const string prefix = kRequired[i];
    if (t.compare(0, prefix.size(), prefix) != 0) return bad("part " + to_string(i + 1) + " is '" + t + "', not " + prefix + "<n>");
    if (prefix == "w") {
      const size_t x = t.find('x');
      int wm = 0, wn = 0;
      if (x == string::npos || !number(t.substr(0, x), 1, &wm) || !number(t, x + 1, &wn))
        return bad("part 5 is '" + t + "', not w<warps_m>x<warps_n>");
      j["warps_m"] = wm;
      j["warps_n"] = wn;
      continue;
    }
    int v = 0;
    if (!number(t, prefix.size(), &v)) return bad("part " + to_string(i + 1) + " is '" + t + "', not " + prefix + "<n>");
    j[kKeys[i]] = v;
  }
  // Optional parts, in to_string's order.
  size_t i = 6;
  int v = 0;
  if (i < tokens.size() && tokens[i].size() > 1 && tokens[i][0] == 'c' && number(tokens[i], 1, &v)) {
    j["cluster_m"] = v;
    ++i;
  }
  if (i < tokens.size() && tokens[i].size() > 1 && tokens[i][0] == 'k' && number(tokens[i], 1, &v)) {
    j["split_k"] = v;
    ++i;
  }
  if (i < tokens.size() && (tokens[i] == "t" || tokens[i] == "th" || tokens[i] == "tq")) {
    j["tma_store"] = tokens[i] == "t" ? 1 : tokens[i] == "th" ? 2 : 4;
    ++i;
  }
  if (i < tokens.size() && tokens[i] == "p") {
    j["pingpong"] = 1;
    ++i;
  }
  if (i < tokens.size() && (tokens[i] == "d" || tokens[i] == "dw")) {
    j["decode"] = tokens[i] == "d" ? 1 : 2;
    ++i;
  }
  if (i < tokens.size())
    return bad("'" + tokens[i] + "' is not c<n>, k<n>, t, th, tq, p, d or dw (or comes out of that order)");
  auto c = config_from_json(j);
  if (!c.ok()) return bad(c.status().message());
  return c;
}

StatusOr<KernelFamily> select_family(const KernelSpec& spec, const Arch& arch) {
  // Quantize specs have their own family (compiler/plan/quantize_plan.hpp).
  if (spec.op == Op::kQuantize) {
    KILN_RETURN_IF_ERROR(quantize_supported(spec, arch));
    return KernelFamily::kQuantize;
  }
  KILN_RETURN_IF_ERROR(check_problem_kind(spec, arch));
  if (spec.pass != Pass::kFprop) return backward_family(spec, arch);
  KILN_RETURN_IF_ERROR(sm80_pairing(spec).status());  // compiler/plan/sm80_formats.hpp
  KILN_RETURN_IF_ERROR(check_sm80_epilogue(spec));
  // ---- The sm90 family (TMA + wgmma) where it applies, the portable family otherwise.
  // sm90_supports names the pairings it takes: dense or grouped (offsets / masked) same-kind 16-bit or
  // FP8 (tensor, row and DeepSeek block scales); MX and mixed inputs run on the portable family only.
  // KILN_FAMILY=sm80 (common/env.hpp) keeps the portable family.
  // Epilogue functors and interleaved gate|up GLUs run on both families; stacked
  // gate|up on the portable family only (sm90_supports).
  if (sm90_supports(spec, arch) && !sm90_disabled_by_env())
    return KernelFamily::kSm90Gemm;
  return KernelFamily::kSm80Gemm;
}

StatusOr<KernelFamily> select_bucket_family(const KernelSpec& spec, const Arch& arch, int64_t rows_per_expert) {
  KILN_ASSIGN_OR_RETURN(KernelFamily family, select_family(spec, arch));
  if (family == KernelFamily::kSm90Gemm && sm90_portable_bucket(spec, rows_per_expert)) return KernelFamily::kSm80Gemm;
  if (decode_bucket(spec, arch, rows_per_expert)) return KernelFamily::kSm80Gemm;  // small M
  return family;
}

Status can_implement(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  KILN_RETURN_IF_ERROR(validate_spec(spec));
  return can_implement_valid_spec(spec, arch, sizes);
}

Status can_implement_valid_spec(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  KILN_ASSIGN_OR_RETURN(KernelFamily family, select_family(spec, arch));
  if (family == KernelFamily::kQuantize) return quantize_check_sizes(spec, sizes);
  KILN_RETURN_IF_ERROR(validate_valid_spec_sizes(spec, sizes));  // also M >= 0, N >= 1, K >= 1
  // ---- The sm90 family's own limits (on top of the checks below).
  if (family == KernelFamily::kSm90Gemm) KILN_RETURN_IF_ERROR(sm90_can_implement(spec, sizes));
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
  // cp.async copies 16-byte chunks (TMA: 16-byte row strides): every operand row must be a whole number of
  // them. Backward passes store rows of N (dY) and K (W, X) elements.
  if (spec.pass != Pass::kFprop) return check_backward_rows(spec, sizes);
  KILN_RETURN_IF_ERROR(sm80_check_sizes(spec, sizes));
  // The grid is one block per output tile; with the smallest tile check_config allows (16 x 16) it
  // must fit in gridDim.x.
  // Grouped (offsets): one more virtual tile row per expert (templates/scheduler/group_tile.cuh).
  const int64_t extra = spec.layout == GroupLayout::kOffsets ? spec.experts : 0;
  const int64_t tiles = ((std::max<int64_t>(sizes.m, 1) + 15) / 16 + extra) * ((sizes.n + 15) / 16);
  if (tiles > kMaxIndex)
    return InvalidArgument("M x N = " + to_string(sizes.m) + " x " + to_string(sizes.n) +
                           " needs more than 2^31 - 1 output tiles of 16 x 16");
  return Status::Ok();
}

Status check_reference_spec(const KernelSpec& spec, const Arch& arch) {
  KILN_RETURN_IF_ERROR(check_problem_kind(spec, arch));
  // With an epilogue the reference computes the plain GEMM (all N columns); run_check applies the
  // epilogue to its f32 output on the host (compiler/epilogue evaluate_epilogue).
  // Backward: what the portable backward kernel takes, in the same stated math (docs/backward.md); a
  // quantized wgrad is the forward GEMM of its two column-wise copies (compiler/plan/gemm_view.hpp).
  if (spec.pass != Pass::kFprop && !wgrad_reads_columnwise(spec) && !backward_runs_forward_gemm(spec))
    KILN_RETURN_IF_ERROR(sm80_backward_supports(spec));
  if (has_epilogue(spec))
    return Unsupported(
        "the reference kernel computes the plain GEMM; strip epilogue and gate_up and apply the epilogue to its "
        "f32 output (verify/check.cpp does)");
  const struct {
    const char* role;
    const OperandSpec& o;
  } operands[] = {{"a", spec.a}, {"b", spec.b}};
  for (const auto& op : operands) {
    // Every element format but f32 decodes; FP8 takes tensor / row / block scales.
    if (op.o.format == Format::kF32)
      return Unsupported(operand_text(op.role, op.o) + ": the reference kernel takes no f32 operands");
  }
  return Status::Ok();
}

int smem_bytes(const KernelSpec& spec, const TileConfig& cfg) {
  if (spec.pass != Pass::kFprop) return sm80_backward_smem_bytes(spec, cfg);  // kernels/sm80_backward.cuh
  // Small M: the decode kernel's cross-warp reduction, f32 [warps][block_n][block_m].
  if (cfg.decode == 1) return cfg.warps_n * cfg.block_n * cfg.block_m * 4;
  // The warpgroup decode kernel (templates/kernels/sm90_decode.cuh): per warpgroup two X buffers of
  // block_k bytes x block_m tokens (128-byte swizzle atoms), its f32 [block_n][block_m] partials, and
  // 1024 bytes to align the buffers to the swizzle period.
  if (cfg.decode == 2) {
    const int wgs = cfg.warps_n / 4;
    return wgs * 2 * cfg.block_k * elem_bytes(spec.a.format) * cfg.block_m + wgs * cfg.block_n * cfg.block_m * 4 + 1024;
  }
  return cfg.stages * (cfg.block_m * sm80_row_bytes_a(spec, cfg) + cfg.block_n * sm80_smem_row_bytes_b(spec, cfg));
}

// ---- Small M: the decode kernel's rules (templates/kernels/sm80_decode.cuh).
bool decode_supports(const KernelSpec& spec, const Arch& arch) {
  const Format a = spec.a.format, b = spec.b.format;
  const bool same16 = (a == Format::kBf16 || a == Format::kF16) && a == b;
  const bool fp8 = format_is_fp8(a) && format_is_fp8(b) && arch.sm() >= 89;
  const auto scale_ok = [](ScaleGranularity g, bool is_a) {
    return g == ScaleGranularity::kNone || g == ScaleGranularity::kTensor ||
           g == (is_a ? ScaleGranularity::kM : ScaleGranularity::kN) ||
           g == (is_a ? ScaleGranularity::kBlock1x128 : ScaleGranularity::kBlock128x128);
  };
  const bool dense_or_grouped = spec.op == Op::kGemm || spec.op == Op::kGroupedGemm;
  return dense_or_grouped && spec.pass == Pass::kFprop &&
         spec.gate_up == GateUp::kNone && (same16 || fp8) && scale_ok(spec.a.scale, true) &&
         scale_ok(spec.b.scale, false) &&
         (spec.out.format == Format::kBf16 || spec.out.format == Format::kF16 || spec.out.format == Format::kF32);
}

TileConfig decode_default_config(const KernelSpec& spec, const Arch& arch, const ProblemSizes& sizes) {
  (void)arch;
  TileConfig c;
  c.decode = 1;
  c.block_m = sizes.m <= 8 ? 8 : 16;
  c.block_n = 16;
  c.block_k = 128 / elem_bytes(spec.a.format);  // two 64-byte segments
  c.stages = 2;                                  // two warp steps in flight
  c.warps_m = 1;
  c.warps_n = 4;
  c.group_m = 1;
  return c;
}

bool decode_bucket(const KernelSpec& spec, const Arch& arch, int64_t rows) {
  if (spec.op != Op::kGemm || rows < 1 || rows > 16 || !decode_supports(spec, arch)) return false;
  auto family = select_family(spec, arch);
  return family.ok() && *family == KernelFamily::kSm90Gemm;
}

bool decode_w4_supports(const KernelSpec& spec, const Arch& arch) {
  const bool fp4 = (spec.b.format == Format::kMxfp4 && spec.b.scale == ScaleGranularity::kBlock1x32) ||
                   (spec.b.format == Format::kNvfp4 && spec.b.scale == ScaleGranularity::kBlock1x16);
  const Format o = spec.out.format;
  return arch.sm() >= 80 && (spec.op == Op::kGemm || spec.op == Op::kGroupedGemm) && spec.pass == Pass::kFprop &&
         spec.gate_up == GateUp::kNone && spec.a.format == Format::kBf16 && spec.a.scale == ScaleGranularity::kNone &&
         fp4 && (o == Format::kBf16 || o == Format::kF16 || o == Format::kF32) && spec.out.scale == ScaleGranularity::kNone;
}

// Measured on an H100 (gpt-oss-20b gate_up, 256 rows over 32 experts, events after an L2 flush): 32 x 128-K
// with 2 warps 0.174 ms, with 4 warps 0.210, the mixed-input mainloop's 16 x 64 tiles 0.203.
TileConfig decode_w4_default_config(const ProblemSizes& sizes) {
  TileConfig c;
  c.decode = 1;
  c.block_m = sizes.m <= 8 ? 8 : 16;
  c.block_n = 32;
  c.block_k = 128;  // one step of 128 K per unit
  c.stages = 2;
  c.warps_m = 1;
  c.warps_n = 2;
  c.group_m = 1;
  return c;
}

Status check_config_ranges(const string& name, std::initializer_list<ConfigRange> ranges) {
  for (const auto& r : ranges) {
    if (r.v < r.lo || r.v > r.hi)
      return InvalidArgument(name + r.field + "=" + to_string(r.v) + " is out of range (" +
                             (r.lo == r.hi ? to_string(r.lo) : to_string(r.lo) + ".." + to_string(r.hi)) + ")");
  }
  return Status::Ok();
}

// The warpgroup decode kernel (decode = 2, templates/kernels/sm90_decode.cuh): W rows straight from
// global memory into the registers of wgmma's A operand, X staged in shared memory as its B operand.
Status check_wg_decode_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  const string name = "config " + cfg.to_string() + " (warpgroup decode): ";
  const bool fp8 = format_is_fp8(spec.a.format) && format_is_fp8(spec.b.format);
  const auto plain = [](ScaleGranularity g, ScaleGranularity row) {
    return g == ScaleGranularity::kNone || g == ScaleGranularity::kTensor || g == row;
  };
  if (!(arch.sm() == 90 && arch.arch_specific))
    return Unsupported(name + "wgmma needs sm_90a; " + arch.name() + " runs the mma.sync decode kernel (decode 1)");
  if (spec.op != Op::kGemm || spec.pass != Pass::kFprop || spec.gate_up != GateUp::kNone || !fp8 ||
      !plain(spec.a.scale, ScaleGranularity::kM) || !plain(spec.b.scale, ScaleGranularity::kN) ||
      !(spec.out.format == Format::kBf16 || spec.out.format == Format::kF16 || spec.out.format == Format::kF32))
    return Unsupported(name + "it takes dense fprop GEMMs of two FP8 operands with tensor or m / n scales (no block "
                       "scales, no gate|up); " + print_spec(spec) + " runs on decode 1 or the tiled mainloop");
  KILN_RETURN_IF_ERROR(check_config_ranges(
      name, {{"block_m", cfg.block_m, 8, 16}, {"block_n", cfg.block_n, 64, 64}, {"warps_m", cfg.warps_m, 1, 1},
             {"warps_n", cfg.warps_n, 4, 16}, {"stages", cfg.stages, 1, 2}, {"group_m", cfg.group_m, 1, 1}}));
  if (cfg.block_m % 8 != 0)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) + " tokens: must be 8 or 16 (wgmma N)");
  if (cfg.warps_n % 4 != 0)
    return InvalidArgument(name + "warps_n=" + to_string(cfg.warps_n) +
                           ": whole warpgroups (4, 8, 12 or 16 warps) split K");
  if (cfg.block_k != 128 && cfg.block_k != 256 && cfg.block_k != 512)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) +
                           " FP8 elements per warpgroup step: must be 128, 256 or 512 (whole 128-byte swizzle atoms)");
  // Registers (ptxas 13.0, unpromoted: 66 at bm8_bn64_bk128_s1_w1x4, 96 at bm16_bn64_bk256_s1_w1x16, 148 at
  // bm16_bn64_bk256_s2_w1x8, 240 at bm16_bn64_bk512_s2_w1x4): per step in flight 8 words of W per 64-byte
  // segment and 4 per 16-byte piece of X this thread stages, a quarter more for their addresses, the
  // accumulator and the promoted partial, ~40 for the rest. Above every measured count.
  const int segs = cfg.block_k / 64, pieces = (cfg.block_m * segs * 4 + 127) / 128;
  const int regs = 5 * cfg.stages * (8 * segs + 4 * pieces) / 4 + cfg.block_m + 40;
  const int budget = std::min(240, 65536 / cfg.threads() - 8);
  if (regs > budget)
    return InvalidArgument(name + "an estimated " + to_string(regs) + " registers per thread (" + to_string(segs) +
                           " segments, " + to_string(cfg.stages) + " step(s) in flight); " + to_string(cfg.threads()) +
                           " threads allow " + to_string(budget) + " (smaller block_k, fewer warps or stages 1)");
  const int smem = smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(name + to_string(smem) + " bytes of shared memory; " + arch.name() + " allows " +
                             to_string(arch.max_smem_per_block()));
  return Status::Ok();
}

// The 4-bit weight decode kernel (decode = 1 on bf16 x mxfp4 / nvfp4, templates/kernels/sm80_decode_w4.cuh).
Status check_decode_w4_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  const string name = "config " + cfg.to_string() + " (4-bit decode): ";
  KILN_RETURN_IF_ERROR(check_config_ranges(
      name, {{"block_m", cfg.block_m, 8, 32}, {"block_n", cfg.block_n, 16, 64}, {"warps_m", cfg.warps_m, 1, 1},
             {"warps_n", cfg.warps_n, 1, 8}, {"stages", cfg.stages, 1, 2}, {"group_m", cfg.group_m, 1, 1}}));
  if (cfg.block_m != 8 && cfg.block_m != 16 && cfg.block_m != 32)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) + " tokens: must be 8, 16 or 32 (n8 mma fragments)");
  if (cfg.block_n % 16 != 0)
    return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) +
                           " weight rows: must be a multiple of 16 (m16 mma fragments)");
  if (cfg.block_k != 128 && cfg.block_k != 256)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) +
                           ": must be 128 or 256 (steps of 128 K: 16 bytes of W per lane and row)");
  // Registers (ptxas 13.0, sm_90a): per unit in flight and step 4 words per weight row, its scale bytes and
  // 16 words per token fragment; the accumulators; 32 converted words of a row group; ~48 for the rest.
  const int steps = cfg.block_k / 128, groups = cfg.block_n / 16, tok = cfg.block_m / 8;
  const int regs = cfg.stages * steps * (10 * groups + 16 * tok) + 4 * groups * tok + 32 + 48;
  const int budget = std::min(240, 65536 / cfg.threads() - 8);
  if (regs > budget)
    return InvalidArgument(name + "an estimated " + to_string(regs) + " registers per thread; " +
                           to_string(cfg.threads()) + " threads allow " + to_string(budget) +
                           " (smaller block_k, block_n or block_m, or stages 1)");
  const int smem = smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(name + to_string(smem) + " bytes of shared memory for the reduction; " + arch.name() +
                             " allows " + to_string(arch.max_smem_per_block()));
  return Status::Ok();
}

Status check_decode_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  if (cfg.decode == 2) return check_wg_decode_config(spec, arch, cfg);
  if (decode_w4_supports(spec, arch)) return check_decode_w4_config(spec, arch, cfg);
  const string name = "config " + cfg.to_string() + " (decode): ";
  if (!decode_supports(spec, arch))
    return Unsupported(name + "the decode kernel takes fprop GEMMs (dense or grouped) without gate|up of two equal 16-bit operands, "
                       "two FP8 operands on sm_89+ (scales: tensor, m / n, or block1x128 x block128x128), or bf16 x "
                       "mxfp4 / nvfp4; " +
                       print_spec(spec) + " on " + arch.name() + " runs on the tiled mainloop (decode 0)");
  KILN_RETURN_IF_ERROR(check_config_ranges(
      name, {{"block_m", cfg.block_m, 8, 16}, {"block_n", cfg.block_n, 16, 64}, {"warps_m", cfg.warps_m, 1, 1},
             {"warps_n", cfg.warps_n, 1, 8}, {"stages", cfg.stages, 1, 2}, {"group_m", cfg.group_m, 1, 1}}));
  if (cfg.block_m % 8 != 0)
    return InvalidArgument(name + "block_m=" + to_string(cfg.block_m) + " tokens: must be 8 or 16 (n8 mma fragments)");
  if (cfg.block_n % 16 != 0)
    return InvalidArgument(name + "block_n=" + to_string(cfg.block_n) +
                           " weight rows: must be a multiple of 16 (m16 mma fragments)");
  const int eb = elem_bytes(spec.a.format);
  const int unit = cfg.block_k * eb;
  if (cfg.block_k < 1 || unit % 64 != 0 || unit / 64 > 8)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) + " is " + to_string(unit) + " bytes of " +
                           format_name(spec.a.format) + "; must be 1..8 segments of 64 bytes (block_k " +
                           to_string(64 / eb) + ", " + to_string(128 / eb) + ", ... " + to_string(512 / eb) + ")");
  const bool promotes = spec.a.scale == ScaleGranularity::kBlock1x128 || spec.b.scale == ScaleGranularity::kBlock128x128;
  if (promotes && cfg.block_k % 128 != 0)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) +
                           ": block scales are promoted per 128-element K block; block_k must be a multiple of 128");
  // Registers (ptxas 13.0, sm_90a: 78-202 estimated within 10-22 above): every 16-byte load of two warp
  // steps in flight (4 each: 2 per row group of W, 1 per token fragment, per segment), the accumulators
  // (and promotion's partials and both steps' scales), ~48 for addresses and the epilogue.
  const int segs = unit / 64, groups = cfg.block_n / 16, tok = cfg.block_m / 8;
  int regs = cfg.stages * 4 * segs * (2 * groups + tok) + 4 * groups * tok + 48;
  if (promotes) regs += 4 * groups * tok + cfg.stages * (unit / 128) * (2 * tok + groups);
  const int budget = std::min(240, 65536 / cfg.threads() - 8);
  if (regs > budget)
    return InvalidArgument(name + "an estimated " + to_string(regs) + " registers per thread (" + to_string(segs) +
                           " segments x " + to_string(2 * groups + tok) + " loads, " + to_string(cfg.stages) + " step(s) in flight); " +
                           to_string(cfg.threads()) + " threads allow " + to_string(budget) +
                           " (smaller block_k or block_n)");
  const int smem = smem_bytes(spec, cfg);
  if (smem > arch.max_smem_per_block())
    return ResourceExhausted(name + to_string(smem) + " bytes of shared memory for the reduction; " + arch.name() +
                             " allows " + to_string(arch.max_smem_per_block()));
  return Status::Ok();
}

double kernel_check_tolerance(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg, int64_t k,
                              double base) {
  if (family == KernelFamily::kSm90Gemm) return sm90_check_tolerance(spec, cfg, k, base);
  // The warpgroup decode kernel promotes its wgmma partial to f32 every step of block_k: measured with f32
  // out 0.6-1.1e-4 at block_k 128, 1.8-2.3e-4 at 256, 3.6e-4 at 512 (H200, docs/performance.md); 5x that.
  if (family == KernelFamily::kSm80Gemm && cfg.decode == 2 && format_is_fp8(spec.a.format))
    return std::max(base, 5e-4 * cfg.block_k / 128.0);
  return base;
}

Status check_config(const KernelSpec& spec, const Arch& arch, const TileConfig& cfg) {
  KILN_ASSIGN_OR_RETURN(KernelFamily family, select_family(spec, arch));
  return check_config(spec, arch, family, cfg);
}

Status check_config(const KernelSpec& spec, const Arch& arch, KernelFamily family, const TileConfig& cfg) {
  // ---- The sm90 family reads TileConfig its own way (compiler/plan/sm90_plan.hpp).
  if (family == KernelFamily::kSm90Gemm) return sm90_check_config(spec, arch, cfg);
  if (family == KernelFamily::kQuantize) return quantize_check_config(cfg);
  if (cfg.cluster_m != 1)
    return InvalidArgument("config " + cfg.to_string() + ": cluster_m=" + to_string(cfg.cluster_m) +
                           "; thread-block clusters exist in the sm90 family only (cluster_m 1)");
  if (cfg.split_k != 1)
    return InvalidArgument("config " + cfg.to_string() + ": split_k=" + to_string(cfg.split_k) +
                           "; split-K exists in the sm90 family only (split_k 1)");
  if (cfg.tma_store != 0)
    return InvalidArgument("config " + cfg.to_string() + ": tma_store=" + to_string(cfg.tma_store) +
                           "; the TMA-store epilogue exists in the sm90 family only (tma_store 0)");
  if (cfg.pingpong != 0)
    return InvalidArgument("config " + cfg.to_string() + ": pingpong=" + to_string(cfg.pingpong) +
                           "; ping-pong consumers exist in the sm90 family only (pingpong 0)");
  KILN_RETURN_IF_ERROR(select_family(spec, arch).status());
  if (spec.pass != Pass::kFprop) return sm80_backward_check_config(spec, arch, cfg);
  if (cfg.decode != 0) return check_decode_config(spec, arch, cfg);  // small M
  KILN_ASSIGN_OR_RETURN(Sm80Mainloop mainloop, sm80_pairing(spec));
  const bool mixed = mainloop == Sm80Mainloop::kMixedInput;
  const bool promotes = sm80_promotes(spec);
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
  if (!mixed && row_bytes != 64 && row_bytes != 128)
    return InvalidArgument(name + "block_k=" + to_string(cfg.block_k) + " is " + to_string(row_bytes) +
                           " bytes per row for " + format_name(spec.a.format) +
                           "; must be 64 or 128 bytes (block_k " + to_string(64 / eb) + " or " +
                           to_string(128 / eb) + ")");
  KILN_RETURN_IF_ERROR(sm80_check_pairing_config(spec, cfg));
  // Registers: the accumulators of a warp tile, f32, spread over 32 lanes.
  const int warp_m = cfg.block_m / cfg.warps_m, warp_n = cfg.block_n / cfg.warps_n;
  const int acc = warp_m * warp_n / 32;
  const bool fp8_elems = format_is_fp8(spec.a.format) || spec.a.format == Format::kMxfp8;
  // (The mixed mainloop converts FP8 to bf16 itself on every arch; its own terms are below.)
  const bool int_fp8 = fp8_elems && arch.sm() < 89 && !mixed;
  // Promotion keeps a second set of accumulators (tmp); the mixed mainloop's A fragments of a 32-K
  // step are twice sm80_gemm's and its B fragments are converted in registers.
  // Promotion on the mixed mainloop (DeepSeek FP8 blocks with a 16-bit or 4-bit partner): 32 x 32 warp tiles.
  const int acc_max = mixed && promotes ? 32 : (int_fp8 || promotes || mixed) ? 64 : 128;
  if (acc > acc_max)
    return InvalidArgument(name + "warp tile " + to_string(warp_m) + "x" + to_string(warp_n) + " needs " +
                           to_string(acc) + " f32 accumulators per thread; at most " + to_string(acc_max) +
                           (promotes  ? " when block scales are promoted (acc + tmp)"
                            : mixed   ? " for bf16 x 4/8-bit weights (registers for the dequantized fragments)"
                            : int_fp8 ? " when FP8 is converted in registers (below sm_89)"
                                      : "") +
                           " (use more warps or smaller blocks)");
  // The rest of the register budget (ptxas 13.0 measurements, tests/nvrtc/sm80_gemm_nvrtc_test.cpp):
  // double-buffered fragments (4 registers per m16 tile, 2 per n8 tile), per cp.async a 64-bit source
  // and a 32-bit destination, about 24 for indices and the epilogue. Past ~240 ptxas spills, and a
  // block of T threads gets at most 65536 / T registers per thread (the register file of one SM).
  const int row_a = sm80_row_bytes_a(spec, cfg), row_b = sm80_row_bytes_b(spec, cfg);
  const int loads = (cfg.block_m * (row_a / 16) + cfg.block_n * (row_b / 16) + cfg.threads() - 1) / cfg.threads();
  // Converting FP8 in registers (below sm_89) adds the converted B fragments and one converted A tile.
  const int converted = int_fp8 ? 4 * (warp_n / 8) + 8 : 0;
  int regs = acc + 2 * (4 * (warp_m / 16) + 2 * (warp_n / 8)) + 3 * loads + 24 + converted;
  // Promotion: tmp, and the current and next block's scales (rows of a, columns of b).
  if (promotes) regs += acc + 2 * (2 * (warp_m / 16) + 2 * (warp_n / 8));
  // Mixed inputs: the second 16-K half of the A fragments (double-buffered), the converted B fragments
  // (4 per n8) and the block-scale bytes of this and the next K tile (up to 4 per n8 each).
  if (mixed) regs += 2 * 4 * (warp_m / 16) + 4 * (warp_n / 8) + 8 * (warp_n / 8);
  // f16 activations: one m16 fragment's hi and lo halves (16) and the split's temporaries, per A fragment
  // pair in flight.
  if (mixed && spec.a.format == Format::kF16) regs += 16 + 4 * (warp_m / 16);
  // MXFP8 activations: the E8M0 bytes of this and the next K tile (8 per m16 fragment) and one scaled
  // fragment (16).
  if (mixed && spec.a.format == Format::kMxfp8) regs += 16 + 8 * (warp_m / 16);
  // 16-bit weights with quantized activations: 4 B registers per n8 per k-step (double-buffered) instead
  // of 2, and f16 weights' lo halves (4 per n8).
  if (mixed && (spec.b.format == Format::kBf16 || spec.b.format == Format::kF16)) regs += 4 * (warp_n / 8);
  if (mixed && spec.b.format == Format::kF16) regs += 4 * (warp_n / 8) + 8;
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
  auto family = select_family(spec, arch);
  return default_config(spec, arch, family.ok() ? *family : KernelFamily::kSm80Gemm, sizes);
}

TileConfig default_config(const KernelSpec& spec, const Arch& arch, KernelFamily family,
                          const ProblemSizes& sizes) {
  // ---- The sm90 family's heuristic (compiler/plan/sm90_heuristic.cpp).
  if (family == KernelFamily::kSm90Gemm) return sm90_default_config(spec, arch, sizes);
  if (family == KernelFamily::kQuantize) return quantize_config();
  if (spec.pass != Pass::kFprop) return sm80_backward_default_config(spec, arch, sizes);
  // A few rows per token tile against 4-bit weights: the 4-bit decode kernel (W streamed into mma
  // fragments; docs/performance.md). Up to 16 rows, where it was measured faster than the mixed-input mainloop.
  if (sizes.m <= 16 && decode_w4_supports(spec, arch)) {
    const TileConfig d = decode_w4_default_config(sizes);
    if (check_config(spec, arch, KernelFamily::kSm80Gemm, d).ok()) return d;
  }
  // Small M: the decode kernel where an sm90 plan runs it.
  if (decode_bucket(spec, arch, sizes.m)) {
    const TileConfig d = decode_default_config(spec, arch, sizes);
    if (check_config(spec, arch, KernelFamily::kSm80Gemm, d).ok()) return d;
  }
  // The arch's SMs (the device's, or its named part's): only used to avoid launching far fewer tiles
  // than SMs; tuning replaces the heuristic where it matters.
  const int sms = arch.sms();
  const int eb = elem_bytes(spec.a.format);
  const int64_t m = std::max<int64_t>(sizes.m, 1);
  const int64_t n = std::max<int64_t>(sizes.n, 1);
  auto tiles = [&](const TileConfig& c) {
    return ((m + c.block_m - 1) / c.block_m) * ((n + c.block_n - 1) / c.block_n);
  };

  TileConfig c;         // 128 x 128, 4 stages, 2 x 4 warps (64 x 32 warp tiles), group 8
  c.block_k = 64 / eb;  // 64-byte rows: 32 bf16 / 64 FP8 elements per stage
  // bf16 x 4/8-bit weights: the mixed mainloop's block_k (128-byte bf16 rows; 32-byte FP4 rows).
  auto mainloop = sm80_pairing(spec);
  if (mainloop.ok() && *mainloop == Sm80Mainloop::kMixedInput) {
    c.block_k = 64;
    // f16 activations split every A fragment in two (kernels/sm80_mixed_gemm.cuh kSplitA), MXFP8 ones carry
    // their scales: 128 x 64 with 32 x 32 warp tiles (ptxas 13.0, sm_90a: 128 x 128 in 64 x 32 warp tiles
    // took 255 registers, f16 spilling).
    if (spec.a.format == Format::kF16 || spec.a.format == Format::kMxfp8 || spec.b.format == Format::kF16) {
      c.block_n = 64;
      c.warps_m = 4;
      c.warps_n = 2;
    }
  }
  // Large problems: 128 x 256 with 64 x 64 warp tiles (8 warps, 96 KB in 4 stages: fits every arch).
  // Less shared-memory traffic per mma than 64 x 32 warp tiles; measured on an H200 (2026-11-29,
  // 4096x7168x7168): bf16 470 vs 391 TFLOP/s, e4m3 476 vs 448. Not where FP8 is converted in
  // registers (check_config caps those warp tiles at 64 accumulators).
  TileConfig wide = c;
  wide.block_n = 256;
  if (m > 64 && tiles(wide) >= sms && check_config(spec, arch, KernelFamily::kSm80Gemm, wide).ok())
    return wide;
  if (m <= 64) {
    // Small M (decode): short, wide tiles, one warp row.
    c.block_m = m <= 16 ? 16 : m <= 32 ? 32 : 64;
    c.warps_m = 1;
  }
  if (sm80_promotes(spec)) {
    // Block-scale promotion keeps acc and tmp: warp tiles of at most 32 x 32 (ptxas 13.0, 2026-11-29:
    // 128x64 / 64x128 blocks of 8 warps take 160-241 registers without spills on sm_80..sm_90a, while
    // 64 x 32 warp tiles spill on sm_90a). Large M: 128 x 64 with 4 x 2 warps.
    if (m > 64) {
      c.block_n = 64;
      c.warps_m = 4;
      c.warps_n = 2;
    } else if (c.block_m == 64) {
      c.warps_m = 2;
    }
  }
  if (tiles(c) < sms && n > 64 && c.block_n > 64) {
    // Fewer tiles than SMs: halve the N tile to fill more of the machine.
    c.block_n = 64;
    c.warps_n = 4;  // warp tile n = 16
  }
  if (check_config(spec, arch, KernelFamily::kSm80Gemm, c).ok()) return c;
  // Register-heavy pairings (f16 or MXFP8 activations on the mixed mainloop, FP8 converted in registers
  // below sm_89) at 33..64 rows: the same rows in 32 x 32 warp tiles, 64 columns, the ring kept.
  // Then fewer rows per block (f16 activations with promoted FP8 blocks, W4A8 with 1x128 blocks below
  // sm_89 carry the most registers), and last a 2-stage ring.
  auto shape = [&](int bm, int wm, int stages) {
    TileConfig t = c;
    t.block_m = bm;
    t.block_n = 64;
    t.warps_m = wm;
    t.warps_n = 2;
    t.stages = stages;
    return t;
  };
  for (const TileConfig& t : {shape(c.block_m, std::max(1, c.block_m / 32), c.stages), shape(64, 2, 4),
                              shape(32, 1, 4), shape(16, 1, 4), shape(64, 2, 2)}) {
    if (check_config(spec, arch, KernelFamily::kSm80Gemm, t).ok()) return t;
  }
  // Not reached by the pairings select_family accepts (tests/unit/compiler/formats_plan_test.cpp checks every
  // bucket); a small config.
  return shape(16, 1, 2);
}

LaunchShape launch_shape(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                         const ProblemSizes& sizes) {
  return make_launch_rule(spec, family, cfg, sizes.n, sizes.k).shape(sizes.m);
}

}  // namespace kiln

// kiln/spec.hpp — KernelSpec: the one description of a kiln problem, and the DSL that writes it.
//
// Why this representation. Every layer of kiln (planner, emitter, cache key, tuner, dispatcher)
// needs the same facts about a problem: the operation, the operand formats with their scale
// granularity, the pass, dense or grouped, the gate|up layout and the output. KernelSpec holds
// exactly those facts as closed enums — never free text — so that (1) generated C++ is built only
// from kiln's own strings, (2) equality and hashing are exact, and (3) the canonical text form
// (print_spec) is a function of the value: parse_spec(print_spec(s)) == s for every valid s.
// Problem sizes are NOT part of the spec: one spec is planned for many shapes (ProblemSizes).
//
// Scale granularity is named by problem dimension (docs/architecture.md, Formats): with X[M,K] (operand a)
// and W[N,K] (operand b): `tensor`, `m` (one per row of X), `n` (one per row of W), `block1x128`
// (X: 1 row x 128 K), `block128x128` (W: 128 N x 128 K). MX and NVFP4 carry their own intrinsic
// granularity (1x32 along K with E8M0; 1x16 along K with UE4M3 + an f32 global).
//
// Worked example:
//   gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16
//     op=kGemm, a={kE4m3, kBlock1x128, kF32}, b={kE4m3, kBlock128x128, kF32}, out={kBf16}
//   grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved
//       epilogue="out = silu(gate) * up"
//     ..., gate_up=kInterleaved, epilogue="out = silu(gate) * up"
//
// The epilogue is the one field that is text: the canonical form of a program in kiln's closed
// epilogue language (compiler/epilogue, docs/epilogue.md), which validation re-parses against the
// spec's context (gate_up, grouped). It is never pasted into C++: the emitter generates the device
// functor from the parsed program. Keeping the canonical text (not the parsed tree) keeps the spec a
// plain value: equality, hashing, printing and the cache key stay exact, and every front end
// (text, JSON, builder) canonicalizes before it stores it.
//
// Non-goals: the spec does not pick tiles (TileConfig does) and does not know the GPU (Arch does).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/status.hpp"

namespace kiln {

enum class Op : uint8_t {
  kGemm,         // Y = X W^T (dense)
  kGroupedGemm,  // per-expert GEMMs (offsets or masked layout)
  kQuantize,     // activation quantization: a (high precision) -> out (quantized + scales)
};

enum class Format : uint8_t {
  kBf16, kF16, kF32,
  kE4m3, kE5m2,   // FP8, scaled per ScaleGranularity
  kMxfp8,         // E4M3 elements, E8M0 scale per 32 along K
  kMxfp4,         // E2M1 elements (even element in the low nibble), E8M0 per 32 along K
  kNvfp4,         // E2M1 elements, UE4M3 per 16 along K, f32 global (device tensor)
};

enum class ScaleGranularity : uint8_t {
  kNone,           // unscaled (bf16/f16/f32)
  kTensor,         // one scale for the operand
  kM,              // per token: one per row of X (operand a only)
  kN,              // per output channel: one per row of W (operand b only)
  kBlock1x128,     // X: 1 row x 128 K (operand a only)
  kBlock128x128,   // W: 128 N x 128 K (operand b only)
  kBlock1x32,      // MX intrinsic (mxfp8, mxfp4); implied by the format
  kBlock1x16,      // NVFP4 intrinsic; implied by the format
};

enum class ScaleType : uint8_t {
  kNone,
  kF32,    // fp32 scales (FP8 default)
  kUe8m0,  // power-of-two bytes (MX; optional for FP8 blocks, DeepGEMM style)
  kUe4m3,  // NVFP4 block scales
};

enum class Pass : uint8_t { kFprop, kDgrad, kWgrad };
enum class GroupLayout : uint8_t { kDense, kOffsets, kMasked };
enum class GateUp : uint8_t { kNone, kInterleaved, kStacked };
enum class MxRounding : uint8_t { kRceil, kFloor };               // E8M0 scale rounding (default rceil)
enum class Fp8Saturation : uint8_t { kSatfinite, kNonSaturating }; // FP8 conversion (default satfinite)
enum class FourOverSix : uint8_t { kOff, kMse, kMae };           // NVFP4 4/6 block selection
enum class GlobalScale : uint8_t { kTensor, kExpert };          // NVFP4 global scale granularity
// How a dgrad / wgrad spec computes (docs/backward.md): high_precision on two bf16/f16 operands (the
// saved originals), dequantized on a bf16/f16 a (dY) and the forward's quantized b read in its stored
// format, quantized on two quantized operands. The operand formats imply it; writing mode= checks it.
enum class BackwardMode : uint8_t { kHighPrecision, kDequantized, kQuantized };

struct OperandSpec {
  Format format = Format::kBf16;
  ScaleGranularity scale = ScaleGranularity::kNone;
  ScaleType scale_type = ScaleType::kNone;
  bool operator==(const OperandSpec&) const = default;
};

struct KernelSpec {
  Op op = Op::kGemm;
  Pass pass = Pass::kFprop;
  GroupLayout layout = GroupLayout::kDense;  // kDense unless grouped (as experts)
  int experts = 0;                           // > 0 iff op == kGroupedGemm, or a grouped transposed quantize
  OperandSpec a;                             // X[M,K] (quantize: the input)
  OperandSpec b;                             // W[N,K] (unused by quantize)
  OperandSpec out;                           // Y[M,N] (quantize: the quantized output + its scales)
  GateUp gate_up = GateUp::kNone;
  bool transpose = false;                    // quantize only: quantize along M (the 128x1 wgrad form)
  // dgrad / wgrad only: out += the product (out is read and the sum rounded once to its format) instead of
  // out = the product, e.g. dW into an fp32 main_grad across micro-batches.
  bool accumulate = false;
  // Numerics attributes; defaults are the bitwise contract (docs/numerics.md).
  MxRounding mx_rounding = MxRounding::kRceil;
  Fp8Saturation fp8_saturation = Fp8Saturation::kSatfinite;
  FourOverSix four_over_six = FourOverSix::kOff;
  int e4m3_bound = 448;                      // NVFP4 global-scale E4M3 bound: 448 or 256
  GlobalScale nvfp4_global = GlobalScale::kTensor;
  // The fused epilogue in canonical text (print_epilogue), empty for none. With
  // gate_up != none the GEMM computes N columns and the epilogue combines each (gate, up) pair into
  // one of the output's N / 2 columns.
  std::string epilogue;

  bool operator==(const KernelSpec&) const = default;
};

// Sizes fixed at plan time. m is the row count seen at run time (any M >= 1 for a plan);
// n and k are fixed. For grouped problems m is the total row count (host-known).
struct ProblemSizes {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool operator==(const ProblemSizes&) const = default;
};

// ---- names (closed sets; used by printing, JSON, codegen and messages) ----
const char* format_name(Format f);              // "bf16", "e4m3", "mxfp4", ...
const char* scale_granularity_name(ScaleGranularity g);
const char* scale_type_name(ScaleType t);
const char* op_name(Op op);
const char* pass_name(Pass p);
const char* group_layout_name(GroupLayout l);
const char* gate_up_name(GateUp g);
const char* backward_mode_name(BackwardMode m);  // "high_precision", "dequantized", "quantized"
int format_bits(Format f);                      // element bits: 16, 16, 32, 8, 8, 8, 4, 4
bool format_is_fp8(Format f);                   // e4m3, e5m2 (not mxfp8)
bool format_is_high_precision(Format f);        // bf16, f16, f32

// The mode a dgrad / wgrad spec computes in, from its operand formats. INVALID_ARGUMENT for fprop and
// quantize specs, and for a quantized a with a bf16/f16 b (no mode computes that; validate_spec refuses it).
StatusOr<BackwardMode> backward_mode(const KernelSpec& spec);

// The backward GEMM specs of a forward GEMM spec (docs/backward.md), so that frameworks never spell them:
// dgrad (dX[M, K] = dY[M, N] · W) and wgrad (dW[N, K] = dY[M, N]ᵀ · X), same op, layout and experts.
//   high_precision: dY and the saved high-precision X and W in `grad` (bf16 or f16) on both passes;
//   dequantized:    dgrad reads the forward's own b (W as stored, any format), wgrad the forward's own a
//                   (X as stored); dY in `grad`.
//   quantized:      every FP8 x FP8 forward and MXFP8 x MXFP8: dgrad reads the forward's W where its
//                   scales transpose exactly (128x128 blocks, a tensor scale), else W's column-wise copy
//                   (per-channel FP8 b=...:n, MXFP8); wgrad the column-wise copies of dY and X.
// dX is written in `grad`, dW in `wgrad_out` (bf16, f16 or f32). Other forwards in mode quantized (NVFP4,
// MXFP4, mixed formats) and specs with an epilogue or gate_up are UNSUPPORTED here; a derived spec may
// itself have no kernel on a given arch or layout (the planner says why).
// grad: dY's and dX's format (bf16 or f16); in mode quantized dX's only: dY is e4m3 (MXFP8 for MXFP8
// forwards) with the forward X's scaling (1x128 blocks, per token or a tensor scale).
struct BackwardOptions {
  BackwardMode mode = BackwardMode::kHighPrecision;
  Format grad = Format::kBf16;
  Format wgrad_out = Format::kF32;
};
struct BackwardSpecs {
  KernelSpec dgrad;
  KernelSpec wgrad;
};
StatusOr<BackwardSpecs> derive_backward(const KernelSpec& fprop, const BackwardOptions& options = {});

// ---- the DSL: text form, validation, builder (compiler/spec implements them; docs/dsl.md)

// Parses the text form (see docs/dsl.md). Validates too: a spec that parses is valid.
StatusOr<KernelSpec> parse_spec(std::string_view text);
// Canonical text: fixed key order, defaults omitted. Round-trips through parse_spec.
std::string print_spec(const KernelSpec& spec);

// Structural validity (format x granularity x operand role x op). Independent of sizes.
Status validate_spec(const KernelSpec& spec);
// Size rules: which dimension breaks which block size ("K=1000 is not a multiple of ...").
// Alignment rules of the kernels (16-byte rows) are checked by the planner, not here.
Status validate_sizes(const KernelSpec& spec, const ProblemSizes& sizes);

class SpecBuilder {
 public:
  SpecBuilder& op(Op op);
  // grouped_gemm[experts, layout]; after op(Op::kQuantize), the grouped transposed quantize.
  SpecBuilder& grouped(int experts, GroupLayout layout);
  SpecBuilder& pass(Pass p);
  SpecBuilder& a(Format f, ScaleGranularity g = ScaleGranularity::kNone, ScaleType t = ScaleType::kNone);
  SpecBuilder& b(Format f, ScaleGranularity g = ScaleGranularity::kNone, ScaleType t = ScaleType::kNone);
  SpecBuilder& out(Format f, ScaleGranularity g = ScaleGranularity::kNone, ScaleType t = ScaleType::kNone);
  SpecBuilder& gate_up(GateUp g);
  SpecBuilder& transpose(bool t);
  SpecBuilder& accumulate(bool on);
  SpecBuilder& mx_rounding(MxRounding r);
  SpecBuilder& fp8_saturation(Fp8Saturation s);
  SpecBuilder& four_over_six(FourOverSix f);
  SpecBuilder& e4m3_bound(int bound);
  SpecBuilder& nvfp4_global(GlobalScale g);
  // The backward mode the caller expects: build() refuses a spec whose formats imply another.
  SpecBuilder& mode(BackwardMode m);
  // An epilogue program in kiln's epilogue language (docs/epilogue.md); build() stores its canonical
  // form and rejects text that does not parse in the spec's context. Empty: none.
  SpecBuilder& epilogue(std::string_view text);
  // Fills implied scales (mxfp8 -> block1x32/ue8m0, fp8 without scale -> tensor/f32, ...) and validates.
  StatusOr<KernelSpec> build() const;

 private:
  KernelSpec spec_;
  // Which operands were given: build() rejects a missing one rather than defaulting it to bf16.
  bool has_a_ = false, has_b_ = false, has_out_ = false;
  std::optional<BackwardMode> mode_;
};

}  // namespace kiln

// Names of the KernelSpec enums (include/kiln/spec.hpp, names.hpp). One table per enum drives both
// directions, so a spelling can never print one way and parse another.
#include "compiler/spec/names.hpp"

#include <utility>

namespace kiln {
namespace {

template <typename E>
using NameTable = std::pair<E, const char*>;

template <typename E, size_t N>
const char* name_of(const NameTable<E> (&table)[N], E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";  // only reachable with an out-of-range enum value cast from an integer
}

template <typename E, size_t N>
std::optional<E> lookup(const NameTable<E> (&table)[N], std::string_view name) {
  for (const auto& [e, n] : table) {
    if (name == n) return e;
  }
  return std::nullopt;
}

constexpr NameTable<Op> kOps[] = {
    {Op::kGemm, "gemm"}, {Op::kGroupedGemm, "grouped_gemm"}, {Op::kQuantize, "quantize"}};
constexpr NameTable<Format> kFormats[] = {
    {Format::kBf16, "bf16"}, {Format::kF16, "f16"},     {Format::kF32, "f32"},     {Format::kE4m3, "e4m3"},
    {Format::kE5m2, "e5m2"}, {Format::kMxfp8, "mxfp8"}, {Format::kMxfp4, "mxfp4"}, {Format::kNvfp4, "nvfp4"}};
constexpr NameTable<ScaleGranularity> kGranularities[] = {{ScaleGranularity::kNone, "none"},
                                                          {ScaleGranularity::kTensor, "tensor"},
                                                          {ScaleGranularity::kM, "m"},
                                                          {ScaleGranularity::kN, "n"},
                                                          {ScaleGranularity::kBlock1x128, "block1x128"},
                                                          {ScaleGranularity::kBlock128x128, "block128x128"},
                                                          {ScaleGranularity::kBlock1x32, "block1x32"},
                                                          {ScaleGranularity::kBlock1x16, "block1x16"}};
constexpr NameTable<ScaleType> kScaleTypes[] = {{ScaleType::kNone, "none"},
                                                {ScaleType::kF32, "f32"},
                                                {ScaleType::kUe8m0, "ue8m0"},
                                                {ScaleType::kUe4m3, "ue4m3"}};
constexpr NameTable<Pass> kPasses[] = {
    {Pass::kFprop, "fprop"}, {Pass::kDgrad, "dgrad"}, {Pass::kWgrad, "wgrad"}};
constexpr NameTable<GroupLayout> kLayouts[] = {
    {GroupLayout::kDense, "dense"}, {GroupLayout::kOffsets, "offsets"}, {GroupLayout::kMasked, "masked"}};
constexpr NameTable<GateUp> kGateUps[] = {
    {GateUp::kNone, "none"}, {GateUp::kInterleaved, "interleaved"}, {GateUp::kStacked, "stacked"}};
constexpr NameTable<MxRounding> kMxRoundings[] = {{MxRounding::kRceil, "rceil"},
                                                  {MxRounding::kFloor, "floor"}};
constexpr NameTable<Fp8Saturation> kSaturations[] = {{Fp8Saturation::kSatfinite, "satfinite"},
                                                     {Fp8Saturation::kNonSaturating, "nonsat"}};
constexpr NameTable<FourOverSix> kFourOverSix[] = {
    {FourOverSix::kOff, "off"}, {FourOverSix::kMse, "mse"}, {FourOverSix::kMae, "mae"}};
constexpr NameTable<GlobalScale> kGlobalScales[] = {{GlobalScale::kTensor, "tensor"},
                                                    {GlobalScale::kExpert, "expert"}};
constexpr NameTable<BackwardMode> kBackwardModes[] = {{BackwardMode::kHighPrecision, "high_precision"},
                                                      {BackwardMode::kDequantized, "dequantized"},
                                                      {BackwardMode::kQuantized, "quantized"}};

}  // namespace

const char* op_name(Op op) { return name_of(kOps, op); }
const char* format_name(Format f) { return name_of(kFormats, f); }
const char* scale_granularity_name(ScaleGranularity g) { return name_of(kGranularities, g); }
const char* scale_type_name(ScaleType t) { return name_of(kScaleTypes, t); }
const char* pass_name(Pass p) { return name_of(kPasses, p); }
const char* group_layout_name(GroupLayout l) { return name_of(kLayouts, l); }
const char* gate_up_name(GateUp g) { return name_of(kGateUps, g); }
const char* mx_rounding_name(MxRounding r) { return name_of(kMxRoundings, r); }
const char* fp8_saturation_name(Fp8Saturation s) { return name_of(kSaturations, s); }
const char* four_over_six_name(FourOverSix f) { return name_of(kFourOverSix, f); }
const char* global_scale_name(GlobalScale g) { return name_of(kGlobalScales, g); }
const char* backward_mode_name(BackwardMode m) { return name_of(kBackwardModes, m); }

std::optional<Op> op_from_name(std::string_view n) { return lookup(kOps, n); }
std::optional<Format> format_from_name(std::string_view n) { return lookup(kFormats, n); }
std::optional<ScaleGranularity> scale_granularity_from_name(std::string_view n) {
  return lookup(kGranularities, n);
}
std::optional<ScaleType> scale_type_from_name(std::string_view n) { return lookup(kScaleTypes, n); }
std::optional<Pass> pass_from_name(std::string_view n) { return lookup(kPasses, n); }
std::optional<GroupLayout> group_layout_from_name(std::string_view n) { return lookup(kLayouts, n); }
std::optional<GateUp> gate_up_from_name(std::string_view n) { return lookup(kGateUps, n); }
std::optional<MxRounding> mx_rounding_from_name(std::string_view n) { return lookup(kMxRoundings, n); }
std::optional<Fp8Saturation> fp8_saturation_from_name(std::string_view n) { return lookup(kSaturations, n); }
std::optional<FourOverSix> four_over_six_from_name(std::string_view n) { return lookup(kFourOverSix, n); }
std::optional<GlobalScale> global_scale_from_name(std::string_view n) { return lookup(kGlobalScales, n); }
std::optional<BackwardMode> backward_mode_from_name(std::string_view n) { return lookup(kBackwardModes, n); }

const char* op_names() { return "gemm, grouped_gemm, quantize"; }
const char* format_names() { return "bf16, f16, f32, e4m3, e5m2, mxfp8, mxfp4, nvfp4"; }
const char* pass_names() { return "fprop, dgrad, wgrad"; }
const char* gate_up_names() { return "none, interleaved, stacked"; }
const char* mx_rounding_names() { return "rceil, floor"; }
const char* fp8_saturation_names() { return "satfinite, nonsat"; }
const char* four_over_six_names() { return "off, mse, mae"; }
const char* global_scale_names() { return "tensor, expert"; }
const char* backward_mode_names() { return "high_precision, dequantized, quantized"; }

int format_bits(Format f) {
  switch (f) {
    case Format::kBf16:
    case Format::kF16:
      return 16;
    case Format::kF32:
      return 32;
    case Format::kE4m3:
    case Format::kE5m2:
    case Format::kMxfp8:
      return 8;
    case Format::kMxfp4:
    case Format::kNvfp4:
      return 4;
  }
  return 0;
}

bool format_is_fp8(Format f) { return f == Format::kE4m3 || f == Format::kE5m2; }

bool format_is_high_precision(Format f) {
  return f == Format::kBf16 || f == Format::kF16 || f == Format::kF32;
}

}  // namespace kiln

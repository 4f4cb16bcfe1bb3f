// compiler/spec/names.hpp — the spellings of every KernelSpec enum, both ways.
//
// include/kiln/spec.hpp declares the enum -> name functions that printing, JSON, codegen and messages
// share; this header adds the name -> enum direction (used by the DSL parser and JSON reader) and
// the names of the numerics attributes. Every set is closed: a name that is not listed here is
// rejected, so user text never reaches generated code. Names are the DSL spellings ("block1x128",
// "ue8m0", "nonsat"); the *_names() lists are the "expected one of" lists of error messages.
//
//   std::optional<kiln::Format> f = kiln::format_from_name("e4m3");   // Format::kE4m3
//   const char* r = kiln::mx_rounding_name(kiln::MxRounding::kFloor);  // "floor"
//   std::string msg = "expected one of " + std::string(kiln::format_names());
#pragma once

#include <optional>
#include <string_view>

#include "kiln/spec.hpp"

namespace kiln {

const char* mx_rounding_name(MxRounding r);        // "rceil", "floor"
const char* fp8_saturation_name(Fp8Saturation s);  // "satfinite", "nonsat"
const char* four_over_six_name(FourOverSix f);     // "off", "mse", "mae"
const char* global_scale_name(GlobalScale g);      // "tensor", "expert"

// Exact, case-sensitive lookups of the names above; nullopt for anything else.
std::optional<Op> op_from_name(std::string_view name);
std::optional<Format> format_from_name(std::string_view name);
std::optional<ScaleGranularity> scale_granularity_from_name(std::string_view name);  // incl. "none"
std::optional<ScaleType> scale_type_from_name(std::string_view name);                // incl. "none"
std::optional<Pass> pass_from_name(std::string_view name);
std::optional<GroupLayout> group_layout_from_name(std::string_view name);  // incl. "dense"
std::optional<GateUp> gate_up_from_name(std::string_view name);
std::optional<MxRounding> mx_rounding_from_name(std::string_view name);
std::optional<Fp8Saturation> fp8_saturation_from_name(std::string_view name);
std::optional<FourOverSix> four_over_six_from_name(std::string_view name);
std::optional<GlobalScale> global_scale_from_name(std::string_view name);
std::optional<BackwardMode> backward_mode_from_name(std::string_view name);

// Comma-separated lists for messages ("bf16, f16, f32, e4m3, e5m2, mxfp8, mxfp4, nvfp4").
const char* op_names();
const char* format_names();
const char* pass_names();
const char* gate_up_names();
const char* mx_rounding_names();
const char* fp8_saturation_names();
const char* four_over_six_names();
const char* global_scale_names();
const char* backward_mode_names();

}  // namespace kiln

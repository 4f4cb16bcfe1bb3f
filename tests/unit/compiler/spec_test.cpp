// Unit tests of compiler/spec: the DSL text form, canonical printing, JSON, SpecBuilder,
// validate_spec and validate_sizes. No CUDA.
#include "compiler/spec/spec.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/spec/implied.hpp"
#include "compiler/spec/names.hpp"

namespace kiln {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

KernelSpec parse_ok(std::string_view text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << "text: " << text << "\nerror: " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

// The error message of a text that must not parse (InvalidArgument).
std::string parse_error(std::string_view text) {
  auto r = parse_spec(text);
  EXPECT_FALSE(r.ok()) << "unexpectedly parsed: " << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  return r.status().message();
}

std::string validate_error(const KernelSpec& s) {
  Status st = validate_spec(s);
  EXPECT_FALSE(st.ok()) << "unexpectedly valid: " << print_spec(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  return st.message();
}

std::filesystem::path repo_root() {
  // This file is tests/unit/compiler/spec_test.cpp; CMake compiles it by absolute path.
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

KernelSpec gemm_bf16() {
  KernelSpec s;
  s.a = s.b = s.out = OperandSpec{Format::kBf16};
  return s;
}

// ------------------------------------------------------------------------------------------------
// Names

TEST(SpecNamesTest, EveryEnumNameRoundTrips) {
  for (Format f : {Format::kBf16, Format::kF16, Format::kF32, Format::kE4m3, Format::kE5m2, Format::kMxfp8,
                   Format::kMxfp4, Format::kNvfp4}) {
    EXPECT_EQ(format_from_name(format_name(f)), f);
    EXPECT_THAT(format_names(), HasSubstr(format_name(f)));
  }
  for (int g = 0; g <= static_cast<int>(ScaleGranularity::kBlock1x16); ++g) {
    auto e = static_cast<ScaleGranularity>(g);
    EXPECT_EQ(scale_granularity_from_name(scale_granularity_name(e)), e);
  }
  for (int t = 0; t <= static_cast<int>(ScaleType::kUe4m3); ++t) {
    auto e = static_cast<ScaleType>(t);
    EXPECT_EQ(scale_type_from_name(scale_type_name(e)), e);
  }
  for (Op op : {Op::kGemm, Op::kGroupedGemm, Op::kQuantize}) EXPECT_EQ(op_from_name(op_name(op)), op);
  for (Pass p : {Pass::kFprop, Pass::kDgrad, Pass::kWgrad}) EXPECT_EQ(pass_from_name(pass_name(p)), p);
  for (GroupLayout l : {GroupLayout::kDense, GroupLayout::kOffsets, GroupLayout::kMasked})
    EXPECT_EQ(group_layout_from_name(group_layout_name(l)), l);
  for (GateUp g : {GateUp::kNone, GateUp::kInterleaved, GateUp::kStacked})
    EXPECT_EQ(gate_up_from_name(gate_up_name(g)), g);
  for (MxRounding r : {MxRounding::kRceil, MxRounding::kFloor})
    EXPECT_EQ(mx_rounding_from_name(mx_rounding_name(r)), r);
  for (Fp8Saturation s : {Fp8Saturation::kSatfinite, Fp8Saturation::kNonSaturating})
    EXPECT_EQ(fp8_saturation_from_name(fp8_saturation_name(s)), s);
  for (FourOverSix f : {FourOverSix::kOff, FourOverSix::kMse, FourOverSix::kMae})
    EXPECT_EQ(four_over_six_from_name(four_over_six_name(f)), f);
  for (GlobalScale g : {GlobalScale::kTensor, GlobalScale::kExpert})
    EXPECT_EQ(global_scale_from_name(global_scale_name(g)), g);
  EXPECT_FALSE(format_from_name("E4M3").has_value());  // case-sensitive
  EXPECT_FALSE(format_from_name("").has_value());
}

TEST(SpecNamesTest, FormatPropertiesMatchTheFormatTable) {
  EXPECT_EQ(format_bits(Format::kBf16), 16);
  EXPECT_EQ(format_bits(Format::kF16), 16);
  EXPECT_EQ(format_bits(Format::kF32), 32);
  EXPECT_EQ(format_bits(Format::kE4m3), 8);
  EXPECT_EQ(format_bits(Format::kE5m2), 8);
  EXPECT_EQ(format_bits(Format::kMxfp8), 8);
  EXPECT_EQ(format_bits(Format::kMxfp4), 4);
  EXPECT_EQ(format_bits(Format::kNvfp4), 4);
  EXPECT_TRUE(format_is_fp8(Format::kE4m3));
  EXPECT_TRUE(format_is_fp8(Format::kE5m2));
  EXPECT_FALSE(format_is_fp8(Format::kMxfp8));
  EXPECT_TRUE(format_is_high_precision(Format::kF32));
  EXPECT_FALSE(format_is_high_precision(Format::kE4m3));
  EXPECT_TRUE(format_is_mx(Format::kMxfp4));
  EXPECT_FALSE(format_is_mx(Format::kNvfp4));
}

// ------------------------------------------------------------------------------------------------
// Parsing: accepted forms

TEST(SpecParseTest, ParsesTheDesignExamples) {
  KernelSpec s = parse_ok("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16");
  EXPECT_EQ(s.op, Op::kGemm);
  EXPECT_EQ(s.a, (OperandSpec{Format::kE4m3, ScaleGranularity::kBlock1x128, ScaleType::kF32}));
  EXPECT_EQ(s.b, (OperandSpec{Format::kE4m3, ScaleGranularity::kBlock128x128, ScaleType::kF32}));
  EXPECT_EQ(s.out, (OperandSpec{Format::kBf16}));

  s = parse_ok("grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved");
  EXPECT_EQ(s.op, Op::kGroupedGemm);
  EXPECT_EQ(s.experts, 32);
  EXPECT_EQ(s.layout, GroupLayout::kOffsets);
  EXPECT_EQ(s.b, (OperandSpec{Format::kMxfp4, ScaleGranularity::kBlock1x32, ScaleType::kUe8m0}));
  EXPECT_EQ(s.gate_up, GateUp::kInterleaved);

  s = parse_ok("quantize a=bf16 out=e4m3:block1x128");
  EXPECT_EQ(s.op, Op::kQuantize);
  EXPECT_EQ(s.b, OperandSpec{});
  EXPECT_FALSE(s.transpose);

  s = parse_ok("quantize a=bf16 out=e4m3:block1x128 transpose=true");
  EXPECT_TRUE(s.transpose);

  s = parse_ok("quantize a=bf16 out=nvfp4 four_over_six=mse e4m3_bound=256");
  EXPECT_EQ(s.out, (OperandSpec{Format::kNvfp4, ScaleGranularity::kBlock1x16, ScaleType::kUe4m3}));
  EXPECT_EQ(s.four_over_six, FourOverSix::kMse);
  EXPECT_EQ(s.e4m3_bound, 256);
}

TEST(SpecParseTest, FillsImpliedScales) {
  KernelSpec s = parse_ok("gemm a=e4m3 b=e5m2:n out=f32");
  EXPECT_EQ(s.a, (OperandSpec{Format::kE4m3, ScaleGranularity::kTensor, ScaleType::kF32}));
  EXPECT_EQ(s.b, (OperandSpec{Format::kE5m2, ScaleGranularity::kN, ScaleType::kF32}));
  EXPECT_EQ(s.out, (OperandSpec{Format::kF32}));
  s = parse_ok("gemm a=mxfp8 b=nvfp4 out=f16");
  EXPECT_EQ(s.a, (OperandSpec{Format::kMxfp8, ScaleGranularity::kBlock1x32, ScaleType::kUe8m0}));
  EXPECT_EQ(s.b, (OperandSpec{Format::kNvfp4, ScaleGranularity::kBlock1x16, ScaleType::kUe4m3}));
  s = parse_ok("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16");
  EXPECT_EQ(s.a.scale_type, ScaleType::kUe8m0);
  EXPECT_EQ(s.b.scale_type, ScaleType::kUe8m0);
}

TEST(SpecParseTest, AcceptsExplicitImpliedPartsAndPrintsThemShort) {
  EXPECT_EQ(print_spec(parse_ok("gemm a=mxfp4:block1x32 b=nvfp4:block1x16:ue4m3 out=bf16")),
            "gemm a=mxfp4 b=nvfp4 out=bf16");
  EXPECT_EQ(print_spec(parse_ok("gemm a=mxfp8:ue8m0 b=e4m3:f32 out=bf16")), "gemm a=mxfp8 b=e4m3 out=bf16");
  EXPECT_EQ(print_spec(parse_ok("gemm a=e4m3:tensor:f32 b=e4m3:tensor out=bf16 pass=fprop gate_up=none")),
            "gemm a=e4m3 b=e4m3 out=bf16");
}

TEST(SpecParseTest, AcceptsCommentsNewlinesAndSpacesAroundPunctuation) {
  KernelSpec s = parse_ok(
      "# DeepSeek-V3 style\r\n"
      "grouped_gemm [ experts = 8 , layout = masked ]   # decode\n"
      "\ta = e4m3 : block1x128\n"
      "  b=e4m3:block128x128:ue8m0   out=bf16  # the end\n"
      "# trailing comment without newline");
  EXPECT_EQ(s.experts, 8);
  EXPECT_EQ(s.layout, GroupLayout::kMasked);
  EXPECT_EQ(print_spec(s),
            "grouped_gemm[experts=8,layout=masked] a=e4m3:block1x128 b=e4m3:block128x128:ue8m0 out=bf16");
}

TEST(SpecParseTest, KeyOrderDoesNotMatterAndPrintIsCanonical) {
  const std::string canonical =
      "grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=bf16 pass=dgrad gate_up=stacked "
      "fp8_sat=nonsat four_over_six=mae e4m3_bound=256 nvfp4_global=expert";
  const KernelSpec s = parse_ok(
      "grouped_gemm[layout=offsets,experts=4] nvfp4_global=expert e4m3_bound=256 four_over_six=mae "
      "fp8_sat=nonsat gate_up=stacked pass=dgrad out=bf16 b=nvfp4 a=bf16");
  EXPECT_EQ(print_spec(s), canonical);
  EXPECT_EQ(parse_ok(canonical), s);
}

TEST(SpecParseTest, WritingADefaultIsAllowed) {
  EXPECT_EQ(
      parse_ok("gemm a=bf16 b=bf16 out=bf16 transpose=false e4m3_bound=448 mx_round=rceil fp8_sat=satfinite "
               "four_over_six=off nvfp4_global=tensor"),
      gemm_bf16());
}

TEST(SpecParseTest, AcceptsTheExampleFiles) {
  for (const char* name : {"bf16_gemm.kiln", "fp8_tensor_gemm.kiln"}) {
    const auto path = repo_root() / "examples" / "specs" / name;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const std::string text = read_file(path);
    KernelSpec s = parse_ok(text);
    EXPECT_EQ(parse_ok(print_spec(s)), s) << name;
  }
  EXPECT_EQ(parse_ok(read_file(repo_root() / "examples/specs/bf16_gemm.kiln")), gemm_bf16());
  EXPECT_EQ(print_spec(parse_ok(read_file(repo_root() / "examples/specs/fp8_tensor_gemm.kiln"))),
            "gemm a=e4m3 b=e4m3 out=bf16");
}

// Every ```kiln block in docs/dsl.md holds one valid spec per line (comments allowed), and every
// ```kiln-error block one invalid spec per line: the documentation cannot drift from the parser.
TEST(SpecParseTest, DocumentationExamplesParse) {
  const std::string doc = read_file(repo_root() / "docs" / "dsl.md");
  ASSERT_FALSE(doc.empty());
  std::istringstream in(doc);
  std::string line, mode;
  int good = 0, bad = 0;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      mode = mode.empty() ? line.substr(3) : "";
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (mode == "kiln") {
      auto r = parse_spec(line);
      EXPECT_TRUE(r.ok()) << line << "\n" << r.status().to_string();
      if (r.ok()) {
        EXPECT_EQ(parse_ok(print_spec(*r)), *r) << line;
        ++good;
      }
    } else if (mode == "kiln-error") {
      EXPECT_FALSE(parse_spec(line).ok()) << line;
      ++bad;
    }
  }
  EXPECT_GE(good, 15);
  EXPECT_GE(bad, 5);
}

// ------------------------------------------------------------------------------------------------
// Parsing: positioned errors

TEST(SpecParseTest, RejectsUnknownFormatWithPosition) {
  EXPECT_EQ(parse_error("gemm a=e4m4 b=bf16 out=bf16"),
            "1:8: unknown format 'e4m4' for operand 'a'; expected one of bf16, f16, f32, e4m3, e5m2, mxfp8, "
            "mxfp4, nvfp4");
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=int8"),
              StartsWith("1:24: unknown format 'int8' for operand 'out'"));
}

TEST(SpecParseTest, ReportsLineAndColumnOnLaterLines) {
  EXPECT_THAT(parse_error("gemm\n  a=bf16\n  b=bf16\n    out=bf17\n"),
              StartsWith("4:9: unknown format 'bf17' for operand 'out'"));
  EXPECT_THAT(parse_error("# comment = : [\ngemm a=bf16 b=bf16 out=bf16 # ok\n  pass=backward"),
              StartsWith("3:8: unknown value 'backward' for pass; expected one of fprop, dgrad, wgrad"));
}

TEST(SpecParseTest, RejectsUnknownKeyListingValidKeys) {
  EXPECT_EQ(
      parse_error("gemm a=bf16 b=bf16 out=bf16 bias=bf16"),
      "1:29: unknown key 'bias'; expected one of a, b, out, pass, gate_up, transpose, accumulate, mx_round, "
      "fp8_sat, four_over_six, e4m3_bound, nvfp4_global, epilogue, mode");
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 experts=4"),
              AllOf(StartsWith("1:29: 'experts' is a property of grouped_gemm"),
                    HasSubstr("grouped_gemm[experts=E")));
}

TEST(SpecParseTest, RejectsDuplicateKeyNamingTheFirst) {
  EXPECT_EQ(parse_error("gemm a=bf16 b=bf16 out=bf16 a=f16"), "1:29: duplicate key 'a' (first given at 1:6)");
  EXPECT_EQ(parse_error("gemm a=bf16 b=bf16 out=bf16 pass=dgrad\npass=dgrad"),
            "2:1: duplicate key 'pass' (first given at 1:29)");
  EXPECT_EQ(parse_error("grouped_gemm[experts=2,experts=3,layout=offsets] a=bf16 b=bf16 out=bf16"),
            "1:24: duplicate property 'experts' (first given at 1:14)");
}

TEST(SpecParseTest, RejectsMissingOperands) {
  EXPECT_EQ(parse_error("gemm a=bf16 out=bf16"), "1:21: missing operand 'b'; gemm needs a=, b= and out=");
  EXPECT_EQ(parse_error("gemm a=bf16 b=bf16"), "1:19: missing operand 'out'; gemm needs a=, b= and out=");
  EXPECT_EQ(parse_error("quantize out=e4m3"), "1:18: missing operand 'a'; quantize needs a= and out=");
  EXPECT_THAT(parse_error("gemm"), StartsWith("1:5: missing operand 'a'"));
}

TEST(SpecParseTest, RejectsOperandBOnQuantize) {
  EXPECT_THAT(parse_error("quantize a=bf16 b=bf16 out=e4m3"),
              AllOf(StartsWith("1:17: quantize takes no operand 'b'"), HasSubstr("reads a and writes out")));
}

TEST(SpecParseTest, RejectsEmptySpecAndUnknownOperation) {
  EXPECT_THAT(parse_error(""),
              StartsWith("1:1: empty spec; expected an operation: gemm, grouped_gemm, quantize"));
  EXPECT_THAT(parse_error("  # only a comment\n\n"), StartsWith("3:1: empty spec"));
  EXPECT_EQ(parse_error("matmul a=bf16"),
            "1:1: unknown operation 'matmul'; expected one of gemm, grouped_gemm, quantize");
  EXPECT_THAT(parse_error("=gemm"),
              StartsWith("1:1: expected an operation (gemm, grouped_gemm, quantize), got '='"));
}

TEST(SpecParseTest, RejectsPropertiesWhereTheyDoNotBelong) {
  EXPECT_THAT(parse_error("gemm[experts=4,layout=offsets] a=bf16 b=bf16 out=bf16"),
              StartsWith("1:5: 'gemm' takes no [properties]; grouped_gemm has"));
  EXPECT_THAT(parse_error("quantize[experts=4] a=bf16 out=e4m3"),
              StartsWith("1:1: quantize needs layout=offsets or layout=masked in its [properties]"));
}

// quantize[experts=E,layout=...] is the grouped transposed quantizer (the padded column-wise copies a
// grouped quantized wgrad reads): it round-trips through text and JSON, and needs transpose=true.
TEST(SpecParseTest, GroupedTransposedQuantize) {
  const char* text = "quantize[experts=8,layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true";
  const KernelSpec s = parse_ok(text);
  EXPECT_EQ(s.op, Op::kQuantize);
  EXPECT_EQ(s.experts, 8);
  EXPECT_EQ(s.layout, GroupLayout::kOffsets);
  EXPECT_EQ(print_spec(s), text);
  auto j = spec_from_json(spec_to_json(s));
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(*j, s);
  EXPECT_EQ(print_spec(parse_ok("quantize[experts=4,layout=masked] a=bf16 out=e4m3:block1x128:ue8m0 transpose=true")),
            "quantize[experts=4,layout=masked] a=bf16 out=e4m3:block1x128:ue8m0 transpose=true");
  EXPECT_THAT(parse_error("quantize[experts=8,layout=offsets] a=bf16 out=e4m3:block1x128"),
              HasSubstr("needs transpose=true"));
  auto b = SpecBuilder().op(Op::kQuantize).grouped(8, GroupLayout::kMasked).a(Format::kBf16)
               .out(Format::kE4m3, ScaleGranularity::kBlock1x128, ScaleType::kF32).transpose(true).build();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(print_spec(*b), "quantize[experts=8,layout=masked] a=bf16 out=e4m3:block1x128 transpose=true");
  // M is free (each expert's rows are padded to whole blocks); K keeps the dense rules.
  EXPECT_TRUE(validate_sizes(s, {1000, 0, 2048}).ok());
}

TEST(SpecParseTest, RejectsGroupedGemmWithoutBothProperties) {
  EXPECT_THAT(
      parse_error("grouped_gemm a=bf16 b=bf16 out=bf16"),
      StartsWith(
          "1:14: expected '[' after grouped_gemm: grouped_gemm[experts=E,layout=offsets|masked], got 'a'"));
  EXPECT_EQ(parse_error("grouped_gemm[layout=offsets] a=bf16 b=bf16 out=bf16"),
            "1:1: grouped_gemm needs experts=E in its [properties]");
  EXPECT_EQ(parse_error("grouped_gemm[experts=8] a=bf16 b=bf16 out=bf16"),
            "1:1: grouped_gemm needs layout=offsets or layout=masked in its [properties]");
  EXPECT_THAT(parse_error("grouped_gemm[] a=bf16 b=bf16 out=bf16"),
              StartsWith("1:14: expected a property (experts or layout), got ']'"));
  EXPECT_EQ(parse_error("grouped_gemm[experts=8,layout=dense] a=bf16 b=bf16 out=bf16"),
            "1:31: unknown layout 'dense'; expected offsets or masked");
  EXPECT_EQ(parse_error("grouped_gemm[experts=8,shape=offsets] a=bf16 b=bf16 out=bf16"),
            "1:24: unknown property 'shape'; expected experts or layout");
  EXPECT_THAT(parse_error("grouped_gemm[experts=8;layout=masked] a=bf16 b=bf16 out=bf16"),
              StartsWith("1:23: unexpected character ';'"));
  EXPECT_THAT(parse_error("grouped_gemm[experts=8 layout=masked] a=bf16 b=bf16 out=bf16"),
              StartsWith("1:24: expected ',' or ']', got 'layout'"));
}

TEST(SpecParseTest, RejectsExpertsOutOfRangeOrNotAnInteger) {
  EXPECT_EQ(parse_error("grouped_gemm[experts=0,layout=offsets] a=bf16 b=bf16 out=bf16"),
            "1:22: experts=0 is out of range; grouped_gemm accepts 1..65536 experts");
  EXPECT_THAT(parse_error("grouped_gemm[experts=-3,layout=offsets] a=bf16 b=bf16 out=bf16"),
              StartsWith("1:22: experts=-3 is out of range"));
  EXPECT_THAT(parse_error("grouped_gemm[experts=65537,layout=offsets] a=bf16 b=bf16 out=bf16"),
              StartsWith("1:22: experts=65537 is out of range"));
  EXPECT_EQ(parse_error("grouped_gemm[experts=8.5,layout=offsets] a=bf16 b=bf16 out=bf16"),
            "1:22: experts expects an integer, got '8.5'");
  EXPECT_EQ(parse_error("grouped_gemm[experts=many,layout=offsets] a=bf16 b=bf16 out=bf16"),
            "1:22: experts expects an integer, got 'many'");
  EXPECT_EQ(parse_ok("grouped_gemm[experts=65536,layout=masked] a=bf16 b=bf16 out=bf16").experts, 65536);
  EXPECT_EQ(parse_ok("grouped_gemm[experts=0001,layout=masked] a=bf16 b=bf16 out=bf16").experts, 1);
}

TEST(SpecParseTest, RejectsMalformedOperands) {
  EXPECT_THAT(parse_error("gemm a=e4m3:blk b=bf16 out=bf16"),
              AllOf(StartsWith("1:13: unknown granularity or scale type 'blk' for operand 'a'"),
                    HasSubstr("block1x128"), HasSubstr("ue8m0")));
  EXPECT_EQ(parse_error("gemm a=e4m3:block1x128:e8m0 b=bf16 out=bf16"),
            "1:24: unknown scale type 'e8m0' for operand 'a'; expected one of f32, ue8m0, ue4m3");
  EXPECT_THAT(
      parse_error("gemm a=e4m3:f32:tensor b=bf16 out=bf16"),
      StartsWith("1:16: unexpected ':' after scale type 'f32'; the order is format:granularity:scale_type"));
  EXPECT_THAT(parse_error("gemm a=e4m3:block1x128:f32:f32 b=bf16 out=bf16"),
              StartsWith("1:27: expected a key"));
  EXPECT_THAT(parse_error("gemm a=e4m3: b=bf16 out=bf16"),
              StartsWith("1:14: unknown granularity or scale type 'b' for operand 'a'"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=e4m3:"),
              StartsWith("1:29: expected a scale granularity or scale type after ':', got end of input"));
  EXPECT_THAT(parse_error("gemm a= b=bf16 out=bf16"), StartsWith("1:9: unknown format 'b' for operand 'a'"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out="),
              StartsWith("1:24: expected a format for operand 'out'"));
  EXPECT_THAT(parse_error("gemm a bf16"), StartsWith("1:8: expected '=' after key 'a', got 'bf16'"));
  EXPECT_THAT(parse_error("gemm a:bf16"), StartsWith("1:7: expected '=' after key 'a', got ':'"));
  EXPECT_THAT(parse_error("gemm a=bf16, b=bf16 out=bf16"), StartsWith("1:12: expected a key (a, b, out"));
  EXPECT_THAT(parse_error("gemm a=none b=bf16 out=bf16"), StartsWith("1:8: unknown format 'none'"));
  EXPECT_THAT(parse_error("gemm a=bf16:none b=bf16 out=bf16"),
              StartsWith("1:13: unknown granularity or scale type 'none'"));
}

TEST(SpecParseTest, RejectsBadAttributeValues) {
  const std::string base = "gemm a=bf16 b=bf16 out=bf16 ";  // attribute value starts at column 29 + key + 1
  struct Case {
    std::string kv, want;
  } cases[] = {
      {"pass=bwd", "1:34: unknown value 'bwd' for pass; expected one of fprop, dgrad, wgrad"},
      {"gate_up=split",
       "1:37: unknown value 'split' for gate_up; expected one of none, interleaved, stacked"},
      {"transpose=yes", "1:39: unknown value 'yes' for transpose; expected one of true, false"},
      {"mx_round=ceil", "1:38: unknown value 'ceil' for mx_round; expected one of rceil, floor"},
      {"fp8_sat=clamp", "1:37: unknown value 'clamp' for fp8_sat; expected one of satfinite, nonsat"},
      {"four_over_six=on", "1:43: unknown value 'on' for four_over_six; expected one of off, mse, mae"},
      {"nvfp4_global=row", "1:42: unknown value 'row' for nvfp4_global; expected one of tensor, expert"},
      {"e4m3_bound=big", "1:40: e4m3_bound=big is not accepted; use 448 (the default) or 256"},
      {"pass=", "1:34: expected a value for pass (fprop, dgrad, wgrad), got end of input"},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_error(base + c.kv), c.want) << c.kv;
}

TEST(SpecParseTest, PositionsValidationErrorsAtTheOffendingToken) {
  EXPECT_EQ(
      parse_error("gemm a=e4m3:n b=bf16 out=bf16"),
      "1:13: a=e4m3:n: granularity 'n' (one scale per row of W, i.e. per output channel) is not accepted on "
      "operand a; operand a accepts tensor, m, block1x128");
  EXPECT_THAT(parse_error("gemm a=bf16 b=e4m3:tensor:ue8m0 out=bf16"),
              StartsWith("1:27: b=e4m3:ue8m0: scale type 'ue8m0' needs a block granularity"));
  EXPECT_THAT(parse_error("quantize a=e4m3 out=e4m3"),
              StartsWith("1:12: a=e4m3: quantize reads a high-precision input"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16\n  transpose=true"),
              StartsWith("2:13: transpose=true applies to quantize only, not gemm"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 e4m3_bound=300"),
              StartsWith("1:40: e4m3_bound=300 is not accepted; use 448 (the default) or 256"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 four_over_six=mse"),
              StartsWith("1:43: four_over_six=mse only applies when an operand is nvfp4"));
  EXPECT_THAT(parse_error("gemm a=mxfp8:block1x128 b=bf16 out=bf16"),
              StartsWith("1:14: a=mxfp8:block1x128: mxfp8 has intrinsic block1x32 scaling"));
}

// ------------------------------------------------------------------------------------------------
// Hostile input: every case must give a positioned InvalidArgument, never a crash.

TEST(SpecHostileInputTest, RejectsCxxText) {
  EXPECT_EQ(parse_error("int main() { return 0; }"),
            "1:1: unknown operation 'int'; expected one of gemm, grouped_gemm, quantize");
  EXPECT_THAT(parse_error("gemm a=bf16); system(\"rm -rf /\"); // b=bf16 out=bf16"),
              StartsWith("1:12: unexpected character ')'"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 pass=fprop;"),
              StartsWith("1:39: unexpected character ';'"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=__global__ "),
              StartsWith("1:24: unknown format '__global__'"));
  // Quotes make a string, which only epilogue= takes.
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 \"quoted\""),
              StartsWith("1:29: expected a key (a, b, out, pass, gate_up, transpose, accumulate, mx_round, fp8_sat, "
                         "four_over_six, e4m3_bound, nvfp4_global, epilogue, mode) or the end of the spec, got a "
                         "quoted string"));
}

TEST(SpecHostileInputTest, TreatsIncludeAsAComment) {
  // '#' starts a comment, so a preprocessor line is inert text, never code.
  EXPECT_THAT(parse_error("#include <cstdio>"), StartsWith("1:18: empty spec"));
  EXPECT_EQ(parse_ok("#include <cstdio>\ngemm a=bf16 b=bf16 out=bf16 #define X"), gemm_bf16());
}

TEST(SpecHostileInputTest, RejectsControlAndNonAsciiBytes) {
  EXPECT_EQ(parse_error(std::string("gemm\x01 a=bf16 b=bf16 out=bf16")), "1:5: unexpected control byte 0x01");
  EXPECT_EQ(parse_error(std::string("gemm a=bf16\0 b=bf16 out=bf16", 28)),
            "1:12: unexpected control byte 0x00");
  EXPECT_EQ(parse_error("gemm a=bf16 b=bf16 out=bf16\x1b[31m"), "1:28: unexpected control byte 0x1B");
  EXPECT_EQ(parse_error("gemm a=bf16 b=bf16 out=bf16 \xc3\xa9"),
            "1:29: unexpected byte 0xC3; spec text is ASCII");
  EXPECT_EQ(parse_error("gemm a=bf16 b=bf16 out=bf16\x7f"), "1:28: unexpected control byte 0x7F");
  EXPECT_EQ(parse_error("\xef\xbb\xbfgemm a=bf16 b=bf16 out=bf16"),
            "1:1: unexpected byte 0xEF; spec text is ASCII");
}

TEST(SpecHostileInputTest, RejectsDeeplyNestedBrackets) {
  // 100k brackets are beyond the length limit; 60k reach the parser. Both fail at a position.
  EXPECT_EQ(parse_error("grouped_gemm" + std::string(100000, '[')),
            "1:65537: spec text is 100012 bytes; at most 65536 are accepted");
  const std::string open(60000, '[');
  EXPECT_THAT(parse_error("grouped_gemm" + open),
              StartsWith("1:14: expected a property (experts or layout), got '['"));
  EXPECT_THAT(parse_error("gemm" + open), StartsWith("1:5: 'gemm' takes no [properties]"));
  EXPECT_THAT(parse_error(std::string(60000, ']')), StartsWith("1:1: expected an operation"));
  std::string nested;
  for (int i = 0; i < 20000; ++i) nested += "[a=";  // 60 KB
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 " + nested), StartsWith("1:29: expected a key"));
}

TEST(SpecHostileInputTest, RejectsHugeIntegers) {
  std::string big(401, '0');  // 10^400
  big[0] = '1';
  const std::string msg =
      parse_error("grouped_gemm[experts=" + big + ",layout=offsets] a=bf16 b=bf16 out=bf16");
  EXPECT_THAT(msg, StartsWith("1:22: experts=1000000000"));
  EXPECT_THAT(msg, HasSubstr("(401 characters) is out of range"));
  EXPECT_LT(msg.size(), 200u);
  EXPECT_THAT(parse_error("quantize a=bf16 out=nvfp4 e4m3_bound=" + big),
              StartsWith("1:38: e4m3_bound=1000"));
  EXPECT_THAT(parse_error("quantize a=bf16 out=nvfp4 e4m3_bound=4294967552"),
              StartsWith("1:38: e4m3_bound=4294967552 is not accepted"));  // 2^32 + 256 must not wrap to 256
  EXPECT_THAT(parse_error("grouped_gemm[experts=4294967297,layout=offsets] a=bf16 b=bf16 out=bf16"),
              StartsWith("1:22: experts=4294967297 is out of range"));
}

TEST(SpecHostileInputTest, RejectsUnterminatedBracket) {
  EXPECT_EQ(parse_error("grouped_gemm[experts=4,layout=offsets"),
            "1:38: unterminated '[' opened at 1:13; expected ',' or ']'");
  EXPECT_EQ(parse_error("grouped_gemm[experts=4,"),
            "1:24: unterminated '[' opened at 1:13; expected a property (experts, layout)");
  EXPECT_EQ(parse_error("grouped_gemm["),
            "1:14: unterminated '[' opened at 1:13; expected a property (experts, layout)");
  EXPECT_THAT(parse_error("grouped_gemm[experts="),
              StartsWith("1:22: expected the number of experts (1..65536), got end of input"));
}

TEST(SpecHostileInputTest, RejectsOverlongTextWithALimit) {
  std::string text = "gemm a=bf16 b=bf16 out=bf16 ";
  text += std::string(70000, ' ');
  EXPECT_EQ(parse_error(text), "1:65537: spec text is 70028 bytes; at most 65536 are accepted");
  std::string lines(65536 + 5, '\n');
  EXPECT_THAT(parse_error(lines), StartsWith("65537:1: spec text is 65541 bytes"));
  // Just under the limit is fine.
  std::string padded = "gemm a=bf16 b=bf16 out=bf16";
  padded += std::string(65536 - padded.size(), ' ');
  EXPECT_EQ(parse_ok(padded), gemm_bf16());
}

TEST(SpecHostileInputTest, TruncatesLongWordsInMessages) {
  const std::string word(60000, 'x');
  const std::string msg = parse_error("gemm a=" + word);
  EXPECT_THAT(msg, StartsWith("1:8: unknown format 'xxxxxxxx"));
  EXPECT_THAT(msg, HasSubstr("(60000 characters)"));
  EXPECT_LT(msg.size(), 250u);
}

TEST(SpecHostileInputTest, RandomTextNeverCrashesAndParsedTextRoundTrips) {
  // Fragments of the grammar glued at random, plus stray bytes: most fail, some parse; every
  // failure must carry "line:col: ", and every success must round-trip through print_spec.
  const std::vector<std::string> pieces = {"gemm",
                                           "grouped_gemm",
                                           "quantize",
                                           "[",
                                           "]",
                                           ",",
                                           "=",
                                           ":",
                                           " ",
                                           "\n",
                                           "#x\n",
                                           "a",
                                           "b",
                                           "out",
                                           "experts",
                                           "layout",
                                           "offsets",
                                           "masked",
                                           "32",
                                           "0",
                                           "-1",
                                           "bf16",
                                           "f16",
                                           "f32",
                                           "e4m3",
                                           "e5m2",
                                           "mxfp8",
                                           "mxfp4",
                                           "nvfp4",
                                           "tensor",
                                           "m",
                                           "n",
                                           "block1x128",
                                           "block128x128",
                                           "block1x32",
                                           "block1x16",
                                           "ue8m0",
                                           "ue4m3",
                                           "pass",
                                           "fprop",
                                           "wgrad",
                                           "gate_up",
                                           "interleaved",
                                           "transpose",
                                           "true",
                                           "mx_round",
                                           "floor",
                                           "fp8_sat",
                                           "nonsat",
                                           "four_over_six",
                                           "mse",
                                           "e4m3_bound",
                                           "256",
                                           "nvfp4_global",
                                           "expert",
                                           "\x01",
                                           "\xff",
                                           "(",
                                           "}",
                                           " a=bf16",
                                           " b=e4m3",
                                           " out=bf16",
                                           " a=e4m3:block1x128",
                                           " out=nvfp4"};
  const uint32_t seed = std::random_device{}();
  std::printf("RandomTextNeverCrashesAndParsedTextRoundTrips seed=%u\n", seed);
  std::mt19937 rng(seed);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text;
    const int n = static_cast<int>(rng() % 16);
    for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
    if (iter % 3 == 0) text = "gemm a=bf16 b=bf16 out=bf16 " + text;
    auto r = parse_spec(text);
    if (r.ok()) {
      ++parsed;
      auto again = parse_spec(print_spec(*r));
      ASSERT_TRUE(again.ok()) << "seed=" << seed << " text=" << text;
      ASSERT_EQ(*again, *r) << "seed=" << seed << " text=" << text;
      ASSERT_TRUE(validate_spec(*r).ok());
    } else {
      ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      int line = 0, col = 0;
      ASSERT_EQ(std::sscanf(r.status().message().c_str(), "%d:%d: ", &line, &col), 2)
          << "seed=" << seed << " text=" << text << "\n"
          << r.status().message();
      ASSERT_GE(line, 1);
      ASSERT_GE(col, 1);
    }
  }
  EXPECT_GT(parsed, 0);
}

// ------------------------------------------------------------------------------------------------
// Round trips over the whole value space

constexpr Format kAllFormats[] = {Format::kBf16, Format::kF16,   Format::kF32,   Format::kE4m3,
                                  Format::kE5m2, Format::kMxfp8, Format::kMxfp4, Format::kNvfp4};

// parse(print(s)) == s and from_json(to_json(s)) == s exactly when s is valid; an invalid s must
// print to text that does not parse (so print never launders an invalid spec into a valid one).
void check_round_trip(const KernelSpec& s, int& valid, int& invalid) {
  const std::string text = print_spec(s);
  auto parsed = parse_spec(text);
  auto from_json = spec_from_json(spec_to_json(s));
  // The JSON text form round-trips through a string too.
  auto reparsed_json = nlohmann::json::parse(spec_to_json(s).dump());
  if (validate_spec(s).ok()) {
    ++valid;
    ASSERT_TRUE(parsed.ok()) << text << "\n" << parsed.status().to_string();
    EXPECT_EQ(*parsed, s) << text;
    EXPECT_EQ(print_spec(*parsed), text);
    ASSERT_TRUE(from_json.ok()) << spec_to_json(s).dump() << "\n" << from_json.status().to_string();
    EXPECT_EQ(*from_json, s) << spec_to_json(s).dump();
    EXPECT_EQ(reparsed_json, spec_to_json(s));
  } else {
    ++invalid;
    EXPECT_FALSE(parsed.ok()) << "invalid spec printed as parseable text: " << text;
    EXPECT_FALSE(from_json.ok()) << "invalid spec read back from JSON: " << spec_to_json(s).dump();
  }
}

TEST(SpecRoundTripTest, EveryOperandOnEveryRoleOfEveryOp) {
  int valid = 0, invalid = 0;
  KernelSpec gemm = gemm_bf16();
  KernelSpec grouped = gemm_bf16();
  grouped.op = Op::kGroupedGemm;
  grouped.experts = 32;
  grouped.layout = GroupLayout::kOffsets;
  KernelSpec quant;
  quant.op = Op::kQuantize;
  quant.a = OperandSpec{Format::kBf16};
  quant.out = OperandSpec{Format::kE4m3, ScaleGranularity::kBlock1x128, ScaleType::kF32};
  for (const KernelSpec& base : {gemm, grouped, quant}) {
    for (int role = 0; role < 3; ++role) {
      for (Format f : kAllFormats) {
        for (int g = 0; g <= static_cast<int>(ScaleGranularity::kBlock1x16); ++g) {
          for (int t = 0; t <= static_cast<int>(ScaleType::kUe4m3); ++t) {
            KernelSpec s = base;
            OperandSpec& o = role == 0 ? s.a : role == 1 ? s.b : s.out;
            o = OperandSpec{f, static_cast<ScaleGranularity>(g), static_cast<ScaleType>(t)};
            SCOPED_TRACE(print_spec(s));
            check_round_trip(s, valid, invalid);
          }
        }
      }
    }
  }
  // Legal operands per role: 3 unscaled + 2 FP8 x 4 (tensor, m|n, block x {f32, ue8m0}) + mxfp8,
  // mxfp4, nvfp4 = 14 on each of a, b, out of gemm and grouped_gemm (84). quantize: a is one of 3
  // high-precision formats, b only the absent default (1), out one of 2 FP8 x 6 (tensor, m,
  // block1x128 x 2, block128x128 x 2) + 3 = 15 (19). The exact count pins the rule set.
  EXPECT_EQ(valid, 84 + 19);
  EXPECT_EQ(valid + invalid, 3 * 3 * 8 * 8 * 4);
}

TEST(SpecRoundTripTest, EveryAttributeCombination) {
  int valid = 0, invalid = 0;
  std::vector<KernelSpec> bases;
  bases.push_back(gemm_bf16());
  bases.push_back(parse_ok("grouped_gemm[experts=8,layout=masked] a=bf16 b=nvfp4 out=bf16"));
  bases.push_back(parse_ok("grouped_gemm[experts=128,layout=offsets] a=mxfp8 b=mxfp4 out=bf16"));
  bases.push_back(parse_ok("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128 out=bf16"));
  bases.push_back(parse_ok("quantize a=bf16 out=nvfp4"));
  bases.push_back(parse_ok("quantize a=f32 out=mxfp8"));
  bases.push_back(parse_ok("quantize a=bf16 out=e5m2:m"));
  for (const KernelSpec& base : bases) {
    for (Pass pass : {Pass::kFprop, Pass::kDgrad, Pass::kWgrad})
      for (GateUp gu : {GateUp::kNone, GateUp::kInterleaved, GateUp::kStacked})
        for (bool tr : {false, true})
          for (MxRounding mr : {MxRounding::kRceil, MxRounding::kFloor})
            for (Fp8Saturation fs : {Fp8Saturation::kSatfinite, Fp8Saturation::kNonSaturating})
              for (FourOverSix fo : {FourOverSix::kOff, FourOverSix::kMse, FourOverSix::kMae})
                for (int bound : {448, 256, 300})
                  for (GlobalScale gs : {GlobalScale::kTensor, GlobalScale::kExpert}) {
                    KernelSpec s = base;
                    s.pass = pass;
                    s.gate_up = gu;
                    s.transpose = tr;
                    s.mx_rounding = mr;
                    s.fp8_saturation = fs;
                    s.four_over_six = fo;
                    s.e4m3_bound = bound;
                    s.nvfp4_global = gs;
                    check_round_trip(s, valid, invalid);
                    if (::testing::Test::HasFailure()) return;
                  }
  }
  // Per base, the attributes that may leave their default: gemm bf16: pass x gate_up (9);
  // grouped nvfp4: pass x gate_up x fp8_sat x four_over_six x bound x global (216); grouped MX:
  // pass x gate_up x mx_round x fp8_sat (36); gemm FP8 ue8m0 blocks: the same (36); quantize
  // nvfp4: transpose x fp8_sat x four_over_six x bound (24); quantize mxfp8: transpose x mx_round
  // x fp8_sat (8); quantize e5m2: transpose x fp8_sat (4).
  EXPECT_EQ(valid, 9 + 216 + 36 + 36 + 24 + 8 + 4);
  EXPECT_EQ(valid + invalid, 7 * 1296);
}

TEST(SpecRoundTripTest, ExpertsAndLayouts) {
  int valid = 0, invalid = 0;
  for (Op op : {Op::kGemm, Op::kGroupedGemm, Op::kQuantize})
    for (int experts : {-1, 0, 1, 2, 32, 65536, 65537})
      for (GroupLayout l : {GroupLayout::kDense, GroupLayout::kOffsets, GroupLayout::kMasked}) {
        KernelSpec s = op == Op::kQuantize ? parse_ok("quantize a=bf16 out=mxfp4") : gemm_bf16();
        s.op = op;
        s.experts = experts;
        s.layout = l;
        check_round_trip(s, valid, invalid);
      }
  EXPECT_EQ(valid, 2 + 4 * 2);  // gemm, quantize dense; grouped with 4 in-range counts x 2 layouts
  EXPECT_GT(invalid, 0);
}

TEST(SpecPrintTest, PrintsCanonicalForms) {
  EXPECT_EQ(print_spec(gemm_bf16()), "gemm a=bf16 b=bf16 out=bf16");
  EXPECT_EQ(print_spec(parse_ok("quantize out=e4m3:block1x128 transpose=true a=bf16")),
            "quantize a=bf16 out=e4m3:block1x128 transpose=true");
  EXPECT_EQ(print_spec(parse_ok("quantize a=bf16 out=mxfp8 mx_round=floor fp8_sat=nonsat")),
            "quantize a=bf16 out=mxfp8 mx_round=floor fp8_sat=nonsat");
  EXPECT_EQ(print_spec(parse_ok("gemm a=e4m3:m b=e4m3:n out=f16 pass=wgrad")),
            "gemm a=e4m3:m b=e4m3:n out=f16 pass=wgrad");
  EXPECT_EQ(print_spec(parse_ok("gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:f32 out=bf16")),
            "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128 out=bf16");
  // print(parse(t)) is a fixed point.
  for (const char* t :
       {"grouped_gemm [layout=masked,experts=3] b=mxfp4:ue8m0 a=bf16 out=bf16 gate_up=interleaved",
        "quantize a=f16 out=nvfp4:block1x16 e4m3_bound=256 four_over_six=mae"}) {
    const std::string once = print_spec(parse_ok(t));
    EXPECT_EQ(print_spec(parse_ok(once)), once);
  }
}

TEST(SpecPrintTest, PrintsInvalidSpecsWithoutLosingTheProblem) {
  KernelSpec s = parse_ok("quantize a=bf16 out=e4m3");
  s.b = OperandSpec{Format::kF16};
  EXPECT_EQ(print_spec(s), "quantize a=bf16 b=f16 out=e4m3");
  s = gemm_bf16();
  s.experts = 4;
  EXPECT_EQ(print_spec(s), "gemm[experts=4,layout=dense] a=bf16 b=bf16 out=bf16");
  s = gemm_bf16();
  s.a = OperandSpec{Format::kE4m3, ScaleGranularity::kNone, ScaleType::kNone};
  EXPECT_EQ(print_spec(s), "gemm a=e4m3:none:none b=bf16 out=bf16");
}

// ------------------------------------------------------------------------------------------------
// JSON

TEST(SpecJsonTest, WritesEveryFieldExplicitly) {
  const nlohmann::json j = spec_to_json(parse_ok("gemm a=e4m3 b=e4m3:block128x128:ue8m0 out=bf16"));
  const nlohmann::json want = nlohmann::json::parse(R"({
    "op": "gemm", "pass": "fprop", "layout": "dense", "experts": 0,
    "a": {"format": "e4m3", "scale": "tensor", "scale_type": "f32"},
    "b": {"format": "e4m3", "scale": "block128x128", "scale_type": "ue8m0"},
    "out": {"format": "bf16", "scale": "none", "scale_type": "none"},
    "gate_up": "none", "transpose": false, "accumulate": false, "mx_round": "rceil", "fp8_sat": "satfinite",
    "four_over_six": "off", "e4m3_bound": 448, "nvfp4_global": "tensor", "epilogue": ""})");
  EXPECT_EQ(j, want) << j.dump(2);
  EXPECT_FALSE(spec_to_json(parse_ok("quantize a=bf16 out=mxfp4")).contains("b"));
}

TEST(SpecJsonTest, ReadsMinimalObjectsWithDefaultsAndImpliedScales) {
  auto s = spec_from_json(nlohmann::json::parse(
      R"({"op":"grouped_gemm","experts":32,"layout":"offsets","a":{"format":"bf16"},
          "b":{"format":"mxfp4"},"out":{"format":"bf16"},"gate_up":"interleaved"})"));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(*s,
            parse_ok("grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved"));
  auto q = spec_from_json(nlohmann::json::parse(
      R"({"op":"quantize","a":{"format":"bf16"},"out":{"format":"e4m3","scale":"block1x128"}})"));
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(*q, parse_ok("quantize a=bf16 out=e4m3:block1x128"));
  // An explicit "none" is literal, not "implied": FP8 needs a scale type.
  auto n = spec_from_json(nlohmann::json::parse(
      R"({"op":"quantize","a":{"format":"bf16"},"out":{"format":"e4m3","scale":"block1x128","scale_type":"none"}})"));
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(),
              StartsWith("$.out.scale_type: out=e4m3:block1x128:none: e4m3 needs a scale type"));
}

TEST(SpecJsonTest, ReportsTheJsonPathOfABadField) {
  auto err = [](const char* text) {
    auto r = spec_from_json(nlohmann::json::parse(text));
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(
      err(R"({"op":"gemm","a":{"format":"x"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      "$.a.format: unknown format 'x'; expected one of bf16, f16, f32, e4m3, e5m2, mxfp8, mxfp4, nvfp4");
  EXPECT_THAT(err(R"([1,2])"), StartsWith("$: expected a JSON object, got array"));
  EXPECT_THAT(err(R"({"a":{"format":"bf16"}})"), StartsWith("$.op: missing; expected one of gemm"));
  EXPECT_THAT(err(R"({"op":"conv"})"), StartsWith("$.op: unknown op 'conv'"));
  EXPECT_THAT(err(R"({"op":"gemm","a":{"format":"bf16"},"out":{"format":"bf16"}})"),
              StartsWith("$.b: missing; gemm needs a, b and out"));
  EXPECT_THAT(err(R"({"op":"gemm","bias":1})"),
              StartsWith("$.bias: unknown field; expected one of op, pass"));
  EXPECT_THAT(
      err(R"({"op":"gemm","a":{"format":"bf16","scales":"m"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.a.scales: unknown field; expected format, scale, scale_type"));
  EXPECT_THAT(err(R"({"op":"gemm","a":{"scale":"m"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
              StartsWith("$.a.format: missing"));
  EXPECT_THAT(err(R"({"op":"gemm","a":"bf16","b":{"format":"bf16"},"out":{"format":"bf16"}})"),
              StartsWith("$.a: expected an object"));
  EXPECT_THAT(
      err(R"({"op":"gemm","a":{"format":"e4m3","scale":"n"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.a.scale: a=e4m3:n: granularity 'n'"));
  EXPECT_THAT(
      err(R"({"op":"gemm","a":{"format":"e4m3","scale_type":"ue4m3"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.a.scale_type: a=e4m3:ue4m3: scale type 'ue4m3' is only for nvfp4"));
  EXPECT_THAT(err(R"({"op":"quantize","a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"e4m3"}})"),
              StartsWith("$.b: quantize takes no operand b"));
  EXPECT_THAT(
      err(R"({"op":"grouped_gemm","experts":"32","a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.experts: expected an integer, got string"));
  EXPECT_THAT(
      err(R"({"op":"grouped_gemm","experts":1e3,"a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.experts: expected an integer, got number"));
  EXPECT_THAT(
      err(R"({"op":"grouped_gemm","experts":99999999999,"a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.experts: 99999999999 is out of range"));
  EXPECT_THAT(
      err(R"({"op":"grouped_gemm","experts":32,"a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.layout: layout=dense is not a grouped layout"));
  EXPECT_THAT(
      err(R"({"op":"gemm","transpose":1,"a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.transpose: expected true or false, got number"));
  EXPECT_THAT(
      err(R"({"op":"gemm","pass":3,"a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.pass: expected a string (one of fprop, dgrad, wgrad), got number"));
  EXPECT_THAT(
      err(R"({"op":"gemm","e4m3_bound":256,"a":{"format":"bf16"},"b":{"format":"bf16"},"out":{"format":"bf16"}})"),
      StartsWith("$.e4m3_bound: e4m3_bound=256 only applies when an operand is nvfp4"));
  EXPECT_THAT(err("{\"op\":\"gemm\",\"\\u0001\\u001b[2J\":0}"), StartsWith("$.??[2J: unknown field"));
  EXPECT_THAT(err("null"), StartsWith("$: expected a JSON object, got null"));
}

// ------------------------------------------------------------------------------------------------
// SpecBuilder

TEST(SpecBuilderTest, BuildsAndFillsImpliedScales) {
  auto s = SpecBuilder()
               .a(Format::kE4m3, ScaleGranularity::kBlock1x128)
               .b(Format::kE4m3, ScaleGranularity::kBlock128x128)
               .out(Format::kBf16)
               .build();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(*s, parse_ok("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"));

  auto g = SpecBuilder()
               .grouped(32, GroupLayout::kOffsets)
               .a(Format::kBf16)
               .b(Format::kMxfp4)
               .out(Format::kBf16)
               .gate_up(GateUp::kInterleaved)
               .pass(Pass::kDgrad)
               .build();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(
      *g,
      parse_ok(
          "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved pass=dgrad"));

  auto q = SpecBuilder()
               .op(Op::kQuantize)
               .a(Format::kBf16)
               .out(Format::kNvfp4)
               .four_over_six(FourOverSix::kMse)
               .e4m3_bound(256)
               .fp8_saturation(Fp8Saturation::kNonSaturating)
               .transpose(true)
               .build();
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(
      *q,
      parse_ok("quantize a=bf16 out=nvfp4 four_over_six=mse e4m3_bound=256 fp8_sat=nonsat transpose=true"));

  auto m = SpecBuilder()
               .grouped(4, GroupLayout::kMasked)
               .a(Format::kMxfp8)
               .b(Format::kMxfp8)
               .out(Format::kBf16)
               .mx_rounding(MxRounding::kFloor)
               .build();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->a.scale_type, ScaleType::kUe8m0);
  EXPECT_EQ(m->mx_rounding, MxRounding::kFloor);

  auto nv = SpecBuilder()
                .grouped(4, GroupLayout::kOffsets)
                .a(Format::kNvfp4)
                .b(Format::kNvfp4)
                .out(Format::kBf16)
                .nvfp4_global(GlobalScale::kExpert)
                .build();
  ASSERT_TRUE(nv.ok()) << nv.status().to_string();
}

TEST(SpecBuilderTest, RejectsMissingOrExtraOperands) {
  auto s = SpecBuilder().a(Format::kBf16).out(Format::kBf16).build();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "SpecBuilder: operand b is not set; gemm needs a(), b() and out()");
  s = SpecBuilder().op(Op::kQuantize).a(Format::kBf16).b(Format::kBf16).out(Format::kE4m3).build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("quantize takes no operand b"));
  s = SpecBuilder().b(Format::kBf16).out(Format::kBf16).build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("operand a is not set"));
  s = SpecBuilder().a(Format::kBf16).b(Format::kBf16).build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("operand out is not set"));
}

TEST(SpecBuilderTest, RejectsInvalidCombinations) {
  auto s =
      SpecBuilder().a(Format::kBf16, ScaleGranularity::kTensor).b(Format::kBf16).out(Format::kBf16).build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("a=bf16:tensor: bf16 is unscaled"));
  s = SpecBuilder()
          .grouped(0, GroupLayout::kOffsets)
          .a(Format::kBf16)
          .b(Format::kBf16)
          .out(Format::kBf16)
          .build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("experts=0 is out of range"));
  s = SpecBuilder().a(Format::kBf16).b(Format::kBf16).out(Format::kBf16).e4m3_bound(100).build();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("e4m3_bound=100 is not accepted"));
}

// ------------------------------------------------------------------------------------------------
// validate_spec: one case per rule; each message names the key and value and what is accepted.

struct RuleCase {
  const char* name;
  const char* text;  // must fail to parse
  std::vector<std::string> want;
};

TEST(SpecValidateTest, EveryRuleRejectsWithKeyValueAndAlternatives) {
  const RuleCase cases[] = {
      {"m on b",
       "gemm a=bf16 b=e4m3:m out=bf16",
       {"b=e4m3:m", "granularity 'm'", "operand b accepts tensor, n, block128x128"}},
      {"block1x128 on b",
       "gemm a=bf16 b=e4m3:block1x128 out=bf16",
       {"b=e4m3:block1x128", "'block1x128'", "operand b accepts"}},
      {"n on a",
       "gemm a=e5m2:n b=bf16 out=bf16",
       {"a=e5m2:n", "'n'", "operand a accepts tensor, m, block1x128"}},
      {"block128x128 on a",
       "gemm a=e4m3:block128x128 b=bf16 out=bf16",
       {"a=e4m3:block128x128", "operand a accepts"}},
      {"n on out",
       "gemm a=bf16 b=bf16 out=e4m3:n",
       {"out=e4m3:n", "operand out accepts tensor, m, block1x128"}},
      {"block128x128 on gemm out", "gemm a=bf16 b=bf16 out=e4m3:block128x128", {"out=e4m3:block128x128"}},
      {"mx granularity on fp8",
       "gemm a=e4m3:block1x32 b=bf16 out=bf16",
       {"'block1x32' is intrinsic to mxfp8/mxfp4"}},
      {"nvfp4 granularity on fp8",
       "gemm a=bf16 b=e4m3:block1x16 out=bf16",
       {"'block1x16' is intrinsic to nvfp4"}},
      {"hp with granularity",
       "gemm a=bf16:tensor b=bf16 out=bf16",
       {"a=bf16:tensor", "bf16 is unscaled", "write a=bf16"}},
      {"hp with scale type",
       "gemm a=bf16 b=f16:f32 out=bf16",
       {"b=f16:f32", "takes no scale type", "write b=f16"}},
      {"hp out with scale", "gemm a=bf16 b=bf16 out=f32:m", {"out=f32:m", "f32 is unscaled"}},
      {"ue8m0 on tensor",
       "gemm a=e4m3:ue8m0 b=bf16 out=bf16",
       {"a=e4m3:ue8m0", "'ue8m0' needs a block granularity", "'tensor'"}},
      {"ue8m0 on n", "gemm a=bf16 b=e4m3:n:ue8m0 out=bf16", {"b=e4m3:n:ue8m0", "'ue8m0'", "got 'n'"}},
      {"ue4m3 on fp8",
       "gemm a=e4m3:block1x128:ue4m3 b=bf16 out=bf16",
       {"'ue4m3' is only for nvfp4", "accepts f32"}},
      {"mx with other granularity",
       "gemm a=mxfp8:tensor b=bf16 out=bf16",
       {"a=mxfp8:tensor", "intrinsic block1x32", "write a=mxfp8"}},
      {"mx with f32", "gemm a=bf16 b=mxfp4:f32 out=bf16", {"b=mxfp4:f32", "ue8m0 only", "write b=mxfp4"}},
      {"nvfp4 with mx block",
       "gemm a=bf16 b=nvfp4:block1x32 out=bf16",
       {"b=nvfp4:block1x32", "intrinsic block1x16"}},
      {"nvfp4 with ue8m0", "gemm a=bf16 b=nvfp4:ue8m0 out=bf16", {"b=nvfp4:ue8m0", "ue4m3 only"}},
      {"quantize fp8 input",
       "quantize a=e5m2 out=e4m3",
       {"a=e5m2", "high-precision input", "bf16, f16, f32"}},
      {"quantize mx input", "quantize a=mxfp4 out=e4m3", {"a=mxfp4", "high-precision input"}},
      {"quantize hp output",
       "quantize a=bf16 out=f16",
       {"out=f16", "quantized output", "e4m3, e5m2, mxfp8, mxfp4, nvfp4"}},
      {"quantize out n", "quantize a=bf16 out=e4m3:n", {"out=e4m3:n", "tensor, m, block1x128, block128x128"}},
      {"transpose on gemm",
       "gemm a=bf16 b=bf16 out=bf16 transpose=true",
       {"transpose=true", "quantize only", "not gemm"}},
      {"transpose on grouped",
       "grouped_gemm[experts=2,layout=offsets] a=bf16 b=bf16 out=bf16 transpose=true",
       {"transpose=true", "not grouped_gemm"}},
      {"gate_up on quantize",
       "quantize a=bf16 out=e4m3 gate_up=stacked",
       {"gate_up=stacked", "gemm and grouped_gemm, not quantize"}},
      {"pass on quantize",
       "quantize a=bf16 out=e4m3 pass=wgrad",
       {"pass=wgrad", "not quantize", "transpose=true"}},
      {"mx_round without e8m0",
       "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 mx_round=floor",
       {"mx_round=floor", "E8M0 scales", "this spec has none"}},
      {"fp8_sat without fp8",
       "gemm a=bf16 b=mxfp4 out=bf16 fp8_sat=nonsat",
       {"fp8_sat=nonsat", "FP8 values", "has none"}},
      {"four_over_six without nvfp4",
       "quantize a=bf16 out=mxfp4 four_over_six=mae",
       {"four_over_six=mae", "nvfp4"}},
      {"e4m3_bound value",
       "quantize a=bf16 out=nvfp4 e4m3_bound=447",
       {"e4m3_bound=447", "use 448 (the default) or 256"}},
      {"e4m3_bound without nvfp4", "quantize a=bf16 out=e4m3 e4m3_bound=256", {"e4m3_bound=256", "nvfp4"}},
      {"nvfp4_global without nvfp4",
       "grouped_gemm[experts=2,layout=offsets] a=bf16 b=mxfp4 out=bf16 nvfp4_global=expert",
       {"nvfp4_global=expert", "nvfp4"}},
      {"nvfp4_global on dense gemm",
       "gemm a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert",
       {"nvfp4_global=expert", "needs grouped_gemm, not gemm", "nvfp4_global=tensor"}},
      {"nvfp4_global on quantize",
       "quantize a=bf16 out=nvfp4 nvfp4_global=expert",
       {"needs grouped_gemm, not quantize"}},
  };
  for (const RuleCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string msg = parse_error(c.text);
    EXPECT_THAT(msg, ::testing::MatchesRegex("^[0-9]+:[0-9]+: .*")) << msg;
    for (const std::string& w : c.want) EXPECT_THAT(msg, HasSubstr(w));
  }
}

TEST(SpecValidateTest, AcceptsTheLegalCornerCases) {
  for (const char* t : {
           "gemm a=bf16 b=bf16 out=e4m3:block1x128",  // quantized output (planning decides support)
           "gemm a=bf16 b=bf16 out=mxfp8", "gemm a=e4m3:m b=e4m3:n out=bf16",
           "quantize a=bf16 out=e4m3:block128x128",                     // offline weight quantization
           "quantize a=bf16 out=e4m3:block1x128:ue8m0 mx_round=floor",  // power-of-two FP8 block scales
           "quantize a=f32 out=e5m2 fp8_sat=nonsat",
           "quantize a=bf16 out=nvfp4 fp8_sat=nonsat",  // nvfp4 block scales are e4m3
           "grouped_gemm[experts=1,layout=offsets] a=nvfp4 b=nvfp4 out=bf16 nvfp4_global=expert",
           "gemm a=bf16 b=nvfp4 out=bf16 e4m3_bound=256 four_over_six=mse",
           // wgrad: both operands blocked along tokens (docs/numerics.md §7)
           "gemm a=e4m3:block1x128 b=e4m3:block1x128:ue8m0 out=bf16 pass=wgrad",
       }) {
    EXPECT_TRUE(parse_spec(t).ok()) << t << "\n" << parse_spec(t).status().to_string();
  }
}

TEST(SpecValidateTest, RejectsRawStructsThatSkipImpliedScales) {
  KernelSpec s = gemm_bf16();
  s.a = OperandSpec{Format::kE4m3};
  EXPECT_THAT(validate_error(s), HasSubstr("e4m3 needs a scale granularity"));
  s.a.scale = ScaleGranularity::kTensor;
  EXPECT_THAT(validate_error(s), HasSubstr("e4m3 needs a scale type"));
  s.a.scale_type = ScaleType::kF32;
  EXPECT_TRUE(validate_spec(s).ok());
  s.b = OperandSpec{Format::kMxfp4};
  EXPECT_THAT(validate_error(s), HasSubstr("mxfp4 has intrinsic block1x32 scaling"));
  s.b = with_implied_scales(s.b);
  EXPECT_TRUE(validate_spec(s).ok());
}

TEST(SpecValidateTest, RejectsBadOpStructureInStructs) {
  KernelSpec s = gemm_bf16();
  s.op = Op::kGroupedGemm;
  s.layout = GroupLayout::kOffsets;
  EXPECT_EQ(validate_error(s), "experts=0 is out of range; grouped_gemm accepts 1..65536 experts");
  s.experts = 65537;
  EXPECT_THAT(validate_error(s), HasSubstr("experts=65537 is out of range"));
  s.experts = 8;
  s.layout = GroupLayout::kDense;
  EXPECT_EQ(validate_error(s),
            "layout=dense is not a grouped layout; grouped_gemm accepts layout=offsets or layout=masked");
  s = gemm_bf16();
  s.experts = 8;
  EXPECT_EQ(validate_error(s),
            "experts=8 is only accepted on grouped_gemm (and quantize[...] transpose=true), not on gemm");
  s.experts = 0;
  s.layout = GroupLayout::kMasked;
  EXPECT_EQ(validate_error(s),
            "layout=masked is only accepted on grouped_gemm (and quantize[...] transpose=true), not on gemm");
  s = parse_ok("quantize a=bf16 out=e4m3");
  s.b = OperandSpec{Format::kE4m3, ScaleGranularity::kTensor, ScaleType::kF32};
  EXPECT_THAT(validate_error(s), HasSubstr("b=e4m3: quantize takes no operand b"));
  s = gemm_bf16();
  s.op = static_cast<Op>(7);
  EXPECT_THAT(validate_error(s), HasSubstr("unknown op"));
}

// ------------------------------------------------------------------------------------------------
// validate_sizes

std::string sizes_error(const char* text, int64_t m, int64_t n, int64_t k) {
  Status st = validate_sizes(parse_ok(text), ProblemSizes{m, n, k});
  EXPECT_FALSE(st.ok()) << text << " m=" << m << " n=" << n << " k=" << k;
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  return st.message();
}

bool sizes_ok(const char* text, int64_t m, int64_t n, int64_t k) {
  Status st = validate_sizes(parse_ok(text), ProblemSizes{m, n, k});
  EXPECT_TRUE(st.ok()) << text << ": " << st.to_string();
  return st.ok();
}

TEST(SpecSizesTest, RejectsKNotMultipleOfBlock) {
  EXPECT_EQ(sizes_error("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 1, 7168, 1000),
            "K=1000 is not a multiple of 128, the K extent of operand a's block1x128 scale blocks");
  EXPECT_EQ(sizes_error("gemm a=bf16 b=e4m3:block128x128 out=bf16", 1, 256, 200),
            "K=200 is not a multiple of 128, the K extent of operand b's block128x128 scale blocks");
  EXPECT_EQ(sizes_error("gemm a=bf16 b=mxfp4 out=bf16", 4, 2880, 48),
            "K=48 is not a multiple of 32, the K extent of operand b's mxfp4 scale blocks (block1x32)");
  EXPECT_EQ(sizes_error("gemm a=mxfp8 b=mxfp8 out=bf16", 4, 64, 80),
            "K=80 is not a multiple of 32, the K extent of operand a's mxfp8 scale blocks (block1x32)");
  EXPECT_EQ(sizes_error("gemm a=bf16 b=nvfp4 out=bf16", 4, 64, 24),
            "K=24 is not a multiple of 16, the K extent of operand b's nvfp4 scale blocks (block1x16)");
}

TEST(SpecSizesTest, AcceptsRealModelShapes) {
  sizes_ok("gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 1, 7168, 7168);  // DeepSeek-V3
  sizes_ok("grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved", 0, 5760,
           2880);  // gpt-oss
  sizes_ok("gemm a=bf16 b=bf16 out=bf16", 0, 1, 1);
  sizes_ok("gemm a=e4m3 b=e4m3 out=bf16", 3, 5, 7);  // tensor scales impose no multiple
  sizes_ok("gemm a=bf16 b=nvfp4 out=bf16", 1, 3, 16);
}

TEST(SpecSizesTest, RejectsOutOfRangeDimensions) {
  EXPECT_EQ(sizes_error("gemm a=bf16 b=bf16 out=bf16", 1, 0, 8), "N=0 is out of range; N must be >= 1");
  EXPECT_EQ(sizes_error("gemm a=bf16 b=bf16 out=bf16", 1, 8, 0), "K=0 is out of range; K must be >= 1");
  EXPECT_EQ(sizes_error("gemm a=bf16 b=bf16 out=bf16", -1, 8, 8),
            "M=-1 is negative; use M >= 1, or 0 for any M");
}

TEST(SpecSizesTest, RejectsOddNWithGateUp) {
  EXPECT_EQ(sizes_error("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved", 1, 7, 64),
            "N=7 is odd; gate_up=interleaved splits N into equal gate and up halves and needs an even N");
  EXPECT_THAT(sizes_error("gemm a=bf16 b=bf16 out=bf16 gate_up=stacked", 1, 9, 64),
              HasSubstr("gate_up=stacked"));
}

TEST(SpecSizesTest, ChecksQuantizedOutputBlocksAlongN) {
  EXPECT_EQ(sizes_error("gemm a=bf16 b=bf16 out=e4m3:block1x128", 1, 100, 64),
            "N=100 is not a multiple of 128, the N extent of out's block1x128 scale blocks");
  EXPECT_THAT(sizes_error("gemm a=bf16 b=bf16 out=nvfp4", 1, 8, 64),
              HasSubstr("N=8 is not a multiple of 16"));
}

TEST(SpecSizesTest, ChecksQuantizeAlongKOrAlongMWhenTransposed) {
  sizes_ok("quantize a=bf16 out=e4m3:block1x128", 5, 0, 256);  // n is unused by quantize
  EXPECT_EQ(sizes_error("quantize a=bf16 out=e4m3:block1x128", 5, 0, 100),
            "K=100 is not a multiple of 128, the K extent of out's block1x128 scale blocks");
  sizes_ok("quantize a=bf16 out=e4m3:block1x128 transpose=true", 0, 0, 100);  // any M
  sizes_ok("quantize a=bf16 out=e4m3:block1x128 transpose=true", 256, 0, 100);
  EXPECT_EQ(
      sizes_error("quantize a=bf16 out=mxfp8 transpose=true", 48, 0, 64),
      "M=48 is not a multiple of 32, the M extent of out's mxfp8 scale blocks (block1x32) (transpose=true "
      "quantizes along M)");
}

TEST(SpecSizesTest, ReportsSpecErrorsFirst) {
  KernelSpec s = gemm_bf16();
  s.transpose = true;
  Status st = validate_sizes(s, ProblemSizes{1, 8, 8});
  EXPECT_THAT(st.message(), HasSubstr("transpose=true applies to quantize only"));
}

}  // namespace
}  // namespace kiln

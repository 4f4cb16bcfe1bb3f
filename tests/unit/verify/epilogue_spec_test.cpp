// unit tier: epilogues attached to specs — the epilogue="..." attribute in text,
// canonical print, JSON and the builder; positioned validation errors; the planner's rules (portable
// family only, even N, N / 2 output columns, gate_up needs an epilogue); the emitted source (the
// generated functor, never the user's text); the runtime's operand checks of the epilogue's vectors.
// No GPU, no NVRTC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/emit/emit.hpp"
#include "compiler/epilogue/epilogue.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"
#include "verify/check_inputs.hpp"
#include "runtime/operands.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kGptOss =
    "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved "
    "epilogue=\"g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
    "out = g * sigmoid(1.702 * g) * (u + 1.0) * scale[m]\"";

KernelSpec parse_ok(std::string_view text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << "\n  " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

std::string parse_error(std::string_view text) {
  auto r = parse_spec(text);
  EXPECT_FALSE(r.ok()) << text << " parsed";
  return r.ok() ? std::string() : r.status().message();
}

std::filesystem::path repo_root() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Arch arch_of(std::string_view name) {
  auto a = parse_arch(name);
  EXPECT_TRUE(a.ok());
  return a.ok() ? *a : Arch{};
}

// ---- the spec attribute ---------------------------------------------------------------------------

TEST(EpilogueSpecTest, ParsesAndPrintsCanonically) {
  const KernelSpec s = parse_ok("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out=silu(acc+bias[n])*scale[m]\"");
  EXPECT_EQ(s.epilogue, "out = silu(acc + bias[n]) * scale[m]");
  EXPECT_EQ(print_spec(s), "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\"");
  EXPECT_EQ(parse_ok(print_spec(s)), s);
  // Specs without an epilogue print as before.
  EXPECT_EQ(print_spec(parse_ok("gemm a=bf16 b=bf16 out=bf16")), "gemm a=bf16 b=bf16 out=bf16");
}

TEST(EpilogueSpecTest, GptOssRoundTripsAndKeyOrderDoesNotMatter) {
  const KernelSpec s = parse_ok(kGptOss);
  EXPECT_EQ(s.gate_up, GateUp::kInterleaved);
  EXPECT_EQ(parse_ok(print_spec(s)), s);
  // The epilogue before gate_up: it is parsed once the whole spec (its GLU context) is known; a
  // comment after the string is a spec comment.
  const KernelSpec t = parse_ok(
      "grouped_gemm[experts=32,layout=offsets] epilogue=\"g = min(gate + gate_bias[e,n], 7.0);\n"
      "  u = clamp(up + up_bias[e,n], -7.0, 7.0);\n"
      "  out = g * sigmoid(1.702 * g) * (u + 1.0) * scale[m]\"  # gpt-oss\n"
      "a=bf16 b=mxfp4 out=bf16 gate_up=interleaved");
  EXPECT_EQ(t, s);
}

TEST(EpilogueSpecTest, StringsSpanLinesAndHashIsTextInside) {
  const KernelSpec s =
      parse_ok("gemm a=bf16 b=bf16 out=bf16 gate_up=stacked epilogue=\"\n  out = silu(gate)\n    * up\n\"");
  EXPECT_EQ(s.epilogue, "out = silu(gate) * up");
  // '#' inside the string belongs to the epilogue text, whose language has no comments.
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = acc # no\""),
              StartsWith("1:49: epilogue: unexpected character '#'"));
}

TEST(EpilogueSpecTest, ErrorsArePositionedInsideTheString) {
  // Line 1: the string's contents start one column after the quote (the quote is at column 38).
  std::string e = parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = sigmod(acc)\"");
  EXPECT_THAT(e, StartsWith("1:45: epilogue: unknown function 'sigmod'"));
  // Later lines of the string: their own columns, the spec's line numbers.
  e = parse_error(
      "gemm a=bf16 b=bf16 out=bf16\n  gate_up=interleaved\n  epilogue=\"g = gate;\nout = g * upp\"");
  EXPECT_THAT(e, StartsWith("4:11: epilogue: unknown name 'upp'"));
  // Context: gate needs gate_up; per-expert vectors need grouped_gemm.
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(gate) * up\""),
              StartsWith("1:50: epilogue: 'gate' needs a spec with gate_up"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = acc + bias[e,n]\""),
              StartsWith("1:55: epilogue: bias[e,n]"));
  // gate_up specs have no acc.
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = acc\""),
              StartsWith("1:65: epilogue: 'acc' is not available with gate_up"));
}

TEST(EpilogueSpecTest, RejectsMalformedAttribute) {
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=out"),
              HasSubstr("1:38: expected a quoted epilogue program after epilogue="));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = acc"),
              HasSubstr("1:38: unterminated string"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=\"\""),
              HasSubstr("1:38: epilogue=\"\" is empty"));
  EXPECT_THAT(parse_error("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = acc\" epilogue=\"out = acc\""),
              HasSubstr("duplicate key 'epilogue'"));
  EXPECT_THAT(parse_error("quantize a=bf16 out=e4m3 epilogue=\"out = acc\""),
              HasSubstr("1:35: epilogue applies to gemm and grouped_gemm, not quantize"));
  // A quote elsewhere is a string where a word was expected.
  EXPECT_THAT(parse_error("gemm a=\"bf16\" b=bf16 out=bf16"),
              HasSubstr("1:8: expected a format for operand 'a'"));
}

TEST(EpilogueSpecTest, HostileTextNeverReachesTheSource) {
  for (const char* text : {
           "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = acc; } __global__ void evil() {\"",
           "gemm a=bf16 b=bf16 out=bf16 epilogue=\"#include <stdio.h>\nout = acc\"",
           "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = __asm__(acc)\"",
           "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = acc\\\"\"",
       }) {
    auto r = parse_spec(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) EXPECT_THAT(r.status().message(), testing::MatchesRegex("^[0-9]+:[0-9]+: .*")) << text;
  }
}

TEST(EpilogueSpecTest, ValidateRejectsNonCanonicalText) {
  KernelSpec s = parse_ok("gemm a=bf16 b=bf16 out=bf16");
  s.epilogue = "out=silu(acc)";
  Status st = validate_spec(s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("not in canonical form; expected \"out = silu(acc)\""));
  s.epilogue = "out = silu(gat)";
  st = validate_spec(s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), StartsWith("epilogue: 1:12: unknown name 'gat'"));
  s.epilogue = "out = silu(acc)";
  EXPECT_TRUE(validate_spec(s).ok());
}

TEST(EpilogueSpecTest, JsonRoundTripAndErrors) {
  const KernelSpec s = parse_ok(kGptOss);
  const nlohmann::json j = spec_to_json(s);
  EXPECT_EQ(j["epilogue"], s.epilogue);
  auto back = spec_from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, s);
  // No epilogue: "" (written) or null / absent (read).
  const nlohmann::json plain = spec_to_json(parse_ok("gemm a=bf16 b=bf16 out=bf16"));
  EXPECT_EQ(plain["epilogue"], "");
  ASSERT_TRUE(spec_from_json(plain).ok());
  nlohmann::json j2 = plain;
  j2["epilogue"] = nullptr;
  ASSERT_TRUE(spec_from_json(j2).ok());
  // Non-canonical text is canonicalized; errors carry the JSON path and the place in the text.
  j2["epilogue"] = "out=relu(acc)";
  auto r = spec_from_json(j2);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->epilogue, "out = relu(acc)");
  j2["epilogue"] = "out = relu(ac)";
  r = spec_from_json(j2);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), StartsWith("$.epilogue: 1:12: unknown name 'ac'"));
  j2["epilogue"] = 3;
  r = spec_from_json(j2);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), StartsWith("$.epilogue: expected a string"));
}

TEST(EpilogueSpecTest, BuilderCanonicalizesAndValidates) {
  auto s = SpecBuilder()
               .grouped(32, GroupLayout::kOffsets)
               .a(Format::kBf16)
               .b(Format::kMxfp4)
               .out(Format::kBf16)
               .gate_up(GateUp::kInterleaved)
               .epilogue(
                   "g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
                   "out = g*sigmoid(1.702*g)*(u+1.0)*scale[m]")
               .build();
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(*s, parse_ok(kGptOss));
  auto bad =
      SpecBuilder().a(Format::kBf16).b(Format::kBf16).out(Format::kBf16).epilogue("out = gate").build();
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), StartsWith("epilogue: 1:7: 'gate' needs a spec with gate_up"));
}

// Every examples/specs file with an epilogue parses, round-trips, and plans on every arch.
TEST(EpilogueSpecTest, ExampleSpecsParse) {
  struct Example {
    const char* file;
    GateUp gate_up;
    const char* epilogue;
  };
  const Example examples[] = {
      {"gpt_oss_swiglu_experts.kiln", GateUp::kInterleaved,
       "g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
       "out = g * sigmoid(1.702 * g) * (u + 1.0) * scale[m]"},
      {"swiglu_gemm.kiln", GateUp::kStacked, "out = silu(gate) * up"},
      {"geglu_gemm.kiln", GateUp::kInterleaved, "out = gelu(gate) * up"},
  };
  for (const Example& ex : examples) {
    const std::string text = read_file(repo_root() / "examples" / "specs" / ex.file);
    ASSERT_FALSE(text.empty()) << ex.file;
    const KernelSpec s = parse_ok(text);
    EXPECT_EQ(s.gate_up, ex.gate_up) << ex.file;
    EXPECT_EQ(s.epilogue, ex.epilogue) << ex.file;
    EXPECT_EQ(parse_ok(print_spec(s)), s) << ex.file;
    for (const char* a : {"sm_90a", "sm_89", "sm_86", "sm_80"}) {
      auto fam = select_family(s, arch_of(a));
      ASSERT_TRUE(fam.ok()) << ex.file << " " << a << ": " << fam.status().to_string();
      // sm_90a: the sm90 family takes interleaved gate|up with 16-bit or FP8 operands (geglu); stacked
      // halves (swiglu) and MXFP4 weights (gpt-oss) run on the portable family.
      EXPECT_EQ(sm90_supports(s, arch_of(a)), std::string(a) == "sm_90a" && ex.file == std::string("geglu_gemm.kiln"))
          << ex.file << " " << a;
      const bool sm90 = sm90_supports(s, arch_of(a));
      EXPECT_EQ(*fam, sm90 ? KernelFamily::kSm90Gemm : KernelFamily::kSm80Gemm) << ex.file << " " << a;
      EXPECT_TRUE(can_implement(s, arch_of(a), {64, 5760, 2880}).ok()) << ex.file << " " << a;
    }
  }
}

// docs/epilogue.md "In a spec" and the documented error of docs/dsl.md stay true.
TEST(EpilogueSpecTest, DocumentedSpecsParse) {
  std::istringstream in(read_file(repo_root() / "docs" / "epilogue.md"));
  bool in_section = false, in_block = false;
  int parsed = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## In a spec";
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      continue;
    }
    if (in_block && !line.empty()) {
      const KernelSpec s = parse_ok(line);
      EXPECT_EQ(print_spec(s), line);  // written in canonical form
      ++parsed;
    }
  }
  EXPECT_GE(parsed, 4);
  EXPECT_EQ(
      parse_error("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * upp\""),
      "1:78: epilogue: unknown name 'upp'; did you mean 'up'?");
}

// ---- planning ----------------------------------------------------------------------------------

TEST(EpiloguePlanTest, Sm90aRunsEpiloguesAndInterleavedGluOnTheSm90Family) {
  const Arch h = arch_of("sm_90a");
  EXPECT_EQ(*select_family(parse_ok("gemm a=bf16 b=bf16 out=bf16"), h), KernelFamily::kSm90Gemm);
  EXPECT_EQ(*select_family(parse_ok("gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = relu(acc)\""), h),
            KernelFamily::kSm90Gemm);
  EXPECT_EQ(*select_family(parse_ok("gemm a=e4m3 b=e4m3 out=bf16 epilogue=\"out = acc + bias[n]\""), h),
            KernelFamily::kSm90Gemm);
  EXPECT_EQ(*select_family(parse_ok("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved "
                                    "epilogue=\"out = silu(gate) * up\""),
                           h),
            KernelFamily::kSm90Gemm);
  // Stacked halves would need a permuted TMA box: the portable family runs them, and the sm90 family
  // refuses them when asked for by name.
  const KernelSpec stacked =
      parse_ok("gemm a=bf16 b=bf16 out=bf16 gate_up=stacked epilogue=\"out = silu(gate) * up\"");
  EXPECT_EQ(*select_family(stacked, h), KernelFamily::kSm80Gemm);
  EXPECT_EQ(check_config(stacked, h, KernelFamily::kSm90Gemm, TileConfig{}).code(), StatusCode::kUnsupported);
  // The sm90 kernel source carries the functor and the gate|up layout.
  const KernelSpec glu = parse_ok("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\"");
  auto em = emit_kernel(glu, KernelFamily::kSm90Gemm, default_config(glu, h, KernelFamily::kSm90Gemm, {64, 512, 256}), h);
  ASSERT_TRUE(em.ok()) << em.status().to_string();
  EXPECT_THAT(em->source, HasSubstr("struct KilnEpilogue"));
  EXPECT_THAT(em->source, HasSubstr("kiln_dev::GateUp::kInterleaved"));
  EXPECT_THAT(em->source, HasSubstr("using Epilogue = KilnEpilogue;"));
}

TEST(EpiloguePlanTest, GateUpNeedsAnEpilogueAndAnEvenN) {
  const Arch a = arch_of("sm_86");
  auto fam = select_family(parse_ok("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved"), a);
  ASSERT_FALSE(fam.ok());
  EXPECT_EQ(fam.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(fam.status().message(), HasSubstr("must be combined into one output column by an epilogue"));
  const KernelSpec glu =
      parse_ok("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\"");
  EXPECT_TRUE(can_implement(glu, a, {16, 256, 64}).ok());
  Status st = can_implement(glu, a, {16, 255, 64});
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("N=255 is odd"));
  // The output has N / 2 columns.
  EXPECT_EQ(output_columns(glu, 256), 128);
  EXPECT_EQ(output_columns(parse_ok("gemm a=bf16 b=bf16 out=bf16"), 256), 256);
}

TEST(EpiloguePlanTest, StackedRejectsBlockScaledWeights) {
  const KernelSpec s = parse_ok(
      "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 gate_up=stacked epilogue=\"out = silu(gate) * "
      "up\"");
  auto fam = select_family(s, arch_of("sm_89"));
  ASSERT_FALSE(fam.ok());
  EXPECT_THAT(fam.status().message(), HasSubstr("gate_up=stacked with b=e4m3:block128x128"));
  // Interleaved is fine: W's rows are read in order.
  const KernelSpec t = parse_ok(
      "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * "
      "up\"");
  EXPECT_TRUE(select_family(t, arch_of("sm_89")).ok());
}

TEST(EpiloguePlanTest, ReferenceComputesThePlainGemm) {
  const KernelSpec s = parse_ok("gemm a=bf16 b=bf16 out=f32 epilogue=\"out = relu(acc)\"");
  Status st = check_reference_spec(s, arch_of("sm_90a"));
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("plain GEMM"));
}

// ---- emitted source ----------------------------------------------------------------------------

TEST(EpilogueEmitTest, SourceHoldsTheGeneratedFunctorNotTheText) {
  const char* text =
      "gemm a=bf16 b=mxfp4 out=bf16 gate_up=stacked "
      "epilogue=\"gpt_gate_value = min(gate, 7.0); out = gpt_gate_value * sigmoid(1.702 * gpt_gate_value) * "
      "up\"";
  const KernelSpec s = parse_ok(text);
  const Arch a = arch_of("sm_89");
  auto fam = select_family(s, a);
  ASSERT_TRUE(fam.ok());
  const TileConfig cfg = default_config(s, a, {64, 256, 256});
  auto em = emit_kernel(s, *fam, cfg, a);
  ASSERT_TRUE(em.ok()) << em.status().to_string();
  EXPECT_THAT(em->source, HasSubstr("#include \"kernels/sm80_mixed_gemm.cuh\""));
  EXPECT_THAT(em->source, HasSubstr("struct KilnEpilogue {"));
  EXPECT_THAT(em->source, HasSubstr("kiln_dev::ep_sigmoid("));
  EXPECT_THAT(em->source, HasSubstr("1.70200002f"));
  EXPECT_THAT(em->source,
              HasSubstr("static constexpr kiln_dev::GateUp kGateUp = kiln_dev::GateUp::kStacked;"));
  EXPECT_THAT(em->source, HasSubstr("using Epilogue = KilnEpilogue;"));
  EXPECT_THAT(em->source, Not(HasSubstr("gpt_gate_value")));  // let-bound names are never emitted
  EXPECT_THAT(em->source, Not(HasSubstr("1.702 ")));          // nor the user's digits
  // The functor comes before the config that names it.
  EXPECT_LT(em->source.find("struct KilnEpilogue"), em->source.find("struct KilnConfig"));
  // Without an epilogue, nothing of it is emitted.
  auto plain = emit_kernel(parse_ok("gemm a=bf16 b=mxfp4 out=bf16"), *fam, cfg, a);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->source, Not(HasSubstr("KilnEpilogue")));
  EXPECT_THAT(plain->source, Not(HasSubstr("kGateUp")));
}

TEST(EpilogueEmitTest, SameProgramUnderOtherNamesEmitsTheSameSource) {
  const Arch a = arch_of("sm_80");
  const KernelSpec s1 = parse_ok("gemm a=bf16 b=bf16 out=bf16 epilogue=\"x = acc + bias[n]; out = silu(x)\"");
  const KernelSpec s2 =
      parse_ok("gemm a=bf16 b=bf16 out=bf16 epilogue=\"yy = acc + bias[n]; out = silu(yy)\"");
  const TileConfig cfg = default_config(s1, a, {128, 256, 256});
  auto e1 = emit_kernel(s1, KernelFamily::kSm80Gemm, cfg, a);
  auto e2 = emit_kernel(s2, KernelFamily::kSm80Gemm, cfg, a);
  ASSERT_TRUE(e1.ok() && e2.ok());
  EXPECT_EQ(e1->source, e2->source);
}

// ---- operands ------------------------------------------------------------------------------------

constexpr DLDataType kBf16{kDLBfloat, 16, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kF16{kDLFloat, 16, 1};
constexpr DLDataType kU8{kDLUInt, 8, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

// A DLTensor on fake device memory (the checks read only the metadata).
struct T {
  std::vector<int64_t> shape, strides;
  DLTensor t{};
  T(std::vector<int64_t> s, DLDataType dt, uintptr_t addr, std::vector<int64_t> st = {})
      : shape(std::move(s)), strides(std::move(st)) {
    t.data = reinterpret_cast<void*>(addr);
    t.device = {kDLCUDA, 0};
    t.ndim = static_cast<int>(shape.size());
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.dtype = dt;
  }
};

TEST(EpilogueOperandsTest, GluOutputHasHalfTheColumns) {
  const KernelSpec s =
      parse_ok("gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\"");
  T a({5, 64}, kBf16, 0x100000), b({256, 64}, kBf16, 0x200000);
  T out({5, 128}, kBf16, 0x300000), full({5, 256}, kBf16, 0x300000);
  Operands ops{&a.t, &b.t, &out.t};
  auto c = check_operands(s, {0, 256, 64}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const kiln_dev::GemmParams gp = gemm_params(*c, {0, 256, 64});
  EXPECT_EQ(gp.n, 256);  // the GEMM's N: rows of W
  EXPECT_EQ(gp.ldc, 128);
  ops.out = &full.t;
  c = check_operands(s, {0, 256, 64}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("operand out: shape[1] = 256 but the plan has N/2 (gate_up) = 128"));
}

TEST(EpilogueOperandsTest, GptOssVectorsIncludingStridedBiasViews) {
  const KernelSpec s = parse_ok(kGptOss);
  const int64_t m = 40, n = 256, k = 64, e = 32;
  T a({m, k}, kBf16, 0x100000), b({e, n, k / 2}, kU8, 0x200000), sc({e, n, k / 32}, kU8, 0x400000);
  T out({m, n / 2}, kBf16, 0x300000), offs({e}, kI32, 0x500000);
  // gpt-oss's interleaved [E, 2I] bias as two stride-2 views: no copy.
  T gate_bias({e, n / 2}, kBf16, 0x600000, {n, 2}), up_bias({e, n / 2}, kBf16, 0x600002, {n, 2});
  T route({m}, kF32, 0x700000);
  Operands ops{&a.t, &b.t, &out.t, nullptr, &sc.t, &offs.t};
  ops.gate_bias = &gate_bias.t;
  ops.up_bias = &up_bias.t;
  ops.scale = &route.t;
  auto c = check_operands(s, {0, n, k}, ops);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  // Slots in first-use order: gate_bias, up_bias, scale.
  const kiln_dev::GemmParams gp = gemm_params(*c, {0, n, k});
  EXPECT_EQ(gp.ep[0].data, reinterpret_cast<const void*>(0x600000));
  EXPECT_EQ(gp.ep[0].stride0, n);
  EXPECT_EQ(gp.ep[0].stride1, 2);
  EXPECT_EQ(gp.ep[0].dtype, kiln_dev::kEpBf16);
  EXPECT_EQ(gp.ep[1].data, reinterpret_cast<const void*>(0x600002));
  EXPECT_EQ(gp.ep[2].dtype, kiln_dev::kEpF32);
  EXPECT_EQ(gp.ep[2].stride0, 1);
  EXPECT_EQ(gp.ep[3].data, nullptr);

  // Missing, wrong shape, wrong dtype, not read: each names the operand.
  Operands bad = ops;
  bad.scale = nullptr;
  c = check_operands(s, {0, n, k}, bad);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("operand scale: missing; the spec's epilogue reads scale[m]: a [40]"));
  T wide({e, n}, kBf16, 0x600000);
  bad = ops;
  bad.gate_bias = &wide.t;
  c = check_operands(s, {0, n, k}, bad);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(
      c.status().message(),
      HasSubstr("operand gate_bias: shape [32, 256] but the spec's epilogue reads gate_bias[e,n], which "
                "needs [32, 128]"));
  T ints({m}, kI32, 0x700000);
  bad = ops;
  bad.scale = &ints.t;
  c = check_operands(s, {0, n, k}, bad);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("operand scale: dtype int32; the epilogue's scale[m] takes float32"));
  T bias({n / 2}, kF16, 0x800000);
  bad = ops;
  bad.bias = &bias.t;
  c = check_operands(s, {0, n, k}, bad);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr("operand bias: given, but the spec's epilogue does not read bias"));
  T odd({m}, kF32, 0x700002);
  bad = ops;
  bad.scale = &odd.t;
  c = check_operands(s, {0, n, k}, bad);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand scale: data address 0x700002 is not 4-byte aligned"));
}

TEST(EpilogueOperandsTest, MaskedRowVectorsFlatten) {
  const KernelSpec s = parse_ok(
      "grouped_gemm[experts=4,layout=masked] a=bf16 b=bf16 out=bf16 epilogue=\"out = acc * scale[m] + "
      "residual[m,n]\"");
  const int64_t e = 4, max_m = 8, n = 64, k = 64;
  T a({e, max_m, k}, kBf16, 0x100000), b({e, n, k}, kBf16, 0x200000), out({e, max_m, n}, kBf16, 0x300000);
  T counts({e}, kI32, 0x500000);
  T route2({e, max_m}, kF32, 0x600000), route1({e * max_m}, kF32, 0x600000);
  T res3({e, max_m, n}, kBf16, 0x700000), res2({e * max_m, n}, kBf16, 0x700000);
  Operands ops{&a.t, &b.t, &out.t};
  ops.counts = &counts.t;
  for (const DLTensor* r : {&route2.t, &route1.t}) {
    for (const DLTensor* res : {&res3.t, &res2.t}) {
      ops.scale = r;
      ops.residual = res;
      auto c = check_operands(s, {0, n, k}, ops);
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      EXPECT_EQ(c->ep[0].stride0, 1);
      EXPECT_EQ(c->ep[1].stride0, n);
      EXPECT_EQ(c->ep[1].stride1, 1);
    }
  }
  // [E, max_m] whose experts are not one stride apart cannot be read as one row index.
  T gapped({e, max_m}, kF32, 0x600000, {16, 1});
  ops.scale = &gapped.t;
  auto c = check_operands(s, {0, n, k}, ops);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("operand scale: strides (16, 1) of the [E, max_m] dimensions"));
}

// The gpu tier's inputs (verify/check_inputs.cpp) have the shapes the operand checks want, for every
// index form and layout: the harness is checked here, without a device.
TEST(EpilogueOperandsTest, RandomOperandsPassTheChecks) {
  struct Case {
    const char* spec;
    int64_t m, n, k;
  };
  const Case cases[] = {
      {kGptOss, 300, 512, 256},
      {"grouped_gemm[experts=6,layout=masked] a=bf16 b=bf16 out=f32 "
       "epilogue=\"out = relu2(acc + bias[e,n]) * scale[m] + residual[m,n] * expert_scale[e] * "
       "colscale[e,n]\"",
       33, 70, 64},
      {"gemm a=bf16 b=bf16 out=bf16 gate_up=stacked epilogue=\"out = silu(gate + gate_bias[n]) * up * "
       "scale[m]\"",
       77, 258, 64},
      {"gemm a=f16 b=f16 out=f16 epilogue=\"out = acc * colscale[n] + bias[n] + residual[m,n]\"", 1, 129, 64},
  };
  for (const Case& c : cases) {
    const KernelSpec s = parse_ok(c.spec);
    uint64_t seed = 5;
    auto h = random_operands(s, c.m, c.n, c.k, {}, seed);
    ASSERT_TRUE(h.ok()) << c.spec << ": " << h.status().to_string();
    // Fake device addresses, 256 bytes apart per MiB of data: only metadata is read.
    std::vector<std::unique_ptr<T>> keep;
    uintptr_t next = 0x10000000;
    auto view = [&](const HostTensor& t) -> const DLTensor* {
      if (!t.present()) return nullptr;
      keep.push_back(std::make_unique<T>(t.shape, t.dtype, next));
      next += (t.bytes.size() + 0xFFFF) & ~uintptr_t(0xFFFF);
      return &keep.back()->t;
    };
    Operands ops;
    ops.a = view(h->a);
    ops.b = view(h->b);
    ops.out = const_cast<DLTensor*>(view(h->out));
    ops.a_scale = view(h->a_scale);
    ops.b_scale = view(h->b_scale);
    ops.b_global = view(h->b_global);
    (s.layout == GroupLayout::kMasked ? ops.counts : ops.offsets) = view(h->group_rows);
    ASSERT_EQ(h->ep.size(), h->ep_operands.size());
    for (size_t i = 0; i < h->ep.size(); ++i) {
      const DLTensor* t = view(h->ep[i]);
      switch (h->ep_operands[i].vector) {
        case EpVector::kBias: ops.bias = t; break;
        case EpVector::kScale: ops.scale = t; break;
        case EpVector::kColScale: ops.colscale = t; break;
        case EpVector::kExpertScale: ops.expert_scale = t; break;
        case EpVector::kResidual: ops.residual = t; break;
        case EpVector::kGateBias: ops.gate_bias = t; break;
        case EpVector::kUpBias: ops.up_bias = t; break;
      }
    }
    auto checked = check_operands(s, {0, c.n, c.k}, ops);
    ASSERT_TRUE(checked.ok()) << c.spec << ": " << checked.status().to_string();
    // host_epilogue_value reads what the kernel reads: element (row, col, expert) at the same index.
    const int64_t n_out = output_columns(s, c.n);
    for (size_t sl = 0; sl < h->ep.size(); ++sl) {
      const float v = host_epilogue_value(*h, sl, h->rows - 1, n_out - 1,
                                          (s.op == Op::kGroupedGemm ? s.experts : 1) - 1, n_out);
      EXPECT_TRUE(std::isfinite(v)) << c.spec << " slot " << sl;
    }
  }
}

}  // namespace
}  // namespace kiln

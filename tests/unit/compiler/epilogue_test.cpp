// Unit tests of compiler/epilogue: parsing and type checks, canonical printing and round trips,
// positioned errors for hostile text, lowering with common subexpressions computed once, the
// emitted functor (kiln's vocabulary only), and host evaluation. No CUDA.
#include "compiler/epilogue/epilogue.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/spec/spec.hpp"
#include "tests/fuzz/epilogue_invariants.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kGptOss =
    "g = min(gate, 7.0); u = clamp(up, -7.0, 7.0); out = g * sigmoid(1.702 * g) * (u + 1.0)";

EpilogueContext dense() { return {}; }
EpilogueContext glu() { return {.glu = true, .grouped = false}; }
EpilogueContext grouped() { return {.glu = false, .grouped = true}; }
EpilogueContext grouped_glu() { return {.glu = true, .grouped = true}; }

Epilogue parse_ok(std::string_view text, const EpilogueContext& ctx = {}) {
  StatusOr<Epilogue> r = parse_epilogue(text, ctx);
  EXPECT_TRUE(r.ok()) << "text: " << text << "\nerror: " << r.status().to_string();
  return r.ok() ? *r : Epilogue{};
}

std::string parse_error(std::string_view text, const EpilogueContext& ctx = {}) {
  StatusOr<Epilogue> r = parse_epilogue(text, ctx);
  EXPECT_FALSE(r.ok()) << "unexpectedly parsed: " << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  const std::string pos = fuzz::check_error_message(text, r.status());
  EXPECT_TRUE(pos.empty()) << pos;
  return r.status().message();
}

std::string canonical(std::string_view text, const EpilogueContext& ctx = {}) {
  return print_epilogue(parse_ok(text, ctx));
}

EpilogueCode emit_ok(std::string_view text, const EpilogueContext& ctx = {}) {
  StatusOr<EpilogueCode> code = emit_epilogue(parse_ok(text, ctx));
  EXPECT_TRUE(code.ok()) << code.status().to_string();
  return code.ok() ? *code : EpilogueCode{};
}

EpilogueProgram lower_ok(std::string_view text, const EpilogueContext& ctx = {}) {
  StatusOr<EpilogueProgram> p = lower_epilogue(parse_ok(text, ctx));
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? *p : EpilogueProgram{};
}

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// ---- parsing and canonical printing ----

TEST(EpilogueParseTest, ParsesTheDesignExamples) {
  const Epilogue swiglu = parse_ok(kGptOss, glu());
  ASSERT_EQ(swiglu.statements.size(), 3u);
  EXPECT_EQ(swiglu.statements[0].name, "g");
  EXPECT_EQ(swiglu.statements[1].name, "u");
  EXPECT_EQ(swiglu.statements[2].name, "out");
  EXPECT_EQ(print_epilogue(swiglu), kGptOss);

  const Epilogue bias = parse_ok("out = silu(acc + bias[n]) * scale[m]");
  EXPECT_EQ(print_epilogue(bias), "out = silu(acc + bias[n]) * scale[m]");
  const EpNode& root = bias.nodes[static_cast<size_t>(bias.statements.back().root)];
  EXPECT_EQ(root.op, EpOp::kMul);
  EXPECT_EQ(root.pos.line, 1);
  EXPECT_EQ(root.pos.col, 27);  // the '*'
}

TEST(EpilogueParseTest, CanonicalFormDropsRedundantParenthesesAndKeepsNeededOnes) {
  EXPECT_EQ(canonical("out=acc+acc*acc"), "out = acc + acc * acc");
  EXPECT_EQ(canonical("out = ((acc + acc)) + acc"), "out = acc + acc + acc");
  EXPECT_EQ(canonical("out = acc + (acc + acc)"), "out = acc + (acc + acc)");  // f32 + is not associative
  EXPECT_EQ(canonical("out = acc - (acc - acc)"), "out = acc - (acc - acc)");
  EXPECT_EQ(canonical("out = (acc * acc) / acc"), "out = acc * acc / acc");
  EXPECT_EQ(canonical("out = acc / (acc * acc)"), "out = acc / (acc * acc)");
  EXPECT_EQ(canonical("out = (acc + 1) * acc"), "out = (acc + 1.0) * acc");
  EXPECT_EQ(canonical("out = -(acc * 2)"), "out = -(acc * 2.0)");
  EXPECT_EQ(canonical("out = (-acc) * 2"), "out = -acc * 2.0");
  EXPECT_EQ(canonical("out = - (- acc)"), "out = - -acc");
  EXPECT_EQ(canonical("out = acc - -1"), "out = acc - -1.0");
  EXPECT_EQ(canonical("out = -silu(acc)"), "out = -silu(acc)");
  EXPECT_EQ(canonical("out=clamp( acc ,-1,2 );"), "out = clamp(acc, -1.0, 2.0)");
  EXPECT_EQ(canonical("x = acc;\n\n  out = x\t* x;"), "x = acc; out = x * x");
}

TEST(EpilogueParseTest, LiteralsPrintInTheirShortestRoundTripForm) {
  EXPECT_EQ(canonical("out = acc * 7"), "out = acc * 7.0");
  EXPECT_EQ(canonical("out = acc * .5"), "out = acc * 0.5");
  EXPECT_EQ(canonical("out = acc * 1."), "out = acc * 1.0");
  EXPECT_EQ(canonical("out = acc * 1.702"), "out = acc * 1.702");
  EXPECT_EQ(canonical("out = acc * 2.5E-3"), "out = acc * 0.0025");
  EXPECT_EQ(canonical("out = acc * 1e9"), "out = acc * 1e+09");
  EXPECT_EQ(canonical("out = acc * 0007.50"), "out = acc * 7.5");
  EXPECT_EQ(canonical("out = acc * 3.4028235e38"), "out = acc * 3.4028235e+38");
  EXPECT_EQ(canonical("out = acc * 1e-45"), "out = acc * 1e-45");
  // 0.1 is not an f32; the text names the f32 nearest to it, which prints back as 0.1.
  const Epilogue e = parse_ok("out = acc * 0.1");
  EXPECT_EQ(e.nodes[1].value, 0.1f);
}

TEST(EpilogueParseTest, RoundTripsInEveryContext) {
  const struct {
    const char* text;
    EpilogueContext ctx;
  } cases[] = {
      {kGptOss, glu()},
      {kGptOss, grouped_glu()},
      {"out = silu(gate) * up", glu()},
      {"out = gelu(gate) * up", glu()},
      {"out = gelu_tanh(gate) * (up + bias[n])", glu()},
      {"g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); out = g * "
       "sigmoid(1.702 * g) * (u + 1.0)",
       grouped_glu()},
      {"out = silu(acc + bias[n]) * scale[m]", dense()},
      {"out = acc * colscale[n] + residual[m,n]", dense()},
      {"out = relu2(acc + bias[e,n]) * expert_scale[e]", grouped()},
      {"out = acc * colscale[e,n] * scale[m]", grouped()},
      {"a = exp(acc) + log(abs(acc) + 1.0); b = tanh(a) / sqrt(abs(a)) * rsqrt(1.0 + a * a); out = relu(b - "
       "a)",
       dense()},
      {"out = ((acc)) - - -(1.0 - acc) / -2.0e-3", dense()},
  };
  for (const auto& c : cases) {
    const Epilogue e = parse_ok(c.text, c.ctx);
    const std::string printed = print_epilogue(e);
    const Epilogue again = parse_ok(printed, c.ctx);
    EXPECT_TRUE(again == e) << c.text << " -> " << printed;
    EXPECT_EQ(print_epilogue(again), printed);
    EXPECT_EQ(fuzz::check_epilogue_text(c.text, c.ctx), "");
  }
}

TEST(EpilogueParseTest, EqualityIgnoresPositionsButNotValues) {
  EXPECT_TRUE(parse_ok("out = acc+1") == parse_ok("out  =  (acc) + 1.0"));
  EXPECT_FALSE(parse_ok("out = acc + 1") == parse_ok("out = acc + 2"));
  EXPECT_FALSE(parse_ok("out = acc + 0") == parse_ok("out = acc + 0.0000001"));
  EXPECT_FALSE(parse_ok("out = acc + bias[n]") == parse_ok("out = acc + colscale[n]"));
  EXPECT_FALSE(parse_ok("out = acc + bias[n]", dense()) == parse_ok("out = acc + bias[n]", grouped()));
  EXPECT_FALSE(parse_ok("x = acc; out = x") == parse_ok("y = acc; out = y"));
}

TEST(EpilogueParseTest, ContextComesFromTheSpec) {
  StatusOr<KernelSpec> moe =
      parse_spec("grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved");
  ASSERT_TRUE(moe.ok()) << moe.status().to_string();
  EXPECT_TRUE(EpilogueContext::of(*moe) == grouped_glu());
  StatusOr<KernelSpec> gemm = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  ASSERT_TRUE(gemm.ok());
  EXPECT_TRUE(EpilogueContext::of(*gemm) == dense());
}

TEST(EpilogueParseTest, AcceptsTheLimitsExactly) {
  std::string nested =
      "out = " + std::string(kEpilogueMaxDepth, '(') + "acc" + std::string(kEpilogueMaxDepth, ')');
  parse_ok(nested);
  std::string minus = "out = " + std::string(kEpilogueMaxDepth, '-') + "acc";
  EXPECT_EQ(fuzz::check_epilogue_text(minus, dense()), "");
  // "1+1+...+1" with n ones is 2n - 1 nodes: 2048 ones are 4095, the most that fits.
  std::string sum = "out = 1";
  for (int i = 1; i < (kEpilogueMaxNodes + 1) / 2; ++i) sum += "+1";
  const Epilogue e = parse_ok(sum);
  EXPECT_EQ(e.nodes.size(), static_cast<size_t>(kEpilogueMaxNodes - 1));
  // A left-deep chain of ~4k nodes prints, compares and lowers without recursion.
  EXPECT_EQ(fuzz::check_epilogue_text(sum, dense()), "");
  std::string name(kEpilogueMaxNameLength, 'a');
  parse_ok(name + " = acc; out = " + name);
}

// ---- positioned errors ----

TEST(EpilogueErrorTest, SyntaxErrorsNameLineColumnAndWhatWasExpected) {
  EXPECT_THAT(parse_error(""),
              StartsWith("1:1: empty epilogue; expected statements ending with 'out = <expression>'"));
  EXPECT_THAT(parse_error("  \n "), StartsWith("2:2: empty epilogue"));
  EXPECT_THAT(parse_error("out acc"), StartsWith("1:5: expected '=' after 'out', got name 'acc'"));
  EXPECT_THAT(parse_error("out = acc +"),
              StartsWith("1:12: expected an expression (a number, a name, a call or '('), got end of input"));
  EXPECT_THAT(parse_error("out = (acc"),
              StartsWith("1:11: expected ')' to close the '(' at 1:7, got end of input"));
  EXPECT_THAT(parse_error("out = acc)"),
              StartsWith("1:10: expected an operator, ';' or the end of the epilogue, got ')'"));
  EXPECT_THAT(parse_error("out = acc acc"),
              StartsWith("1:11: expected an operator, ';' or the end of the epilogue, got name 'acc'"));
  EXPECT_THAT(parse_error("out = +acc"), StartsWith("1:7: expected an expression"));
  EXPECT_THAT(parse_error("out = acc;;"),
              StartsWith("1:11: nothing may follow the statement that assigns 'out'"));
  EXPECT_THAT(parse_error("x = acc"), StartsWith("1:8: expected a final statement 'out = <expression>'"));
  EXPECT_THAT(parse_error("x = acc;\n"), StartsWith("2:1: expected a final statement 'out = <expression>'"));
  EXPECT_THAT(parse_error("out = acc; y = 1"),
              StartsWith("1:12: nothing may follow the statement that assigns 'out'"));
  EXPECT_THAT(parse_error("= acc"), StartsWith("1:1: expected a statement 'name = expression', got '='"));
  EXPECT_THAT(parse_error("out = bias[n"), StartsWith("1:13: expected ',' or ']', got end of input"));
  EXPECT_THAT(parse_error("out = bias[k]"), StartsWith("1:12: expected an index m, n or e, got name 'k'"));
  EXPECT_THAT(parse_error("out = residual[m,n,e]"), StartsWith("1:19: expected ']', got ','"));
  EXPECT_THAT(parse_error("out = 0x10"), StartsWith("1:7: malformed number '0x10'"));
  EXPECT_THAT(parse_error("out = 1.2.3"), StartsWith("1:7: malformed number '1.2.3'"));
  EXPECT_THAT(parse_error("out = 2f"), StartsWith("1:7: malformed number '2f'"));
  EXPECT_THAT(parse_error("out = 1e"), StartsWith("1:7: malformed number '1e'"));
  EXPECT_THAT(parse_error("out = 1e+"), StartsWith("1:7: malformed number '1e+'"));
}

TEST(EpilogueErrorTest, NameErrorsSuggestCloseAlternatives) {
  EXPECT_THAT(parse_error("out = gat", glu()), StartsWith("1:7: unknown name 'gat'; did you mean 'gate'?"));
  EXPECT_THAT(parse_error("out = sigmod(acc)"),
              StartsWith("1:7: unknown function 'sigmod'; did you mean 'sigmoid'?"));
  EXPECT_THAT(parse_error("out = gelu_tnah(acc)"),
              StartsWith("1:7: unknown function 'gelu_tnah'; did you mean 'gelu_tanh'?"));
  EXPECT_THAT(parse_error("out = acc + bais[n]"),
              StartsWith("1:13: unknown vector 'bais'; did you mean 'bias'?"));
  EXPECT_THAT(parse_error("gg = acc; out = g"), StartsWith("1:17: unknown name 'g'; did you mean 'gg'?"));
  const std::string far = parse_error("out = zzzzzz");
  EXPECT_THAT(
      far,
      StartsWith("1:7: unknown name 'zzzzzz'; expected acc, a vector (bias[n], scale[m], colscale[n], "
                 "residual[m,n]), a number, a function call, or a name assigned by an earlier statement"));
  EXPECT_THAT(
      parse_error("out = zzzzzz", grouped_glu()),
      HasSubstr(
          "expected gate, up, a vector (bias[n] or bias[e,n], scale[m], colscale[n] or colscale[e,n], "
          "expert_scale[e], residual[m,n], gate_bias[n] or gate_bias[e,n], up_bias[n] or up_bias[e,n])"));
  EXPECT_THAT(parse_error("out = frobnicate(acc)"), HasSubstr("expected one of min, max, clamp, exp, log"));
  EXPECT_THAT(parse_error("out = silu"), StartsWith("1:7: 'silu' is a function; expected a call silu(x)"));
  EXPECT_THAT(parse_error("out = bias"), StartsWith("1:7: 'bias' is a vector; expected an index: bias[n]"));
  EXPECT_THAT(parse_error("out = acc[n]"), StartsWith("1:10: 'acc' is a scalar; expected no index after it"));
  EXPECT_THAT(parse_error("out = n"),
              StartsWith("1:7: 'n' is an index; it is only valid inside a vector's brackets"));
  EXPECT_THAT(parse_error("x = out; out = x"),
              StartsWith("1:5: 'out' is the result of the epilogue and cannot be read"));
  EXPECT_THAT(parse_error("out = y; y = acc"), StartsWith("1:7: unknown name 'y'"));  // defined before use
  EXPECT_THAT(parse_error("x = x + 1; out = x"), StartsWith("1:5: 'x' is used in its own definition"));
  EXPECT_THAT(parse_error("x = acc; x = acc; out = x"),
              StartsWith("1:10: 'x' is already assigned at 1:1; expected a new name"));
  EXPECT_THAT(parse_error("acc = 1; out = acc"), StartsWith("1:1: 'acc' is a built-in name"));
  EXPECT_THAT(parse_error("silu = 1; out = silu"), StartsWith("1:1: 'silu' is a built-in name"));
  EXPECT_THAT(parse_error("e = 1; out = acc * e"), StartsWith("1:1: 'e' is a built-in name"));
  EXPECT_THAT(parse_error("x = acc; out = acc"), StartsWith("1:1: 'x' is assigned but never used"));
  EXPECT_THAT(parse_error("x = acc;\ny = x;\nout = acc"), StartsWith("2:1: 'y' is assigned but never used"));
}

TEST(EpilogueErrorTest, TypeErrorsNameTheExpectedForm) {
  EXPECT_THAT(parse_error("out = acc + bias[m]"),
              StartsWith("1:17: wrong index [m] for bias; expected bias[n]"));
  EXPECT_THAT(parse_error("out = acc + bias[m]", grouped()),
              StartsWith("1:17: wrong index [m] for bias; expected bias[n] or bias[e,n]"));
  EXPECT_THAT(parse_error("out = acc * scale[n]"),
              StartsWith("1:18: wrong index [n] for scale; expected scale[m]"));
  EXPECT_THAT(parse_error("out = acc + residual[n,m]"),
              StartsWith("1:21: wrong index [n,m] for residual; expected residual[m,n]"));
  EXPECT_THAT(parse_error("out = acc + residual[m]"),
              StartsWith("1:21: wrong index [m] for residual; expected residual[m,n]"));
  EXPECT_THAT(
      parse_error("out = acc + bias[e,n]"),
      StartsWith(
          "1:17: bias[e,n] (per expert and output column) needs a grouped_gemm spec; expected bias[n]"));
  EXPECT_THAT(parse_error("out = acc * expert_scale[e]"),
              StartsWith("1:25: expert_scale[e] (per expert) needs a grouped_gemm spec"));
  EXPECT_THAT(
      parse_error("out = bias[n] + bias[e,n]", grouped()),
      StartsWith("1:21: bias is read as bias[n] at 1:7; expected the same index form here, got bias[e,n]"));
  EXPECT_THAT(
      parse_error("out = acc + gate_bias[n]"),
      StartsWith(
          "1:22: gate_bias[n] (per output column) needs a spec with gate_up=interleaved or gate_up=stacked"));
  EXPECT_THAT(parse_error("out = acc + up_bias"),
              StartsWith("1:13: 'up_bias' is a vector (up_bias[n] or up_bias[e,n]) that needs "
                         "a spec with gate_up=interleaved or gate_up=stacked"));
  EXPECT_THAT(
      parse_error("out = acc * expert_scale"),
      StartsWith("1:13: 'expert_scale' is a vector (expert_scale[e]) that needs a grouped_gemm spec"));
  EXPECT_THAT(parse_error("out = gate + gate_bias[m]", glu()),
              StartsWith("1:23: wrong index [m] for gate_bias; expected gate_bias[n]"));
  EXPECT_THAT(parse_error("out = gate + gate_bias[e,n]", glu()),
              StartsWith("1:23: gate_bias[e,n] (per expert and output column) needs a grouped_gemm spec; "
                         "expected gate_bias[n]"));
  EXPECT_THAT(parse_error("out = silu(gate)"),
              StartsWith("1:12: 'gate' needs a spec with gate_up=interleaved or gate_up=stacked"));
  EXPECT_THAT(parse_error("out = up"), StartsWith("1:7: 'up' needs a spec with gate_up"));
  EXPECT_THAT(parse_error("out = silu(acc)", glu()),
              StartsWith("1:12: 'acc' is not available with gate_up: the accumulator is a (gate, up) pair"));
  EXPECT_THAT(parse_error("out = min(acc)"),
              StartsWith("1:14: min takes 2 arguments: expected min(x, y), got 1"));
  EXPECT_THAT(parse_error("out = clamp(acc, 1)"),
              StartsWith("1:19: clamp takes 3 arguments: expected clamp(x, lo, hi), got 2"));
  EXPECT_THAT(parse_error("out = exp(acc, acc)"),
              StartsWith("1:14: exp takes 1 argument: expected ')' after exp(x)"));
  EXPECT_THAT(parse_error("out = relu()"),
              StartsWith("1:12: relu takes 1 argument: expected relu(x), got no arguments"));
}

TEST(EpilogueErrorTest, HostileTextGetsPositionedErrorsAndNeverReachesCode) {
  const struct {
    std::string text;
    const char* prefix;
  } cases[] = {
      {"out = acc; } __global__ void evil() {", "1:12: unexpected character '}'"},
      {"out = acc;}", "1:11: unexpected character '}'"},
      {"#include <cstdio>\nout = acc", "1:1: unexpected character '#'"},
      {"out = acc\n#define acc 0", "2:1: unexpected character '#'"},
      {"out = __asm__(\"trap;\")", "1:7: names start with a letter, not '_'"},
      {"out = asm(\"trap;\")", "1:7: unknown function 'asm'"},
      {"out = acc \\\n + 1", "1:11: unexpected character '\\'"},
      {"out = \"acc\"", "1:7: unexpected character '\"'"},
      {"out = 'a'", "1:7: unexpected character '''"},
      {"out = acc /* c */", "1:12: expected an expression"},
      {"out = acc // c", "1:12: expected an expression"},
      {"out = std::exp(acc)", "1:7: unknown name 'std'"},
      {"out = acc.x", "1:10: unexpected character '.'"},
      {"out = acc->x", "1:11: unexpected character '>'"},
      {"out = acc ? 1 : 0", "1:11: unexpected character '?'"},
      {"out = acc % 2", "1:11: unexpected character '%'"},
      {"out = acc & 1", "1:11: unexpected character '&'"},
      {"out = expf(acc)", "1:7: unknown function 'expf'; did you mean 'exp'"},
      {"out = printf(acc)", "1:7: unknown function 'printf'"},
      {"out = 1e999", "1:7: number '1e999' is outside the f32 range"},
      {"out = 1e39", "1:7: number '1e39' is outside the f32 range"},
      {"out = 1e-50", "1:7: number '1e-50' is outside the f32 range"},
      {"out = 340282356779733661637539395458142568448",
       "1:7: number '340282356779733661637539395458142568448' is outside the f32 range"},
      {"out = " + std::string(100, '9'), "1:7: number of 100 characters; at most 64"},
      {"out = acc * 1." + std::string(70, '0'), "1:13: number of 72 characters; at most 64"},
      {std::string(100, 'x') + " = acc; out = acc",
       "1:1: name 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (100 characters)' is longer than 64"},
      {std::string("out = acc\0 + 1", 14), "1:10: unexpected control byte 0x00"},
      {std::string("out = acc +\x01", 12), "1:12: unexpected control byte 0x01"},
      {"out = acc \xc3\xa9", "1:11: unexpected byte 0xC3; epilogue text is ASCII"},
      {"out = acc\x7f", "1:10: unexpected control byte 0x7F"},
      {"out = acc\v", "1:10: unexpected control byte 0x0B"},
      {"out = " + std::string(5000, '(') + "acc" + std::string(5000, ')'),
       "1:71: expression nested deeper than 64 levels"},
      {"out = " + std::string(10000, '(') + "acc" + std::string(10000, ')'),
       "1:16385: epilogue text is 20009 bytes"},
      {"out = " + std::string(10000, '-') + "acc", "1:71: expression nested deeper than 64 levels"},
      {"out = " +
           [] {
             std::string s;
             for (int i = 0; i < 1000; ++i) s += "exp(";
             return s;
           }(),
       "1:266: expression nested deeper than 64 levels"},
  };
  for (const auto& c : cases) {
    const std::string msg = parse_error(c.text);
    EXPECT_THAT(msg, StartsWith(c.prefix)) << "text: " << c.text.substr(0, 80);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(fuzz::check_epilogue_text(c.text, fuzz::context_number(i)), "");
  }
}

TEST(EpilogueErrorTest, SizeLimitsArePositioned) {
  std::string big(kEpilogueMaxBytes + 10, ' ');
  big += "out = acc";
  EXPECT_THAT(parse_error(big), StartsWith("1:16385: epilogue text is 16403 bytes; expected at most 16384"));
  std::string lines;
  for (int i = 0; i < 3000; ++i) lines += "     \n";  // 18000 bytes; byte 16384 is on line 2731
  lines += "out = acc";
  EXPECT_THAT(parse_error(lines), StartsWith("2731:5: epilogue text is"));
  std::string sum = "out = 1";
  for (int i = 0; i < kEpilogueMaxNodes; ++i) sum += "+1";
  const std::string msg = parse_error(sum);
  EXPECT_THAT(msg, HasSubstr("more than 4096 operands and operations; expected a smaller epilogue"));
  // Text within the limits whose canonical form is not: "+1e9" prints as " + 1e+09", 4 bytes more,
  // so 2047 of them (4095 nodes, 8195 bytes) print to 11 + 2047 * 8 = 16387 bytes.
  std::string wide = "out = 1e9";
  for (int i = 0; i < 2047; ++i) wide += "+1e9";
  ASSERT_LE(wide.size(), kEpilogueMaxBytes);
  EXPECT_THAT(parse_error(wide), StartsWith("1:1: the canonical form of this epilogue is"));
}

// ---- lowering: common subexpressions once ----

TEST(EpilogueLowerTest, RepeatedSubexpressionsBecomeOneTemporary) {
  // gpt-oss: min, clamp, 1.702 * g, sigmoid, g * s, u + 1, the product: 7 temporaries.
  EXPECT_EQ(lower_ok(kGptOss, glu()).temporaries(), 7);
  // sigmoid(1.702 * g) written twice, once with the operands swapped: still one sigmoid.
  const std::string twice =
      "g = min(gate, 7.0); u = clamp(up, -7.0, 7.0); out = g * sigmoid(1.702 * g) * (u + 1.0) + sigmoid(g * "
      "1.702)";
  const EpilogueCode code = emit_ok(twice, glu());
  EXPECT_EQ(code.temporaries, 8);  // one more: the final addition
  EXPECT_EQ(count(code.functor, "ep_sigmoid"), 1) << code.functor;
  EXPECT_EQ(count(code.functor, "1.70200002f"), 1) << code.functor;
  // Through different let-bound names.
  EXPECT_EQ(lower_ok("a = acc * 2.0; b = acc * 2.0; out = a + b").temporaries(), 2);
  EXPECT_EQ(lower_ok("out = exp(acc) + exp(acc)").temporaries(), 2);
  // A vector read twice is loaded once and is one operand.
  const EpilogueProgram p = lower_ok("out = bias[n] * bias[n] + bias[n]");
  EXPECT_EQ(p.operands.size(), 1u);
  EXPECT_EQ(p.temporaries(), 3);
  // Not merged: different operations, literals, operand order of - / min.
  EXPECT_EQ(lower_ok("out = (acc - 1.0) * (1.0 - acc)").temporaries(), 3);
  EXPECT_EQ(lower_ok("out = min(acc, 0.0) + min(0.0, acc)").temporaries(), 3);
  EXPECT_EQ(lower_ok("out = (acc + 0.0) * (acc + -0.0)").temporaries(), 3);
}

TEST(EpilogueLowerTest, FoldsOnlyExactRewrites) {
  const EpilogueProgram neg = lower_ok("out = acc * -7.0");
  ASSERT_EQ(neg.nodes.size(), 3u);
  EXPECT_EQ(neg.nodes[1].op, EpOp::kLiteral);
  EXPECT_EQ(neg.nodes[1].value, -7.0f);
  EXPECT_EQ(lower_ok("out = - - acc").temporaries(), 0);
  EXPECT_EQ(lower_ok("out = - - - acc").temporaries(), 1);
  // No constant folding of arithmetic: 1.0 + 2.0 stays an addition (the device computes it).
  EXPECT_EQ(lower_ok("out = acc * (1.0 + 2.0)").temporaries(), 2);
}

TEST(EpilogueLowerTest, OperandsGetSlotsInOrderOfFirstUse) {
  const EpilogueProgram p = lower_ok(
      "out = relu2(acc * colscale[e,n] + bias[e,n]) * scale[m] * expert_scale[e] + residual[m,n]", grouped());
  ASSERT_EQ(p.operands.size(), 5u);
  const EpilogueOperand want[] = {{EpVector::kColScale, EpIndex::kEN, 0},
                                  {EpVector::kBias, EpIndex::kEN, 1},
                                  {EpVector::kScale, EpIndex::kM, 2},
                                  {EpVector::kExpertScale, EpIndex::kE, 3},
                                  {EpVector::kResidual, EpIndex::kMN, 4}};
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(p.operands[i] == want[i]) << i;
}

TEST(EpilogueLowerTest, RejectsMalformedHandBuiltEpilogues) {
  Epilogue e = parse_ok("out = acc + 1.0");
  Epilogue cyclic = e;
  cyclic.nodes[2].arg[0] = 2;  // the addition reads itself
  EXPECT_FALSE(lower_epilogue(cyclic).ok());
  EXPECT_EQ(print_epilogue(cyclic), "out = ?");
  Epilogue no_out = e;
  no_out.statements[0].name = "x";
  EXPECT_FALSE(lower_epilogue(no_out).ok());
  Epilogue wrong_context = e;
  wrong_context.context.glu = true;
  EXPECT_FALSE(lower_epilogue(wrong_context).ok());
  Epilogue inf = e;
  inf.nodes[1].value = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(lower_epilogue(inf).ok());
}

// ---- emission ----

TEST(EpilogueEmitTest, EmitsTheFunctorFromKilnsOwnStrings) {
  const EpilogueCode code = emit_ok("out = silu(acc + bias[n]) * scale[m]");
  EXPECT_EQ(code.functor,
            "// epilogue functor generated by kiln (compiler/epilogue); do not edit\n"
            "struct KilnEpilogue {\n"
            "  static constexpr int kNumOperands = 2;\n"
            "  template <class Ctx>\n"
            "  __device__ __forceinline__ static float apply(const Ctx& c, float acc, float gate, float up, "
            "int m, int n,\n"
            "                                                int e) {\n"
            "    const float t0 = c.template load<0>(n);\n"
            "    const float t1 = acc + t0;\n"
            "    const float t2 = kiln_dev::ep_silu(t1);\n"
            "    const float t3 = c.template load<1>(m);\n"
            "    const float t4 = t2 * t3;\n"
            "    return t4;\n"
            "  }\n"
            "};\n");
  ASSERT_EQ(code.operands.size(), 2u);
  EXPECT_TRUE(code.operands[0] == (EpilogueOperand{EpVector::kBias, EpIndex::kN, 0}));
  EXPECT_TRUE(code.operands[1] == (EpilogueOperand{EpVector::kScale, EpIndex::kM, 1}));
  EXPECT_TRUE(code.reads_acc);
  EXPECT_FALSE(code.reads_gate);
  EXPECT_FALSE(code.reads_up);
}

TEST(EpilogueEmitTest, LiteralsAreReprintedNeverCopied) {
  const EpilogueCode code = emit_ok("out = acc * 1.702 + 7 - 0000.5e1 + 1e20 + -2.5 + 1e-45 + .1", dense());
  EXPECT_THAT(code.functor, HasSubstr("1.70200002f"));
  EXPECT_THAT(code.functor, HasSubstr("7.0f"));
  EXPECT_THAT(code.functor, HasSubstr("5.0f"));
  EXPECT_THAT(code.functor, Not(HasSubstr("0000.5e1")));
  EXPECT_THAT(code.functor, HasSubstr("1.00000002e+20f"));
  EXPECT_THAT(code.functor, HasSubstr("(-2.5f)"));
  EXPECT_THAT(code.functor, HasSubstr("1.40129846e-45f"));
  EXPECT_THAT(code.functor, HasSubstr("0.100000001f"));
  EXPECT_EQ(fuzz::check_functor_vocabulary(code.functor), "");
}

TEST(EpilogueEmitTest, UserNamesNeverAppearInTheFunctor) {
  const std::string text =
      "zzUserGate = min(gate, 7.0); ySecret_1 = clamp(up, -7.0, 7.0); KilnEpilogue2 = zzUserGate * "
      "sigmoid(1.702 * zzUserGate); out = KilnEpilogue2 * (ySecret_1 + 1.0)";
  const EpilogueCode code = emit_ok(text, glu());
  for (const char* user : {"zzUserGate", "ySecret_1", "KilnEpilogue2"})
    EXPECT_THAT(code.functor, Not(HasSubstr(user)));
  EXPECT_EQ(fuzz::check_functor_vocabulary(code.functor), "");
  // The same program under other names emits byte-identical code.
  EXPECT_EQ(emit_ok(kGptOss, glu()).functor, code.functor);
}

TEST(EpilogueEmitTest, EveryFunctionMapsToItsDeviceImplementation) {
  for (int i = 0; i < kEpFunctionCount; ++i) {
    const auto f = static_cast<EpFunction>(i);
    std::string call = std::string(ep_function_name(f)) + "(acc";
    for (int a = 1; a < ep_function_arity(f); ++a) call += ", " + std::to_string(a) + ".0";
    const EpilogueCode code = emit_ok("out = " + call + ")");
    EXPECT_THAT(code.functor, HasSubstr(std::string(ep_function_device(f)) + "(acc")) << call;
    EXPECT_EQ(fuzz::check_functor_vocabulary(code.functor), "");
  }
}

TEST(EpilogueEmitTest, TrivialProgramsReturnTheirValueDirectly) {
  EXPECT_THAT(emit_ok("out = acc").functor, HasSubstr("    return acc;\n"));
  EXPECT_EQ(emit_ok("out = acc").temporaries, 0);
  EXPECT_THAT(emit_ok("out = 2").functor, HasSubstr("    return 2.0f;\n"));
  EXPECT_THAT(emit_ok("out = -2").functor, HasSubstr("    return (-2.0f);\n"));
  EXPECT_THAT(emit_ok("out = up", glu()).functor, HasSubstr("    return up;\n"));
}

TEST(EpilogueEmitTest, DoesNotDependOnTheLocale) {
  // std::to_chars ignores LC_NUMERIC; a comma decimal point would be C++'s comma operator.
  const char* old = std::setlocale(LC_NUMERIC, nullptr);
  const std::string saved = old ? old : "C";
  const bool switched = std::setlocale(LC_NUMERIC, "de_DE.UTF-8") != nullptr;
  const EpilogueCode code = emit_ok("out = acc * 1.5");
  const std::string printed = canonical("out = acc * 1.5");
  std::setlocale(LC_NUMERIC, saved.c_str());
  EXPECT_THAT(code.functor, HasSubstr("1.5f"));
  EXPECT_EQ(printed, "out = acc * 1.5");
  if (!switched) GTEST_SKIP() << "de_DE.UTF-8 is not installed; checked in the C locale only";
}

// ---- host evaluation ----

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

TEST(EpilogueEvalTest, GptOssSwigluMatchesItsDefinition) {
  const EpilogueProgram p = lower_ok(kGptOss, glu());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-12.0f, 12.0f);
  for (int i = 0; i < 1000; ++i) {
    const float gate = dist(rng), up = dist(rng);
    const float g = gate < 7.0f ? gate : 7.0f;
    const float u = up < -7.0f ? -7.0f : (up > 7.0f ? 7.0f : up);
    const float want = g * sigmoid(1.702f * g) * (u + 1.0f);
    EXPECT_EQ(evaluate_epilogue(p, {.acc = 0, .gate = gate, .up = up, .operands = nullptr}), want)
        << gate << " " << up;
  }
}

TEST(EpilogueEvalTest, VectorsComeFromTheirSlots) {
  const EpilogueProgram p = lower_ok("out = silu(acc + bias[n]) * scale[m]");
  const float operands[2] = {0.25f, 3.0f};  // bias, scale
  const float acc = 1.5f;
  const float want = (acc + 0.25f) / (1.0f + std::exp(-(acc + 0.25f))) * 3.0f;
  EXPECT_EQ(evaluate_epilogue(p, {.acc = acc, .gate = 0, .up = 0, .operands = operands}), want);
}

TEST(EpilogueEvalTest, FunctionsFollowTheirDocumentedDefinitions) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto eval = [](const std::string& text, float acc) {
    return evaluate_epilogue(lower_ok(text), {.acc = acc, .gate = 0, .up = 0, .operands = nullptr});
  };
  EXPECT_EQ(eval("out = relu(acc)", -3.0f), 0.0f);
  EXPECT_EQ(eval("out = relu(acc)", 3.0f), 3.0f);
  EXPECT_EQ(eval("out = relu2(acc)", 3.0f), 9.0f);
  EXPECT_EQ(eval("out = relu2(acc)", -3.0f), 0.0f);
  EXPECT_TRUE(std::isnan(eval("out = relu(acc)", nan)));
  EXPECT_TRUE(std::isnan(eval("out = min(acc, 1.0)", nan)));
  EXPECT_TRUE(std::isnan(eval("out = min(1.0, acc)", nan)));
  EXPECT_TRUE(std::isnan(eval("out = max(acc, 1.0)", nan)));
  EXPECT_TRUE(std::isnan(eval("out = clamp(acc, -1.0, 1.0)", nan)));
  EXPECT_EQ(eval("out = clamp(acc, -1.0, 1.0)", 5.0f), 1.0f);
  EXPECT_EQ(eval("out = clamp(acc, -1.0, 1.0)", -5.0f), -1.0f);
  EXPECT_EQ(eval("out = abs(acc)", -2.0f), 2.0f);
  EXPECT_EQ(eval("out = sqrt(acc)", 9.0f), 3.0f);
  EXPECT_EQ(eval("out = rsqrt(acc)", 4.0f), 0.5f);
  EXPECT_EQ(eval("out = sigmoid(acc)", 0.0f), 0.5f);
  EXPECT_EQ(eval("out = silu(acc)", 0.0f), 0.0f);
  EXPECT_EQ(eval("out = gelu(acc)", 0.0f), 0.0f);
  EXPECT_NEAR(eval("out = gelu(acc)", 1.0f), 0.8413447f, 1e-6f);       // x * Phi(x)
  EXPECT_NEAR(eval("out = gelu_tanh(acc)", 1.0f), 0.8411920f, 1e-6f);  // the tanh approximation
  EXPECT_NEAR(eval("out = silu(acc)", 1.0f), 0.7310586f, 1e-6f);
  EXPECT_NEAR(eval("out = exp(log(acc))", 5.0f), 5.0f, 1e-5f);
  EXPECT_NEAR(eval("out = tanh(acc)", 0.5f), 0.4621172f, 1e-6f);
  EXPECT_EQ(eval("out = sigmoid(acc)", -200.0f), 0.0f);
  EXPECT_EQ(eval("out = sigmoid(acc)", 200.0f), 1.0f);
}

// ---- docs/epilogue.md stays true ----

std::vector<std::string> doc_section_lines(const std::string& heading) {
  // This file is tests/unit/compiler/epilogue_test.cpp; CMake compiles it by absolute path.
  const auto path =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / "docs" / "epilogue.md";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<std::string> lines;
  bool in_section = false, in_block = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == heading;
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      continue;
    }
    if (in_block && !line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

TEST(EpilogueDocsTest, EveryExampleParsesAndRoundTrips) {
  const std::vector<std::string> examples = doc_section_lines("## Examples, one per use case");
  EXPECT_GE(examples.size(), 15u);
  for (const std::string& text : examples) {
    int parsed = 0;
    for (int c = 0; c < 4; ++c) {
      const EpilogueContext ctx = fuzz::context_number(c);
      parsed += parse_epilogue(text, ctx).ok() ? 1 : 0;
      EXPECT_EQ(fuzz::check_epilogue_text(text, ctx), "") << text;
    }
    EXPECT_GT(parsed, 0) << "no context accepts the documented example: " << text;
  }
}

TEST(EpilogueDocsTest, DocumentedErrorsAreTheRealMessages) {
  const std::vector<std::string> lines = doc_section_lines("## Checks and errors");
  int checked = 0;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    std::string text = lines[i];
    EpilogueContext ctx;
    if (const size_t note = text.find("   ("); note != std::string::npos) {
      ctx.glu = text.find("(gate_up spec)", note) != std::string::npos;
      text = text.substr(0, text.find_last_not_of(' ', note) + 1);
    }
    std::string want = lines[i + 1].substr(lines[i + 1].find_first_not_of(' '));
    if (want.size() > 3 && want.compare(want.size() - 3, 3, "...") == 0) want.resize(want.size() - 3);
    EXPECT_THAT(parse_error(text, ctx), StartsWith(want)) << text;
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace kiln

// Deterministic fuzzing of the epilogue language without clang: 50,000 generated texts (random
// token soup, grammar-generated epilogues, and mutations of those), each checked in the four
// contexts against the same invariants the libFuzzer target checks (tests/fuzz/epilogue_invariants.hpp),
// plus a replay of the libFuzzer seed corpus. No CUDA.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/epilogue_invariants.hpp"

namespace kiln {
namespace {

constexpr uint32_t kSeed = 20240611;
constexpr int kCases = 50000;

class TextGenerator {
 public:
  explicit TextGenerator(uint32_t seed) : rng_(seed) {}

  std::string soup() {
    static const std::vector<std::string> kTokens = {"acc",
                                                     "gate",
                                                     "up",
                                                     "out",
                                                     "bias",
                                                     "scale",
                                                     "colscale",
                                                     "expert_scale",
                                                     "residual",
                                                     "gate_bias",
                                                     "up_bias",
                                                     "m",
                                                     "n",
                                                     "e",
                                                     "x",
                                                     "g",
                                                     "u",
                                                     "min",
                                                     "max",
                                                     "clamp",
                                                     "exp",
                                                     "log",
                                                     "tanh",
                                                     "sigmoid",
                                                     "silu",
                                                     "gelu",
                                                     "gelu_tanh",
                                                     "relu",
                                                     "relu2",
                                                     "abs",
                                                     "sqrt",
                                                     "rsqrt",
                                                     "sigmod",
                                                     "1",
                                                     "7.0",
                                                     "1.702",
                                                     ".5",
                                                     "1.",
                                                     "2.5e-3",
                                                     "1e999",
                                                     "1e-50",
                                                     "0x10",
                                                     "+",
                                                     "-",
                                                     "*",
                                                     "/",
                                                     "(",
                                                     ")",
                                                     "[",
                                                     "]",
                                                     ",",
                                                     "=",
                                                     ";",
                                                     "}",
                                                     "{",
                                                     "#include",
                                                     "\"",
                                                     "'",
                                                     "\\",
                                                     "__asm__",
                                                     "::",
                                                     "//",
                                                     "/*",
                                                     "?",
                                                     "<",
                                                     ">",
                                                     "%",
                                                     "&",
                                                     std::string(1, '\0'),
                                                     "\xff",
                                                     "\t",
                                                     "\n",
                                                     "_x",
                                                     "e,n",
                                                     "m,n"};
    std::string s;
    const int n = pick(1, 24);
    for (int i = 0; i < n; ++i) {
      s += kTokens[static_cast<size_t>(pick(0, static_cast<int>(kTokens.size()) - 1))];
      if (pick(0, 2) == 0) s += ' ';
    }
    return s;
  }

  // A mostly well-formed epilogue: a few let statements, each name used later, then out.
  std::string program() {
    lets_.clear();
    std::string s;
    const int statements = pick(0, 3);
    std::vector<bool> used;
    for (int i = 0; i < statements; ++i) {
      const std::string name = "v" + std::to_string(i);
      s += name + " = " + expr(pick(0, 4)) + "; ";
      lets_.push_back(name);
    }
    std::string out = expr(pick(0, 5));
    for (const std::string& l : lets_) out += " + " + l;  // every let used at least once
    return s + "out = " + out;
  }

  // Replaces, deletes, duplicates or inserts a few characters.
  std::string mutate(std::string s) {
    static const std::string kBytes = "acgupoutbiasmn e()[],;=+-*/.0123456789_}#\"\\";
    const int edits = pick(1, 3);
    for (int k = 0; k < edits && !s.empty(); ++k) {
      const size_t at = static_cast<size_t>(pick(0, static_cast<int>(s.size()) - 1));
      switch (pick(0, 3)) {
        case 0: s[at] = kBytes[static_cast<size_t>(pick(0, static_cast<int>(kBytes.size()) - 1))]; break;
        case 1: s.erase(at, 1); break;
        case 2: s.insert(at, s.substr(at, static_cast<size_t>(pick(1, 8)))); break;
        default:
          s.insert(at, 1, kBytes[static_cast<size_t>(pick(0, static_cast<int>(kBytes.size()) - 1))]);
          break;
      }
    }
    return s;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::string leaf() {
    static const std::vector<std::string> kLeaves = {"acc",
                                                     "gate",
                                                     "up",
                                                     "bias[n]",
                                                     "bias[e,n]",
                                                     "scale[m]",
                                                     "colscale[n]",
                                                     "colscale[e,n]",
                                                     "expert_scale[e]",
                                                     "residual[m,n]",
                                                     "gate_bias[n]",
                                                     "up_bias[e,n]",
                                                     "1.0",
                                                     "7",
                                                     "1.702",
                                                     "0.5",
                                                     "1e-3",
                                                     "3.4e38",
                                                     "0"};
    if (!lets_.empty() && pick(0, 3) == 0)
      return lets_[static_cast<size_t>(pick(0, static_cast<int>(lets_.size()) - 1))];
    return kLeaves[static_cast<size_t>(pick(0, static_cast<int>(kLeaves.size()) - 1))];
  }

  std::string expr(int depth) {
    if (depth <= 0) return leaf();
    switch (pick(0, 5)) {
      case 0: return leaf();
      case 1: return "-" + expr(depth - 1);
      case 2: return "(" + expr(depth - 1) + ")";
      case 3: {
        const int f = pick(0, kEpFunctionCount - 1);
        const auto fn = static_cast<EpFunction>(f);
        std::string s = std::string(ep_function_name(fn)) + "(";
        for (int i = 0; i < ep_function_arity(fn); ++i) s += (i ? ", " : "") + expr(depth - 1);
        return s + ")";
      }
      default: {
        static const char* kOps[] = {" + ", " - ", " * ", " / ", "+", "*"};
        return expr(depth - 1) + kOps[pick(0, 5)] + expr(depth - 1);
      }
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> lets_;
};

TEST(EpilogueFuzzTest, RandomTextsKeepEveryInvariant) {
  std::printf("epilogue fuzz seed %u, %d cases\n", kSeed, kCases);
  TextGenerator gen(kSeed);
  int accepted[4] = {0, 0, 0, 0};
  int failures = 0;
  for (int i = 0; i < kCases && failures < 5; ++i) {
    std::string text;
    switch (i % 3) {
      case 0: text = gen.soup(); break;
      case 1: text = gen.program(); break;
      default: text = gen.mutate(gen.program()); break;
    }
    for (int c = 0; c < 4; ++c) {
      const EpilogueContext ctx = fuzz::context_number(c);
      const std::string broken = fuzz::check_epilogue_text(text, ctx);
      if (!broken.empty()) {
        ++failures;
        ADD_FAILURE() << "case " << i << " context " << c << ": " << broken << "\ntext: " << text;
      }
      accepted[c] += parse_epilogue(text, ctx).ok() ? 1 : 0;
    }
  }
  std::printf("accepted per context (dense, glu, grouped, grouped+glu): %d %d %d %d\n", accepted[0],
              accepted[1], accepted[2], accepted[3]);
  // The generator must reach the accepting paths (round trip, lowering, emission) often.
  for (int c = 0; c < 4; ++c) EXPECT_GT(accepted[c], kCases / 50) << "context " << c;
}

TEST(EpilogueFuzzTest, SeedCorpusKeepsEveryInvariant) {
  // This file is tests/unit/compiler/epilogue_fuzz_test.cpp; CMake compiles it by absolute path.
  const std::filesystem::path dir =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "fuzz" / "corpus" / "epilogue";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no corpus at " << dir;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    ++files;
    for (int c = 0; c < 4; ++c) {
      const std::string broken = fuzz::check_epilogue_text(ss.str(), fuzz::context_number(c));
      EXPECT_TRUE(broken.empty()) << entry.path() << " context " << c << ": " << broken;
    }
  }
  EXPECT_GT(files, 10);
}

}  // namespace
}  // namespace kiln

// gpu tier: the quantize family (templates/kernels/quantize.cuh) bitwise against the CPU references of
// compiler/numerics, on fresh random inputs (verify/quantize_check.hpp: zero blocks, rounding
// midpoints, tiny values, magnitudes over 32 binades), outputs poisoned before each run.
//
// Every mode: FP8 per tensor (four launches through the amax slot), per token, 1x128, 128x128 and the
// transposed 128x1 copy, f32 and ue8m0 scales; FP8 per column (transposed, padded copy); MXFP8 / MXFP4 with RCEIL and FLOOR, row-wise and
// transposed; NVFP4 with bound 448 / 256 and four-over-six off / MAE / MSE, row-wise and transposed.
// Inputs bf16, f16 and f32. M = 1, odd M, K not a multiple of the 64-column transpose tile, and
// shapes of several waves. `[ timing ]` rows report GB/s at 4096 x 7168 (bytes read + written).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "verify/quantize_check.hpp"
#include "tests/common/gpu_env.hpp"

namespace kiln {
namespace {

struct Case {
  const char* spec;
  int64_t m, k;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string out;
  for (char c : std::string(info.param.spec)) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out + "_m" + std::to_string(info.param.m) + "_k" + std::to_string(info.param.k);
}

std::vector<Case> all_cases() {
  return {
      // FP8 per tensor: amax slot, four launches.
      {"quantize a=bf16 out=e4m3:tensor", 1, 8},
      {"quantize a=bf16 out=e4m3:tensor", 77, 200},
      {"quantize a=f32 out=e4m3:tensor", 1000, 4096},
      // FP8 per token.
      {"quantize a=bf16 out=e4m3:m", 1, 7168},
      {"quantize a=bf16 out=e4m3:m", 77, 200},
      {"quantize a=f16 out=e4m3:m", 513, 4104},
      // FP8 per column, transposed (the per-row copies of a per-token wgrad / per-channel dgrad): out [K, W]
      // with W = M rounded up to 16 (zero codes past M), scales [K]; M = 1, odd M, K past the 64-column tiles,
      // more rows than one amax CTA takes.
      {"quantize a=bf16 out=e4m3:m transpose=true", 1, 8},
      {"quantize a=bf16 out=e4m3:m transpose=true", 77, 200},
      {"quantize a=f16 out=e4m3:m transpose=true", 1000, 1032},
      {"quantize a=f32 out=e4m3:m transpose=true", 4096, 512},
      // FP8 1x128 (DeepSeek activations), f32 and ue8m0.
      {"quantize a=bf16 out=e4m3:block1x128", 1, 128},
      {"quantize a=bf16 out=e4m3:block1x128", 77, 384},
      {"quantize a=bf16 out=e4m3:block1x128", 1025, 7168},
      {"quantize a=bf16 out=e4m3:block1x128:ue8m0", 77, 512},
      {"quantize a=f32 out=e4m3:block1x128", 3, 256},
      // The transposed 128x1 copy wgrad reads: out [K, M], scales [K, M/128].
      {"quantize a=bf16 out=e4m3:block1x128 transpose=true", 128, 8},
      {"quantize a=bf16 out=e4m3:block1x128 transpose=true", 256, 200},
      {"quantize a=bf16 out=e4m3:block1x128:ue8m0 transpose=true", 384, 1000},
      // Grouped: each expert's rows from a 128-column boundary, zero-padded to whole blocks; the columns past
      // the last expert's blocks stay poisoned (offsets: M rows in all; masked: [E, M, K]).
      {"quantize[experts=8,layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true", 1000, 256},
      {"quantize[experts=8,layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true", 1, 200},
      {"quantize[experts=32,layout=offsets] a=bf16 out=e4m3:block1x128:ue8m0 transpose=true", 4096, 1032},
      {"quantize[experts=4,layout=masked] a=bf16 out=e4m3:block1x128 transpose=true", 300, 512},
      {"quantize[experts=16,layout=masked] a=f16 out=e4m3:block1x128:ue8m0 transpose=true", 130, 136},
      // FP8 128x128 (weights), partial last row block.
      {"quantize a=bf16 out=e4m3:block128x128", 1, 128},
      {"quantize a=bf16 out=e4m3:block128x128", 200, 384},
      {"quantize a=f16 out=e4m3:block128x128:ue8m0", 129, 256},
      {"quantize a=bf16 out=e4m3:block128x128", 1000, 7168},
      // MXFP8 / MXFP4.
      {"quantize a=bf16 out=mxfp8", 1, 32},
      {"quantize a=bf16 out=mxfp8", 77, 2880},
      {"quantize a=bf16 out=mxfp8", 1024, 7168},
      {"quantize a=f32 out=mxfp8 mx_round=floor", 33, 96},
      {"quantize a=bf16 out=mxfp8 transpose=true", 32, 8},
      {"quantize a=bf16 out=mxfp8 transpose=true", 96, 200},
      {"quantize a=bf16 out=mxfp8 transpose=true", 2048, 512},
      {"quantize a=bf16 out=mxfp4", 77, 2880},
      {"quantize a=bf16 out=mxfp4 mx_round=floor", 5, 64},
      {"quantize a=f16 out=mxfp4 transpose=true", 64, 72},
      // NVFP4: global amax (four launches), bound 448 / 256, four-over-six.
      {"quantize a=bf16 out=nvfp4", 1, 16},
      {"quantize a=bf16 out=nvfp4", 77, 2880},
      {"quantize a=bf16 out=nvfp4", 1024, 7168},
      {"quantize a=f16 out=nvfp4", 9, 48},
      {"quantize a=bf16 out=nvfp4 e4m3_bound=256", 7, 64},
      {"quantize a=bf16 out=nvfp4 four_over_six=mae", 77, 512},
      {"quantize a=bf16 out=nvfp4 four_over_six=mse e4m3_bound=256", 33, 256},
      {"quantize a=f32 out=nvfp4 four_over_six=mse transpose=true", 48, 200},
      {"quantize a=bf16 out=nvfp4 transpose=true", 2048, 512},
  };
}

class QuantizeGpuTest : public testing::TestWithParam<Case> {};

TEST_P(QuantizeGpuTest, BitwiseEqualToReference) {
  KILN_REQUIRE_GPU();
  const Case& c = GetParam();
  auto rt = make_test_runtime();
  auto spec = parse_spec(c.spec);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto plan = rt->plan(*spec, {0, 0, c.k});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  QuantizeCheckOptions o;
  o.m = c.m;
  auto r = run_quantize_check(*rt, *plan, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("[ figures ] %s m=%lld k=%lld seed=%llu codes=%lld/%lld scales=%lld/%lld %s\n", c.spec,
              (long long)c.m, (long long)c.k, (unsigned long long)r->seed, (long long)r->code_mismatches,
              (long long)r->codes, (long long)r->scale_mismatches, (long long)r->scales, r->first_mismatch.c_str());
  std::fflush(stdout);
  EXPECT_TRUE(r->checked);
  EXPECT_EQ(r->code_mismatches, 0) << "seed " << r->seed << ": " << r->first_mismatch;
  EXPECT_EQ(r->scale_mismatches, 0) << "seed " << r->seed << ": " << r->first_mismatch;
  EXPECT_FALSE(r->global_mismatch) << "seed " << r->seed << ": " << r->first_mismatch;
  EXPECT_TRUE(r->passed);
}

INSTANTIATE_TEST_SUITE_P(Quantizers, QuantizeGpuTest, testing::ValuesIn(all_cases()), case_name);

// Bad operands are reported with the operand's name, never launched.
TEST(QuantizeGpuErrors, MissingScaleAndWrongTransposedM) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  auto spec = parse_spec("quantize a=bf16 out=mxfp8 transpose=true");
  ASSERT_TRUE(spec.ok());
  auto plan = rt->plan(*spec, {0, 0, 64});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  QuantizeCheckOptions o;
  o.m = 40;  // not a multiple of 32
  auto r = run_quantize_check(*rt, *plan, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("M=40"), std::string::npos) << r.status().to_string();
}

TEST(QuantizeTiming, GigabytesPerSecond) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  for (const char* text : {"quantize a=bf16 out=e4m3:block1x128", "quantize a=bf16 out=e4m3:block1x128 transpose=true",
                           "quantize a=bf16 out=e4m3:m", "quantize a=bf16 out=e4m3:m transpose=true",
                           "quantize a=bf16 out=e4m3:tensor",
                           "quantize a=bf16 out=mxfp8", "quantize a=bf16 out=nvfp4",
                           "quantize a=bf16 out=nvfp4 four_over_six=mse e4m3_bound=256"}) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok());
    auto plan = rt->plan(*spec, {0, 0, 7168});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    QuantizeCheckOptions o;
    o.m = 4096;
    o.time = true;
    auto r = run_quantize_check(*rt, *plan, o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_TRUE(r->passed) << r->first_mismatch;
    std::printf("[ timing ] %s m=4096 k=7168 %.4f ms %.0f GB/s\n", text, r->median_ms, r->gbps);
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace kiln

// gpu tier: the portable family's backward kernel (kernels/sm80_backward.cuh, docs/backward.md) against
// kiln's reference kernel on fresh random inputs (verify/check.hpp: outputs poisoned first, unwritten and
// overwritten elements counted):
//   - mode high_precision (bf16 / f16) dgrad and wgrad, the portable family pinned on sm_90 too;
//   - mode dequantized: dgrad with W in mxfp4, nvfp4, mxfp8, e4m3 / e5m2 with tensor, per-channel and
//     128x128 scales (f32 and ue8m0), wgrad with X in e4m3 per-token / 1x128 / tensor and mxfp8;
//   - grouped dgrad (offsets, masked) and grouped wgrad (offsets, masked) with empty and one-row experts;
//   - accumulate=true (out += ...): the frozen MXFP4 dgrad (LoRA) and grouped wgrad;
//   - the decode dgrad kernel of 4-bit weights (small M), its configs pinned;
//   - M = 1, odd tails, multi-tile shapes; pinned configs; repeat runs bitwise equal.
// Skips without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.hpp"
#include "kiln/kiln.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"
#include "tests/common/check_passes.hpp"
#include "tests/common/gpu_env.hpp"
#include "tests/common/tile_configs.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"

namespace kiln {
namespace {

Runtime& runtime() {
  static std::shared_ptr<Runtime> rt = make_test_runtime();
  return *rt;
}

KernelSpec spec_of(const std::string& text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}

// Plans spec on the portable family (pinned to cfg when given) and checks one run; m: rows (masked: per
// expert).
void expect_passes(const std::string& text, int64_t m, int64_t n, int64_t k, const TileConfig* cfg = nullptr,
                   std::vector<int32_t> groups = {}) {
  PlanOptions po;
  po.family = KernelFamily::kSm80Gemm;
  po.config = cfg ? *cfg : default_config(spec_of(text), Arch{9, 0, true}, KernelFamily::kSm80Gemm, {m, n, k});
  test::expect_check_passes(runtime(), text, m, n, k, po, std::move(groups));
}

struct Shape {
  int64_t m, n, k;
};
// M = 1, odd M and N (the reduction of dgrad) against every tile edge, K a multiple of 128 (block scales),
// and a multi-tile shape.
const Shape kShapes[] = {{1, 256, 512}, {77, 392, 640}, {513, 1032, 1024}, {2048, 2048, 1536}};

TEST(BackwardPortableGpu, HighPrecision) {
  KILN_REQUIRE_GPU();
  for (const char* pass : {"dgrad", "wgrad"})
    for (const char* ab : {"a=bf16 b=bf16", "a=f16 b=f16"})
      for (const char* out : {"bf16", "f32"})
        for (const Shape& sh : kShapes)
          expect_passes(std::string("gemm ") + ab + " out=" + out + " pass=" + pass, sh.m, sh.n, sh.k);
}

TEST(BackwardPortableGpu, DequantizedDgrad) {
  KILN_REQUIRE_GPU();
  for (const char* b : {"mxfp4", "nvfp4", "mxfp8", "e4m3:tensor", "e4m3:n", "e5m2:n", "e4m3:block128x128",
                        "e4m3:block128x128:ue8m0"})
    for (const char* out : {"bf16", "f32"})
      for (const Shape& sh : kShapes)
        expect_passes(std::string("gemm a=bf16 b=") + b + " out=" + out + " pass=dgrad", sh.m, sh.n, sh.k);
}

TEST(BackwardPortableGpu, DequantizedWgrad) {
  KILN_REQUIRE_GPU();
  for (const char* b : {"e4m3:m", "e4m3:tensor", "e4m3:block1x128", "e4m3:block1x128:ue8m0", "e5m2:m", "mxfp8"})
    for (const char* out : {"bf16", "f32"})
      for (const Shape& sh : kShapes)
        expect_passes(std::string("gemm a=bf16 b=") + b + " out=" + out + " pass=wgrad", sh.m, sh.n, sh.k);
}

TEST(BackwardPortableGpu, GroupedDgrad) {
  KILN_REQUIRE_GPU();
  for (const char* b : {"bf16", "mxfp4", "nvfp4", "e4m3:block128x128", "e4m3:tensor"}) {
    const std::string offsets = std::string("grouped_gemm[experts=8,layout=offsets] a=bf16 b=") + b + " out=bf16 pass=dgrad";
    expect_passes(offsets, 1000, 512, 1024);                                         // random split
    expect_passes(offsets, 300, 264, 256, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});      // empty, one-row experts
    const std::string masked = std::string("grouped_gemm[experts=4,layout=masked] a=bf16 b=") + b + " out=f32 pass=dgrad";
    expect_passes(masked, 200, 512, 256);
    expect_passes(masked, 64, 1024, 512, nullptr, {64, 0, 1, 33});
  }
  expect_passes("grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=bf16 pass=dgrad nvfp4_global=expert", 700,
                256, 512);
}

TEST(BackwardPortableGpu, GroupedWgrad) {
  KILN_REQUIRE_GPU();
  for (const char* ab : {"a=bf16 b=bf16", "a=f16 b=f16", "a=bf16 b=e4m3:block1x128", "a=bf16 b=mxfp8", "a=bf16 b=e4m3:m"}) {
    const std::string offsets = std::string("grouped_gemm[experts=8,layout=offsets] ") + ab + " out=f32 pass=wgrad";
    expect_passes(offsets, 1000, 512, 256);                                           // random split
    expect_passes(offsets, 300, 264, 384, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});       // empty, one-row experts
    const std::string masked = std::string("grouped_gemm[experts=4,layout=masked] ") + ab + " out=bf16 pass=wgrad";
    expect_passes(masked, 200, 392, 256);
    expect_passes(masked, 64, 256, 512, nullptr, {64, 0, 1, 33});
  }
}

// accumulate=true on the portable kernel: the frozen-base LoRA dgrad (dX += dY . dequant(W)) and grouped
// wgrad, with the rows no expert owns left as they were.
TEST(BackwardPortableGpu, Accumulate) {
  KILN_REQUIRE_GPU();
  for (const char* out : {"f32", "bf16"}) {
    expect_passes(std::string("gemm a=bf16 b=bf16 out=") + out + " pass=wgrad accumulate=true", 513, 1032, 1024);
    expect_passes(std::string("gemm a=bf16 b=mxfp4 out=") + out + " pass=dgrad accumulate=true", 77, 392, 640);
    expect_passes(std::string("grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=") + out +
                      " pass=dgrad accumulate=true",
                  300, 264, 256, nullptr, {0, 1, 0, 150, 1, 0, 148, 0});
    expect_passes(std::string("grouped_gemm[experts=4,layout=masked] a=bf16 b=bf16 out=") + out +
                      " pass=wgrad accumulate=true",
                  64, 256, 512, nullptr, {64, 0, 1, 33});
  }
}

TEST(BackwardPortableGpu, PinnedConfigs) {
  KILN_REQUIRE_GPU();
  const TileConfig pins[] = {
      test::tile_config(16, 32, 32, 2, 1, 2, 8),  test::tile_config(32, 64, 32, 3, 2, 2, 8),
      test::tile_config(64, 128, 32, 4, 2, 2, 4), test::tile_config(128, 128, 32, 4, 2, 4, 8),
      test::tile_config(128, 256, 32, 3, 4, 4, 8), test::tile_config(256, 64, 32, 2, 4, 2, 1),
  };
  for (const TileConfig& c : pins) {
    for (const char* spec : {"gemm a=bf16 b=mxfp4 out=f32 pass=dgrad", "gemm a=bf16 b=e4m3:n out=bf16 pass=dgrad",
                             "gemm a=bf16 b=bf16 out=bf16 pass=wgrad", "gemm a=bf16 b=e4m3:block1x128 out=f32 pass=wgrad"}) {
      const Status ok = check_config(spec_of(spec), Arch{9, 0, true}, KernelFamily::kSm80Gemm, c);
      if (!ok.ok()) {
        // wgrad needs block_m 32 or a multiple of 64: the 16-row tile is dgrad's only.
        EXPECT_EQ(c.block_m, 16) << c.to_string() << " refused for " << spec << ": " << ok.to_string();
        continue;
      }
      expect_passes(spec, 333, 1000, 768, &c);
    }
  }
}

// The decode dgrad kernel (kernels/sm80_decode_dgrad.cuh): 4-bit W streamed into mma fragments for a few
// rows of dY. Its configs pinned on M = 1, odd M / N against the token tile and the 16-row k-step, K not a
// multiple of its 128 channels, grouped with empty and one-row experts, NVFP4 per-expert globals,
// accumulate=true, every output format. The random inputs' block scales run past 2^1 in some rows, so
// both scale paths (one fma, two) are taken.
TEST(BackwardPortableGpu, DecodeDgrad) {
  KILN_REQUIRE_GPU();
  auto decode = [](int bm, int bk, int stages, int warps) {
    TileConfig c = test::tile_config(bm, 128, bk, stages, 1, warps, 1);
    c.decode = 1;
    return c;
  };
  const TileConfig pins[] = {decode(8, 32, 2, 4), decode(16, 16, 1, 1), decode(16, 64, 2, 4), decode(32, 32, 1, 8)};
  const Shape shapes[] = {{1, 256, 512}, {5, 392, 608}, {16, 1000, 2880}, {45, 264, 160}};
  for (const TileConfig& c : pins) {
    for (const char* b : {"mxfp4", "nvfp4"}) {
      for (const char* out : {"bf16", "f32", "f16"}) {
        const std::string dense = std::string("gemm a=bf16 b=") + b + " out=" + out + " pass=dgrad";
        for (const Shape& sh : shapes) expect_passes(dense, sh.m, sh.n, sh.k, &c);
      }
      const std::string offsets = std::string("grouped_gemm[experts=8,layout=offsets] a=bf16 b=") + b + " out=bf16 pass=dgrad";
      expect_passes(offsets, 100, 512, 1024, &c);                                      // random split
      expect_passes(offsets, 60, 264, 256, &c, {0, 1, 0, 30, 1, 0, 28, 0});              // empty, one-row experts
      const std::string masked = std::string("grouped_gemm[experts=4,layout=masked] a=bf16 b=") + b + " out=f32 pass=dgrad";
      expect_passes(masked, 40, 392, 352, &c, {40, 0, 1, 33});
      expect_passes(std::string("gemm a=bf16 b=") + b + " out=f32 pass=dgrad accumulate=true", 9, 392, 640, &c);
      expect_passes(std::string("grouped_gemm[experts=8,layout=offsets] a=bf16 b=") + b +
                        " out=bf16 pass=dgrad accumulate=true",
                    60, 264, 256, &c, {0, 1, 0, 30, 1, 0, 28, 0});
    }
    expect_passes("grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=bf16 pass=dgrad nvfp4_global=expert", 70,
                  256, 512, &c);
  }
}

// One plan run twice on the same inputs: bitwise equal outputs (no atomics).
TEST(BackwardPortableGpu, RepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_GPU();
  for (const char* text : {"gemm a=bf16 b=mxfp4 out=f32 pass=dgrad",
                           "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad"}) {
    for (int64_t m : {int64_t{1000}, int64_t{16}}) {  // the tiled kernel, and (4-bit dgrad) the decode kernel
      const int64_t n = 768, k = 512;
      PlanOptions po;
      po.family = KernelFamily::kSm80Gemm;
      po.config = default_config(spec_of(text), Arch{9, 0, true}, KernelFamily::kSm80Gemm, {m, n, k});
      test::expect_repeat_runs_bitwise_equal(runtime(), text, m, n, k, po);
    }
  }
}

}  // namespace
}  // namespace kiln

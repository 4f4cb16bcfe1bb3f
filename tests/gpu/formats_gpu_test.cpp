// gpu tier: the scaled-format pairings against kiln's GPU reference on fresh random data, and the GPU
// reference against the CPU fp64 reference (compiler/numerics reference_gemm_quantized).
//
// Every pairing dense — FP8 per-token x per-channel, DeepSeek FP8 blocks (f32 and ue8m0 scales), MXFP8,
// bf16 x MXFP4 / NVFP4 / FP8 weights — and grouped (offsets and masked; random splits with empty
// experts, explicit splits with empty and single-row experts, gpt-oss's K = 2880 with its 90-byte
// scale rows), with M = 1, odd M and N, K tails; outputs are poisoned before each run and rows no
// expert owns must stay poisoned (run_check). Tolerances: verify/check.cpp check_tolerance (relative
// Frobenius error 8e-3 for bf16 outputs, 2e-3 f16, 1e-5 f32: both sides accumulate exactly-decoded
// products in f32, so only accumulation order and output rounding differ); the GPU reference vs the
// CPU fp64 reference: relative Frobenius error <= 1e-5.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/numerics/reference_gemm.hpp"
#include "kiln/kiln.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/operands.hpp"
#include "runtime/runtime_access.hpp"
#include "templates/common/gemm_params.cuh"
#include "tests/common/gpu_env.hpp"

namespace kiln {
namespace {

struct Case {
  const char* spec;
  int64_t m, n, k;              // m: rows (grouped offsets: total; masked: max_m)
  std::vector<int32_t> groups;  // grouped: rows per expert, empty for a random split
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string out;
  for (char c : std::string(info.param.spec)) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  out += "_m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
         std::to_string(info.param.k);
  if (!info.param.groups.empty()) out += "_split" + std::to_string(info.index);
  return out;
}

std::vector<Case> all_cases() {
  return {
      // FP8 per-token x per-channel (scales in the epilogue).
      {"gemm a=e4m3:m b=e4m3:n out=bf16", 1, 256, 512, {}},
      {"gemm a=e4m3:m b=e4m3:n out=bf16", 77, 203, 528, {}},
      {"gemm a=e4m3:m b=e4m3:n out=f32", 300, 129, 1040, {}},
      {"gemm a=e5m2:m b=e4m3:tensor out=f16", 77, 203, 528, {}},
      {"gemm a=e4m3:tensor b=e5m2:n out=f32", 33, 100, 256, {}},
      // DeepSeek FP8 blocks (promotion per 128 K).
      {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 1, 256, 512, {}},
      {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 77, 203, 384, {}},
      {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=f32", 300, 300, 1024, {}},
      {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32", 77, 203, 384, {}},
      {"gemm a=e4m3:block1x128 b=e4m3:n out=bf16", 45, 130, 256, {}},
      // MXFP8 x MXFP8 (promotion per 32 K; K = 96 ends in half a K tile).
      {"gemm a=mxfp8 b=mxfp8 out=bf16", 1, 256, 512, {}},
      {"gemm a=mxfp8 b=mxfp8 out=f32", 77, 203, 96, {}},
      {"gemm a=mxfp8 b=mxfp8 out=bf16", 260, 300, 1056, {}},
      // bf16 x MXFP4 (gpt-oss K = 2880: 1440-byte rows, 90-byte scale rows).
      {"gemm a=bf16 b=mxfp4 out=bf16", 1, 256, 2880, {}},
      {"gemm a=bf16 b=mxfp4 out=f32", 77, 203, 96, {}},
      {"gemm a=bf16 b=mxfp4 out=bf16", 300, 129, 1056, {}},
      // bf16 x NVFP4 (UE4M3 per 16 folded exactly; the f32 global in the epilogue).
      {"gemm a=bf16 b=nvfp4 out=bf16", 1, 256, 512, {}},
      {"gemm a=bf16 b=nvfp4 out=f32", 77, 203, 96, {}},
      {"gemm a=bf16 b=nvfp4 out=bf16", 130, 129, 1024, {}},
      // bf16 x FP8 weights (W8A16).
      {"gemm a=bf16 b=e4m3:n out=bf16", 1, 256, 528, {}},
      {"gemm a=bf16 b=e4m3:n out=f32", 77, 203, 528, {}},
      {"gemm a=bf16 b=e5m2:tensor out=bf16", 65, 130, 272, {}},
      // f16 activations (each split into two bf16: exact) x 4- and 8-bit weights; bf16 / f16 x MXFP8.
      {"gemm a=f16 b=mxfp4 out=bf16", 1, 256, 2880, {}},
      {"gemm a=f16 b=mxfp4 out=f16", 300, 129, 1056, {}},
      {"gemm a=f16 b=nvfp4 out=f32", 77, 203, 96, {}},
      {"gemm a=f16 b=e4m3:n out=f16", 77, 203, 528, {}},
      {"gemm a=f16 b=e5m2:tensor out=f32", 65, 130, 272, {}},
      {"gemm a=bf16 b=mxfp8 out=bf16", 1, 256, 512, {}},
      {"gemm a=bf16 b=mxfp8 out=f32", 77, 203, 96, {}},
      {"gemm a=f16 b=mxfp8 out=bf16", 300, 300, 1056, {}},
      // f32 outputs: the tolerance (1e-5) that only an exact split of the f16 values meets.
      {"gemm a=f16 b=mxfp4 out=f32", 77, 203, 1056, {}},
      {"gemm a=f16 b=mxfp8 out=f32", 65, 130, 512, {}},
      // FP8 activations (tensor / per-token scales) x 4-bit weights: W4A8 on the mixed mainloop.
      {"gemm a=e4m3:m b=mxfp4 out=bf16", 1, 256, 2880, {}},
      {"gemm a=e4m3:tensor b=nvfp4 out=f32", 77, 203, 96, {}},
      {"gemm a=e5m2:m b=mxfp4 out=f16", 300, 129, 1056, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=mxfp4 out=bf16", 300, 203, 2880, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=6,layout=masked] a=e4m3:m b=nvfp4 out=f32", 33, 70, 96, {}},
      // MXFP8 activations (E8M0 per 32 folded into bf16) x 4-bit weights.
      {"gemm a=mxfp8 b=mxfp4 out=bf16", 1, 256, 2880, {}},
      {"gemm a=mxfp8 b=nvfp4 out=f32", 77, 203, 96, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp4 out=bf16", 300, 203, 1056, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=6,layout=masked] a=mxfp8 b=mxfp4 out=f32", 33, 70, 96, {}},
      // DeepSeek FP8 blocks with a 16-bit or 4-bit partner: promoted per 128 K on the mixed mainloop.
      {"gemm a=bf16 b=e4m3:block128x128 out=bf16", 1, 256, 512, {}},
      {"gemm a=bf16 b=e4m3:block128x128 out=f32", 77, 203, 384, {}},
      {"gemm a=f16 b=e4m3:block128x128:ue8m0 out=f32", 65, 130, 256, {}},
      {"gemm a=e4m3:block1x128 b=mxfp4 out=f32", 77, 203, 384, {}},
      {"gemm a=e4m3:block1x128:ue8m0 b=nvfp4 out=bf16", 300, 129, 1024, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=e4m3:block128x128 out=bf16", 300, 203, 512, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=6,layout=masked] a=e4m3:block1x128 b=mxfp4 out=f32", 33, 70, 256, {}},
      // FP8 / MXFP8 activations x 16-bit weights (A converted to bf16 exactly, f16 B split in two).
      {"gemm a=e4m3:m b=bf16 out=bf16", 1, 256, 512, {}},
      {"gemm a=e4m3:tensor b=f16 out=f32", 77, 203, 96, {}},
      {"gemm a=e5m2:m b=bf16 out=f16", 300, 129, 1056, {}},
      {"gemm a=mxfp8 b=bf16 out=f32", 77, 203, 96, {}},
      {"gemm a=mxfp8 b=f16 out=bf16", 300, 300, 1056, {}},
      {"gemm a=mxfp8 b=f16 out=f32", 65, 130, 512, {}},
      {"gemm a=e4m3:block1x128 b=bf16 out=bf16", 77, 203, 384, {}},
      {"gemm a=e4m3:block1x128:ue8m0 b=f16 out=f32", 65, 130, 256, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=bf16 out=bf16", 300, 203, 528, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=6,layout=masked] a=mxfp8 b=f16 out=f32", 33, 70, 96, {}},
      // MXFP8 with an FP8 partner (the E8M0 side folded into bf16, the FP8 side's scales as always).
      {"gemm a=mxfp8 b=e4m3:n out=bf16", 1, 256, 512, {}},
      {"gemm a=mxfp8 b=e4m3:tensor out=f32", 77, 203, 96, {}},
      {"gemm a=mxfp8 b=e4m3:block128x128 out=f32", 77, 203, 384, {}},
      {"gemm a=mxfp8 b=e5m2:n out=f16", 300, 129, 1056, {}},
      {"gemm a=e4m3:m b=mxfp8 out=bf16", 300, 203, 1056, {}},
      {"gemm a=e4m3:block1x128 b=mxfp8 out=f32", 77, 203, 384, {}},
      {"gemm a=e5m2:tensor b=mxfp8 out=f32", 65, 130, 256, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=e4m3:n out=bf16", 300, 203, 1056, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=6,layout=masked] a=e4m3:m b=mxfp8 out=f32", 33, 70, 96, {}},
      {"grouped_gemm[experts=4,layout=offsets] a=e4m3:block1x128 b=mxfp8 out=bf16", 200, 256, 512, {}},
      // Grouped, offsets layout.
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16", 300, 203, 2880, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=f16 b=mxfp4 out=f16", 300, 203, 2880, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=e4m3:n out=bf16", 300, 203, 528, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=4,layout=offsets] a=bf16 b=e4m3:tensor out=f32", 100, 129, 256, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp8 out=bf16", 300, 203, 1056, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=f32", 300, 203, 1056, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16", 64, 320, 2880, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert", 200, 256, 512, {}},
      {"grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=f32", 100, 129, 256, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16", 1, 203, 264, {0, 0, 0, 1, 0, 0, 0, 0}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32", 150, 96, 128, {}},
      // Grouped FP8 x FP8 and MXFP8 x MXFP8: per-expert weight scales (tensor [E], n [E * N], 128x128
      // blocks [E, ceil(N/128), K/128], E8M0 [E, N, K/32]); activations' scales per row.
      {"grouped_gemm[experts=8,layout=offsets] a=e4m3:tensor b=e4m3:tensor out=bf16", 300, 203, 512, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=f32", 300, 203, 528, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"grouped_gemm[experts=4,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 200, 256, 512, {}},
      {"grouped_gemm[experts=4,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32", 40, 129, 384,
       {}},
      {"grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16", 300, 203, 1056, {}},
      {"grouped_gemm[experts=6,layout=masked] a=mxfp8 b=mxfp8 out=f32", 33, 70, 96, {}},
      // Grouped, masked layout (counts per expert, rows past them untouched).
      {"grouped_gemm[experts=8,layout=masked] a=bf16 b=mxfp4 out=f32", 40, 129, 1056, {}},
      {"grouped_gemm[experts=8,layout=masked] a=bf16 b=mxfp4 out=bf16", 40, 129, 1056, {0, 1, 40, 3, 0, 17, 40, 2}},
      {"grouped_gemm[experts=6,layout=masked] a=f16 b=f16 out=f16", 33, 70, 64, {}},
      {"grouped_gemm[experts=6,layout=masked] a=f16 b=e4m3:n out=f32", 33, 70, 96, {0, 1, 33, 3, 0, 17}},
      {"grouped_gemm[experts=6,layout=masked] a=bf16 b=mxfp8 out=bf16", 33, 70, 96, {}},
  };
}

class FormatsGpuTest : public testing::TestWithParam<Case> {};

TEST_P(FormatsGpuTest, MatchesReference) {
  KILN_REQUIRE_GPU();
  const Case& c = GetParam();
  auto rt = make_test_runtime();
  auto spec = parse_spec(c.spec);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto plan = rt->plan(*spec, {c.m, c.n, c.k});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  CheckOptions o;
  o.m = c.m;
  o.group_rows = c.groups;
  auto r = run_check(*rt, *plan, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("[ figures ] %s m=%lld n=%lld k=%lld seed=%llu rel_fro=%.3g max_abs=%.3g tol=%.1g config=%s\n", c.spec,
              (long long)c.m, (long long)c.n, (long long)c.k, (unsigned long long)r->seed, r->rel_fro_err,
              r->max_abs_err, r->tolerance, r->config.c_str());
  std::fflush(stdout);  // the figures survive a timeout of the process
  EXPECT_EQ(r->unwritten, 0) << "seed " << r->seed;
  EXPECT_EQ(r->overwritten, 0) << "seed " << r->seed;
  EXPECT_EQ(r->nonfinite, 0) << "seed " << r->seed;
  EXPECT_LE(r->rel_fro_err, r->tolerance) << "seed " << r->seed;
  EXPECT_TRUE(r->passed);
}

INSTANTIATE_TEST_SUITE_P(NewPairings, FormatsGpuTest, testing::ValuesIn(all_cases()), case_name);

// Deterministic: the same inputs give bitwise the same output (grouped MXFP4 and DeepSeek blocks).
TEST(FormatsRepeatGpuTest, RepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  for (const char* text : {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16",
                           "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"}) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok());
    auto plan = rt->plan(*spec, {256, 256, 1024});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    CheckOptions o;
    o.m = 256;
    o.seed = 777;
    auto r1 = run_check(*rt, *plan, o);
    auto r2 = run_check(*rt, *plan, o);
    ASSERT_TRUE(r1.ok() && r2.ok());
    EXPECT_EQ(r1->max_abs_err, r2->max_abs_err) << text;
    EXPECT_EQ(r1->rel_fro_err, r2->rel_fro_err) << text;
    EXPECT_TRUE(r1->passed) << text;
  }
}

// The GPU reference kernel (ground truth on the device) against the CPU fp64 reference, which
// dequantizes every operand exactly (dequantize_f64) and accumulates in double.
TEST(FormatsReferenceGpuTest, GpuReferenceMatchesCpuFp64) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  const Driver* d = *Driver::get();
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(d, 0).ok());
  struct Small {
    const char* spec;
    int64_t m;
    std::vector<int32_t> groups;
  };
  const Small smalls[] = {
      {"gemm a=e4m3:m b=e4m3:n out=f32", 37, {}},
      {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=f32", 37, {}},
      {"gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32", 37, {}},
      {"gemm a=mxfp8 b=mxfp8 out=f32", 37, {}},
      {"gemm a=bf16 b=mxfp4 out=f32", 37, {}},
      {"gemm a=bf16 b=nvfp4 out=f32", 37, {}},
      {"gemm a=bf16 b=e4m3:n out=f32", 37, {}},
      {"gemm a=f16 b=mxfp4 out=f32", 37, {}},
      {"gemm a=bf16 b=mxfp8 out=f32", 37, {}},
      {"gemm a=e4m3:m b=mxfp4 out=f32", 37, {}},
      {"gemm a=mxfp8 b=nvfp4 out=f32", 37, {}},
      {"grouped_gemm[experts=5,layout=offsets] a=bf16 b=mxfp4 out=f32", 37, {0, 1, 30, 0, 6}},
      {"grouped_gemm[experts=4,layout=offsets] a=bf16 b=e4m3:tensor out=f32", 37, {}},
      {"grouped_gemm[experts=5,layout=offsets] a=bf16 b=e4m3:n out=f32", 37, {0, 1, 30, 0, 6}},
      {"grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=f32 nvfp4_global=expert", 37, {}},
      {"grouped_gemm[experts=4,layout=masked] a=bf16 b=mxfp4 out=f32", 11, {0, 1, 11, 4}},
  };
  const int64_t n = 45, k = 256;
  for (const Small& sm : smalls) {
    auto spec = parse_spec(sm.spec);
    ASSERT_TRUE(spec.ok()) << sm.spec;
    uint64_t seed = 4242;
    auto h = random_operands(*spec, sm.m, n, k, sm.groups, seed);
    ASSERT_TRUE(h.ok()) << sm.spec << ": " << h.status().to_string();
    auto dev = DeviceOperands::upload(*h);
    ASSERT_TRUE(dev.ok()) << dev.status().to_string();
    auto ref = RuntimeAccess::impl(*rt)->load(*spec, KernelFamily::kReferenceGemm, TileConfig{}, Arch{9, 0, true});
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    const ProblemSizes sizes{h->rows, n, k};
    auto c = check_operands(*spec, sizes, dev->operands());
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    kiln_dev::GemmParams gp = gemm_params(*c, sizes);
    LaunchShape ls = launch_shape(*spec, KernelFamily::kReferenceGemm, TileConfig{}, sizes);
    void* args[] = {&gp};
    ASSERT_TRUE(d->check(d->cuLaunchKernel(reinterpret_cast<CUfunction>((*ref)->kernel), ls.grid_x, ls.grid_y,
                                           ls.grid_z, ls.block_x, 1, 1, ls.dynamic_smem, nullptr, args, nullptr),
                         "launch")
                    .ok());
    ASSERT_TRUE(d->check(d->cuCtxSynchronize(), "sync").ok());
    std::vector<float> gpu(static_cast<size_t>(h->rows * n));
    ASSERT_TRUE(dev->out().download(gpu.data(), gpu.size() * 4).ok());

    numerics::RefOperand ra, rb;
    ra.data = h->a.bytes.data();
    ra.ld = k;
    ra.scales = h->a_scale.present() ? h->a_scale.bytes.data() : nullptr;
    ra.lds = h->a_scale.shape.size() >= 2 ? h->a_scale.shape.back() : 0;
    rb.data = h->b.bytes.data();
    rb.ld = k;
    rb.expert_stride = n * k;
    rb.scales = h->b_scale.present() ? h->b_scale.bytes.data() : nullptr;
    rb.lds = h->b_scale.shape.size() >= 2 ? h->b_scale.shape.back() : 0;
    rb.scale_expert_stride = c->b_scale_expert_stride;  // as the kernels read them (tensor [E]: 1, n: N, ...)
    rb.global = h->b_global.present() ? reinterpret_cast<const float*>(h->b_global.bytes.data()) : nullptr;
    const int32_t* groups =
        h->group_rows.present() ? reinterpret_cast<const int32_t*>(h->group_rows.bytes.data()) : nullptr;
    std::vector<double> cpu;
    std::vector<uint8_t> written;
    Status st = numerics::reference_gemm_quantized(*spec, h->rows, n, k, ra, rb, groups, h->max_m, cpu, &written);
    ASSERT_TRUE(st.ok()) << sm.spec << ": " << st.to_string();
    double num = 0, den = 0;
    int64_t untouched_wrong = 0;
    for (int64_t i = 0; i < h->rows * n; ++i) {
      if (!written[static_cast<size_t>(i / n)]) {
        uint32_t bits;
        std::memcpy(&bits, &gpu[static_cast<size_t>(i)], 4);
        if (bits != 0xFFFFFFFFu) ++untouched_wrong;
        continue;
      }
      const double e = gpu[static_cast<size_t>(i)] - cpu[static_cast<size_t>(i)];
      num += e * e;
      den += cpu[static_cast<size_t>(i)] * cpu[static_cast<size_t>(i)];
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    std::printf("[ figures ] reference kernel vs CPU fp64 (%s): rel_fro %.3g\n", sm.spec, rel);
    std::fflush(stdout);
    EXPECT_LT(rel, 1e-5) << sm.spec;
    EXPECT_GT(den, 0.0) << sm.spec;
    EXPECT_EQ(untouched_wrong, 0) << sm.spec;
  }
}


// Times (CUDA events, median of 20 after 3 warm-ups, L2-warm: not the benchmark protocol of
// bench/RESULTS.md) of the default configs on a few model shapes, printed as figures for the record;
// no assertion on speed. Inputs are drawn as in run_check; the kernels are not checked here (the
// MatchesReference cases cover the same code paths).
TEST(FormatsTimingGpuTest, ReportsMedianTimes) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  const Case cases[] = {
      {"gemm a=bf16 b=mxfp4 out=bf16", 16, 5760, 2880, {}},
      {"gemm a=bf16 b=mxfp4 out=bf16", 4096, 5760, 2880, {}},
      {"gemm a=bf16 b=nvfp4 out=bf16", 16, 5760, 2880, {}},
      {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16", 512, 5760, 2880, {}},
      {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", 4096, 7168, 7168, {}},
      {"gemm a=e4m3:m b=e4m3:n out=bf16", 4096, 7168, 7168, {}},
      {"gemm a=mxfp8 b=mxfp8 out=bf16", 4096, 7168, 7168, {}},
      {"gemm a=bf16 b=e4m3:n out=bf16", 16, 5760, 2880, {}},
      // The mixed mainloop's other activations: f16 (split in two), FP8 (W4A8), FP8 x 16-bit weights,
      // MXFP8 with an FP8 partner, DeepSeek blocks with a 16-bit or 4-bit partner.
      {"gemm a=f16 b=mxfp4 out=f16", 16, 5760, 2880, {}},
      {"gemm a=f16 b=mxfp4 out=f16", 4096, 5760, 2880, {}},
      {"gemm a=e4m3:m b=mxfp4 out=bf16", 16, 5760, 2880, {}},
      {"gemm a=e4m3:m b=mxfp4 out=bf16", 4096, 5760, 2880, {}},
      {"gemm a=e4m3:m b=bf16 out=bf16", 16, 5760, 2880, {}},
      {"gemm a=e4m3:m b=bf16 out=bf16", 4096, 5760, 2880, {}},
      {"gemm a=mxfp8 b=e4m3:n out=bf16", 4096, 5760, 2880, {}},
      {"gemm a=bf16 b=e4m3:block128x128 out=bf16", 16, 7168, 2048, {}},
      {"gemm a=bf16 b=e4m3:block128x128 out=bf16", 4096, 7168, 2048, {}},
      {"gemm a=e4m3:block1x128 b=mxfp4 out=bf16", 16, 7168, 2048, {}},
  };
  for (const Case& c : cases) {
    auto spec = parse_spec(c.spec);
    ASSERT_TRUE(spec.ok());
    auto plan = rt->plan(*spec, {c.m, c.n, c.k});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    CheckOptions o;
    o.m = c.m;
    o.check = false;
    o.time = true;
    o.seed = 1;
    auto r = run_check(*rt, *plan, o);
    ASSERT_TRUE(r.ok()) << c.spec << ": " << r.status().to_string();
    std::printf("[ timing  ] %s m=%lld n=%lld k=%lld: %.1f us, %.1f TFLOP/s, %.0f GB/s, config %s\n", c.spec,
                (long long)c.m, (long long)c.n, (long long)c.k, r->median_ms * 1e3, r->tflops, r->gbps,
                r->config.c_str());
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace kiln

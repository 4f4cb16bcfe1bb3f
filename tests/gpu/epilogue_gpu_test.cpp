// gpu tier: epilogue functors and gate|up GLUs against the reference on fresh random
// data, on the family the planner picks: on an H200 the sm90 family for the specs it takes (16-bit or
// FP8 operands, no or interleaved gate|up: the "sm90_" cases and others), the portable family for the
// rest (run the binary again with KILN_FAMILY=sm80 to put every case on the portable family). run_check (verify/check.cpp) runs the plan on random operands
// including the epilogue's vectors (verify/check_inputs.cpp), runs kiln's GPU reference GEMM with the
// epilogue and gate_up stripped (all N columns, f32), and applies the epilogue to that on the host with
// compiler/epilogue's evaluator, pairing (gate, up) as the spec says (interleaved: columns 2j, 2j + 1;
// stacked: j, N/2 + j) — independent of the kernels' functor and of their row permutation.
//
// Cases: every examples/specs file with an epilogue (gpt-oss SwiGLU grouped MXFP4 with per-expert
// biases and router weights; SwiGLU stacked and GeGLU interleaved dense bf16), dense and grouped
// (offsets with random splits and explicit splits holding empty and single-row experts; masked), M = 1,
// odd M, N / 2 not a multiple of the tile, gpt-oss's K = 2880; the stacked layout on both mainloops
// (bf16, MXFP4, NVFP4, FP8 per-channel, MXFP8); non-GLU epilogues reading [m], [n], [e], [e,n], [m,n].
// Outputs are poisoned before each run; unwritten elements and writes to rows no expert owns fail.
// Tolerance: check_tolerance of the output format (relative Frobenius error 8e-3 bf16, 2e-3 f16,
// 1e-5 f32), as for plain GEMMs: the epilogue adds a few ulp of f32 (device expf / erff vs libm).
// Every test GTEST_SKIPs without a device.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"
#include "runtime/operands.hpp"
#include "runtime/runtime_impl.hpp"
#include "tests/common/gpu_env.hpp"

namespace kiln {
namespace {

std::string read_example(const char* name) {
  const auto path =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "examples" / "specs" / name;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An example spec's text with its grouped_gemm[...] properties replaced (expert count, layout), so one
// example runs offsets and masked. Comments may hold brackets: the search starts at the op.
std::string with_props(const std::string& text, const std::string& props) {
  const size_t op = text.find("\ngrouped_gemm[");
  if (op == std::string::npos) return text;
  const size_t open = text.find('[', op), close = text.find(']', op);
  return text.substr(0, open + 1) + props + text.substr(close);
}

const std::string kGptOss = read_example("gpt_oss_swiglu_experts.kiln");
const std::string kSwiglu = read_example("swiglu_gemm.kiln");
const std::string kGeglu = read_example("geglu_gemm.kiln");

struct Case {
  std::string label;  // readable test name
  std::string spec;
  int64_t m, n, k;              // m: rows (grouped offsets: total; masked: max_m); n: the GEMM's N
  std::vector<int32_t> groups;  // grouped: rows per expert, empty for a random split
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.label << " m=" << c.m << " n=" << c.n << " k=" << c.k << " [" << c.spec << "]";
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string out;
  for (char c : info.param.label) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out + "_m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
         std::to_string(info.param.k) + "_" + std::to_string(info.index);
}

std::vector<Case> all_cases() {
  const std::string oss8 = with_props(kGptOss, "experts=8,layout=offsets");
  const std::string oss8_masked = with_props(kGptOss, "experts=8,layout=masked");
  return {
      // gpt-oss SwiGLU, grouped MXFP4 + per-expert gate/up biases + router weights.
      {"gpt_oss_offsets", kGptOss, 300, 512, 2880, {}},
      {"gpt_oss_offsets", kGptOss, 64, 5760, 2880, {}},
      {"gpt_oss_offsets_split", oss8, 300, 258, 1056, {0, 1, 0, 57, 1, 0, 240, 1}},
      {"gpt_oss_offsets_m1", oss8, 1, 256, 2880, {0, 0, 0, 1, 0, 0, 0, 0}},
      {"gpt_oss_offsets_odd", oss8, 77, 130, 96, {}},
      {"gpt_oss_masked", oss8_masked, 40, 258, 1056, {}},
      {"gpt_oss_masked_split", oss8_masked, 40, 256, 2880, {0, 1, 40, 3, 0, 17, 40, 2}},
      {"gpt_oss_masked_m1", oss8_masked, 1, 128, 256, {0, 1, 0, 1, 1, 0, 0, 1}},
      // SwiGLU (stacked) and GeGLU (interleaved), dense bf16.
      {"swiglu", kSwiglu, 1, 256, 256, {}},
      {"swiglu", kSwiglu, 77, 258, 264, {}},
      {"swiglu", kSwiglu, 300, 1024, 512, {}},
      {"geglu", kGeglu, 1, 256, 256, {}},
      {"geglu", kGeglu, 77, 258, 264, {}},
      {"geglu", kGeglu, 300, 1024, 512, {}},
      // Stacked gate|up on every weight path (B rows and their scale rows permuted).
      {"stacked_mxfp4",
       "gemm a=bf16 b=mxfp4 out=f32 gate_up=stacked epilogue=\"out = silu(gate) * up\"",
       77,
       258,
       1056,
       {}},
      {"stacked_nvfp4_grouped",
       "grouped_gemm[experts=4,layout=offsets] a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert gate_up=stacked "
       "epilogue=\"out = silu(gate + gate_bias[e,n]) * (up + up_bias[e,n])\"",
       100,
       258,
       512,
       {}},
      {"stacked_fp8_weights",
       "gemm a=bf16 b=e4m3:n out=bf16 gate_up=stacked epilogue=\"out = gelu(gate) * up\"",
       45,
       200,
       528,
       {}},
      {"stacked_fp8_rowwise",
       "gemm a=e4m3:m b=e4m3:n out=f32 gate_up=stacked epilogue=\"out = silu(gate) * up * scale[m]\"",
       33,
       130,
       256,
       {}},
      {"stacked_mxfp8",
       "gemm a=mxfp8 b=mxfp8 out=bf16 gate_up=stacked epilogue=\"out = relu(gate) * up\"",
       65,
       194,
       96,
       {}},
      {"interleaved_fp8_blocks",
       "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) "
       "* up\"",
       77,
       258,
       384,
       {}},
      {"stacked_bf16_masked",
       "grouped_gemm[experts=6,layout=masked] a=bf16 b=bf16 out=bf16 gate_up=stacked "
       "epilogue=\"out = silu(gate) * up * scale[m]\"",
       33,
       70,
       64,
       {}},
      // Epilogues without gate_up: every index form.
      {"bias_silu_scale",
       "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\"",
       77,
       203,
       264,
       {}},
      {"residual_f16",
       "gemm a=f16 b=f16 out=f16 epilogue=\"out = 0.5 * acc + 0.5 * residual[m,n]\"",
       1,
       129,
       64,
       {}},
      {"softcap_fp8",
       "gemm a=e4m3 b=e4m3 out=f32 epilogue=\"out = 30.0 * tanh(acc / 30.0)\"",
       33,
       100,
       256,
       {}},
      {"expert_vectors",
       "grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16 "
       "epilogue=\"out = (acc * colscale[e,n] + bias[e,n]) * expert_scale[e] * scale[m]\"",
       300,
       203,
       1056,
       {0, 1, 0, 57, 1, 0, 240, 1}},
      // The sm90 family (on sm_90a): FP8 per-token x per-channel grouped gpt-oss SwiGLU with per-expert
      // biases and router weights, bf16 masked GeGLU, FP8 blocks with a bias, split-K decode.
      {"sm90_fp8_row_swiglu_offsets",
       "grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=e4m3:n out=bf16 gate_up=interleaved "
       "epilogue=\"g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
       "out = g * sigmoid(1.702 * g) * (u + 1.0) * scale[m]\"",
       300,
       512,
       1024,
       {0, 1, 0, 57, 1, 0, 240, 1}},
      {"sm90_fp8_row_swiglu_offsets", "grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16 "
       "gate_up=interleaved epilogue=\"out = silu(gate + gate_bias[e,n]) * (up + up_bias[e,n])\"",
       2048, 768, 512, {}},
      {"sm90_bf16_geglu_masked",
       "grouped_gemm[experts=6,layout=masked] a=bf16 b=bf16 out=bf16 gate_up=interleaved "
       "epilogue=\"out = gelu(gate) * up * scale[m]\"",
       70,
       258,
       192,
       {0, 70, 5, 0, 1, 17}},
      {"sm90_fp8_block_bias",
       "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 epilogue=\"out = acc + bias[n]\"",
       1000,
       1030,
       1024,
       {}},
      {"sm90_mxfp8_swiglu_offsets",
       "grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16 gate_up=interleaved "
       "epilogue=\"out = silu(gate + gate_bias[e,n]) * (up + up_bias[e,n]) * scale[m]\"",
       300,
       512,
       1056,
       {0, 1, 0, 57, 1, 0, 240, 1}},
      {"sm90_bf16_decode_swiglu",
       "gemm a=bf16 b=bf16 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\"",
       3,
       4096,
       4096,
       {}},
      {"expert_vectors_masked",
       "grouped_gemm[experts=6,layout=masked] a=bf16 b=bf16 out=f32 "
       "epilogue=\"out = relu2(acc + bias[e,n]) * scale[m] + residual[m,n]\"",
       33,
       70,
       64,
       {0, 33, 5, 0, 1, 17}},
  };
}

class EpilogueGpuTest : public testing::TestWithParam<Case> {};

TEST_P(EpilogueGpuTest, MatchesReference) {
  KILN_REQUIRE_GPU();
  const Case& c = GetParam();
  auto rt = make_test_runtime();
  auto spec = parse_spec(c.spec);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto plan = rt->plan(*spec, {c.m, c.n, c.k});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  // The family the planner should pick for this device (sm90 where it takes the spec, unless
  // KILN_FAMILY=sm80), and the one it picked, in the figures.
  auto arch = rt->device_arch();
  ASSERT_TRUE(arch.ok()) << arch.status().to_string();
  const bool sm90 = sm90_supports(*spec, *arch) && !sm90_disabled_by_env();
  EXPECT_EQ(plan->family(), sm90 ? KernelFamily::kSm90Gemm : KernelFamily::kSm80Gemm);
  if (c.label.rfind("sm90_", 0) == 0 && arch->sm() == 90 && !sm90_disabled_by_env())
    EXPECT_EQ(plan->family(), KernelFamily::kSm90Gemm) << c.label;
  CheckOptions o;
  o.m = c.m;
  o.group_rows = c.groups;
  auto r = run_check(*rt, *plan, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("[ figures ] %s %s m=%lld n=%lld k=%lld seed=%llu rel_fro=%.3g max_abs=%.3g tol=%.1g config=%s\n",
              family_name(plan->family()), c.label.c_str(), (long long)c.m, (long long)c.n, (long long)c.k, (unsigned long long)r->seed,
              r->rel_fro_err, r->max_abs_err, r->tolerance, r->config.c_str());
  std::fflush(stdout);
  EXPECT_EQ(r->unwritten, 0) << "seed " << r->seed;
  EXPECT_EQ(r->overwritten, 0) << "seed " << r->seed;
  EXPECT_EQ(r->nonfinite, 0) << "seed " << r->seed;
  EXPECT_LE(r->rel_fro_err, r->tolerance) << "seed " << r->seed;
  EXPECT_TRUE(r->passed);
}

INSTANTIATE_TEST_SUITE_P(Epilogues, EpilogueGpuTest, testing::ValuesIn(all_cases()), case_name);

// Deterministic: the same inputs give bitwise the same output.
TEST(EpilogueRepeatGpuTest, RepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  for (const std::string& text : {kGptOss, kSwiglu}) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok());
    auto plan = rt->plan(*spec, {256, 512, 1024});
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

// gpt-oss's checkpoint keeps the gate and up biases interleaved in one [E, 2I] tensor: passed as two
// stride-2 views (no copy), the output is bitwise the one from two contiguous bias tensors.
TEST(EpilogueStridedGpuTest, InterleavedBiasViewsGiveTheSameOutput) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  const Driver* d = *Driver::get();
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(d, 0).ok());
  auto spec = parse_spec(with_props(kGptOss, "experts=8,layout=offsets"));
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  const int64_t m = 200, n = 512, k = 1024, e = 8, n_out = n / 2;
  auto plan = rt->plan(*spec, {m, n, k});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  uint64_t seed = 99;
  auto h = random_operands(*spec, m, n, k, {}, seed);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  auto dev = DeviceOperands::upload(*h);
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  Operands ops = dev->operands();
  ASSERT_TRUE(plan->run(ops, nullptr, 0, nullptr).ok());
  ASSERT_TRUE(d->check(d->cuCtxSynchronize(), "sync").ok());
  std::vector<uint16_t> first(static_cast<size_t>(m * n_out)), second(first.size());
  ASSERT_TRUE(dev->out().download(first.data(), first.size() * 2).ok());

  // Slots of the gpt-oss epilogue: gate_bias, up_bias, scale (first use); interleave the two biases.
  ASSERT_EQ(h->ep_operands.size(), 3u);
  ASSERT_EQ(h->ep_operands[0].vector, EpVector::kGateBias);
  ASSERT_EQ(h->ep_operands[1].vector, EpVector::kUpBias);
  std::vector<uint16_t> both(static_cast<size_t>(e * n));
  for (int64_t x = 0; x < e * n_out; ++x) {
    std::memcpy(&both[static_cast<size_t>(2 * x)], h->ep[0].bytes.data() + 2 * x, 2);
    std::memcpy(&both[static_cast<size_t>(2 * x + 1)], h->ep[1].bytes.data() + 2 * x, 2);
  }
  auto buf = DeviceBuffer::alloc(both.size() * 2);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(buf->upload(both.data(), both.size() * 2).ok());
  int64_t shape[2] = {e, n_out}, strides[2] = {n, 2};
  DLTensor gate{}, up{};
  gate.data = buf->data();
  gate.device = {kDLCUDA, 0};
  gate.ndim = 2;
  gate.shape = shape;
  gate.strides = strides;
  gate.dtype = {kDLBfloat, 16, 1};
  up = gate;
  up.byte_offset = 2;  // the odd columns
  ops.gate_bias = &gate;
  ops.up_bias = &up;
  ASSERT_TRUE(dev->out().fill_bytes(0xFF).ok());
  Status st = plan->run(ops, nullptr, 0, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(d->check(d->cuCtxSynchronize(), "sync").ok());
  ASSERT_TRUE(dev->out().download(second.data(), second.size() * 2).ok());
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * 2), 0);
}

}  // namespace
}  // namespace kiln

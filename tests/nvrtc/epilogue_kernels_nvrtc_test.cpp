// nvrtc tier: kernels with epilogue functors and gate|up GLUs compile with NVRTC
// alone for sm_90a (the sm90 family where it takes the spec: interleaved or no gate|up, 16-bit or FP8
// operands; the portable family otherwise), sm_89, sm_86 and sm_80 (portable) with no register spills — every examples/specs
// file with an epilogue, plus the paths each piece touches: stacked gate|up on both mainloops
// (B rows and their E8M0 / per-channel scale rows permuted), FP8 per-channel weights, MXFP8's
// per-column promotion, grouped offsets and masked, non-GLU epilogues reading [m], [n], [e], [e,n]
// and [m,n] vectors. CI compiles a sample (each case on one arch, rotating, for a large and a decode
// M; the examples on every arch); KILN_NVRTC_FULL=1 compiles the full case x arch x M matrix.
// Needs the CUDA toolkit's NVRTC, no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/env.hpp"
#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const char* const kArches[] = {"sm_90a", "sm_89", "sm_86", "sm_80"};

const char* const kExamples[] = {"gpt_oss_swiglu_experts.kiln", "swiglu_gemm.kiln", "geglu_gemm.kiln"};

const char* const kCases[] = {
    "gemm a=bf16 b=mxfp4 out=bf16 gate_up=stacked epilogue=\"out = silu(gate) * up\"",
    "gemm a=bf16 b=nvfp4 out=f32 gate_up=interleaved epilogue=\"out = gelu_tanh(gate) * up\"",
    "gemm a=bf16 b=e4m3:n out=bf16 gate_up=stacked epilogue=\"out = relu(gate + gate_bias[n]) * (up + "
    "up_bias[n])\"",
    "gemm a=e4m3:m b=e4m3:n out=bf16 gate_up=stacked epilogue=\"out = silu(gate) * up * scale[m]\"",
    "gemm a=mxfp8 b=mxfp8 out=bf16 gate_up=stacked epilogue=\"out = silu(gate) * up\"",
    "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * "
    "up\"",
    "gemm a=f16 b=f16 out=f16 epilogue=\"out = silu(acc + bias[n]) * scale[m] + residual[m,n]\"",
    "gemm a=e4m3 b=e4m3 out=bf16 epilogue=\"out = 30.0 * tanh(acc / 30.0)\"",
    "grouped_gemm[experts=8,layout=masked] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved "
    "epilogue=\"g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
    "out = g * sigmoid(1.702 * g) * (u + 1.0)\"",
    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16 "
    "epilogue=\"out = (acc * colscale[e,n] + bias[e,n]) * expert_scale[e] * scale[m]\"",
    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert gate_up=stacked "
    "epilogue=\"out = silu(gate) * up\"",
};

bool full_matrix() {
  auto v = env::get(env::kNvrtcFull);
  return v && *v == "1";
}

std::string read_example(const char* name) {
  const auto path =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "examples" / "specs" / name;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

KernelSpec spec_of(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

// Emits and compiles the kernel the planner picks; fails on a compile error or any spill.
CompiledKernel compile_ok(const KernelSpec& spec, const Arch& arch, int64_t m, const std::string& what,
                         bool want_ptx = false) {
  auto fam = select_family(spec, arch);
  EXPECT_TRUE(fam.ok()) << what << ": " << fam.status().to_string();
  if (!fam.ok()) return {};
  EXPECT_EQ(*fam, sm90_supports(spec, arch) ? KernelFamily::kSm90Gemm : KernelFamily::kSm80Gemm) << what;
  const TileConfig cfg = default_config(spec, arch, *fam, {m, 5760, 2880});
  auto k = emit_kernel(spec, *fam, cfg, arch);
  EXPECT_TRUE(k.ok()) << what << ": " << k.status().to_string();
  if (!k.ok()) return {};
  EXPECT_THAT(k->source, HasSubstr("struct KilnEpilogue")) << what;
  CompileOptions o;
  o.want_ptx = want_ptx;
  auto r = compile_cuda(k->source, arch, o);
  EXPECT_TRUE(r.ok()) << what << ": " << r.status().to_string();
  if (!r.ok()) return {};
  EXPECT_EQ(r->spill_stores, 0) << what << " " << cfg.to_string() << "\n" << r->log;
  EXPECT_EQ(r->spill_loads, 0) << what << " " << cfg.to_string() << "\n" << r->log;
  EXPECT_GT(r->registers, 0) << what;
  std::cout << "[ registers ] " << what << " m=" << m << " " << cfg.to_string() << " on " << arch.name()
            << ": " << r->registers << " registers\n";
  return *r;
}

TEST(EpilogueKernelsNvrtcTest, ExamplesCompileOnEveryArchWithoutSpills) {
  const bool full = full_matrix();
  for (const char* name : kExamples) {
    const KernelSpec s = spec_of(read_example(name));
    for (const char* a : kArches) {
      const std::vector<int64_t> ms =
          full ? std::vector<int64_t>{4096, 256, 64, 16, 1} : std::vector<int64_t>{4096, 1};
      for (int64_t m : ms) compile_ok(s, *parse_arch(a), m, name);
    }
  }
}

TEST(EpilogueKernelsNvrtcTest, PathsCompileWithoutSpills) {
  const bool full = full_matrix();
  int i = 0;
  for (const char* text : kCases) {
    const KernelSpec s = spec_of(text);
    for (int ai = 0; ai < 4; ++ai) {
      if (!full && ai != i % 4) continue;
      const std::vector<int64_t> ms =
          full ? std::vector<int64_t>{4096, 256, 64, 16, 1} : std::vector<int64_t>{4096, 1};
      for (int64_t m : ms) compile_ok(s, *parse_arch(kArches[ai]), m, text);
    }
    ++i;
  }
}

// What the functor becomes: the epilogue's functions and vector loads in the PTX; GLU outputs stored
// one element per (gate, up) pair.
TEST(EpilogueKernelsNvrtcTest, FunctorIsInlinedIntoTheStores) {
  const KernelSpec s = spec_of(read_example("gpt_oss_swiglu_experts.kiln"));
  const CompiledKernel r = compile_ok(s, *parse_arch("sm_80"), 256, "gpt-oss (ptx)", /*want_ptx=*/true);
  EXPECT_THAT(r.ptx, HasSubstr("ld.global.nc.u16"));  // bf16 biases
  EXPECT_THAT(r.ptx, HasSubstr("ld.global.nc.f32"));  // f32 router weights (and scales)
  EXPECT_THAT(r.ptx, HasSubstr("ex2.approx"));        // expf of the sigmoid
  EXPECT_THAT(r.ptx, HasSubstr("st.global.u16"));     // one bf16 per pair
}

// The same on the sm90 family: an FP8 grouped SwiGLU with per-expert biases and router weights runs its
// functor in the wgmma kernel's epilogue, one bf16 per (gate, up) pair.
TEST(EpilogueKernelsNvrtcTest, Sm90FunctorIsInlinedIntoTheStores) {
  const KernelSpec s = spec_of(
      "grouped_gemm[experts=32,layout=offsets] a=e4m3:m b=e4m3:n out=bf16 gate_up=interleaved "
      "epilogue=\"g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
      "out = g * sigmoid(1.702 * g) * (u + 1.0) * scale[m]\"");
  const Arch h = *parse_arch("sm_90a");
  ASSERT_TRUE(sm90_supports(s, h));
  for (int64_t m : {4096, 64}) {
    const CompiledKernel r = compile_ok(s, h, m, "sm90 swiglu (ptx)", /*want_ptx=*/true);
    EXPECT_THAT(r.ptx, HasSubstr("wgmma.mma_async"));
    EXPECT_THAT(r.ptx, HasSubstr("ld.global.nc.u16"));  // bf16 biases
    EXPECT_THAT(r.ptx, HasSubstr("ex2.approx"));        // expf of the sigmoid
    EXPECT_THAT(r.ptx, HasSubstr("st.global.u16"));     // one bf16 per pair
  }
}

}  // namespace
}  // namespace kiln

// nvrtc tier: every quantize spec kiln implements compiles with NVRTC alone for sm_90a, sm_89, sm_86 and
// sm_80 without spills, and the bitwise-critical arithmetic survives compilation: the PTX keeps its
// explicitly rounded mul.rn / div.rn (no FMA contraction: common/encode.cuh), uses the hardware
// E4M3 conversion on sm_89+ and not below. CI compiles a sample (each spec on one arch, rotating);
// KILN_NVRTC_FULL=1 compiles every spec x arch. Needs the CUDA toolkit's NVRTC, no GPU.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "common/env.hpp"
#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/quantize_plan.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {


const char* const kArches[] = {"sm_90a", "sm_89", "sm_86", "sm_80"};

const char* const kSpecs[] = {
    "quantize a=bf16 out=e4m3:tensor",
    "quantize a=f32 out=e4m3:m",
    "quantize a=bf16 out=e4m3:m transpose=true",
    "quantize a=f16 out=e4m3:m transpose=true",
    "quantize a=bf16 out=e4m3:block1x128",
    "quantize a=bf16 out=e4m3:block1x128:ue8m0 transpose=true",
    "quantize[experts=8,layout=offsets] a=bf16 out=e4m3:block1x128 transpose=true",
    "quantize[experts=32,layout=masked] a=f16 out=e4m3:block1x128:ue8m0 transpose=true",
    "quantize a=f16 out=e4m3:block128x128:ue8m0",
    "quantize a=bf16 out=mxfp8",
    "quantize a=bf16 out=mxfp8 mx_round=floor transpose=true",
    "quantize a=bf16 out=mxfp4",
    "quantize a=bf16 out=nvfp4",
    "quantize a=f32 out=nvfp4 four_over_six=mse e4m3_bound=256 transpose=true",
    "quantize a=bf16 out=nvfp4 four_over_six=mae",
};

bool full_matrix() {
  auto v = env::get(env::kNvrtcFull);
  return v && *v == "1";
}

TEST(QuantizeNvrtcTest, EverySpecCompilesWithoutSpills) {
  const bool full = full_matrix();
  int i = 0;
  for (const char* text : kSpecs) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status().to_string();
    for (int a = 0; a < 4; ++a) {
      if (!full && a != i % 4) continue;
      auto arch = parse_arch(kArches[a]);
      ASSERT_TRUE(arch.ok()) << kArches[a];
      const std::string what = std::string(text) + " [" + kArches[a] + "]";
      auto k = emit_kernel(*spec, KernelFamily::kQuantize, quantize_config(), *arch);
      ASSERT_TRUE(k.ok()) << what << ": " << k.status().to_string();
      CompileOptions o;
      o.want_ptx = true;
      auto r = compile_cuda(k->source, *arch, o);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status().to_string();
      EXPECT_EQ(r->spill_stores, 0) << what << "\n" << r->log;
      EXPECT_EQ(r->spill_loads, 0) << what << "\n" << r->log;
      // No contraction of the once-rounded steps: every fp32 multiply is an explicit mul.rn.
      EXPECT_EQ(r->ptx.find("fma.rn.f32"), std::string::npos) << what << ": the PTX contracts an FMA";
      const bool fp8_codes = spec->out.format == Format::kE4m3 || spec->out.format == Format::kMxfp8 ||
                             spec->out.format == Format::kNvfp4;  // nvfp4: its UE4M3 scales
      if (fp8_codes) {
        const bool hw = r->ptx.find("cvt.rn.satfinite.e4m3x2.f32") != std::string::npos;
        EXPECT_EQ(hw, arch->sm() >= 89) << what << ": the hardware E4M3 conversion exists from sm_89 on";
      }
      std::cout << "[ registers ] " << what << ": " << r->registers << " registers\n";
    }
    ++i;
  }
}

}  // namespace
}  // namespace kiln

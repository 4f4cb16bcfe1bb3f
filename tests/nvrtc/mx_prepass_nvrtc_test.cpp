// nvrtc tier: the MXFP8 pre-pass's conversion kernel (templates/kernels/mx_dequant.cuh, family mx_dequant)
// compiles with NVRTC alone for sm_90a without spills; its PTX reads the codes with 8-byte loads, writes
// bf16 with 16-byte stores, converts through the hardware e4m3 -> f16 cvt, and waits for the previous
// kernel (griddepcontrol.wait) before any global access. The emitter refuses specs without MXFP8 operands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/spec/spec.hpp"
#include "kiln/kiln.hpp"

namespace kiln {
namespace {

using testing::HasSubstr;

KernelSpec spec_of(const char* text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}

TEST(MxPrepassNvrtcTest, ConversionKernelCompilesWithoutSpillsAndWaitsFirst) {
  for (const char* text :
       {"gemm a=mxfp8 b=mxfp8 out=bf16", "gemm a=mxfp8 b=mxfp8 out=f32 epilogue=\"out = acc + bias[n]\""}) {
    const KernelSpec spec = spec_of(text);
    const Arch arch = *parse_arch("sm_90a");
    auto k = emit_kernel(spec, KernelFamily::kMxDequant, TileConfig{}, arch);
    ASSERT_TRUE(k.ok()) << text << ": " << k.status().to_string();
    EXPECT_EQ(k->entry, "kiln_mx_dequant");
    EXPECT_EQ(k->threads, 256);
    EXPECT_THAT(k->source, HasSubstr("kernels/mx_dequant.cuh"));
    CompileOptions o;
    o.want_ptx = true;
    auto r = compile_cuda(k->source, arch, o);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().to_string();
    EXPECT_EQ(r->spill_stores, 0) << r->log;
    EXPECT_EQ(r->spill_loads, 0) << r->log;
    EXPECT_GT(r->registers, 0);
    std::printf("[ figures ] %s: kiln_mx_dequant %d registers\n", text, r->registers);
    const std::string& ptx = r->ptx;
    const size_t wait = ptx.find("griddepcontrol.wait;");
    ASSERT_NE(wait, std::string::npos);
    EXPECT_THAT(ptx, HasSubstr("griddepcontrol.launch_dependents;"));
    EXPECT_GT(ptx.find("ld.global"), wait) << "a global load before griddepcontrol.wait";
    EXPECT_GT(ptx.find("st.global"), wait) << "a global store before griddepcontrol.wait";
    EXPECT_THAT(ptx, HasSubstr("ld.global.nc.v2.u32"));
    EXPECT_THAT(ptx, HasSubstr("st.global.v4.u32"));
    EXPECT_THAT(ptx, HasSubstr("cvt.rn.f16x2.e4m3x2"));
    EXPECT_THAT(ptx, HasSubstr("cvt.rn.bf16x2.f32"));
  }
}

// The runtime sizes the conversion kernel's grid by its register count (runtime/mx_prepass.cpp): the
// compiled kernel the runtime loads must carry it, fresh and from the kernel cache.
TEST(MxPrepassNvrtcTest, RuntimeCompileReportsTheRegisterCount) {
  const std::string dir = testing::TempDir() + "kiln_mx_prepass_nvrtc_cache";
  std::filesystem::remove_all(dir);
  RuntimeOptions o;
  o.cache_dir = dir;
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  const KernelSpec spec = spec_of("gemm a=mxfp8 b=mxfp8 out=bf16");
  for (int pass = 0; pass < 2; ++pass) {
    auto k = (*rt)->compile(spec, KernelFamily::kMxDequant, TileConfig{}, *parse_arch("sm_90a"));
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_EQ(k->from_cache, pass == 1);
    EXPECT_GT(k->registers, 0) << (pass == 1 ? "from the cache" : "fresh");
    EXPECT_LE(k->registers, 64) << "fewer than 4 CTAs of 256 threads per SM";
    std::printf("[ figures ] runtime compile (%s): %d registers\n", pass == 1 ? "cache" : "fresh",
                k->registers);
  }
  std::filesystem::remove_all(dir);
}

TEST(MxPrepassNvrtcTest, EmitterRefusesSpecsWithoutMxfp8Operands) {
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:tensor b=e4m3:tensor out=bf16",
                           "gemm a=bf16 b=mxfp4 out=bf16"}) {
    auto k = emit_kernel(spec_of(text), KernelFamily::kMxDequant, TileConfig{}, *parse_arch("sm_90a"));
    ASSERT_FALSE(k.ok()) << text;
    EXPECT_THAT(k.status().to_string(), HasSubstr("MXFP8")) << text;
  }
}

}  // namespace
}  // namespace kiln

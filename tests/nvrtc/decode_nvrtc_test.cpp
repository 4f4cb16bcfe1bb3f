// nvrtc tier: the portable family's decode kernel (TileConfig::decode, templates/kernels/sm80_decode.cuh)
// compiles with NVRTC alone for sm_90a, sm_89 and sm_80, with no register spills, for every operand kind
// and scale it takes, over the shapes of config the H200 sweep times; the PTX streams W with
// ld.global.nc.L1::no_allocate and multiplies with mma.sync (FP8: the f16 mma after cvt on sm_90, the
// e4m3 / e5m2 mma on sm_89), with no cp.async ring. Needs the CUDA toolkit's NVRTC, no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TileConfig decode_cfg(const KernelSpec& spec, int bm, int bn, int segs, int warps, int in_flight = 2) {
  TileConfig c;
  c.decode = 1;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = segs * 64 / (format_is_fp8(spec.a.format) ? 1 : 2);
  c.stages = in_flight;
  c.warps_m = 1;
  c.warps_n = warps;
  c.group_m = 1;
  return c;
}

CompiledKernel compile_ok(const KernelSpec& spec, const TileConfig& cfg, const Arch& arch, bool want_ptx) {
  const std::string what = print_spec(spec) + " " + cfg.to_string() + " " + arch.name();
  auto k = emit_kernel(spec, KernelFamily::kSm80Gemm, cfg, arch);
  EXPECT_TRUE(k.ok()) << what << ": " << k.status().to_string();
  if (!k.ok()) return {};
  const char* header = cfg.decode == 2                   ? "kernels/sm90_decode.cuh"
                       : format_bits(spec.b.format) == 4 ? "kernels/sm80_decode_w4.cuh"
                                                         : "kernels/sm80_decode.cuh";
  EXPECT_THAT(k->source, HasSubstr(header)) << what;
  CompileOptions o;
  o.want_ptx = want_ptx;
  auto r = compile_cuda(k->source, arch, o);
  EXPECT_TRUE(r.ok()) << what << ": " << r.status().to_string();
  if (!r.ok()) return {};
  EXPECT_EQ(r->spill_stores, 0) << what << "\n" << r->log;
  EXPECT_EQ(r->spill_loads, 0) << what << "\n" << r->log;
  EXPECT_GT(r->registers, 0) << what;
  return *r;
}

KernelSpec spec_of(const char* text) {
  auto s = parse_spec(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? *s : KernelSpec{};
}

TEST(DecodeNvrtcTest, EveryOperandKindOnSm90a) {
  const Arch arch = *parse_arch("sm_90a");
  const char* specs[] = {"gemm a=bf16 b=bf16 out=bf16",
                         "gemm a=f16 b=f16 out=f32",
                         "gemm a=e4m3:tensor b=e5m2:tensor out=f16",
                         "gemm a=e4m3:m b=e4m3:n out=bf16",
                         "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                         "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32",
                         "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\""};
  for (const char* text : specs) {
    const KernelSpec spec = spec_of(text);
    const CompiledKernel r = compile_ok(spec, decode_cfg(spec, 8, 16, 2, 4), arch, /*want_ptx=*/true);
    EXPECT_THAT(r.ptx, HasSubstr("ld.global.nc.L1::no_allocate.L2::256B.v4.u32")) << text;
    EXPECT_THAT(r.ptx, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32")) << text;
    EXPECT_THAT(r.ptx, Not(HasSubstr("cp.async"))) << text;
    if (format_is_fp8(spec.a.format)) EXPECT_THAT(r.ptx, HasSubstr("cvt.rn.f16x2.e")) << text;
  }
}

// Every decode config the H200 sweep times (block_n 16 / 32 / 64, 2 / 4 / 8 segments, 2 / 4 / 8 warps,
// 8 or 16 tokens, 2 or 1 steps in flight) that check_config accepts compiles without spills: the
// register model is conservative.
TEST(DecodeNvrtcTest, TheSweptConfigsDoNotSpill) {
  const Arch arch = *parse_arch("sm_90a");
  int compiled = 0;
  for (const char* text : {"gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"}) {
    const KernelSpec spec = spec_of(text);
    for (int bm : {8, 16})
      for (int bn : {16, 32, 64})
        for (int segs : {2, 4, 8})
          for (int warps : {2, 4, 8})
            for (int in_flight : {2, 1}) {
              const TileConfig c = decode_cfg(spec, bm, bn, segs, warps, in_flight);
              if (!check_config(spec, arch, KernelFamily::kSm80Gemm, c).ok()) continue;
              // CI has 2 cores: every third config (all of them with KILN_NVRTC_FULL=1).
              const char* full = std::getenv("KILN_NVRTC_FULL");
              if ((full == nullptr || std::string(full) != "1") && (bn + segs + warps + bm + in_flight) % 3 != 0)
                continue;
              compile_ok(spec, c, arch, false);
              ++compiled;
            }
  }
  EXPECT_GT(compiled, 6);
}

// The warpgroup decode kernel (decode 2, templates/kernels/sm90_decode.cuh): wgmma with W's fragments in
// registers (m64n8k32 / m64n16k32 FP8), X through a swizzled shared tile, no FP8 conversion; no spills for
// the configs check_config accepts (a third of them here; all with KILN_NVRTC_FULL=1), the heaviest
// (bm16_bk512 at the register limit) always.
TEST(DecodeNvrtcTest, WarpgroupDecodeOnSm90a) {
  const Arch arch = *parse_arch("sm_90a");
  int compiled = 0;
  for (const char* text : {"gemm a=e4m3:tensor b=e4m3:tensor out=bf16", "gemm a=e5m2:m b=e4m3:n out=f32",
                           "gemm a=e4m3 b=e5m2:n out=f16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\""}) {
    const KernelSpec spec = spec_of(text);
    for (int bm : {8, 16})
      for (int bk : {128, 256, 512})
        for (int warps : {4, 8, 12, 16})
          for (int in_flight : {2, 1}) {
            TileConfig c = decode_cfg(spec, bm, 64, bk / 64, warps, in_flight);
            c.decode = 2;
            if (!check_config(spec, arch, KernelFamily::kSm80Gemm, c).ok()) continue;
            const char* full = std::getenv("KILN_NVRTC_FULL");
            const bool heaviest = bm == 16 && bk == 512;
            if ((full == nullptr || std::string(full) != "1") && (bm + bk / 64 + warps + in_flight) % 4 != 0 &&
                compiled > 0 && !heaviest)
              continue;
            const CompiledKernel r = compile_ok(spec, c, arch, compiled == 0);
            if (compiled == 0) {
              EXPECT_THAT(r.ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n" + std::to_string(bm) + "k32.f32"));
              EXPECT_THAT(r.ptx, Not(HasSubstr("cvt.rn.f16x2.e4m3x2")));
              EXPECT_THAT(r.ptx, HasSubstr("ld.global.nc.L1::no_allocate"));
            }
            ++compiled;
          }
  }
  EXPECT_GT(compiled, 6);
}

// Grouped problems (offsets / masked): the expert scan of scheduler/group_tile.cuh, per-expert W and scales.
TEST(DecodeNvrtcTest, GroupedLayouts) {
  const Arch arch = *parse_arch("sm_90a");
  for (const char* text : {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16",
                           "grouped_gemm[experts=6,layout=masked] a=e4m3:m b=e4m3:n out=f32",
                           "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16"}) {
    const KernelSpec spec = spec_of(text);
    compile_ok(spec, decode_cfg(spec, 16, 32, 2, 8), arch, false);
  }
}

// bf16 x MXFP4 / NVFP4 (templates/kernels/sm80_decode_w4.cuh) on sm_80 and sm_90a: every config check_config
// accepts over block_m 8 / 16 / 32, block_n 16 / 32 / 64, block_k 128 / 256, 2 / 4 / 8 warps, 1 or 2 steps in
// flight compiles without spills (a third of them; all with KILN_NVRTC_FULL=1), W streamed with 16-byte
// loads into bf16 mma.sync, no cp.async ring; grouped layouts with per-expert globals and an epilogue.
TEST(DecodeNvrtcTest, FourBitWeightsOnSm80AndSm90a) {
  int compiled = 0;
  const char* full = std::getenv("KILN_NVRTC_FULL");
  const bool all = full != nullptr && std::string(full) == "1";
  for (const char* arch_name : {"sm_90a", "sm_80"}) {
    const Arch arch = *parse_arch(arch_name);
    for (const char* text : {"gemm a=bf16 b=mxfp4 out=bf16", "gemm a=bf16 b=nvfp4 out=f32"}) {
      const KernelSpec spec = spec_of(text);
      for (int bm : {8, 16, 32})
        for (int bn : {16, 32, 64})
          for (int segs : {4, 8})
            for (int warps : {2, 4, 8})
              for (int in_flight : {2, 1}) {
                const TileConfig c = decode_cfg(spec, bm, bn, segs, warps, in_flight);
                if (!check_config(spec, arch, KernelFamily::kSm80Gemm, c).ok()) continue;
                if (!all && (bn + segs + warps + bm + in_flight + arch.sm()) % 3 != 0) continue;
                const CompiledKernel r = compile_ok(spec, c, arch, compiled == 0);
                if (compiled++ == 0) {
                  EXPECT_THAT(r.ptx, HasSubstr("ld.global.nc.L1::no_allocate.L2::256B.v4.u32")) << text;
                  EXPECT_THAT(r.ptx, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")) << text;
                  EXPECT_THAT(r.ptx, Not(HasSubstr("cp.async"))) << text;
                }
              }
    }
  }
  EXPECT_GT(compiled, 10);
  const Arch sm90a = *parse_arch("sm_90a");
  for (const char* text : {"grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16 epilogue=\"out = acc + bias[e,n]\"",
                           "grouped_gemm[experts=6,layout=masked] a=bf16 b=nvfp4 out=f16 nvfp4_global=expert"}) {
    const KernelSpec spec = spec_of(text);
    compile_ok(spec, decode_cfg(spec, 16, 32, 4, 4), sm90a, false);
  }
}

TEST(DecodeNvrtcTest, NativeFp8MmaOnSm89AndBf16OnSm80) {
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e5m2:tensor out=bf16");
  const CompiledKernel r89 = compile_ok(fp8, decode_cfg(fp8, 16, 32, 2, 4), *parse_arch("sm_89"), true);
  // W is the mma's A operand: its format (e5m2) first.
  EXPECT_THAT(r89.ptx, HasSubstr("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32"));
  const KernelSpec bf16 = spec_of("gemm a=bf16 b=bf16 out=f32");
  const CompiledKernel r80 = compile_ok(bf16, decode_cfg(bf16, 8, 32, 2, 4), *parse_arch("sm_80"), true);
  EXPECT_THAT(r80.ptx, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
  // FP8 below sm_89: refused before any code is generated.
  auto k = emit_kernel(fp8, KernelFamily::kSm80Gemm, decode_cfg(fp8, 8, 16, 2, 4), *parse_arch("sm_86"));
  ASSERT_FALSE(k.ok());
  EXPECT_THAT(k.status().message(), HasSubstr("tiled mainloop (decode 0)"));
}

// Programmatic dependent launch (runtime/runtime.cpp launches the portable family with it on sm_90+):
// the generated entry waits for the previous kernel before the kernel body's first global access and
// then lets the next one launch, on sm_90a; on sm_89 neither instruction exists (the runtime never
// sets the attribute there).
TEST(DecodeNvrtcTest, EntryWaitsForThePreviousKernelOnSm90Only) {
  const KernelSpec fp8 = spec_of("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  const TileConfig cfg = decode_cfg(fp8, 16, 16, 2, 4);
  const CompiledKernel hopper = compile_ok(fp8, cfg, *parse_arch("sm_90a"), true);
  const size_t wait = hopper.ptx.find("griddepcontrol.wait;");
  ASSERT_NE(wait, std::string::npos);
  EXPECT_THAT(hopper.ptx, HasSubstr("griddepcontrol.launch_dependents;"));
  for (const char* global :
       {"ld.global", "st.global", "cp.async.cg.shared.global", "cp.async.ca.shared.global"})
    EXPECT_GT(hopper.ptx.find(global), wait) << global << " before griddepcontrol.wait";
  const CompiledKernel ada = compile_ok(fp8, cfg, *parse_arch("sm_89"), true);
  EXPECT_THAT(ada.ptx, Not(HasSubstr("griddepcontrol")));
}

}  // namespace
}  // namespace kiln

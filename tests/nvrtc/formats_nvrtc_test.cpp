// nvrtc tier: the scaled-format pairings compile with NVRTC alone for sm_90a, sm_89, sm_86 and sm_80
// with no register spills — FP8 per-token x per-channel, DeepSeek FP8 blocks (f32 and ue8m0 scales),
// MXFP8, bf16 x MXFP4 / NVFP4 / FP8 weights, grouped offsets and masked layouts — and the reference
// kernel compiles for each. CI compiles a sample (every pairing on one arch, rotating, for a large
// and a decode M; the promotion and mixed paths on every arch); KILN_NVRTC_FULL=1 compiles the full
// pairing x arch x M-bucket matrix (on a GPU machine). Needs the CUDA toolkit's NVRTC, no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "common/env.hpp"
#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const char* const kArches[] = {"sm_90a", "sm_89", "sm_86", "sm_80"};

const char* const kPairings[] = {
    "gemm a=e4m3:m b=e4m3:n out=bf16",
    "gemm a=e5m2:m b=e4m3:tensor out=f16",
    "gemm a=e4m3:tensor b=e5m2:n out=f32",
    "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
    "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32",
    "gemm a=e4m3:block1x128 b=e4m3:n out=bf16",
    "gemm a=mxfp8 b=mxfp8 out=bf16",
    "gemm a=bf16 b=mxfp4 out=bf16",
    "gemm a=bf16 b=nvfp4 out=f32",
    "gemm a=bf16 b=e4m3:n out=bf16",
    "gemm a=bf16 b=e5m2:tensor out=f16",
    "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16",
    "grouped_gemm[experts=8,layout=masked] a=bf16 b=mxfp4 out=bf16",
    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=nvfp4 out=bf16 nvfp4_global=expert",
    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16",
    "grouped_gemm[experts=8,layout=masked] a=f16 b=f16 out=f32",
    // 16-bit activations on the mixed mainloop: f16 (split into two bf16), MXFP8 weights, grouped FP8.
    "gemm a=f16 b=mxfp4 out=f16",
    "gemm a=f16 b=nvfp4 out=bf16",
    "gemm a=f16 b=e4m3:n out=f32",
    "gemm a=bf16 b=mxfp8 out=bf16",
    "gemm a=f16 b=mxfp8 out=f32",
    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=e4m3:n out=bf16",
    "grouped_gemm[experts=8,layout=masked] a=f16 b=mxfp4 out=bf16",
    // FP8 activations x 4-bit weights (W4A8).
    "gemm a=e4m3:m b=mxfp4 out=bf16",
    "grouped_gemm[experts=8,layout=offsets] a=e4m3:m b=nvfp4 out=bf16",
    "gemm a=mxfp8 b=mxfp4 out=f32",
    // DeepSeek FP8 blocks with a 16-bit or 4-bit partner (promoted per 128 K on the mixed mainloop).
    "gemm a=bf16 b=e4m3:block128x128 out=bf16",
    "gemm a=e4m3:block1x128 b=mxfp4 out=bf16",
    // FP8 / MXFP8 activations x 16-bit weights; MXFP8 with an FP8 partner (mixed mainloop).
    "gemm a=e4m3:m b=bf16 out=bf16",
    "gemm a=mxfp8 b=f16 out=f16",
    "gemm a=e4m3:block1x128 b=f16 out=f32",
    "gemm a=mxfp8 b=e4m3:block128x128 out=f32",
    "gemm a=e4m3:m b=mxfp8 out=bf16",
    "grouped_gemm[experts=8,layout=offsets] a=e5m2:tensor b=bf16 out=bf16",
};

bool full_matrix() {
  auto v = env::get(env::kNvrtcFull);
  return v && *v == "1";
}

KernelSpec spec_of(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

// Emits and compiles one kernel; fails the test on a compile error or any spill.
CompiledKernel compile_ok(const KernelSpec& spec, KernelFamily family, const TileConfig& cfg,
                          const Arch& arch, const std::string& what, bool want_ptx = false) {
  auto k = emit_kernel(spec, family, cfg, arch);
  EXPECT_TRUE(k.ok()) << what << ": " << k.status().to_string();
  if (!k.ok()) return {};
  CompileOptions o;
  o.want_ptx = want_ptx;
  auto r = compile_cuda(k->source, arch, o);
  EXPECT_TRUE(r.ok()) << what << ": " << r.status().to_string();
  if (!r.ok()) return {};
  EXPECT_EQ(r->spill_stores, 0) << what << "\n" << r->log;
  EXPECT_EQ(r->spill_loads, 0) << what << "\n" << r->log;
  EXPECT_GT(r->registers, 0) << what << "\n" << r->log;
  EXPECT_LE(r->registers, 255) << what;
  std::cout << "[ registers ] " << what << ": " << r->registers << " registers, " << r->spill_stores
            << " bytes spill stores\n";
  return *r;
}

// The sample CI compiles: pairing i on arch i % 4 for M = 4096 and M = 1; the full matrix: every arch
// and the M buckets 4096, 256, 64, 16, 1.
TEST(FormatsNvrtcTest, DefaultConfigsCompileWithoutSpills) {
  const bool full = full_matrix();
  int i = 0;
  for (const char* text : kPairings) {
    const KernelSpec s = spec_of(text);
    for (int ai = 0; ai < 4; ++ai) {
      if (!full && ai != i % 4) continue;
      const Arch arch = *parse_arch(kArches[ai]);
      std::vector<int64_t> ms = full ? std::vector<int64_t>{4096, 256, 64, 16, 1} : std::vector<int64_t>{4096, 1};
      for (int64_t m : ms) {
        // The portable family's default (on sm_90a the planner picks sm90 for FP8 row and block scales;
        // tests/nvrtc/sm90_gemm_nvrtc_test.cpp compiles those).
        const TileConfig cfg = default_config(s, arch, KernelFamily::kSm80Gemm, {m, 5760, 2944});
        compile_ok(s, KernelFamily::kSm80Gemm, cfg, arch,
                   std::string(text) + " m=" + std::to_string(m) + " " + cfg.to_string() + " on " + arch.name());
      }
    }
    ++i;
  }
}

// The register-heaviest paths on every arch: promotion with the integer FP8 conversion (sm_80/86) and
// the mixed mainloop's NVFP4 scales, at the default large-problem config.
TEST(FormatsNvrtcTest, HeaviestPathsCompileOnEveryArch) {
  for (const char* text : {"gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16", "gemm a=mxfp8 b=mxfp8 out=f32",
                           "gemm a=bf16 b=nvfp4 out=bf16", "gemm a=f16 b=nvfp4 out=f32"}) {
    const KernelSpec s = spec_of(text);
    for (const char* a : kArches) {
      const Arch arch = *parse_arch(a);
      const TileConfig cfg = default_config(s, arch, KernelFamily::kSm80Gemm, {4096, 7168, 7168});
      compile_ok(s, KernelFamily::kSm80Gemm, cfg, arch, std::string(text) + " " + cfg.to_string() + " on " + a);
    }
  }
}

// The instructions each new path is designed to use.
TEST(FormatsNvrtcTest, UsesTheDesignedInstructions) {
  struct Case {
    const char* arch;
    const char* spec;
    std::vector<const char*> expect;
  };
  const Case cases[] = {
      // FP4 bytes gathered with prmt from ld.shared.v4, dequantized by two bf16 fmas, bf16 mma.
      {"sm_80", "gemm a=bf16 b=mxfp4 out=bf16",
       {"ld.shared.v4.u32", "prmt.b32", "fma.rn.bf16x2", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        "ld.global.nc.u8"}},
      // f16 activations: each A fragment split by cvt into two bf16 halves, both issued on the bf16 mma.
      {"sm_86", "gemm a=f16 b=mxfp4 out=f16",
       {"cvt.f32.f16", "cvt.rn.bf16x2.f32", "fma.rn.bf16x2", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"}},
      // W4A8: A's e4m3 words read per lane from shared memory, both operands converted to bf16.
      {"sm_80", "gemm a=e4m3:m b=mxfp4 out=bf16",
       {"ld.shared.u32", "prmt.b32", "fma.rn.bf16x2", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"}},
      // DeepSeek blocks on sm_89: native FP8 mma into tmp, promotion by fma.
      {"sm_89", "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
       {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "fma.rn.f32", "ld.global.nc.f32"}},
      // Grouped offsets: the warp scan of the expert offsets.
      {"sm_90a", "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16",
       {"shfl.sync.up.b32", "vote.sync.ballot.b32", "ld.global.nc.s32"}},
  };
  for (const Case& c : cases) {
    const KernelSpec s = spec_of(c.spec);
    const Arch a = *parse_arch(c.arch);
    const CompiledKernel r = compile_ok(s, KernelFamily::kSm80Gemm,
                                       default_config(s, a, KernelFamily::kSm80Gemm, {256, 256, 256}), a,
                                       std::string(c.spec) + " on " + c.arch, /*want_ptx=*/true);
    for (const char* e : c.expect) EXPECT_THAT(r.ptx, HasSubstr(e)) << c.spec << " on " << c.arch;
  }
}

TEST(FormatsNvrtcTest, ReferenceCompilesForEveryPairing) {
  const bool full = full_matrix();
  int i = 0;
  for (const char* text : kPairings) {
    KernelSpec s = spec_of(text);
    s.out = OperandSpec{Format::kF32, ScaleGranularity::kNone, ScaleType::kNone};  // what run_check uses
    for (int ai = 0; ai < 4; ++ai) {
      if (!full && ai != i % 4) continue;
      compile_ok(s, KernelFamily::kReferenceGemm, TileConfig{}, *parse_arch(kArches[ai]),
                 std::string("reference ") + text + " on " + kArches[ai]);
    }
    ++i;
  }
}

}  // namespace
}  // namespace kiln

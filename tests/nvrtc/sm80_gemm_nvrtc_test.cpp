// nvrtc tier: the sm80 family and the reference kernel compile with NVRTC alone (templates/ as the
// only headers) for sm_90a, sm_89, sm_86 and sm_80, for every operand pairing and output format, with
// no register spills; the PTX holds the mma the design says each arch uses. Needs the CUDA toolkit's
// NVRTC, no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>

#include <cstdint>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const char* const kArches[] = {"sm_90a", "sm_89", "sm_86", "sm_80"};

struct Pairing {
  const char* name;  // test-name fragment
  const char* operands;
};
const Pairing kPairings[] = {
    {"bf16", "a=bf16 b=bf16"},
    {"f16", "a=f16 b=f16"},
    {"e4m3_e4m3", "a=e4m3:tensor b=e4m3:tensor"},
    {"e4m3_e5m2", "a=e4m3:tensor b=e5m2:tensor"},
    {"e5m2_e4m3", "a=e5m2:tensor b=e4m3:tensor"},
    {"e5m2_e5m2", "a=e5m2:tensor b=e5m2:tensor"},
};
const char* const kOuts[] = {"bf16", "f16", "f32"};

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
  EXPECT_EQ(r->cubin.substr(0, 4), std::string("\x7f"
                                               "ELF"))
      << what;
  return *r;
}

// CI (2 cores) compiles a sample of the matrix; KILN_NVRTC_FULL=1 (GPU machines, before a release)
// compiles all of it.
bool full_matrix() {
  const char* v = std::getenv("KILN_NVRTC_FULL");
  return v != nullptr && std::string(v) == "1";
}

class Sm80GemmNvrtcTest : public ::testing::TestWithParam<std::tuple<const char*, Pairing>> {
 protected:
  Arch arch() const { return *parse_arch(std::get<0>(GetParam())); }
  const Pairing& pairing() const { return std::get<1>(GetParam()); }
  KernelSpec spec(const char* out) const {
    return spec_of(std::string("gemm ") + pairing().operands + " out=" + out);
  }
};

TEST_P(Sm80GemmNvrtcTest, DefaultConfigCompilesWithoutSpillsForEveryOutput) {
  // The large-problem default for every output format, then the other M buckets' defaults.
  struct Run {
    const char* out;
    int64_t m;
  };
  const Run runs[] = {{"bf16", 4096}, {"f16", 4096}, {"f32", 4096}, {"bf16", 1024},
                      {"f32", 64},    {"bf16", 32},  {"f16", 1}};
  const size_t n_runs = full_matrix() ? std::size(runs) : 2;  // sample: the large default + decode
  for (size_t i = 0; i < n_runs; ++i) {
    const Run& run = i == 1 && !full_matrix() ? runs[std::size(runs) - 1] : runs[i];
    const char* out = run.out;
    const KernelSpec s = spec(out);
    const TileConfig cfg = default_config(s, arch(), KernelFamily::kSm80Gemm, {run.m, 7168, 7168});
    const std::string what =
        std::string(pairing().operands) + " out=" + out + " " + cfg.to_string() + " on " + arch().name();
    const CompiledKernel r = compile_ok(s, KernelFamily::kSm80Gemm, cfg, arch(), what);
    std::cout << "[ registers ] " << what << ": " << r.registers << " registers, " << r.spill_stores
              << " bytes spill stores, " << r.spill_loads << " bytes spill loads\n";
  }
}

TEST_P(Sm80GemmNvrtcTest, OtherConfigsCompileWithoutSpills) {
  if (!full_matrix() && std::string(pairing().name) != std::string(kPairings[0].name) &&
      std::string(pairing().name) != std::string(kPairings[2].name)) {
    GTEST_SKIP() << "sampled out in CI; KILN_NVRTC_FULL=1 compiles every pairing";
  }
  const KernelSpec s = spec("bf16");
  const int eb = format_bits(s.a.format) / 8;
  // (block_m, block_n, row bytes, stages, warps_m, warps_n): decode, square, wide, 128-byte rows.
  const int shapes[][6] = {{16, 128, 64, 4, 1, 4},
                           {64, 64, 128, 3, 2, 2},
                           {128, 256, 64, 3, 2, 4},
                           {128, 128, 128, 3, 2, 4},
                           {256, 128, 64, 3, 4, 2}};
  int compiled = 0;
  for (const auto& sh : shapes) {
    TileConfig c;
    c.block_m = sh[0];
    c.block_n = sh[1];
    c.block_k = sh[2] / eb;
    c.stages = sh[3];
    c.warps_m = sh[4];
    c.warps_n = sh[5];
    // e.g. 64x64 warp tiles with FP8 below sm_89
    if (!check_config(s, arch(), KernelFamily::kSm80Gemm, c).ok()) continue;
    compile_ok(s, KernelFamily::kSm80Gemm, c, arch(),
               std::string(pairing().operands) + " " + c.to_string() + " on " + arch().name());
    ++compiled;
  }
  EXPECT_GE(compiled, 3);
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<const char*, Pairing>>& info) {
  return std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(AllArchesAndPairings, Sm80GemmNvrtcTest,
                         ::testing::Combine(::testing::ValuesIn(kArches), ::testing::ValuesIn(kPairings)),
                         param_name);

// The mma each arch is designed to use (templates/kernels/sm80_gemm.cuh, "Design").
TEST(Sm80GemmPtxTest, UsesTheDesignedMmaPerArch) {
  struct Case {
    const char* arch;
    const char* operands;
    std::vector<const char*> expect;
  };
  const Case cases[] = {
      {"sm_80",
       "a=bf16 b=bf16",
       {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "ldmatrix", "cp.async.cg"}},
      {"sm_86", "a=f16 b=f16", {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}},
      {"sm_89", "a=e4m3:tensor b=e5m2:tensor", {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"}},
      {"sm_90a",
       "a=e5m2:tensor b=e4m3:tensor",
       {"cvt.rn.f16x2.e5m2x2", "cvt.rn.f16x2.e4m3x2", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}},
      {"sm_80",
       "a=e4m3:tensor b=e4m3:tensor",
       {"fma.rn.bf16x2", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "vote.sync.any.pred"}},
  };
  for (const Case& c : cases) {
    const KernelSpec s = spec_of(std::string("gemm ") + c.operands + " out=bf16");
    const Arch a = *parse_arch(c.arch);
    const TileConfig cfg = default_config(s, a, KernelFamily::kSm80Gemm, {256, 256, 256});
    const CompiledKernel r = compile_ok(s, KernelFamily::kSm80Gemm, cfg, a,
                                       std::string(c.operands) + " on " + c.arch, /*want_ptx=*/true);
    for (const char* e : c.expect) EXPECT_THAT(r.ptx, HasSubstr(e)) << c.operands << " on " << c.arch;
    if (std::string(c.arch) != "sm_89") EXPECT_THAT(r.ptx, ::testing::Not(HasSubstr("m16n8k32"))) << c.arch;
  }
}

TEST(ReferenceGemmNvrtcTest, CompilesWithoutSpillsOnEveryArch) {
  const char* specs[] = {"gemm a=bf16 b=bf16 out=f32", "gemm a=e4m3:tensor b=e5m2:tensor out=bf16",
                         "gemm a=f16 b=e4m3:tensor out=f16", "gemm a=e5m2:tensor b=e5m2:tensor out=f32"};
  for (const char* arch : kArches) {
    for (const char* text : specs) {
      const CompiledKernel r = compile_ok(spec_of(text), KernelFamily::kReferenceGemm, TileConfig{},
                                         *parse_arch(arch), std::string(text) + " on " + arch);
      std::cout << "[ registers ] reference " << text << " on " << arch << ": " << r.registers << "\n";
    }
  }
}

}  // namespace
}  // namespace kiln

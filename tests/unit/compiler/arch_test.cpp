// tests/unit/compiler/arch_test.cpp — per-arch facts as data (kiln/arch.hpp, compiler/plan/gpus.hpp) and a plan
// that counts its waves and split-K factors over the SMs of the arch it is for.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compiler/plan/gpus.hpp"
#include "compiler/plan/plan.hpp"
#include "compiler/plan/sm90_plan.hpp"

namespace kiln {
namespace {

KernelSpec bf16_gemm() {
  auto s = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

TEST(ArchTest, ANamedArchTakesItsReferencePart) {
  auto a = parse_arch("sm_90a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->sm_count, 0);  // not read from a device
  EXPECT_EQ(a->sms(), 132);   // the reference sm_90 part (H200)
  EXPECT_EQ(a->max_smem_per_block(), 232448);
  EXPECT_GT(a->l2(), 0);
  EXPECT_GT(a->dram(), 0);
  EXPECT_GT(a->tensor_tflops(), 0);
  auto ampere = parse_arch("sm_80");
  ASSERT_TRUE(ampere.ok());
  EXPECT_EQ(ampere->sms(), 108);  // A100
  EXPECT_EQ(ampere->max_smem_per_block(), 166912);
}

TEST(ArchTest, APartsFactsReplaceTheReferencePart) {
  const Arch pcie = arch_for_part(90, 114);
  EXPECT_EQ(pcie.name(), "sm_90a");
  EXPECT_EQ(pcie.sms(), 114);
  const GpuInfo* g = find_gpu(90, 114);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->id, "h100-pcie");
  EXPECT_EQ(pcie.dram(), g->dram_gbps);
  // A part the table does not know keeps its SM count; the reference part's rates stand in.
  const Arch unknown = arch_for_part(90, 100);
  EXPECT_EQ(unknown.sms(), 100);
  EXPECT_EQ(unknown.dram(), reference_gpu(unknown)->dram_gbps);
}

TEST(ArchTest, AnSmCapBoundsTheSms) {
  Arch a = arch_for_part(90, 132);
  a.sm_cap = 100;
  EXPECT_EQ(a.sms(), 100);
  a.sm_cap = 200;  // a cap above the device's count changes nothing
  EXPECT_EQ(a.sms(), 132);
}

TEST(ArchTest, EqualityIsTheInstructionSet) {
  // A cubin for sm_90a runs on every sm_90 part: the facts do not enter equality (cache and tuning
  // lookups compare instruction sets).
  EXPECT_EQ(arch_for_part(90, 114), arch_for_part(90, 132));
  EXPECT_FALSE(arch_for_part(90, 132) == arch_for_part(89, 128));
}

TEST(GpuTableTest, IdsAreUniqueAndFactsPositive) {
  std::set<std::string> ids;
  for (const GpuInfo& g : known_gpus()) {
    EXPECT_TRUE(ids.insert(std::string(g.id)).second) << g.id;
    EXPECT_GT(g.sm_count, 0) << g.id;
    EXPECT_GT(g.smem_per_block, 48 * 1024) << g.id;
    EXPECT_GE(g.smem_per_sm, g.smem_per_block) << g.id;
    EXPECT_GT(g.l2_bytes, 0) << g.id;
    EXPECT_GT(g.dram_gbps, 0) << g.id;
    EXPECT_GT(g.bf16_tflops, 0) << g.id;
    EXPECT_EQ(find_gpu(g.id), &g);
  }
  for (int cc : {80, 86, 89, 90}) {
    Arch a = arch_for_device(cc / 10, cc % 10);
    ASSERT_NE(reference_gpu(a), nullptr) << cc;
  }
}

// 64 x 4032 x 4096 bf16: 63 tiles of 64 x 64, fewer than the SMs of every sm_90 part. The planner splits
// K so that about one unit per SM reads the weights: floor(SMs / 63) splits (at most K / 64 / 8 = 8).
TEST(Sm90PlanArchTest, SplitKIsCountedOverTheArchsSms) {
  const KernelSpec spec = bf16_gemm();
  const ProblemSizes sizes{64, 4032, 4096};
  EXPECT_EQ(sm90_default_config(spec, arch_for_part(90, 132), sizes).split_k, 2);  // H200 / H100 SXM
  EXPECT_EQ(sm90_default_config(spec, arch_for_part(90, 114), sizes).split_k, 1);  // H100 PCIe
  EXPECT_EQ(sm90_default_config(spec, arch_for_part(90, 78), sizes).split_k, 1);   // H20
  EXPECT_EQ(sm90_default_config(spec, arch_for_part(90, 264), sizes).split_k, 4);  // a fake part
  Arch capped = arch_for_part(90, 132);
  capped.sm_cap = 100;
  EXPECT_EQ(sm90_default_config(spec, capped, sizes).split_k, 1);
  // A named arch plans as its reference part.
  EXPECT_EQ(sm90_default_config(spec, *parse_arch("sm_90a"), sizes), sm90_default_config(spec, arch_for_part(90, 132), sizes));
}

// 4096 x 2112: 128 x 256 tiles leave the last column a quarter used; whether a narrower tile wastes
// less depends on how the tiles fill the SMs' waves, so the choice is a function of the SM count.
TEST(Sm90PlanArchTest, WideTilesNeedAWaveOfTheArchsSms) {
  const KernelSpec spec = bf16_gemm();
  // 8 x 1 tiles of 128 x 256 at 1024 x 256: fewer than any part's SMs, so no wide tile; a fake part
  // with 8 SMs fills a wave with them.
  const ProblemSizes sizes{1024, 256, 4096};
  EXPECT_NE(sm90_default_config(spec, arch_for_part(90, 132), sizes).block_n, 256);
  EXPECT_EQ(sm90_default_config(spec, arch_for_part(90, 8), sizes).block_n, 256);
}

}  // namespace
}  // namespace kiln

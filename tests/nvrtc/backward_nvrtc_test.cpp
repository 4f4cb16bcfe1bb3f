// nvrtc tier: the backward kernels (dgrad / wgrad, MN-major operands: compiler/plan/gemm_view.hpp) compile
// with NVRTC alone for sm_90a with no register spills (and no stack in the sm90 kernels): the kernels a
// default plan picks for a large and a small M bucket of dense bf16 dgrad, dense f16 wgrad, grouped offsets
// bf16 dgrad, grouped masked f16 dgrad and grouped wgrad (offsets, masked) at M x N x K = 4096 x 7168 x
// 2048, a spread of the tuner's space for the dense specs (at most 12 configs each), four pinned grouped
// wgrad configs, two accumulate=true kernels, and the reference kernel of each spec: at most 48 compiles, on
// every core; and the portable backward kernel for sm_80 and sm_90a (high_precision, grouped
// wgrad, mode dequantized, accumulate). Needs the CUDA toolkit's NVRTC, no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/gpus.hpp"
#include "compiler/plan/planner.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char* const kSpecs[] = {
    "gemm a=bf16 b=bf16 out=bf16 pass=dgrad",
    "gemm a=f16 b=f16 out=f32 pass=wgrad",
    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16 pass=dgrad",
    "grouped_gemm[experts=4,layout=masked] a=f16 b=f16 out=f16 pass=dgrad",
    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad",
    "grouped_gemm[experts=4,layout=masked] a=f16 b=f16 out=bf16 pass=wgrad",
};
const ProblemSizes kSizes{4096, 7168, 2048};

Arch h200() { return arch_with_gpu(*parse_arch("sm_90a"), *find_gpu("h200")); }

KernelSpec spec_of(const std::string& text) {
  auto r = parse_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : KernelSpec{};
}

struct Job {
  KernelSpec spec;
  KernelFamily family;
  TileConfig cfg;
  std::string what;
  std::optional<Arch> arch;  // default: the H200's sm_90a
};

StatusOr<CompiledKernel> emit_and_compile(const Job& j) {
  const Arch a = j.arch.value_or(h200());
  auto k = emit_kernel(j.spec, j.family, j.cfg, a);
  if (!k.ok()) return k.status();
  return compile_cuda(k->source, a, CompileOptions{});
}

// Compiles every job on every core (NVRTC compiles independent programs concurrently), then checks each
// on the test's thread: no compile error and no spill; for the sm90 family also no stack, and that ptxas
// kept setmaxnreg (C7508) and did not serialize the wgmmas.
void compile_all_clean(const std::vector<Job>& jobs) {
  std::vector<std::optional<StatusOr<CompiledKernel>>> done(jobs.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  const unsigned workers = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  for (unsigned t = 0; t < workers; ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < jobs.size(); i = next++) done[i].emplace(emit_and_compile(jobs[i]));
    });
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string& what = jobs[i].what;
    const StatusOr<CompiledKernel>& r = *done[i];
    EXPECT_TRUE(r.ok()) << what << ": " << r.status().to_string();
    if (!r.ok()) continue;
    EXPECT_EQ(r->spill_stores, 0) << what << "\n" << r->log;
    EXPECT_EQ(r->spill_loads, 0) << what << "\n" << r->log;
    EXPECT_GT(r->registers, 0) << what << "\n" << r->log;
    if (jobs[i].family == KernelFamily::kSm90Gemm) {
      EXPECT_EQ(r->stack_frame, 0) << what << "\n" << r->log;
      EXPECT_THAT(r->log, Not(HasSubstr("C7508"))) << what << ": ptxas ignored setmaxnreg\n" << r->log;
      EXPECT_THAT(r->log, Not(HasSubstr("serialized"))) << what << ": ptxas serialized the wgmmas\n"
                                                        << r->log;
    }
    std::cout << "[ registers ] " << what << ": " << r->registers << " registers, " << r->compile_ms
              << " ms\n";
  }
}

TEST(BackwardNvrtcTest, PlannedTunedAndReferenceKernelsCompileWithoutSpills) {
  const Arch a = h200();
  std::vector<Job> jobs;
  for (const char* text : kSpecs) {
    const KernelSpec s = spec_of(text);
    // The default plan's kernels for its largest M bucket and a decode-sized one (deduplicated).
    auto p = make_plan(s, kSizes, a, PlanOptions{}, nullptr);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
    std::vector<TileConfig> planned;
    for (int64_t m : {int64_t{8192}, int64_t{8}}) {
      const int b = bucket_index(m);
      EXPECT_EQ(p->families[b], KernelFamily::kSm90Gemm) << text << " bucket " << m;
      if (std::find(planned.begin(), planned.end(), p->configs[b]) != planned.end()) continue;
      planned.push_back(p->configs[b]);
      jobs.push_back({s, KernelFamily::kSm90Gemm, p->configs[b],
                      std::string(text) + " bucket " + std::to_string(m) + " " + p->configs[b].to_string()});
    }
    // A spread of the tuner's space for the dense specs: every stride-th config (stride >= 8), at most 12.
    if (s.op == Op::kGemm) {
      std::vector<TileConfig> space;
      for (const TileConfig& c : sm90_config_space(s, a))
        if (check_config(s, a, KernelFamily::kSm90Gemm, c).ok()) space.push_back(c);
      EXPECT_GE(space.size(), 12u) << text;
      const size_t stride = std::max<size_t>(8, (space.size() + 11) / 12);
      for (size_t i = 0; i < space.size() && i / stride < 12; i += stride)
        jobs.push_back(
            {s, KernelFamily::kSm90Gemm, space[i], std::string(text) + " pinned " + space[i].to_string()});
    }
    jobs.push_back({s, KernelFamily::kReferenceGemm, TileConfig{}, std::string("reference ") + text});
  }
  // Grouped wgrad (the zeroing of an expert's partial last atom) in both warpgroup layouts, one consumer
  // and TMA stores.
  const KernelSpec gw = spec_of("grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=f32 pass=wgrad");
  for (const char* name : {"bm128_bn256_bk64_s4_w4x2_g8", "bm64_bn128_bk64_s8_w4x1_g8", "bm256_bn128_bk64_s4_w8x1_g8",
                           "bm128_bn128_bk64_s5_w8x1_g8_t"}) {
    const TileConfig c = *config_from_name(name);
    ASSERT_TRUE(check_config(gw, a, KernelFamily::kSm90Gemm, c).ok()) << name;
    jobs.push_back({gw, KernelFamily::kSm90Gemm, c, std::string("grouped wgrad pinned ") + name});
  }
  // accumulate=true: TMA reduce-adds (f32) and direct read-add-stores (bf16).
  for (const char* text : {"gemm a=bf16 b=bf16 out=f32 pass=wgrad accumulate=true",
                           "grouped_gemm[experts=8,layout=offsets] a=bf16 b=bf16 out=bf16 pass=wgrad accumulate=true"}) {
    const KernelSpec s = spec_of(text);
    const TileConfig c = *config_from_name(s.out.format == Format::kF32 ? "bm128_bn128_bk64_s5_w8x1_g8_t"
                                                                         : "bm128_bn256_bk64_s4_w8x1_g8");
    ASSERT_TRUE(check_config(s, a, KernelFamily::kSm90Gemm, c).ok()) << text;
    jobs.push_back({s, KernelFamily::kSm90Gemm, c, std::string(text) + " " + c.to_string()});
  }
  EXPECT_LE(jobs.size(), 48u);
  compile_all_clean(jobs);
}

// Quantized wgrad (two FP8 1x128 column-wise copies, per-column b scales staged beside each stage), dense
// and grouped: the default configs of a large and a small problem, every config of the tuner's space that check_config
// takes (a spread of at most 14: one or two consumer warpgroups, 64 / 128 rows and columns, split-K), f32 and
// E8M0 scales, bf16 / f32 outputs, accumulate, and the reference kernel.
TEST(BackwardNvrtcTest, QuantizedWgradKernelsCompileWithoutSpills) {
  const Arch a = h200();
  std::vector<Job> jobs;
  const char* const specs[] = {
      "gemm a=e4m3:block1x128 b=e4m3:block1x128 out=f32 pass=wgrad",
      "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block1x128:ue8m0 out=bf16 pass=wgrad",
      "gemm a=e4m3:block1x128 b=e5m2:block1x128 out=f32 pass=wgrad accumulate=true",
      // Grouped: the padded copies of quantize[experts=E,...] transpose=true.
      "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block1x128 out=bf16 pass=wgrad",
      "grouped_gemm[experts=32,layout=masked] a=e4m3:block1x128:ue8m0 b=e4m3:block1x128:ue8m0 out=f32 pass=wgrad "
      "accumulate=true",
  };
  for (const char* text : specs) {
    const KernelSpec s = spec_of(text);
    std::vector<TileConfig> cfgs;
    for (const ProblemSizes& sz : {kSizes, ProblemSizes{4096, 1024, 1024}}) {
      auto p = make_plan(s, sz, a, PlanOptions{}, nullptr);
      ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
      EXPECT_EQ(p->families[bucket_index(4096)], KernelFamily::kSm90Gemm) << text;
      cfgs.push_back(p->configs[bucket_index(4096)]);
    }
    if (s.out.format == Format::kF32 && !s.accumulate) {
      // A spread of the tuner's space: every stride-th valid config, at most 14.
      std::vector<TileConfig> space;
      for (const TileConfig& c : sm90_config_space(s, a))
        if (check_config(s, a, KernelFamily::kSm90Gemm, c).ok()) space.push_back(c);
      EXPECT_GE(space.size(), 8u) << text;
      const size_t stride = std::max<size_t>(1, (space.size() + 13) / 14);
      for (size_t i = 0; i < space.size(); i += stride) cfgs.push_back(space[i]);
    }
    std::sort(cfgs.begin(), cfgs.end(), [](const TileConfig& x, const TileConfig& y) {
      return x.to_string() < y.to_string();
    });
    cfgs.erase(std::unique(cfgs.begin(), cfgs.end()), cfgs.end());
    for (const TileConfig& c : cfgs)
      jobs.push_back({s, KernelFamily::kSm90Gemm, c, std::string(text) + " " + c.to_string()});
    jobs.push_back({s, KernelFamily::kReferenceGemm, TileConfig{}, std::string("reference ") + text});
  }
  EXPECT_GE(jobs.size(), 12u);
  EXPECT_LE(jobs.size(), 44u);
  compile_all_clean(jobs);
}

// The sm90 kernels of spec `text` at the plan's configs of a large and a small M bucket (one job per distinct
// config).
void add_sm90_bucket_jobs(const Arch& a, const char* text, std::vector<Job>& jobs) {
  const KernelSpec s = spec_of(text);
  auto p = make_plan(s, kSizes, a, PlanOptions{}, nullptr);
  ASSERT_TRUE(p.ok()) << text << ": " << p.status().to_string();
  std::vector<TileConfig> cfgs;
  for (int64_t m : {int64_t{8192}, int64_t{8}}) {
    EXPECT_EQ(p->families[bucket_index(m)], KernelFamily::kSm90Gemm) << text;
    cfgs.push_back(p->configs[bucket_index(m)]);
  }
  cfgs.erase(std::unique(cfgs.begin(), cfgs.end()), cfgs.end());
  for (const TileConfig& c : cfgs) jobs.push_back({s, KernelFamily::kSm90Gemm, c, std::string(text) + " " + c.to_string()});
}

// Quantized dgrad: the transpose of W (kernels/fp8_transpose.cuh) and the GEMM on dY and Wᵀ at the plan's
// configs of a large and a small M bucket, dense and grouped, every scale pairing the family takes.
TEST(BackwardNvrtcTest, QuantizedDgradKernelsCompileWithoutSpills) {
  const Arch a = h200();
  std::vector<Job> jobs;
  const char* const specs[] = {
      "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad",
      "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=f32 pass=dgrad accumulate=true",
      "gemm a=e5m2:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad",
      "gemm a=e4m3:tensor b=e4m3:tensor out=bf16 pass=dgrad",
      "gemm a=e5m2:m b=e4m3:tensor out=f32 pass=dgrad",
      "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16 pass=dgrad",
      "grouped_gemm[experts=4,layout=masked] a=e4m3:tensor b=e4m3:tensor out=bf16 pass=dgrad",
  };
  for (const char* text : specs) add_sm90_bucket_jobs(a, text, jobs);
  jobs.push_back({spec_of(specs[0]), KernelFamily::kFp8Transpose, TileConfig{}, "fp8_transpose"});
  compile_all_clean(jobs);
}

// Mode quantized passes that are the forward's kernel on copies, at the plan's configs of a large and a small M
// bucket: MXFP8 dgrad dense and grouped, wgrad dense, accumulate; per-tensor and per-row FP8 wgrad; per-channel
// FP8 dgrad on W's column-wise copy, dense and grouped.
TEST(BackwardNvrtcTest, QuantizedMxfp8KernelsCompileWithoutSpills) {
  const Arch a = h200();
  std::vector<Job> jobs;
  for (const char* text : {"gemm a=mxfp8 b=mxfp8 out=bf16 pass=dgrad", "gemm a=mxfp8 b=mxfp8 out=f32 pass=dgrad accumulate=true",
                           "grouped_gemm[experts=8,layout=offsets] a=mxfp8 b=mxfp8 out=bf16 pass=dgrad",
                           "gemm a=mxfp8 b=mxfp8 out=bf16 pass=wgrad", "gemm a=mxfp8 b=mxfp8 out=f32 pass=wgrad accumulate=true",
                           "gemm a=e4m3 b=e4m3 out=bf16 pass=wgrad", "gemm a=e5m2 b=e4m3 out=f32 pass=wgrad accumulate=true",
                           "gemm a=e4m3:m b=e4m3:n out=f32 pass=wgrad", "gemm a=e4m3:m b=e4m3:n out=bf16 pass=dgrad",
                           "grouped_gemm[experts=8,layout=offsets] a=e4m3:block1x128 b=e4m3:n out=bf16 pass=dgrad"})
    add_sm90_bucket_jobs(a, text, jobs);
  compile_all_clean(jobs);
}

// The portable backward kernel (kernels/sm80_backward.cuh) for sm_80 and sm_90a: high_precision, grouped
// wgrad and mode dequantized, at the default configs of a large and a small M bucket, and the reference
// kernel of each dequantized spec.
TEST(BackwardNvrtcTest, PortableKernelsCompileForSm80AndSm90aWithoutSpills) {
  const char* const specs[] = {
      "gemm a=bf16 b=bf16 out=bf16 pass=dgrad",
      "grouped_gemm[experts=8,layout=offsets] a=f16 b=f16 out=f32 pass=wgrad",
      "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad",
      "grouped_gemm[experts=8,layout=masked] a=bf16 b=nvfp4 out=f32 pass=dgrad nvfp4_global=expert",
      "gemm a=bf16 b=e4m3:block128x128 out=bf16 pass=dgrad",
      "gemm a=bf16 b=mxfp8 out=f32 pass=wgrad",
      "gemm a=bf16 b=e4m3:m out=bf16 pass=wgrad",
      "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=f32 pass=dgrad accumulate=true",
  };
  std::vector<Job> jobs;
  for (const char* text : specs) {
    const KernelSpec s = spec_of(text);
    for (const char* arch_name : {"sm_80", "sm_90a"}) {
      const Arch a = arch_with_gpu(*parse_arch(arch_name), *find_gpu(std::string(arch_name) == "sm_80" ? "a100" : "h200"));
      std::vector<TileConfig> seen;
      for (int64_t m : {int64_t{8192}, int64_t{8}}) {
        const TileConfig c = default_config(s, a, KernelFamily::kSm80Gemm, {m, kSizes.n, kSizes.k});
        if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
        seen.push_back(c);
        jobs.push_back({s, KernelFamily::kSm80Gemm, c,
                        std::string(text) + " " + arch_name + " bucket " + std::to_string(m) + " " + c.to_string(), a});
      }
    }
    if (s.b.format != s.a.format)
      jobs.push_back({s, KernelFamily::kReferenceGemm, TileConfig{}, std::string("reference ") + text});
  }
  EXPECT_LE(jobs.size(), 40u);
  compile_all_clean(jobs);
}

// The decode dgrad kernel (kernels/sm80_decode_dgrad.cuh) for sm_80 and sm_90a: the largest configs its
// register estimate admits at each block_m, MXFP4 and NVFP4 (per-expert globals), dense, grouped, accumulating.
TEST(BackwardNvrtcTest, DecodeDgradKernelsCompileForSm80AndSm90aWithoutSpills) {
  struct Pin {
    int bm, bk, stages, warps;
  };
  const Pin pins[] = {{8, 64, 2, 4}, {16, 64, 2, 4}, {32, 32, 1, 8}, {16, 16, 1, 1}};
  const char* const specs[] = {
      "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16 pass=dgrad",
      "grouped_gemm[experts=8,layout=masked] a=bf16 b=nvfp4 out=f32 pass=dgrad nvfp4_global=expert accumulate=true",
      "gemm a=bf16 b=mxfp4 out=f16 pass=dgrad",
  };
  std::vector<Job> jobs;
  for (const char* text : specs) {
    const KernelSpec s = spec_of(text);
    for (const char* arch_name : {"sm_80", "sm_90a"}) {
      const Arch a = arch_with_gpu(*parse_arch(arch_name), *find_gpu(std::string(arch_name) == "sm_80" ? "a100" : "h200"));
      for (const Pin& pin : pins) {
        TileConfig c;
        c.decode = 1;
        c.block_m = pin.bm;
        c.block_n = 128;
        c.block_k = pin.bk;
        c.stages = pin.stages;
        c.warps_m = 1;
        c.warps_n = pin.warps;
        c.group_m = 1;
        ASSERT_TRUE(check_config(s, a, KernelFamily::kSm80Gemm, c).ok())
            << text << " " << c.to_string() << ": " << check_config(s, a, KernelFamily::kSm80Gemm, c).to_string();
        jobs.push_back({s, KernelFamily::kSm80Gemm, c, std::string(text) + " " + arch_name + " " + c.to_string(), a});
      }
    }
  }
  compile_all_clean(jobs);
}

}  // namespace
}  // namespace kiln

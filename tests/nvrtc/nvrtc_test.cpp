// compile_cuda through the real NVRTC 13 (CUDA toolkit, no GPU): every arch kiln targets, the
// embedded templates as headers, the resource report, PTX output, compile errors and load failures.
#include "compiler/nvrtc/nvrtc.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "common/env.hpp"
#include "templates/common/gemm_params.cuh"

namespace kiln {
namespace {

// Includes a real template header, so the in-memory header table is exercised too.
// The device must see the struct at the size the host compiled (the host includes the same header).
const std::string kProbeText = std::string(R"(#include "common/gemm_params.cuh"
extern "C" __global__ void kiln_probe(kiln_dev::GemmParams p) {
  static_assert(sizeof(kiln_dev::GemmParams) == )") + std::to_string(sizeof(kiln_dev::GemmParams)) +
                               R"(, "GemmParams layout is the host ABI");
  __shared__ float tile[128];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x % 128] = i < p.m ? static_cast<const float*>(p.a)[i] : 0.0f;
  __syncthreads();
  if (i < p.m) static_cast<float*>(p.out)[i] = 2.0f * tile[(threadIdx.x + 1) % 128];
}
)";
const char* const kProbeSource = kProbeText.c_str();

Arch arch_named(const std::string& name) {
  StatusOr<Arch> arch = parse_arch(name);
  EXPECT_TRUE(arch.ok()) << arch.status().to_string();
  return arch.ok() ? *arch : Arch{};
}

class NvrtcArchTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NvrtcArchTest, CompilesProbeKernelWithoutSpills) {
  const Arch arch = arch_named(GetParam());
  StatusOr<CompiledKernel> r = compile_cuda(kProbeSource, arch, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_GE(r->cubin.size(), 64u);
  EXPECT_EQ(r->cubin.substr(0, 4), std::string("\x7f" "ELF", 4));
  // ELF e_machine (offset 18, little endian) is EM_CUDA = 190.
  EXPECT_EQ(static_cast<unsigned char>(r->cubin[18]) | static_cast<unsigned char>(r->cubin[19]) << 8, 190);
  EXPECT_TRUE(r->ptx.empty());
  EXPECT_NE(r->log.find("ptxas"), std::string::npos) << r->log;
  EXPECT_GT(r->registers, 0) << r->log;
  EXPECT_EQ(r->smem_static, 512) << r->log;
  EXPECT_GE(r->stack_frame, 0) << r->log;
  EXPECT_EQ(r->spill_stores, 0) << r->log;
  EXPECT_EQ(r->spill_loads, 0) << r->log;
  EXPECT_GT(r->compile_ms, 0.0);
}

// The cubin's .nv.info records the registers and stack frame ptxas reports (read_cubin_resources: NVRTC's
// own cache returns a cubin with an empty log), for every arch, with and without a stack frame.
TEST_P(NvrtcArchTest, CubinRecordsWhatPtxasReports) {
  const Arch arch = arch_named(GetParam());
  const std::string framed = std::string(kProbeSource) + R"(
extern "C" __global__ void kiln_framed(float* x) {
  float local[256];
  for (int i = 0; i < 256; ++i) local[i] = x[i + threadIdx.x] * float(i);
  x[threadIdx.x] = local[static_cast<int>(x[1]) & 255];
}
)";
  for (const std::string& source : {std::string(kProbeSource), framed}) {
    StatusOr<CompiledKernel> r = compile_cuda(source, arch, {});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_GT(r->registers, 0) << r->log;
    if (source == framed) EXPECT_GT(r->stack_frame, 0) << r->log;  // the indexed local array lives in memory
    CompiledKernel c;
    ASSERT_TRUE(read_cubin_resources(r->cubin, c));
    EXPECT_EQ(c.registers, r->registers) << r->log;
    EXPECT_EQ(c.stack_frame, r->stack_frame) << r->log;
    EXPECT_EQ(c.spill_stores, r->stack_frame == 0 ? 0 : -1) << r->log;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, NvrtcArchTest, ::testing::Values("sm_90a", "sm_89", "sm_86", "sm_80"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(NvrtcTest, VersionIs13) {
  StatusOr<std::string> v = nvrtc_version();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->rfind("13.", 0), 0u) << *v;
}

TEST(NvrtcTest, OptionsAreSortedAndExact) {
  CompileOptions opts;
  opts.extra = {"-DKILN_PROBE=1"};
  const std::vector<std::string> o = nvrtc_options(arch_named("sm_90a"), opts);
  EXPECT_TRUE(std::is_sorted(o.begin(), o.end()));
  for (const char* want : {"--gpu-architecture=sm_90a", "--std=c++17", "-Xptxas=-v", "-default-device",
                           "-DKILN_PROBE=1"}) {
    EXPECT_NE(std::find(o.begin(), o.end(), want), o.end()) << want;
  }
  for (const std::string& opt : o) {
    EXPECT_EQ(opt.find("fast_math"), std::string::npos) << "kiln's numerics are exact: " << opt;
    EXPECT_EQ(opt.find("lineinfo"), std::string::npos) << opt;
  }
}

TEST(NvrtcTest, SyntaxErrorIsACompileErrorWithTheLog) {
  StatusOr<CompiledKernel> r =
      compile_cuda("#include \"common/gemm_params.cuh\"\n__global__ void k() { int x = ; }\n", arch_named("sm_90a"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCompileError);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("kiln_kernel.cu(2): error"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected an expression"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sm_90a"), std::string::npos) << msg;
}

TEST(NvrtcTest, HeadersOutsideTemplatesAreNotVisible) {
  StatusOr<CompiledKernel> r = compile_cuda("#include \"kiln/status.hpp\"\n", arch_named("sm_80"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCompileError);
  EXPECT_NE(r.status().message().find("kiln/status.hpp"), std::string::npos) << r.status().message();
}

TEST(NvrtcTest, WantPtxGivesPtxForTheArchSpecificTarget) {
  CompileOptions opts;
  opts.want_ptx = true;
  StatusOr<CompiledKernel> r = compile_cuda(kProbeSource, arch_named("sm_90a"), opts);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->cubin.substr(0, 4), std::string("\x7f" "ELF", 4));
  EXPECT_NE(r->ptx.find(".target sm_90a"), std::string::npos) << r->ptx.substr(0, 400);
  EXPECT_NE(r->ptx.find(".entry kiln_probe"), std::string::npos);
  EXPECT_EQ(r->ptx.find('\0'), std::string::npos);
  EXPECT_GT(r->registers, 0);  // the report comes from the cubin compile
}

TEST(NvrtcTest, WantPtxForSm80) {
  CompileOptions opts;
  opts.want_ptx = true;
  StatusOr<CompiledKernel> r = compile_cuda(kProbeSource, arch_named("sm_80"), opts);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NE(r->ptx.find(".target sm_80"), std::string::npos) << r->ptx.substr(0, 400);
}

TEST(NvrtcTest, ConcurrentCompilesFromFourThreads) {
  // The tuner compiles candidates in parallel: each call owns its program, results must not mix.
  constexpr int kThreads = 4;
  std::vector<StatusOr<CompiledKernel>> results(kThreads, Internal("not run"));
  std::vector<std::thread> threads;
  const char* archs[kThreads] = {"sm_90a", "sm_89", "sm_86", "sm_80"};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { results[t] = compile_cuda(kProbeSource, arch_named(archs[t]), {}); });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(results[t].ok()) << archs[t] << ": " << results[t].status().to_string();
    EXPECT_EQ(results[t]->cubin.substr(0, 4), std::string("\x7f" "ELF", 4));
    EXPECT_NE(results[t]->log.find(std::string("for '") + archs[t] + "'"), std::string::npos) << results[t]->log;
  }
}

// NVRTC is loaded once per process, so the failure path runs in a fresh process (gtest's
// "threadsafe" death tests re-execute the binary) with KILN_NVRTC_PATH pointing nowhere.
TEST(NvrtcLoadDeathTest, MissingLibraryIsACompileErrorNamingThePath) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv(env::kNvrtcPath, "/nonexistent/libnvrtc.so.13", 1);
        StatusOr<std::string> v = nvrtc_version();
        StatusOr<CompiledKernel> r = compile_cuda(kProbeSource, Arch{}, {});
        const bool good = !v.ok() && v.status().code() == StatusCode::kCompileError &&
                          v.status().message().find("/nonexistent/libnvrtc.so.13") != std::string::npos &&
                          v.status().message().find("KILN_NVRTC_PATH") != std::string::npos && !r.ok() &&
                          r.status().code() == StatusCode::kCompileError;
        ::_exit(good ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace kiln

// nvrtc tier: Plan::run's host work with the CUDA driver taken out (target: dispatch of a
// prepared plan <= 3 us host time). kiln dlopens a stand-in libcuda (tests/common/fake_cuda_driver.cpp,
// through KILN_CUDA_PATH) whose entry points only count their calls; the kernels themselves are
// compiled for real by NVRTC and "loaded" into it. No GPU needed.
//
// Two things per family:
// - the driver calls one run makes, asserted exactly (one launch: cuLaunchKernelEx, allowing
//   programmatic dependent launch for kernels compiled for sm_90+ unless
//   KILN_PDL=0; one cuCtxGetCurrent, no push/pop while the device's primary context is current, no
//   stream-capture query, no attribute or occupancy query, no tensor-map encode when the operands
//   repeat), and no heap allocation (runtime/runtime_impl.hpp's invariant; the global operator new is
//   replaced for this binary);
// - the host time per run, printed as `[ figures ]` next to the fake launch call's own time (what
//   is left is kiln's). Nothing asserts on time: a loaded machine must not fail this.
// The gpu tier times the same path with the real driver (tests/gpu/sm80_gemm_gpu_test.cpp,
// DispatchCostGpuTest).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime/driver/driver.hpp"
#include "runtime/sm90_launch.hpp"

#ifndef KILN_FAKE_CUDA_PATH
#define KILN_FAKE_CUDA_PATH ""
#endif

// Heap allocations on this thread (the global operator new is replaced for this binary).
#include "tests/common/count_allocations.hpp"

namespace kiln {
namespace {

// The fake driver's path: the build's, else next to this binary (a copied build tree).
std::string fake_driver_path() {
  std::string p = KILN_FAKE_CUDA_PATH;
  if (!p.empty() && access(p.c_str(), R_OK) == 0) return p;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  std::string dir(exe, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  p = dir + "/libkiln_fake_cuda.so";
  return access(p.c_str(), R_OK) == 0 ? p : "";
}

using CallsFn = long long (*)(const char*);
using ProgrammaticFn = long long (*)();

// bf16 [m, 256] x [256, 256] at made-up device addresses (the fake never touches them).
struct Bf16Problem {
  int64_t sa[2] = {16, 256}, sb[2] = {256, 256}, so[2] = {16, 256};
  DLTensor a{}, b{}, out{};
  Operands ops;
  explicit Bf16Problem(int64_t m = 16) {
    sa[0] = so[0] = m;
    a.device = b.device = out.device = {kDLCUDA, 0};
    a.ndim = b.ndim = out.ndim = 2;
    a.dtype = b.dtype = out.dtype = {kDLBfloat, 16, 1};
    a.data = reinterpret_cast<void*>(uintptr_t{0x7f1000000000});
    b.data = reinterpret_cast<void*>(uintptr_t{0x7f2000000000});
    out.data = reinterpret_cast<void*>(uintptr_t{0x7f3000000000});
    a.shape = sa;
    b.shape = sb;
    out.shape = so;
    ops.a = &a;
    ops.b = &b;
    ops.out = &out;
  }
};

// Median us per call over 100k calls in bursts of 200 (the gpu tier's protocol).
template <typename F>
double median_burst_us(F&& f) {
  const int kCalls = 100000, kBurst = 200;
  std::vector<double> per_burst;
  for (int burst = 0; burst < kCalls / kBurst; ++burst) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    per_burst.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBurst);
  }
  std::sort(per_burst.begin(), per_burst.end());
  return per_burst[per_burst.size() / 2];
}


class DispatchHostCostTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = fake_driver_path();
    if (path.empty()) return;
    setenv("KILN_CUDA_PATH", path.c_str(), 1);  // before this process's first Driver::get()
    const auto& d = Driver::get();
    if (!d.ok()) return;
    // The same library kiln loaded (dlopen of one path returns the one handle).
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (lib != nullptr) {
      calls_ = reinterpret_cast<CallsFn>(dlsym(lib, "kiln_fake_cuda_calls"));
      programmatic_ = reinterpret_cast<ProgrammaticFn>(dlsym(lib, "kiln_fake_cuda_programmatic_launches"));
    }
  }

  void SetUp() override {
    if (calls_ == nullptr || programmatic_ == nullptr)
      GTEST_SKIP() << "the fake CUDA driver (libkiln_fake_cuda.so) is not loadable, or a driver was "
                      "loaded before it: "
                   << (Driver::get().ok() ? std::string("driver loaded") : Driver::get().status().to_string());
  }

  static std::map<std::string, long long> snapshot() {
    std::map<std::string, long long> m;
    for (const char* n : kWatched) m[n] = calls_(n);
    return m;
  }

  // Plans bf16 m x 256 x 256 for arch (it must plan `family`), checks the driver calls of one run and
  // prints the host time per run.
  void check_and_time(const char* arch_name, KernelFamily family, int64_t m = 16);

  static constexpr const char* kWatched[] = {"cuLaunchKernel",         "cuLaunchKernelEx",
                                             "cuCtxGetCurrent",        "cuCtxPushCurrent",
                                             "cuCtxPopCurrent",        "cuCtxSetCurrent",
                                             "cuCtxGetDevice",         "cuDeviceGet",
                                             "cuDeviceGetAttribute",   "cuPointerGetAttribute",
                                             "cuStreamIsCapturing",    "cuKernelSetAttribute",
                                             "cuKernelGetFunction",    "cuLibraryLoadData",
                                             "cuTensorMapEncodeTiled", "cuOccupancyMaxActiveClusters"};
  static inline CallsFn calls_ = nullptr;
  static inline ProgrammaticFn programmatic_ = nullptr;
};

void DispatchHostCostTest::check_and_time(const char* arch_name, KernelFamily want_family, int64_t m) {
  RuntimeOptions o;
  o.disable_cache = true;
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto spec = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  ASSERT_TRUE(spec.ok());
  auto arch = parse_arch(arch_name);
  ASSERT_TRUE(arch.ok());
  auto plan = (*rt)->plan(*spec, {m, 256, 256}, *arch);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->family(), want_family);
  const Driver* d = *Driver::get();
  Bf16Problem p(m);
  // Both families launch with cuLaunchKernelEx: with a launch attribute (programmatic dependent launch)
  // for kernels compiled for sm_90+, unless KILN_PDL=0; an sm90 plan runs its buckets of <= 16 rows on
  // the portable decode kernel.
  const KernelFamily family = plan->family_for(m);
  const std::string launch_entry = "cuLaunchKernelEx";
  const long long want_programmatic = arch->sm() >= 90 && sm90_pdl_enabled() ? 1 : 0;

  // The caller's context is the device's primary one, as under PyTorch: no push / pop per run.
  {
    ScopedContext ctx;
    ASSERT_TRUE(ctx.enter(d, 0).ok());
    // The first run compiles (NVRTC) and loads the M = 16 bucket's kernel.
    Status first = plan->run(p.ops, nullptr, 0, nullptr);
    ASSERT_TRUE(first.ok()) << first.to_string();

    const int kRuns = 1000;
    const auto before = snapshot();
    const long long programmatic_before = programmatic_();
    const long long allocations = kiln::test::t_allocations;
    for (int i = 0; i < kRuns; ++i) ASSERT_TRUE(plan->run(p.ops, nullptr, 0, nullptr).ok());
    EXPECT_EQ(kiln::test::t_allocations - allocations, 0) << "Plan::run allocates";
    const auto after = snapshot();
    EXPECT_EQ(programmatic_() - programmatic_before, want_programmatic * kRuns)
        << "launches allowing programmatic stream serialization (KILN_PDL="
        << (std::getenv("KILN_PDL") ? std::getenv("KILN_PDL") : "unset") << ")";
    std::string per_run;
    for (const auto& [name, n] : after) {
      const long long delta = n - before.at(name);
      if (delta != 0) per_run += " " + name + "=" + std::to_string(static_cast<double>(delta) / kRuns).substr(0, 4);
      if (name == launch_entry) {
        EXPECT_EQ(delta, kRuns) << "one " << launch_entry << " per run";
      } else if (name == "cuCtxGetCurrent") {
        EXPECT_EQ(delta, kRuns) << "one current-context query per run";
      } else {
        EXPECT_EQ(delta, 0) << name << " on the hot path of a loaded plan";
      }
    }
    std::printf("[ figures ] driver calls per Plan::run (%s, M=%lld, context current):%s\n",
                family_name(family), static_cast<long long>(m), per_run.c_str());

    const double run_us = median_burst_us([&] {
      Status s = plan->run(p.ops, nullptr, 0, nullptr);
      if (!s.ok()) std::abort();
    });
    // The fake launch call alone, with the argument count the family passes.
    char params[1024] = {};
    void* args[] = {params, params, params};
    CUfunction f = reinterpret_cast<CUfunction>(params);
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig lc{};
    lc.gridDimX = lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = 128;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.attrs = &attr;
    lc.numAttrs = 1;
    const double launch_us = median_burst_us([&] {
      if (d->cuLaunchKernelEx(&lc, f, args, nullptr) != CUDA_SUCCESS) std::abort();
    });
    std::printf(
        "[ figures ] Plan::run host time with the driver stubbed: %.3f us per call; the fake %s "
        "alone %.3f us; kiln's own %.3f us (%s, bf16 %lldx256x256, context current)\n",
        run_us, launch_entry.c_str(), launch_us, run_us - launch_us, family_name(family),
        static_cast<long long>(m));
  }

  // No context current (a fresh thread): kiln pushes the primary context and pops it per run.
  const auto before = snapshot();
  ASSERT_TRUE(plan->run(p.ops, nullptr, 0, nullptr).ok());
  const auto after = snapshot();
  EXPECT_EQ(after.at("cuCtxPushCurrent") - before.at("cuCtxPushCurrent"), 1);
  EXPECT_EQ(after.at("cuCtxPopCurrent") - before.at("cuCtxPopCurrent"), 1);
  EXPECT_EQ(after.at(launch_entry) - before.at(launch_entry), 1);
  const double push_us = median_burst_us([&] {
    Status s = plan->run(p.ops, nullptr, 0, nullptr);
    if (!s.ok()) std::abort();
  });
  std::printf(
      "[ figures ] Plan::run host time with the driver stubbed: %.3f us per call (%s, no context current: "
      "push + pop per run)\n",
      push_us, family_name(family));
}

TEST_F(DispatchHostCostTest, PortableFamilyMakesOneLaunchAndNoOtherDriverCallsPerRun) {
  check_and_time("sm_90", KernelFamily::kSm80Gemm);
}

// Below sm_90 the kernels have no griddepcontrol.wait (the generated entry's #if), so their launches must
// not allow programmatic dependent launch: check_and_time expects 0 such launches for sm_80.
TEST_F(DispatchHostCostTest, PortableFamilyBelowSm90LaunchesWithoutProgrammaticDependentLaunch) {
  check_and_time("sm_80", KernelFamily::kSm80Gemm);
}

TEST_F(DispatchHostCostTest, Sm90FamilyMakesOneLaunchAndNoOtherDriverCallsPerRun) {
  check_and_time("sm_90a", KernelFamily::kSm90Gemm);
}

// M = 64: the sm90 kernel itself (cuLaunchKernelEx, with programmatic dependent launch unless KILN_PDL=0).
TEST_F(DispatchHostCostTest, Sm90KernelLaunchesOnceWithProgrammaticDependentLaunch) {
  check_and_time("sm_90a", KernelFamily::kSm90Gemm, 64);
}

TEST_F(DispatchHostCostTest, BadDeviceOrdinalIsAnErrorNotACrash) {
  RuntimeOptions o;
  o.disable_cache = true;
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.ok());
  auto spec = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  ASSERT_TRUE(spec.ok());
  auto plan = (*rt)->plan(*spec, {16, 256, 256}, *parse_arch("sm_90"));
  ASSERT_TRUE(plan.ok());
  // A negative ordinal never reaches the driver (as an index into kiln's context table it would crash).
  {
    Bf16Problem p;
    p.a.device.device_id = p.b.device.device_id = p.out.device.device_id = -1;
    Status s = plan->run(p.ops, nullptr, 0, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_EQ(s.message(), "device ordinal -1 out of range");
  }
  // Ordinals past the devices get the driver's answer (the fake has one device).
  for (int device : {1, 64, 1000}) {
    Bf16Problem p;
    p.a.device.device_id = p.b.device.device_id = p.out.device.device_id = device;
    Status s = plan->run(p.ops, nullptr, 0, nullptr);
    EXPECT_EQ(s.code(), StatusCode::kDriverError) << "device " << device << ": " << s.to_string();
    EXPECT_NE(s.message().find("cuDeviceGet: CUDA_ERROR_INVALID_DEVICE"), std::string::npos) << s.to_string();
  }
}

}  // namespace
}  // namespace kiln

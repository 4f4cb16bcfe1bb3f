// gpu tier: the portable sm80 family against kiln's reference on fresh random inputs.
// Every format pairing of the slice x every output type, M = 1, odd M, N and K tails; outputs
// poisoned before each run (run_check); repeat runs bitwise equal; the GPU reference kernel itself
// checked against the CPU reference GEMM.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "compiler/numerics/fp8.hpp"
#include "compiler/numerics/reference_gemm.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "kiln/kiln.hpp"
#include "verify/check.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/operands.hpp"
#include "runtime/runtime_access.hpp"
#include "runtime/sm90_launch.hpp"
#include "templates/common/gemm_params.cuh"
#include "tests/common/gpu_env.hpp"

namespace kiln {
namespace {

struct Case {
  const char* spec;
  int64_t m, n, k;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string s = info.param.spec;
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out + "_m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
         std::to_string(info.param.k);
}

std::vector<Case> all_cases() {
  const char* pairs[] = {"a=bf16 b=bf16",           "a=f16 b=f16",           "a=e4m3:tensor b=e4m3:tensor",
                         "a=e4m3:tensor b=e5m2:tensor", "a=e5m2:tensor b=e4m3:tensor", "a=e5m2:tensor b=e5m2:tensor"};
  const char* outs[] = {"bf16", "f16", "f32"};
  struct Shape { int64_t m, n, k; };
  // M = 1, odd M, a multi-tile M; N tails (not a multiple of any tile, odd); K tails (a multiple of
  // 16 bytes but not of the K tile).
  std::vector<Shape> shapes = {{1, 256, 512}, {77, 200, 528}, {300, 129, 272}, {257, 384, 1040}};
  static std::vector<std::string> storage;
  std::vector<Case> cases;
  for (auto* p : pairs) {
    for (auto* o : outs) {
      storage.push_back(std::string("gemm ") + p + " out=" + o);
    }
  }
  for (auto& s : storage) {
    for (auto sh : shapes) cases.push_back({s.c_str(), sh.m, sh.n, sh.k});
  }
  return cases;
}

class Sm80GemmGpuTest : public testing::TestWithParam<Case> {};

TEST_P(Sm80GemmGpuTest, MatchesReference) {
  KILN_REQUIRE_GPU();
  const Case& c = GetParam();
  auto rt = make_test_runtime();
  auto spec = parse_spec(c.spec);
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto plan = rt->plan(*spec, {c.m, c.n, c.k});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  CheckOptions o;
  o.m = c.m;
  auto r = run_check(*rt, *plan, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("[ figures ] %s m=%lld n=%lld k=%lld seed=%llu rel_fro=%.3g max_abs=%.3g tol=%.1g config=%s\n", c.spec,
              (long long)c.m, (long long)c.n, (long long)c.k, (unsigned long long)r->seed, r->rel_fro_err,
              r->max_abs_err, r->tolerance, r->config.c_str());
  EXPECT_EQ(r->unwritten, 0) << "seed " << r->seed;
  EXPECT_EQ(r->nonfinite, 0) << "seed " << r->seed;
  EXPECT_LE(r->rel_fro_err, r->tolerance) << "seed " << r->seed;
  EXPECT_TRUE(r->passed);
}

INSTANTIATE_TEST_SUITE_P(AllPairings, Sm80GemmGpuTest, testing::ValuesIn(all_cases()), case_name);

// The GPU reference kernel against the CPU reference GEMM (double accumulation).
TEST(ReferenceGemmGpuTest, MatchesCpuReference) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  const Driver* d = *Driver::get();
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(d, 0).ok());
  for (const char* text : {"gemm a=bf16 b=bf16 out=f32", "gemm a=e4m3:tensor b=e5m2:tensor out=f32",
                           "gemm a=f16 b=f16 out=f32"}) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok());
    const int64_t m = 33, n = 45, k = 96;
    int eb = format_bits(spec->a.format) / 8;
    std::vector<uint8_t> ha(m * k * eb), hb(n * k * eb);
    uint64_t s = 12345;
    auto next = [&]() { s = s * 6364136223846793005ull + 1442695040888963407ull; return (s >> 33) / 2147483648.0; };
    for (int64_t i = 0; i < m * k; ++i) {
      float v = static_cast<float>(next() * 4 - 2);
      if (eb == 2) {
        uint16_t b = spec->a.format == Format::kF16 ? numerics::f16_from_float(v) : numerics::bf16_from_float(v);
        std::memcpy(&ha[i * 2], &b, 2);
      } else {
        ha[i] = numerics::e4m3_from_float(v * 4, true);
      }
    }
    for (int64_t i = 0; i < n * k; ++i) {
      float v = static_cast<float>(next() * 4 - 2);
      if (eb == 2) {
        uint16_t b = spec->b.format == Format::kF16 ? numerics::f16_from_float(v) : numerics::bf16_from_float(v);
        std::memcpy(&hb[i * 2], &b, 2);
      } else {
        hb[i] = numerics::e5m2_from_float(v * 4, true);
      }
    }
    float sa = 0.75f, sb = 1.25f;
    bool scaled = spec->a.scale != ScaleGranularity::kNone;
    auto da = *DeviceBuffer::alloc(ha.size());
    auto db = *DeviceBuffer::alloc(hb.size());
    auto dout = *DeviceBuffer::alloc(m * n * 4);
    auto dsa = *DeviceBuffer::alloc(4);
    auto dsb = *DeviceBuffer::alloc(4);
    ASSERT_TRUE(da.upload(ha.data(), ha.size()).ok());
    ASSERT_TRUE(db.upload(hb.data(), hb.size()).ok());
    ASSERT_TRUE(dsa.upload(&sa, 4).ok());
    ASSERT_TRUE(dsb.upload(&sb, 4).ok());
    ASSERT_TRUE(dout.fill_bytes(0xFF).ok());
    auto ref = RuntimeAccess::impl(*rt)->load(*spec, KernelFamily::kReferenceGemm, TileConfig{}, Arch{9, 0, true});
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    kiln_dev::GemmParams gp{};
    gp.a = da.data();
    gp.b = db.data();
    gp.out = dout.data();
    gp.a_scale = scaled ? static_cast<const float*>(dsa.data()) : nullptr;
    gp.b_scale = scaled ? static_cast<const float*>(dsb.data()) : nullptr;
    gp.lda = k;
    gp.ldb = k;
    gp.ldc = n;
    gp.m = m;
    gp.n = n;
    gp.k = k;
    LaunchShape ls = launch_shape(*spec, KernelFamily::kReferenceGemm, TileConfig{}, {m, n, k});
    void* args[] = {&gp};
    ASSERT_TRUE(d->check(d->cuLaunchKernel(reinterpret_cast<CUfunction>((*ref)->kernel), ls.grid_x, ls.grid_y,
                                           ls.grid_z, ls.block_x, 1, 1, ls.dynamic_smem, nullptr, args, nullptr),
                         "launch")
                    .ok());
    ASSERT_TRUE(d->check(d->cuCtxSynchronize(), "sync").ok());
    std::vector<float> gpu(m * n);
    ASSERT_TRUE(dout.download(gpu.data(), gpu.size() * 4).ok());
    std::vector<double> cpu;
    auto st = numerics::reference_gemm(*spec, m, n, k, ha.data(), k, hb.data(), k, scaled ? &sa : nullptr,
                             scaled ? &sb : nullptr, cpu);
    ASSERT_TRUE(st.ok()) << st.to_string();
    double worst = 0;
    for (int64_t i = 0; i < m * n; ++i) {
      double e = std::fabs(gpu[i] - cpu[i]) / (1.0 + std::fabs(cpu[i]));
      worst = std::max(worst, e);
    }
    std::printf("[ figures ] reference kernel vs CPU (%s): worst scaled err %.3g\n", text, worst);
    EXPECT_LT(worst, 1e-5) << text;
  }
}

// Deterministic: the same inputs give bitwise the same output.
TEST(Sm80GemmGpuTest, RepeatRunsAreBitwiseEqual) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  auto spec = parse_spec("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  ASSERT_TRUE(spec.ok());
  auto plan = rt->plan(*spec, {512, 512, 1024});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  CheckOptions o;
  o.m = 512;
  o.seed = 777;
  auto r1 = run_check(*rt, *plan, o);
  auto r2 = run_check(*rt, *plan, o);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->max_abs_err, r2->max_abs_err);
  EXPECT_EQ(r1->rel_fro_err, r2->rel_fro_err);
}

TEST(Sm80GemmGpuTest, WrongOperandIsNamed) {
  KILN_REQUIRE_GPU();
  auto rt = make_test_runtime();
  auto spec = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  ASSERT_TRUE(spec.ok());
  auto plan = rt->plan(*spec, {16, 64, 64});
  ASSERT_TRUE(plan.ok());
  int64_t sa[2] = {16, 64}, sb[2] = {64, 32}, so[2] = {16, 64};
  DLTensor a{}, b{}, out{};
  a.device = b.device = out.device = {kDLCUDA, 0};
  a.ndim = b.ndim = out.ndim = 2;
  a.dtype = b.dtype = out.dtype = {kDLBfloat, 16, 1};
  a.data = b.data = out.data = reinterpret_cast<void*>(0x10000);
  a.shape = sa;
  b.shape = sb;
  out.shape = so;
  Operands ops{&a, &b, &out, nullptr, nullptr};
  Status s = plan->run(ops, nullptr, 0, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("operand b"), std::string::npos) << s.message();
}

// Two processes share the cache: the second finds the first one's kernels without compiling.
TEST(CacheSharingGpuTest, SecondProcessLoadsWithoutCompiling) {
  KILN_REQUIRE_GPU();
  char tmpl[] = "/tmp/kiln-cache-share-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto child = [&](int idx) {
    std::string counts = dir + "/counts" + std::to_string(idx);
    std::string cmd = "KILN_CACHE_DIR=" + dir + " KILN_TEST_CHILD_COUNTS=" + counts +
                      " /proc/self/exe --gtest_filter=CacheSharingChild.* > " + dir + "/log" + std::to_string(idx) +
                      " 2>&1";
    // /proc/self/exe inside the shell is the shell; resolve our own path first.
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[len > 0 ? len : 0] = 0;
    cmd = "KILN_CACHE_DIR=" + dir + " KILN_TEST_CHILD_COUNTS=" + counts + " '" + self +
          "' --gtest_filter=CacheSharingChild.* > " + dir + "/log" + std::to_string(idx) + " 2>&1";
    int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << cmd;
    std::ifstream f(counts);
    int64_t compiles = -1, hits = -1, loads = -1;
    f >> compiles >> hits >> loads;
    return std::array<int64_t, 3>{compiles, hits, loads};
  };
  auto first = child(1);
  auto second = child(2);
  std::printf("[ figures ] cache sharing: first process compiles=%lld hits=%lld; second compiles=%lld hits=%lld\n",
              (long long)first[0], (long long)first[1], (long long)second[0], (long long)second[1]);
  EXPECT_GT(first[0], 0);
  EXPECT_EQ(second[0], 0);
  EXPECT_GT(second[1], 0);
  EXPECT_GT(second[2], 0);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(CacheSharingChild, CompileOrLoad) {
  const char* out = std::getenv("KILN_TEST_CHILD_COUNTS");
  if (!out) GTEST_SKIP() << "runs only as the child of CacheSharingGpuTest";
  KILN_REQUIRE_GPU();
  auto rt = Runtime::create({});
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto spec = parse_spec("gemm a=e4m3:tensor b=e4m3:tensor out=bf16");
  ASSERT_TRUE(spec.ok());
  auto plan = (*rt)->plan(*spec, {64, 256, 256});
  ASSERT_TRUE(plan.ok());
  CheckOptions o;
  o.m = 64;
  auto r = run_check(**rt, *plan, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->passed);
  auto c = (*rt)->counters();
  std::ofstream(out) << c.compiles << " " << c.cache_hits << " " << c.loads << "\n";
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// What Plan::run launches for `ops`, rebuilt outside it: the loaded kernel (the runtime's one copy: the
// load is memoized per spec, family, config and arch), its grid and block, and its arguments. The
// baseline below launches this with nothing around it.
struct BareLaunch {
  CUfunction f = nullptr;
  LaunchShape ls;
  kiln_dev::GemmParams gp{};
  CUtensorMap map_a{}, map_b{};  // sm90 family only
  void* workspace = nullptr;     // sm90 family only: what Plan::run was given
  bool ex = false;               // cuLaunchKernelEx, with PDL's attribute as the runtime sets it
  bool pdl = true;               // the kernel was compiled for sm_90+ (its entry waits: PDL allowed)
  std::vector<void*> args;
};

Status bare_launch_of(Runtime& rt, const Plan& plan, const Operands& ops, void* workspace, const Driver& d,
                      BareLaunch& out) {
  KILN_ASSIGN_OR_RETURN(CheckedOperands c, check_operands(plan.spec(), plan.sizes(), ops));
  const TileConfig cfg = plan.config_for(c.m);
  // The bucket's family: an sm90 plan runs its buckets of <= 16 rows on the portable decode kernel.
  const KernelFamily family = plan.family_for(c.m);
  KILN_ASSIGN_OR_RETURN(LoadedKernel * k, RuntimeAccess::impl(rt)->load(plan.spec(), family, cfg, plan.arch()));
  out.f = reinterpret_cast<CUfunction>(k->kernel);  // as Plan::run passes it: the CUkernel handle
  out.gp = gemm_params(c, plan.sizes());
  ProblemSizes sizes = plan.sizes();
  sizes.m = c.m;
  if (family != KernelFamily::kSm90Gemm) {
    out.ls = launch_shape(plan.spec(), family, cfg, sizes);
    out.args = {&out.gp};
    out.ex = true;  // runtime.cpp launches the portable family with cuLaunchKernelEx too
    out.pdl = plan.arch().sm() >= 90;
    return Status::Ok();
  }
  // The sm90 family, as runtime/sm90_launch.cpp launches it: two TMA maps, then a persistent grid.
  const KernelSpec& spec = plan.spec();
  const int box_k = sm90_atom_k(spec);
  KILN_RETURN_IF_ERROR(sm90_encode_operand(d, "a", spec.a.format, out.gp.a, out.gp.m, out.gp.k, out.gp.lda,
                                           cfg.block_m, box_k, &out.map_a));
  KILN_RETURN_IF_ERROR(sm90_encode_operand(d, "b", spec.b.format, out.gp.b, out.gp.n, out.gp.k, out.gp.ldb,
                                           cfg.block_n / cfg.cluster_m, box_k, &out.map_b));
  KILN_ASSIGN_OR_RETURN(int sms, sm90_sm_count(d, c.device));
  out.ls = sm90_launch_shape(spec, cfg, sizes);
  if (cfg.cluster_m == 1) {
    out.ls.grid_x = std::min<unsigned>(out.ls.grid_x, static_cast<unsigned>(sms));
  } else {
    CUfunction f = nullptr;
    KILN_RETURN_IF_ERROR(d.check(d.cuKernelGetFunction(&f, k->kernel), "cuKernelGetFunction"));
    CUlaunchConfig lc{};
    lc.gridDimX = static_cast<unsigned>(sms / cfg.cluster_m * cfg.cluster_m);
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = out.ls.block_x;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = static_cast<unsigned>(out.ls.dynamic_smem);
    int clusters = 0;
    KILN_RETURN_IF_ERROR(d.check(d.cuOccupancyMaxActiveClusters(&clusters, f, &lc), "cuOccupancyMaxActiveClusters"));
    out.ls.grid_x = std::min<unsigned>(out.ls.grid_x, static_cast<unsigned>(clusters * cfg.cluster_m));
  }
  // sm90_launch's argument list. The workspace pointer goes last (split-K adds it to the
  // kernel); a kernel without that parameter reads the first three only.
  out.workspace = workspace;
  out.args = {&out.map_a, &out.map_b, &out.gp, &out.workspace};
  out.ex = true;
  return Status::Ok();
}

// Host cost of dispatching a prepared plan (operand checks + bucket lookup + cuLaunchKernel) next to
// a bare cuLaunchKernel of the same kernel with the same arguments, so that kiln's own share shows (the
// sm90 family: cuLaunchKernelEx with the PDL attribute on both sides, as runtime/sm90_launch.cpp launches).
// Target: Plan::run <= 3 us. Host time only: bursts of 200 launches (well under the
// launch queue's depth, so cuLaunchKernel never waits for the GPU), timed without the synchronize
// that drains each burst; the variants' bursts interleave so that clock and queue drift hit them
// alike. 100k calls each. portable: plan the portable sm80 family (KILN_FAMILY=sm80 for the plan),
// else the device's fastest.
void dispatch_cost(bool portable) {
  auto rt = make_test_runtime();
  auto spec = parse_spec("gemm a=bf16 b=bf16 out=bf16");
  ASSERT_TRUE(spec.ok());
  std::optional<std::string> family_env;
  if (const char* v = std::getenv("KILN_FAMILY")) family_env = v;
  if (portable) setenv("KILN_FAMILY", "sm80", 1);
  auto plan = rt->plan(*spec, {16, 256, 256});
  if (portable && family_env) {
    setenv("KILN_FAMILY", family_env->c_str(), 1);
  } else if (portable) {
    unsetenv("KILN_FAMILY");
  }
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  if (portable) ASSERT_EQ(plan->family(), KernelFamily::kSm80Gemm);
  const Driver* d = *Driver::get();
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(d, 0).ok());
  ASSERT_TRUE(plan->prepare().ok());
  auto da = *DeviceBuffer::alloc(16 * 256 * 2);
  auto db = *DeviceBuffer::alloc(256 * 256 * 2);
  auto dout = *DeviceBuffer::alloc(16 * 256 * 2);
  ASSERT_TRUE(da.fill_bytes(0x3c).ok());
  ASSERT_TRUE(db.fill_bytes(0x3c).ok());
  int64_t sa[2] = {16, 256}, sb[2] = {256, 256}, so[2] = {16, 256};
  DLTensor a{}, b{}, out{};
  a.device = b.device = out.device = {kDLCUDA, 0};
  a.ndim = b.ndim = out.ndim = 2;
  a.dtype = b.dtype = out.dtype = {kDLBfloat, 16, 1};
  a.data = da.data();
  b.data = db.data();
  out.data = dout.data();
  a.shape = sa;
  b.shape = sb;
  out.shape = so;
  Operands ops;
  ops.a = &a;
  ops.b = &b;
  ops.out = &out;
  const size_t ws_bytes = plan->workspace_bytes(16);
  DeviceBuffer ws;
  if (ws_bytes > 0) {
    auto w = DeviceBuffer::alloc(ws_bytes);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    ws = std::move(*w);
    ASSERT_TRUE(ws.fill_bytes(0).ok());
  }
  void* const workspace = ws_bytes > 0 ? ws.data() : nullptr;
  {
    Status s = plan->run(ops, workspace, ws_bytes, nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  ASSERT_TRUE(d->check(d->cuCtxSynchronize(), "sync").ok());

  BareLaunch bare;
  Status bs = bare_launch_of(*rt, *plan, ops, workspace, *d, bare);
  ASSERT_TRUE(bs.ok()) << bs.to_string();
  // The same kernel through the CUfunction of this context (cuKernelGetFunction) instead of the
  // CUkernel handle Plan::run passes: shows what the driver's per-launch handle lookup costs.
  CUfunction fn = nullptr;
  ASSERT_TRUE(d->check(d->cuKernelGetFunction(&fn, reinterpret_cast<CUkernel>(bare.f)), "cuKernelGetFunction").ok());
  CUlaunchAttribute pdl{};
  pdl.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  pdl.value.programmaticStreamSerializationAllowed = 1;
  auto launch_bare = [&](CUfunction f, CUstream s = nullptr) {
    if (!bare.ex)
      return d->cuLaunchKernel(f, bare.ls.grid_x, bare.ls.grid_y, bare.ls.grid_z, bare.ls.block_x, 1, 1,
                               static_cast<unsigned>(bare.ls.dynamic_smem), s, bare.args.data(), nullptr);
    CUlaunchConfig lc{};
    lc.gridDimX = bare.ls.grid_x;
    lc.gridDimY = bare.ls.grid_y;
    lc.gridDimZ = bare.ls.grid_z;
    lc.blockDimX = bare.ls.block_x;
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = static_cast<unsigned>(bare.ls.dynamic_smem);
    lc.hStream = s;
    lc.attrs = &pdl;
    lc.numAttrs = bare.pdl && sm90_pdl_enabled() ? 1 : 0;
    return d->cuLaunchKernelEx(&lc, f, bare.args.data(), nullptr);
  };
  ASSERT_EQ(launch_bare(bare.f), CUDA_SUCCESS);
  ASSERT_EQ(launch_bare(fn), CUDA_SUCCESS);
  ASSERT_TRUE(d->check(d->cuCtxSynchronize(), "sync").ok());

  // The same on a stream of its own (non-blocking): what an embedding framework passes (the C API
  // takes an explicit stream); the legacy default stream's launches carry its implicit ordering.
  CUstream stream = nullptr;
  ASSERT_TRUE(d->check(d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate").ok());

  // The driver's floor on this machine: an empty kernel with one 4-byte argument, one block of 32 threads.
  auto empty = compile_cuda("extern \"C\" __global__ void kiln_empty(int) {}\n", plan->arch(), CompileOptions{});
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  CUlibrary empty_lib = nullptr;
  CUkernel empty_kernel = nullptr;
  ASSERT_TRUE(d->check(d->cuLibraryLoadData(&empty_lib, empty->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                       "cuLibraryLoadData")
                  .ok());
  ASSERT_TRUE(d->check(d->cuLibraryGetKernel(&empty_kernel, empty_lib, "kiln_empty"), "cuLibraryGetKernel").ok());
  int empty_arg = 0;
  void* empty_args[] = {&empty_arg};
  auto launch_empty = [&](CUstream s) {
    return d->cuLaunchKernel(reinterpret_cast<CUfunction>(empty_kernel), 1, 1, 1, 32, 1, 1, 0, s, empty_args, nullptr);
  };

  const int kCalls = 100000, kBurst = 200;
  std::vector<double> run_us, bare_us, fn_us, run_s_us, bare_s_us, empty_us;
  auto burst = [&](std::vector<double>& into, auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    into.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kBurst);
    ASSERT_TRUE(d->check(d->cuCtxSynchronize(), "sync").ok());
  };
  bool failed = false;
  for (int round = 0; round < kCalls / kBurst && !failed; ++round) {
    burst(run_us, [&] { failed |= !plan->run(ops, workspace, ws_bytes, nullptr).ok(); });
    burst(bare_us, [&] { failed |= launch_bare(bare.f) != CUDA_SUCCESS; });
    burst(fn_us, [&] { failed |= launch_bare(fn) != CUDA_SUCCESS; });
    burst(run_s_us, [&] { failed |= !plan->run(ops, workspace, ws_bytes, stream).ok(); });
    burst(bare_s_us, [&] { failed |= launch_bare(bare.f, stream) != CUDA_SUCCESS; });
    burst(empty_us, [&] { failed |= launch_empty(stream) != CUDA_SUCCESS; });
  }
  ASSERT_FALSE(failed) << "a launch failed";
  for (auto* v : {&run_us, &bare_us, &fn_us, &run_s_us, &bare_s_us, &empty_us}) std::sort(v->begin(), v->end());
  auto median = [](const std::vector<double>& v) { return v[v.size() / 2]; };
  std::printf("[ figures ] dispatch host time per call over %d calls each (bursts of %d, enqueue only, interleaved), "
              "median burst: Plan::run %.2f us (min %.2f, max %.2f); bare cuLaunchKernel of the same kernel and "
              "arguments %.2f us (min %.2f, max %.2f); kiln's overhead %.2f us; bare launch through "
              "cuKernelGetFunction's CUfunction %.2f us (family %s, grid %u, block %u, argument pointers passed: %zu)\n",
              kCalls, kBurst, median(run_us), run_us.front(), run_us.back(), median(bare_us), bare_us.front(),
              bare_us.back(), median(run_us) - median(bare_us), median(fn_us), family_name(plan->family_for(16)),
              bare.ls.grid_x, bare.ls.block_x, bare.args.size());
  std::printf("[ figures ] on a non-blocking stream of its own: Plan::run %.2f us (min %.2f, max %.2f); bare "
              "cuLaunchKernel %.2f us (min %.2f, max %.2f); kiln's overhead %.2f us\n",
              median(run_s_us), run_s_us.front(), run_s_us.back(), median(bare_s_us), bare_s_us.front(),
              bare_s_us.back(), median(run_s_us) - median(bare_s_us));
  std::printf("[ figures ] the driver's floor: cuLaunchKernel of an empty kernel (one int argument, 1 x 32 threads) on "
              "the same stream %.2f us (min %.2f, max %.2f)\n",
              median(empty_us), empty_us.front(), empty_us.back());
  ASSERT_TRUE(d->check(d->cuStreamDestroy(stream), "cuStreamDestroy").ok());
  ASSERT_TRUE(d->check(d->cuLibraryUnload(empty_lib), "cuLibraryUnload").ok());
  EXPECT_LT(median(run_us), 20.0) << "dispatch is far above its 3 us target";
}

// The device's fastest family (sm90_gemm on an H200; KILN_FAMILY=sm80 in the environment plans the
// portable one here too).
TEST(DispatchCostGpuTest, PreparedPlanRunHostTime) {
  KILN_REQUIRE_GPU();
  dispatch_cost(/*portable=*/false);
}

// The portable sm80 family on any device.
TEST(DispatchCostGpuTest, PreparedPlanRunHostTimePortable) {
  KILN_REQUIRE_GPU();
  dispatch_cost(/*portable=*/true);
}

}  // namespace
}  // namespace kiln

// gpu tier: MXFP8 through the bf16 pre-pass (runtime/mx_prepass.hpp, templates/kernels/mx_dequant.cuh).
// The converted copies bitwise: every e4m3 code with every E8M0 scale. Then the GEMM: fresh random
// inputs, outputs poisoned, against kiln's reference (run_check with mx_prepass): plain,
// odd M / N and short K, an f32 output with a bias epilogue, a gate|up GLU, a shape large enough for
// several grid-stride steps, grouped offsets and masked. Then the specials: NaN
// scales (E8M0 0xFF) and an e4m3 NaN code must leave the same NaN outputs as the fused kernel, a scale
// that overflows an element must leave its row non-finite, and the finite outputs must agree with it. The
// path is taken only with the caller's workspace (counted by the kernels it loads), a misaligned workspace is
// an error, a run captured into a CUDA graph after prepare() replays bitwise, strided operands (the
// conversion kernel's general addressing) give the contiguous result bitwise, and one workspace serves
// both the pre-pass and the plan's split-K bucket (whose counters the pre-pass never touches).
// Skips without a device or on anything but sm_90.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "compiler/numerics/e8m0.hpp"
#include "compiler/numerics/fp8.hpp"
#include "compiler/plan/sm90_plan.hpp"
#include "kiln/kiln.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"
#include "runtime/device_buffer.hpp"
#include "tests/common/gpu_env.hpp"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const char* const kMx = "gemm a=mxfp8 b=mxfp8 out=bf16";

class MxPrepassGpuTest : public testing::Test {
 protected:
  void SetUp() override {
    rt_ = make_test_runtime();
    ASSERT_NE(rt_, nullptr);
    auto d = Driver::get();
    if (!d.ok()) GTEST_SKIP() << "no GPU: " << d.status().to_string();
    auto a = rt_->device_arch();
    if (!a.ok()) GTEST_SKIP() << "no device arch: " << a.status().to_string();
    if (a->sm() != 90) GTEST_SKIP() << "the MXFP8 pre-pass runs on sm_90 only; this is " << a->name();
    d_ = *d;
    ASSERT_TRUE(ctx_.enter(d_, 0).ok());
  }

  Plan plan_of(const std::string& text, int64_t m, int64_t n, int64_t k) {
    auto spec = parse_spec(text);
    EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().to_string();
    auto plan = rt_->plan(*spec, {m, n, k});
    EXPECT_TRUE(plan.ok()) << text << ": " << plan.status().to_string();
    return std::move(*plan);
  }

  // Fresh random MXFP8 operands of kMx (seed 0: drawn from the clock; printed).
  static HostOperands host_of(int64_t m, int64_t n, int64_t k, uint64_t seed = 0) {
    if (seed == 0)
      seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
    std::printf("[ figures ] %lldx%lldx%lld seed %llu\n", (long long)m, (long long)n, (long long)k,
                (unsigned long long)seed);
    auto h = random_operands(*parse_spec(kMx), m, n, k, {}, seed);
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    return std::move(*h);
  }
  static DeviceOperands upload(const HostOperands& h) {
    auto d = DeviceOperands::upload(h);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    return std::move(*d);
  }

  // The output of one run (no workspace: the fused kernel; else a fresh one of `ws_bytes`), poisoned first.
  std::vector<uint16_t> run_once(const Plan& plan, DeviceOperands& dev, size_t ws_bytes, int64_t elems) {
    EXPECT_TRUE(dev.out().fill_bytes(0xFF).ok());
    DeviceBuffer ws;
    if (ws_bytes > 0) {
      auto b = DeviceBuffer::alloc(ws_bytes);
      EXPECT_TRUE(b.ok());
      ws = std::move(*b);
      EXPECT_TRUE(ws.fill_bytes(0xA5).ok());  // garbage: the pre-pass needs no zero fill
    }
    Operands ops = dev.operands();
    Status st = plan.run(ops, ws_bytes > 0 ? ws.data() : nullptr, ws_bytes, nullptr);
    EXPECT_TRUE(st.ok()) << st.to_string();
    EXPECT_TRUE(d_->check(d_->cuCtxSynchronize(), "cuCtxSynchronize").ok());
    std::vector<uint16_t> out(static_cast<size_t>(elems));
    EXPECT_TRUE(dev.out().download(out.data(), out.size() * 2).ok());
    return out;
  }

  std::shared_ptr<Runtime> rt_;
  const Driver* d_ = nullptr;
  ScopedContext ctx_;
};

TEST_F(MxPrepassGpuTest, MatchesTheReference) {
  struct Case {
    const char* spec;
    int64_t m, n, k;
  } cases[] = {
      {kMx, 1024, 256, 512},
      {kMx, 1111, 200, 160},  // M and N off every tile; K = 5 scale blocks
      {"gemm a=mxfp8 b=mxfp8 out=f32 epilogue=\"out = acc + bias[n]\"", 1030, 136, 256},
      {"gemm a=mxfp8 b=mxfp8 out=bf16 gate_up=interleaved epilogue=\"out = silu(gate) * up\"", 2048, 256,
       128},
      // 1M 8-element units: several grid-stride steps per thread, every unrolled unit, the X / W boundary
      // inside a thread's step.
      {kMx, 4096, 4096, 2048},
      // Grouped: offsets (a random split over 2 experts, 1152 rows each on average) and masked (m = max_m).
      {"grouped_gemm[experts=2,layout=offsets] a=mxfp8 b=mxfp8 out=bf16", 2304, 256, 256},
      {"grouped_gemm[experts=2,layout=masked] a=mxfp8 b=mxfp8 out=bf16", 1100, 192, 320},
  };
  for (const Case& c : cases) {
    Plan plan = plan_of(c.spec, c.m, c.n, c.k);
    const bool masked = plan.spec().layout == GroupLayout::kMasked;
    ASSERT_GT(plan.mx_prepass_workspace_bytes(masked ? c.m * plan.spec().experts : c.m), 0u) << c.spec;
    CheckOptions o;
    o.m = c.m;
    o.mx_prepass = true;
    auto r = run_check(*rt_, plan, o);
    ASSERT_TRUE(r.ok()) << c.spec << ": " << r.status().to_string();
    std::printf("[ figures ] %s %lldx%lldx%lld %s rel_fro %.3g (tolerance %.2g) seed %llu\n", c.spec,
                (long long)c.m, (long long)c.n, (long long)c.k, r->config.c_str(), r->rel_fro_err,
                r->tolerance, (unsigned long long)r->seed);
    EXPECT_TRUE(r->passed) << c.spec << " " << c.m << "x" << c.n << "x" << c.k << ": rel_fro "
                           << r->rel_fro_err << " unwritten " << r->unwritten << " nonfinite " << r->nonfinite
                           << " seed " << r->seed;
  }
}

// The conversion kernel is a dequantizer, so its copies are checked bitwise (docs/numerics.md): X's rows hold
// every e4m3 code in every scale block over the rows, and the blocks' E8M0 bytes run through all 256
// values (2^-127 .. 2^127 and NaN), W likewise with other offsets. Each bf16 of the workspace's copies
// must be bf16(e4m3 * 2^(s - 127)) of the f32 product, rounded to nearest even (subnormals kept, Inf on
// overflow); NaN where the product is NaN (any NaN payload).
TEST_F(MxPrepassGpuTest, CopiesAreTheExactBf16OfEveryCodeAndScale) {
  const int64_t m = 512, n = 128, k = 256;  // 8 scale blocks per row; m = the pre-pass's threshold
  Plan plan = plan_of(kMx, m, n, k);
  HostOperands h = host_of(m, n, k);
  const int64_t sk = k / 32;
  auto fill = [&](HostTensor& codes, HostTensor& scales, int64_t rows, int offset) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < k; ++c)
        codes.bytes[static_cast<size_t>(r * k + c)] = uint8_t((r * 7 + c + offset) & 0xFF);
      for (int64_t b = 0; b < sk; ++b)
        scales.bytes[static_cast<size_t>(r * sk + b)] = uint8_t((r * sk + b + offset) & 0xFF);
    }
  };
  fill(h.a, h.a_scale, m, 0);
  fill(h.b, h.b_scale, n, 77);
  DeviceOperands dev = upload(h);
  const size_t need = plan.mx_prepass_workspace_bytes(m);
  ASSERT_GT(need, 0u);
  auto ws = DeviceBuffer::alloc(need);
  ASSERT_TRUE(ws.ok());
  ASSERT_TRUE(ws->fill_bytes(0xA5).ok());
  Operands ops = dev.operands();
  Status st = plan.run(ops, ws->data(), need, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(d_->check(d_->cuCtxSynchronize(), "cuCtxSynchronize").ok());
  const ProblemSizes sizes{m, n, k};
  auto check = [&](const char* what, const HostTensor& codes, const HostTensor& scales, int64_t rows,
                   int64_t offset_bytes) {
    std::vector<uint16_t> got(static_cast<size_t>(rows * k));
    ASSERT_TRUE(ws->download(got.data(), got.size() * 2, static_cast<size_t>(offset_bytes)).ok());
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        const size_t i = static_cast<size_t>(r * k + c);
        const float x = numerics::e4m3_to_float(codes.bytes[i]) *
                        numerics::e8m0_to_float(scales.bytes[static_cast<size_t>(r * sk + c / 32)]);
        const uint16_t want = numerics::bf16_from_float(x);
        const bool nan_want = std::isnan(x), nan_got = (got[i] & 0x7F80) == 0x7F80 && (got[i] & 0x7F) != 0;
        const bool ok = nan_want ? nan_got : got[i] == want;
        if (!ok && wrong++ < 5)
          ADD_FAILURE() << what << " row " << r << " col " << c << ": code 0x" << std::hex
                        << int(codes.bytes[i]) << " scale 0x"
                        << int(scales.bytes[static_cast<size_t>(r * sk + c / 32)]) << " -> 0x" << got[i]
                        << ", want 0x" << want << std::dec;
      }
    }
    EXPECT_EQ(wrong, 0) << what << ": elements not the exact bf16";
  };
  check("X", h.a, h.a_scale, m, sm90_mx_prepass_a_offset());
  check("W", h.b, h.b_scale, n, sm90_mx_prepass_b_offset(sizes));
}

// NaN scales and a NaN code: the same non-finite outputs as the fused kernel; an overflowing scale:
// a non-finite row (the reference's element-by-element semantics).
TEST_F(MxPrepassGpuTest, SpecialsAsTheFusedKernel) {
  const int64_t m = 1024, n = 192, k = 256;
  Plan plan = plan_of(kMx, m, n, k);
  HostOperands h = host_of(m, n, k);
  const int64_t sk = k / 32;
  h.a_scale.bytes[static_cast<size_t>(5 * sk + 0)] = 0xFF;   // X row 5, first block: NaN scale
  h.b_scale.bytes[static_cast<size_t>(7 * sk + 3)] = 0xFF;   // W row 7, block 3
  h.a.bytes[static_cast<size_t>(9 * k + 40)] = 0x7F;         // X row 9: an e4m3 NaN code
  h.a_scale.bytes[static_cast<size_t>(300 * sk + 2)] = 254;  // X row 300, block 2: 2^127 overflows
  h.a.bytes[static_cast<size_t>(300 * k + 64)] = 0x7E;       //   448 * 2^127 -> Inf
  DeviceOperands dev = upload(h);
  const size_t need = plan.mx_prepass_workspace_bytes(m);
  const std::vector<uint16_t> fused = run_once(plan, dev, 0, m * n);
  const std::vector<uint16_t> pre = run_once(plan, dev, need, m * n);
  // Row 300 overflows: the pre-pass, like the reference, dequantizes element by element, so X's row
  // holds an Inf operand (448 * 2^127) and every output of the row is Inf or NaN. The fused kernel at
  // this K runs the promoted FP8 mainloop, which scales each 32-K block's partial SUM: where that sum is
  // small the product stays finite. So there only the pre-pass is checked (every output non-finite);
  // everywhere else the two must agree exactly on NaN and Inf.
  int64_t nonfinite = 0, mismatched = 0, overflow_finite = 0, fused_finite_300 = 0;
  double num = 0, den = 0;
  for (size_t i = 0; i < fused.size(); ++i) {
    const float f = numerics::bf16_to_float(fused[i]), p = numerics::bf16_to_float(pre[i]);
    if (static_cast<int64_t>(i) / n == 300) {
      overflow_finite += std::isfinite(p);
      fused_finite_300 += std::isfinite(f);
      ++nonfinite;
      continue;
    }
    if (!std::isfinite(f) || !std::isfinite(p)) {
      ++nonfinite;
      mismatched += std::isnan(f) != std::isnan(p) || (std::isinf(f) && f != p);
      continue;
    }
    num += (double(f) - p) * (double(f) - p);
    den += double(f) * f;
  }
  // Rows 5, 9 and 300 and column 7 at least.
  EXPECT_GE(nonfinite, 3 * n + m - 3);
  EXPECT_EQ(mismatched, 0) << "non-finite outputs differ from the fused kernel's";
  EXPECT_EQ(overflow_finite, 0) << "finite pre-pass outputs in the overflowing row 300";
  const double rel = std::sqrt(num / den);
  std::printf(
      "[ figures ] specials: %lld non-finite outputs, finite ones rel_fro %.3g against the fused kernel "
      "(whose overflowing row keeps %lld finite outputs of %lld)\n",
      (long long)nonfinite, rel, (long long)fused_finite_300, (long long)n);
  EXPECT_LE(rel, 8e-3);
}

// Row strides other than K (codes) and K / 32 (scales) take the conversion kernel's general addressing:
// X and W as views with padded rows, their scales likewise; the output must equal the contiguous
// operands' bitwise (same bf16 operands, same bf16 kernel).
TEST_F(MxPrepassGpuTest, StridedOperandsMatchContiguousBitwise) {
  const int64_t m = 1040, n = 160, k = 320;
  Plan plan = plan_of(kMx, m, n, k);
  const HostOperands h = host_of(m, n, k);
  DeviceOperands dev = upload(h);
  const size_t need = plan.mx_prepass_workspace_bytes(m);
  const std::vector<uint16_t> dense = run_once(plan, dev, need, m * n);
  // A padded copy of codes [rows, K] (row stride ld) and scales [rows, K / 32] (row stride lds); padding
  // bytes 0x7F (NaN codes) and 0xFF (NaN scales), so a read of the padding would show.
  struct Padded {
    DeviceBuffer codes, scales;
    int64_t shape[2], strides[2], sshape[2], sstrides[2];
    DLTensor t{}, s{};
  };
  auto pad = [&](const HostTensor& codes, const HostTensor& scales, int64_t rows, int64_t ld, int64_t lds,
                 Padded& out) {
    std::vector<uint8_t> c(static_cast<size_t>(rows * ld), 0x7F), sc(static_cast<size_t>(rows * lds), 0xFF);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(codes.bytes.begin() + r * k, k, c.begin() + r * ld);
      std::copy_n(scales.bytes.begin() + r * (k / 32), k / 32, sc.begin() + r * lds);
    }
    auto cb = DeviceBuffer::alloc(c.size());
    auto sb = DeviceBuffer::alloc(sc.size());
    ASSERT_TRUE(cb.ok() && sb.ok());
    out.codes = std::move(*cb);
    out.scales = std::move(*sb);
    ASSERT_TRUE(out.codes.upload(c.data(), c.size()).ok());
    ASSERT_TRUE(out.scales.upload(sc.data(), sc.size()).ok());
    out.shape[0] = out.sshape[0] = rows;
    out.shape[1] = k;
    out.sshape[1] = k / 32;
    out.strides[0] = ld;
    out.sstrides[0] = lds;
    out.strides[1] = out.sstrides[1] = 1;
    for (DLTensor* t : {&out.t, &out.s}) {
      t->device = {kDLCUDA, 0};
      t->ndim = 2;
      t->dtype = {kDLUInt, 8, 1};
    }
    out.t.data = out.codes.data();
    out.t.shape = out.shape;
    out.t.strides = out.strides;
    out.s.data = out.scales.data();
    out.s.shape = out.sshape;
    out.s.strides = out.sstrides;
  };
  Padded x, w;
  pad(h.a, h.a_scale, m, k + 48, k / 32 + 3, x);
  pad(h.b, h.b_scale, n, k + 16, k / 32 + 1, w);
  if (HasFatalFailure()) return;
  Operands ops = dev.operands();
  ops.a = &x.t;
  ops.a_scale = &x.s;
  ops.b = &w.t;
  ops.b_scale = &w.s;
  auto ws = DeviceBuffer::alloc(need);
  ASSERT_TRUE(ws.ok());
  ASSERT_TRUE(dev.out().fill_bytes(0xFF).ok());
  Status st = plan.run(ops, ws->data(), need, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(d_->check(d_->cuCtxSynchronize(), "cuCtxSynchronize").ok());
  std::vector<uint16_t> strided(dense.size());
  ASSERT_TRUE(dev.out().download(strided.data(), strided.size() * 2).ok());
  int64_t differ = 0;
  for (size_t i = 0; i < dense.size(); ++i) differ += dense[i] != strided[i];
  EXPECT_EQ(differ, 0) << "strided X and W differ from contiguous ones";
}

// One workspace for everything, as the docs allow: zero-filled once, then used by the plan's split-K
// bucket (M = 64: counters in its first MiB, left zero by every run) and by the pre-pass (M = 1024: it
// never writes that MiB). The split-K run after the pre-pass must give what it gave before, bitwise.
TEST_F(MxPrepassGpuTest, SharesOneWorkspaceWithSplitK) {
  const int64_t n = 2112, k = 7168;
  Plan plan = plan_of(kMx, 1024, n, k);
  const size_t split_bytes = plan.workspace_bytes(64);
  if (split_bytes == 0)
    GTEST_SKIP() << "this plan's M = 64 bucket (" << plan.config_for(64).to_string() << ") does not split K";
  const size_t bytes = std::max(split_bytes, plan.mx_prepass_workspace_bytes(1024));
  auto ws = DeviceBuffer::alloc(bytes);
  ASSERT_TRUE(ws.ok());
  ASSERT_TRUE(ws->fill_bytes(0).ok());
  DeviceOperands small = upload(host_of(64, n, k));
  DeviceOperands large = upload(host_of(1024, n, k));
  auto run = [&](DeviceOperands& dev, int64_t m) {
    EXPECT_TRUE(dev.out().fill_bytes(0xFF).ok());
    Operands ops = dev.operands();
    Status st = plan.run(ops, ws->data(), bytes, nullptr);
    EXPECT_TRUE(st.ok()) << st.to_string();
    EXPECT_TRUE(d_->check(d_->cuCtxSynchronize(), "cuCtxSynchronize").ok());
    std::vector<uint16_t> out(static_cast<size_t>(m * n));
    EXPECT_TRUE(dev.out().download(out.data(), out.size() * 2).ok());
    return out;
  };
  const std::vector<uint16_t> before = run(small, 64);
  const std::vector<uint16_t> pre = run(large, 1024);
  const std::vector<uint16_t> after = run(small, 64);
  int64_t poisoned = 0;
  for (uint16_t v : pre) poisoned += v == 0xFFFF;
  EXPECT_EQ(poisoned, 0) << "pre-pass outputs left unwritten";
  EXPECT_EQ(before, after) << "the split-K run after the pre-pass differs (its counters were overwritten?)";
  std::printf("[ figures ] split-K config %s (%zu bytes), pre-pass %zu bytes, one buffer of %zu\n",
              plan.config_for(64).to_string().c_str(), split_bytes, plan.mx_prepass_workspace_bytes(1024),
              bytes);
}

// The pre-pass only runs with the caller's workspace: the fused kernel otherwise (the runtime's load
// counter tells which kernels ran), a misaligned workspace is refused, and a run captured after
// prepare() (a fresh runtime: nothing loaded before) replays bitwise.
TEST_F(MxPrepassGpuTest, TakenOnlyWithTheWorkspaceAndCapturable) {
  const int64_t m = 1024, n = 256, k = 512;
  Plan plan = plan_of(kMx, m, n, k);
  DeviceOperands dev = upload(host_of(m, n, k));
  const size_t need = plan.mx_prepass_workspace_bytes(m);
  ASSERT_EQ(need, (size_t{1} << 20) + 2u * (m + n) * k);  // the split-K counters' MiB, then the copies
  const int64_t loads0 = rt_->counters().loads;
  const std::vector<uint16_t> fused = run_once(plan, dev, 0, m * n);
  EXPECT_EQ(rt_->counters().loads, loads0 + 1) << "the fused kernel";
  run_once(plan, dev, need - 1, m * n);  // one byte short: still the fused kernel
  EXPECT_EQ(rt_->counters().loads, loads0 + 1) << "a workspace one byte short took the pre-pass";
  const std::vector<uint16_t> pre = run_once(plan, dev, need, m * n);
  EXPECT_EQ(rt_->counters().loads, loads0 + 3) << "the conversion kernel and the bf16 kernel";

  auto ws = DeviceBuffer::alloc(need + 16);
  ASSERT_TRUE(ws.ok());
  Operands ops = dev.operands();
  Status st = plan.run(ops, static_cast<char*>(ws->data()) + 8, need, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_THAT(st.to_string(), HasSubstr("16-byte aligned"));

  // Capture with a fresh runtime whose only preparation is prepare(): it must load the conversion kernel
  // and the bf16 kernel (a run during a capture loads nothing).
  std::shared_ptr<Runtime> fresh = make_test_runtime();
  auto plan2 = fresh->plan(*parse_spec(kMx), {m, n, k});
  ASSERT_TRUE(plan2.ok()) << plan2.status().to_string();
  ASSERT_TRUE(plan2->prepare().ok());
  CUstream stream = nullptr;
  ASSERT_TRUE(d_->check(d_->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate").ok());
  ASSERT_TRUE(dev.out().fill_bytes(0xFF).ok());
  ASSERT_TRUE(d_->check(d_->cuCtxSynchronize(), "cuCtxSynchronize").ok());
  ASSERT_TRUE(d_->check(d_->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin").ok());
  const Status launched = plan2->run(ops, ws->data(), need, stream);
  CUgraph graph = nullptr;
  const Status ended = d_->check(d_->cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  ASSERT_TRUE(launched.ok()) << launched.to_string();
  ASSERT_TRUE(ended.ok()) << ended.to_string();
  CUgraphExec exec = nullptr;
  ASSERT_TRUE(
      d_->check(d_->cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags").ok());
  ASSERT_TRUE(d_->check(d_->cuGraphLaunch(exec, stream), "cuGraphLaunch").ok());
  ASSERT_TRUE(d_->check(d_->cuStreamSynchronize(stream), "cuStreamSynchronize").ok());
  std::vector<uint16_t> replay(pre.size());
  ASSERT_TRUE(dev.out().download(replay.data(), replay.size() * 2).ok());
  EXPECT_EQ(replay, pre) << "the graph replay differs from the direct pre-pass run";
  d_->cuGraphExecDestroy(exec);
  d_->cuGraphDestroy(graph);
  d_->cuStreamDestroy(stream);
  // And the two paths agree closely (same bf16 operands, different kernels' summation order).
  double num = 0, den = 0;
  for (size_t i = 0; i < fused.size(); ++i) {
    const double f = numerics::bf16_to_float(fused[i]), p = numerics::bf16_to_float(pre[i]);
    num += (f - p) * (f - p);
    den += f * f;
  }
  EXPECT_LE(std::sqrt(num / den), 8e-3);
}

}  // namespace
}  // namespace kiln

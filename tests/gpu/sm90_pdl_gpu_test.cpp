// gpu tier: programmatic dependent launch of the sm90 family (templates/kernels/sm90/kernel.cuh,
// runtime/sm90_launch.cpp) and of the portable family's decode kernel on sm_90 (its generated entry,
// compiler/emit/emit.cpp). A chain of dependent bf16 GEMMs is launched back to back on one stream with
// no synchronization between them, alternating between two output buffers P and Q:
//   P = X . W0^T,   Q = P . W1^T,   P = Q . W0^T,   Q = P . W1^T, ...
// each GEMM reading the previous one's output as its A operand while PDL lets it start before that one
// has finished. Step i + 1 overwrites the buffer step i reads, so both orders are checked: a GEMM that
// read its input before its predecessor wrote it (read-after-write), and one that stored its output
// before its predecessor had finished reading that buffer (write-after-read: a store issued before
// griddepcontrol.wait). Both buffers are poisoned (0xFFFF: NaN) before each chain. The two final
// buffers must be bitwise those of the same GEMMs run one at a time with a stream synchronize after each
// (the kernels are deterministic), and those steps match a CPU reference one by one. Small-M shapes
// (M = 64 and 128; N = K = 2048), dense and grouped (offsets, an empty expert), the chain captured into
// a CUDA graph and replayed, and a chain at M = 16 that the plan runs on the decode kernel.
// Skips without a device or on anything but sm_90. KILN_PDL=0 runs the same chains without the launch
// attribute; Sm90PdlGpuTest.PrintsChainTimePerGemm prints the time per GEMM to set the two side by side.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/numerics/fp8.hpp"
#include "kiln/kiln.hpp"
#include "verify/check.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/sm90_launch.hpp"
#include "tests/common/gpu_env.hpp"

namespace kiln {
namespace {

constexpr uint16_t kPoison = 0xFFFF;  // bf16 NaN

// Uniform bf16 values in [-bound, bound).
std::vector<uint16_t> random_bf16(size_t count, float bound, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = numerics::bf16_from_float(dist(rng));
  return v;
}

DLTensor tensor_of(void* data, const int64_t* shape, int ndim, DLDataType dtype) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCUDA, 0};
  t.ndim = ndim;
  t.shape = const_cast<int64_t*>(shape);
  t.dtype = dtype;
  return t;
}

// The buffers and operands of one chain. experts == 0: dense; else grouped (offsets layout, W [E, N, K]).
class Chain {
 public:
  static constexpr DLDataType kBf16{kDLBfloat, 16, 1};

  Chain(int64_t m, int64_t n, int experts, int steps, std::vector<int32_t> ends, uint64_t seed)
      : m_(m), n_(n), experts_(experts), steps_(steps), ends_(std::move(ends)) {
    std::mt19937_64 rng(seed);
    // Entries of W in [-b, b) with b = sqrt(3 / K): a row of Y keeps about the spread of a row of X
    // (variance K * var(x) * b^2 / 3), so six GEMMs in a row neither overflow nor vanish in bf16.
    const float bound = std::sqrt(3.0f / static_cast<float>(n));
    host_x_ = random_bf16(static_cast<size_t>(m * n), 1.0f, rng);
    for (int i = 0; i < 2; ++i) {
      host_w_[i] = random_bf16(static_cast<size_t>(std::max(experts, 1) * n * n), bound, rng);
      w_float_[i].resize(host_w_[i].size());
      for (size_t j = 0; j < host_w_[i].size(); ++j) w_float_[i][j] = numerics::bf16_to_float(host_w_[i][j]);
    }
  }

  // Allocates and uploads (in the current context) and makes the DLTensors.
  Status upload() {
    const size_t act = static_cast<size_t>(m_ * n_) * 2;
    KILN_ASSIGN_OR_RETURN(x_, DeviceBuffer::alloc(act));
    KILN_RETURN_IF_ERROR(x_.upload(host_x_.data(), act));
    for (int i = 0; i < 2; ++i) {
      KILN_ASSIGN_OR_RETURN(w_[i], DeviceBuffer::alloc(host_w_[i].size() * 2));
      KILN_RETURN_IF_ERROR(w_[i].upload(host_w_[i].data(), host_w_[i].size() * 2));
    }
    for (int b = 0; b < buffers(); ++b) {
      KILN_ASSIGN_OR_RETURN(DeviceBuffer y, DeviceBuffer::alloc(act));
      y_.push_back(std::move(y));
    }
    if (experts_ > 0) {
      KILN_ASSIGN_OR_RETURN(ends_dev_, DeviceBuffer::alloc(ends_.size() * 4));
      KILN_RETURN_IF_ERROR(ends_dev_.upload(ends_.data(), ends_.size() * 4));
    }
    shape_act_[0] = m_;
    shape_act_[1] = n_;
    shape_w_[0] = experts_;
    shape_w_[1] = shape_w_[2] = n_;
    shape_ends_[0] = experts_;
    const int w_ndim = experts_ > 0 ? 3 : 2;
    const int64_t* w_shape = experts_ > 0 ? shape_w_ : shape_w_ + 1;
    a_.push_back(tensor_of(x_.data(), shape_act_, 2, kBf16));
    for (int s = 0; s < steps_; ++s) {
      out_.push_back(tensor_of(y_[static_cast<size_t>(s % buffers())].data(), shape_act_, 2, kBf16));
      if (s + 1 < steps_) a_.push_back(out_.back());
    }
    for (int i = 0; i < 2; ++i) b_[i] = tensor_of(w_[i].data(), w_shape, w_ndim, kBf16);
    offsets_ = tensor_of(ends_dev_.data(), shape_ends_, 1, {kDLInt, 32, 1});
    return Status::Ok();
  }

  // The operands of step s: A = X or step s - 1's output, B = W(s % 2), out = buffer s % 2.
  Operands operands(int s) {
    Operands ops;
    ops.a = &a_[static_cast<size_t>(s)];
    ops.b = &b_[s % 2];
    ops.out = &out_[static_cast<size_t>(s)];
    if (experts_ > 0) ops.offsets = &offsets_;
    return ops;
  }

  // Both output buffers set to NaN; returns once the memsets are done (they run on the legacy stream, which a
  // non-blocking stream does not wait for).
  Status poison(const Driver& d) {
    for (DeviceBuffer& y : y_) KILN_RETURN_IF_ERROR(y.fill_bytes(0xFF));
    return d.check(d.cuCtxSynchronize(), "cuCtxSynchronize (poison)");
  }

  // The output buffers' contents, buffer b in (*ys)[b].
  Status download(std::vector<std::vector<uint16_t>>* ys) const {
    ys->assign(static_cast<size_t>(buffers()), std::vector<uint16_t>(static_cast<size_t>(m_ * n_)));
    for (int b = 0; b < buffers(); ++b)
      KILN_RETURN_IF_ERROR(y_[static_cast<size_t>(b)].download((*ys)[b].data(), (*ys)[b].size() * 2));
    return Status::Ok();
  }

  // Step s's output, read right after it ran (a later step overwrites its buffer).
  Status download_step(int s, std::vector<uint16_t>* y) const {
    y->resize(static_cast<size_t>(m_ * n_));
    return y_[static_cast<size_t>(s % buffers())].download(y->data(), y->size() * 2);
  }

  // rel_fro of step s's output against a CPU GEMM of its actual input (`in`: X or the downloaded
  // Y(s - 1)) with W(s % 2), in double over the exactly decoded bf16 values.
  double step_error(int s, const std::vector<uint16_t>& in, const std::vector<uint16_t>& out) const {
    const std::vector<float>& w = w_float_[s % 2];
    std::vector<float> a(in.size());
    for (size_t i = 0; i < in.size(); ++i) a[i] = numerics::bf16_to_float(in[i]);
    double num = 0, den = 0;
    int e = 0;
    for (int64_t r = 0; r < m_; ++r) {
      if (experts_ > 0) {
        while (e < experts_ - 1 && r >= ends_[static_cast<size_t>(e)]) ++e;
      }
      const float* x = a.data() + r * n_;
      for (int64_t c = 0; c < n_; ++c) {
        const float* wr = w.data() + (static_cast<int64_t>(e) * n_ + c) * n_;
        double part[4] = {0, 0, 0, 0};  // four chains of adds: the sum is not one long dependency
        for (int64_t k = 0; k < n_; k += 4) {
          for (int j = 0; j < 4; ++j) part[j] += static_cast<double>(x[k + j]) * wr[k + j];
        }
        const double acc = (part[0] + part[1]) + (part[2] + part[3]);
        const double got = numerics::bf16_to_float(out[static_cast<size_t>(r * n_ + c)]);
        num += (got - acc) * (got - acc);
        den += acc * acc;
      }
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }

  int steps() const { return steps_; }
  int buffers() const { return std::min(steps_, 2); }
  const std::vector<uint16_t>& host_x() const { return host_x_; }

 private:
  int64_t m_, n_;
  int experts_, steps_;
  std::vector<int32_t> ends_;
  std::vector<uint16_t> host_x_;
  std::vector<uint16_t> host_w_[2];
  std::vector<float> w_float_[2];  // host_w_ decoded, for step_error
  DeviceBuffer x_, w_[2], ends_dev_;
  std::vector<DeviceBuffer> y_;
  int64_t shape_act_[2] = {0, 0}, shape_w_[3] = {0, 0, 0}, shape_ends_[1] = {0};
  std::vector<DLTensor> a_, out_;
  DLTensor b_[2]{}, offsets_{};
};

uint64_t fresh_seed() {
  const uint64_t seed =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
  std::printf("[ figures ] seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

class Sm90PdlGpuTest : public testing::Test {
 protected:
  void SetUp() override {
    rt_ = make_test_runtime();
    ASSERT_NE(rt_, nullptr);
    const std::string why = sm90_skip_reason(*rt_);
    if (!why.empty()) GTEST_SKIP() << why;
    d_ = *Driver::get();
    ASSERT_TRUE(ctx_.enter(d_, 0).ok());
    ASSERT_TRUE(d_->check(d_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate").ok());
  }
  void TearDown() override {
    if (stream_ != nullptr) d_->cuStreamDestroy(stream_);
  }

  // Plans the chain's GEMM (M x N x N) and a zeroed split-K workspace when its config splits (passed
  // explicitly: Plan::run then allocates nothing, during a capture too). The plan must run the sm90
  // family, or with `decode` the portable family's decode kernel.
  void plan_chain(const std::string& text, int64_t m, int64_t n, bool decode = false) {
    auto spec = parse_spec(text);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status().to_string();
    spec_ = *spec;
    auto plan = rt_->plan(*spec, {m, n, n});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    // The M bucket Plan::run picks: grouped problems by their expected rows per expert.
    const int64_t bucket_m =
        spec_.layout == GroupLayout::kOffsets ? (m + spec_.experts - 1) / spec_.experts : m;
    if (decode) {
      ASSERT_EQ(plan->family_for(bucket_m), KernelFamily::kSm80Gemm) << text << " M=" << m;
      ASSERT_NE(plan->config_for(bucket_m).decode, 0) << text << " M=" << m << ": not the decode kernel";
    } else {
      ASSERT_EQ(plan->family_for(bucket_m), KernelFamily::kSm90Gemm) << text << " M=" << m;
    }
    plan_ = std::make_unique<Plan>(std::move(*plan));
    ws_bytes_ = plan_->workspace_bytes(m);
    if (ws_bytes_ > 0) {
      auto ws = DeviceBuffer::alloc(ws_bytes_);
      ASSERT_TRUE(ws.ok()) << ws.status().to_string();
      ws_ = std::move(*ws);
      ASSERT_TRUE(ws_.fill_bytes(0).ok());
    }
    std::printf("[ figures ] %s M=%lld N=K=%lld config %s, PDL %s\n", text.c_str(), (long long)m,
                (long long)n, plan_->config_for(bucket_m).to_string().c_str(),
                sm90_pdl_enabled() ? "on" : "off (KILN_PDL=0)");
  }

  // Every step of the chain on stream_, back to back; no synchronization.
  Status launch_chain(Chain& chain) {
    for (int s = 0; s < chain.steps(); ++s) {
      Operands ops = chain.operands(s);
      KILN_RETURN_IF_ERROR(plan_->run(ops, ws_bytes_ > 0 ? ws_.data() : nullptr, ws_bytes_, stream_));
    }
    return Status::Ok();
  }

  Status sync() { return d_->check(d_->cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

  // The chain run one GEMM at a time (a stream synchronize after each, so nothing overlaps), each step's
  // output read back at once and checked against the CPU reference on its actual input; the final
  // contents of the output buffers in *ys.
  void serialized_reference(Chain& chain, std::vector<std::vector<uint16_t>>* ys) {
    ASSERT_TRUE(chain.poison(*d_).ok());
    std::vector<std::vector<uint16_t>> outs(static_cast<size_t>(chain.steps()));
    for (int s = 0; s < chain.steps(); ++s) {
      Operands ops = chain.operands(s);
      Status st = plan_->run(ops, ws_bytes_ > 0 ? ws_.data() : nullptr, ws_bytes_, stream_);
      ASSERT_TRUE(st.ok()) << st.to_string();
      ASSERT_TRUE(sync().ok());
      ASSERT_TRUE(chain.download_step(s, &outs[static_cast<size_t>(s)]).ok());
    }
    ASSERT_TRUE(chain.download(ys).ok());
    const double tol = check_tolerance(spec_, 0);
    for (int s = 0; s < chain.steps(); ++s) {
      const std::vector<uint16_t>& out = outs[static_cast<size_t>(s)];
      int64_t unwritten = 0;
      for (uint16_t v : out) unwritten += v == kPoison;
      EXPECT_EQ(unwritten, 0) << "step " << s;
      const double err = chain.step_error(s, s == 0 ? chain.host_x() : outs[static_cast<size_t>(s - 1)], out);
      std::printf("[ figures ] step %d rel_fro %.3g (tolerance %.2g)\n", s, err, tol);
      EXPECT_LE(err, tol) << "step " << s;
    }
  }

  // The output buffers after `what`, bitwise against the serialized run's.
  void expect_bitwise(Chain& chain, const std::vector<std::vector<uint16_t>>& want, const std::string& what) {
    std::vector<std::vector<uint16_t>> got;
    ASSERT_TRUE(chain.download(&got).ok());
    for (int b = 0; b < chain.buffers(); ++b) {
      const auto& g = got[static_cast<size_t>(b)];
      const auto& w = want[static_cast<size_t>(b)];
      int64_t differ = 0, poisoned = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        differ += g[i] != w[i];
        poisoned += g[i] == kPoison;
      }
      EXPECT_EQ(differ, 0) << what << ": output buffer " << b << " differs from the serialized run ("
                           << poisoned << " elements NaN-poisoned)";
    }
  }

  // Runs the chain back to back `rounds` times (poisoned before each) and checks each bitwise.
  void check_chain(Chain& chain, int rounds) {
    std::vector<std::vector<uint16_t>> want;
    serialized_reference(chain, &want);
    if (HasFatalFailure()) return;
    for (int round = 0; round < rounds; ++round) {
      ASSERT_TRUE(chain.poison(*d_).ok());
      Status st = launch_chain(chain);
      ASSERT_TRUE(st.ok()) << st.to_string();
      ASSERT_TRUE(sync().ok());
      expect_bitwise(chain, want, "back-to-back round " + std::to_string(round));
    }
  }

  // Dense bf16 chains of six GEMMs (N = K = 2048), one per M, each checked over three back-to-back rounds;
  // decode: the plan must run them on the portable family's decode kernel.
  void check_dense_chains(std::initializer_list<int64_t> ms, bool decode) {
    for (int64_t m : ms) {
      plan_chain("gemm a=bf16 b=bf16 out=bf16", m, 2048, decode);
      if (HasFatalFailure()) return;
      Chain chain(m, 2048, 0, 6, {}, fresh_seed());
      Status st = chain.upload();
      ASSERT_TRUE(st.ok()) << st.to_string();
      check_chain(chain, 3);
    }
  }

  std::shared_ptr<Runtime> rt_;
  const Driver* d_ = nullptr;
  ScopedContext ctx_;
  CUstream stream_ = nullptr;
  KernelSpec spec_;
  std::unique_ptr<Plan> plan_;
  DeviceBuffer ws_;
  size_t ws_bytes_ = 0;
};

TEST_F(Sm90PdlGpuTest, DenseChainOnOneStreamMatchesSerializedRuns) { check_dense_chains({64, 128}, false); }

// Grouped (offsets; expert 2 empty): build_groups reads the offsets from global memory, after the wait.
TEST_F(Sm90PdlGpuTest, GroupedChainOnOneStreamMatchesSerializedRuns) {
  plan_chain("grouped_gemm[experts=4,layout=offsets] a=bf16 b=bf16 out=bf16", 128, 2048);
  if (HasFatalFailure()) return;
  Chain chain(128, 2048, 4, 4, {16, 80, 80, 128}, fresh_seed());
  Status st = chain.upload();
  ASSERT_TRUE(st.ok()) << st.to_string();
  check_chain(chain, 3);
}

// M = 16: the plan's default for a dense bf16 GEMM of 1..16 rows on sm_90 is the portable family's
// decode kernel, whose generated entry waits on sm_90+ too. Six steps, then the same chain on M = 5.
TEST_F(Sm90PdlGpuTest, DecodeChainOnOneStreamMatchesSerializedRuns) { check_dense_chains({16, 5}, true); }

// The chain captured into a CUDA graph (since CUDA 12.3 a capture turns the launches' programmatic
// serialization into programmatic edges of the graph) and replayed twice, poisoned before each replay.
TEST_F(Sm90PdlGpuTest, ChainCapturedInAGraphMatchesSerializedRuns) {
  plan_chain("gemm a=bf16 b=bf16 out=bf16", 64, 2048);
  if (HasFatalFailure()) return;
  Chain chain(64, 2048, 0, 6, {}, fresh_seed());
  Status st = chain.upload();
  ASSERT_TRUE(st.ok()) << st.to_string();
  std::vector<std::vector<uint16_t>> want;
  serialized_reference(chain, &want);  // also loads the kernel: Plan::run never loads during a capture
  if (HasFatalFailure()) return;

  ASSERT_TRUE(d_->check(d_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                        "cuStreamBeginCapture")
                  .ok());
  const Status launched = launch_chain(chain);
  CUgraph graph = nullptr;
  const Status ended = d_->check(d_->cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
  ASSERT_TRUE(launched.ok()) << launched.to_string();
  ASSERT_TRUE(ended.ok()) << ended.to_string();
  CUgraphExec exec = nullptr;
  st = d_->check(d_->cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  EXPECT_TRUE(st.ok()) << st.to_string();
  for (int replay = 0; st.ok() && replay < 2; ++replay) {
    ASSERT_TRUE(chain.poison(*d_).ok());
    st = d_->check(d_->cuGraphLaunch(exec, stream_), "cuGraphLaunch");
    if (st.ok()) st = sync();
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (st.ok()) expect_bitwise(chain, want, "graph replay " + std::to_string(replay));
  }
  if (exec != nullptr) d_->cuGraphExecDestroy(exec);
  d_->cuGraphDestroy(graph);
}

// Not a pass/fail test of speed: the time per GEMM of the dense chain (20 chains of 6 GEMMs after a
// warm-up, CUDA events on the stream). Run it once as is and once with KILN_PDL=0 to see what PDL saves.
TEST_F(Sm90PdlGpuTest, PrintsChainTimePerGemm) {
  for (int64_t m : {int64_t{64}, int64_t{128}}) {
    plan_chain("gemm a=bf16 b=bf16 out=bf16", m, 2048);
    if (HasFatalFailure()) return;
    Chain chain(m, 2048, 0, 6, {}, 1);
    ASSERT_TRUE(chain.upload().ok());
    ASSERT_TRUE(chain.poison(*d_).ok());
    ASSERT_TRUE(launch_chain(chain).ok());  // warm-up: loads the kernel
    ASSERT_TRUE(sync().ok());
    CUevent e0 = nullptr, e1 = nullptr;
    ASSERT_TRUE(d_->check(d_->cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate").ok());
    ASSERT_TRUE(d_->check(d_->cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate").ok());
    const int kChains = 20;
    Status st = d_->check(d_->cuEventRecord(e0, stream_), "cuEventRecord");
    for (int i = 0; st.ok() && i < kChains; ++i) st = launch_chain(chain);
    if (st.ok()) st = d_->check(d_->cuEventRecord(e1, stream_), "cuEventRecord");
    if (st.ok()) st = d_->check(d_->cuEventSynchronize(e1), "cuEventSynchronize");
    float ms = 0;
    if (st.ok()) st = d_->check(d_->cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
    d_->cuEventDestroy(e0);
    d_->cuEventDestroy(e1);
    ASSERT_TRUE(st.ok()) << st.to_string();
    std::printf(
        "[ timing ] bf16 chain M=%lld N=K=2048: %.2f us per GEMM over %d back-to-back GEMMs (PDL %s)\n",
        (long long)m, 1000.0 * ms / (kChains * chain.steps()), kChains * chain.steps(),
        sm90_pdl_enabled() ? "on" : "off");
  }
}

}  // namespace
}  // namespace kiln

// unit tier: the host cost of Plan::run's operand checks (check_operands, check_quantize_operands),
// which run on every launch (target: dispatch of a prepared plan <= 3 us). No GPU: the tensors
// carry made-up device addresses, which the checks never dereference.
//
// Prints one `[ figures ]` line per spec (ns per call, median of 50 batches of 4,000 calls); nothing
// here asserts on time (a loaded CI machine must not fail it). The checks' results are asserted OK so
// that a figure always times the success path, and the success path is asserted to allocate nothing
// (runtime/runtime_impl.hpp: Plan::run does no allocation; messages are built on errors only).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "verify/check_inputs.hpp"
#include "runtime/operands.hpp"

// Heap allocations on this thread (the global operator new is replaced for this binary).
#include "tests/common/count_allocations.hpp"

namespace kiln {
namespace {

// DLTensors over a HostOperands' shapes and dtypes, at distinct 256-byte aligned fake addresses.
class FakeDeviceOperands {
 public:
  FakeDeviceOperands(const KernelSpec& spec, const HostOperands& h) {
    const HostTensor* src[7] = {&h.a, &h.b, &h.out, &h.a_scale, &h.b_scale, &h.b_global, &h.group_rows};
    const DLTensor** dst[7] = {&ops_.a, &ops_.b, nullptr, &ops_.a_scale, &ops_.b_scale, &ops_.b_global,
                               spec.layout == GroupLayout::kMasked ? &ops_.counts : &ops_.offsets};
    for (int i = 0; i < 7; ++i) {
      if (!src[i]->present()) continue;
      DLTensor& t = add(*src[i]);
      if (i == 2) ops_.out = &t; else *dst[i] = &t;
    }
    for (size_t s = 0; s < h.ep.size(); ++s) {
      const DLTensor* t = &add(h.ep[s]);
      switch (h.ep_operands[s].vector) {
        case EpVector::kBias: ops_.bias = t; break;
        case EpVector::kScale: ops_.scale = t; break;
        case EpVector::kColScale: ops_.colscale = t; break;
        case EpVector::kExpertScale: ops_.expert_scale = t; break;
        case EpVector::kResidual: ops_.residual = t; break;
        case EpVector::kGateBias: ops_.gate_bias = t; break;
        case EpVector::kUpBias: ops_.up_bias = t; break;
      }
    }
  }
  FakeDeviceOperands(const FakeDeviceOperands&) = delete;
  FakeDeviceOperands& operator=(const FakeDeviceOperands&) = delete;
  const Operands& ops() const { return ops_; }
  Operands& ops() { return ops_; }
  // A tensor of the given shape and dtype (quantize specs: out_scale, out_global).
  DLTensor* make(std::vector<int64_t> shape, DLDataType dtype) {
    HostTensor h;
    h.shape = std::move(shape);
    h.dtype = dtype;
    return &add(h);
  }

 private:
  DLTensor& add(const HostTensor& h) {
    const size_t i = count_++;
    shapes_[i] = h.shape;
    DLTensor& t = tensors_[i];
    t = DLTensor{};
    t.data = reinterpret_cast<void*>(uintptr_t{0x7f0000000000} + (uintptr_t{i} << 28));
    t.device = {kDLCUDA, 0};
    t.ndim = static_cast<int>(shapes_[i].size());
    t.dtype = h.dtype;
    t.shape = shapes_[i].data();
    return t;
  }
  DLTensor tensors_[20]{};
  std::vector<int64_t> shapes_[20];
  size_t count_ = 0;
  Operands ops_;
};

// Median ns per call of f over 50 batches of 4,000 calls (200k calls).
template <typename F>
double median_ns(F&& f) {
  constexpr int kBatches = 50, kPerBatch = 4000;
  std::vector<double> ns;
  for (int b = 0; b < kBatches; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPerBatch; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kPerBatch);
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

class CheckOperandsHostCostTest : public testing::TestWithParam<const char*> {};

TEST_P(CheckOperandsHostCostTest, PrintsNsPerCall) {
  auto spec = parse_spec(GetParam());
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  const ProblemSizes sizes{16, 256, 256};
  uint64_t seed = 20261201;
  auto h = random_operands(*spec, sizes.m, sizes.n, sizes.k, {}, seed);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  FakeDeviceOperands dev(*spec, *h);
  // What Plan keeps: the epilogue's operands, parsed once at plan time.
  auto program = spec_epilogue_program(*spec);
  ASSERT_TRUE(program.ok());
  const std::vector<EpilogueOperand> epilogue = *program ? (*program)->operands : std::vector<EpilogueOperand>{};
  auto first = check_operands(*spec, sizes, dev.ops(), epilogue);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  // Plan::run's form (the result written in place).
  int64_t sink = 0;
  CheckedOperands c;
  const long long allocations = kiln::test::t_allocations;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(check_operands(*spec, sizes, dev.ops(), epilogue, c).ok());
  EXPECT_EQ(kiln::test::t_allocations - allocations, 0) << "check_operands allocates on its success path";
  const double ns = median_ns([&] {
    Status s = check_operands(*spec, sizes, dev.ops(), epilogue, c);
    sink += s.ok() ? c.lda : -1;
  });
  EXPECT_EQ(sink % first->lda, 0);  // every call succeeded (and the loop is not optimised away)
  std::printf("[ figures ] check_operands host cost: %.0f ns per call (%s, M=16 N=256 K=256)\n", ns, GetParam());
}

std::string spec_case_name(const testing::TestParamInfo<const char*>& info) {
  static const char* const kNames[] = {"Bf16",      "E4m3Tensor", "E4m3Blocks",   "E4m3BlocksUe8m0",
                                       "Bf16Mxfp4", "Bf16Nvfp4",  "Bf16Epilogue", "GroupedMxfp4Glu"};
  return kNames[info.index];
}

INSTANTIATE_TEST_SUITE_P(
    Specs, CheckOperandsHostCostTest,
    testing::Values("gemm a=bf16 b=bf16 out=bf16", "gemm a=e4m3 b=e4m3 out=bf16",
                    "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16",
                    "gemm a=e4m3:block1x128:ue8m0 b=e4m3:block128x128:ue8m0 out=bf16", "gemm a=bf16 b=mxfp4 out=bf16",
                    "gemm a=bf16 b=nvfp4 out=bf16",
                    "gemm a=bf16 b=bf16 out=bf16 epilogue=\"out = silu(acc + bias[n]) * scale[m]\"",
                    "grouped_gemm[experts=8,layout=offsets] a=bf16 b=mxfp4 out=bf16 gate_up=interleaved "
                    "epilogue=\"g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
                    "out = g * sigmoid(1.702 * g) * (u + 1.0)\""),
    spec_case_name);

TEST(CheckQuantizeOperandsHostCostTest, PrintsNsPerCall) {
  struct Case {
    const char* spec;
    std::vector<int64_t> scale_shape;
    DLDataType scale_dtype;
  };
  const int64_t m = 16, k = 256;
  const Case cases[] = {{"quantize a=bf16 out=e4m3:block1x128", {m, k / 128}, {kDLFloat, 32, 1}},
                        {"quantize a=bf16 out=mxfp8", {m, k / 32}, {kDLUInt, 8, 1}}};
  for (const Case& c : cases) {
    auto spec = parse_spec(c.spec);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    HostOperands h;
    h.a.shape = {m, k};
    h.a.dtype = {kDLBfloat, 16, 1};
    h.out.shape = {m, k};
    h.out.dtype = {kDLUInt, 8, 1};
    FakeDeviceOperands dev(*spec, h);
    dev.ops().out_scale = dev.make(c.scale_shape, c.scale_dtype);
    const ProblemSizes sizes{m, 0, k};
    auto first = check_quantize_operands(*spec, sizes, dev.ops());
    ASSERT_TRUE(first.ok()) << first.status().to_string();
    const long long allocations = kiln::test::t_allocations;
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(check_quantize_operands(*spec, sizes, dev.ops()).ok());
    EXPECT_EQ(kiln::test::t_allocations - allocations, 0) << "check_quantize_operands allocates on its success path";
    int64_t sink = 0;
    const double ns = median_ns([&] {
      auto q = check_quantize_operands(*spec, sizes, dev.ops());
      sink += q.ok() ? q->ld_in : -1;
    });
    EXPECT_EQ(sink % first->ld_in, 0);
    std::printf("[ figures ] check_quantize_operands host cost: %.0f ns per call (%s, M=16 K=256)\n", ns, c.spec);
  }
}

}  // namespace
}  // namespace kiln

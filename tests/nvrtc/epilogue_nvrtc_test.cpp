// Emitted epilogue functors + templates/epilogue/functions.cuh compile with NVRTC alone (the
// embedded templates/ tree as the only headers) for sm_90a and sm_80, without spills. The probe
// kernel instantiates the functor with a minimal Ctx that has the documented load<slot> interface.
// CUDA toolkit, no GPU.
#include <gtest/gtest.h>

#include <string>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/nvrtc/nvrtc.hpp"

namespace kiln {
namespace {

// A kernel around the functor: one thread per output element of an M x N tile, every vector
// operand an f32 array (row stride ld for the two-index forms).
std::string probe_source(const std::string& functor) {
  std::string s = "#include \"epilogue/functions.cuh\"\n\n";
  s += functor;
  s += R"(
struct ProbeCtx {
  const float* vec[8];
  int ld[8];
  template <int kSlot>
  __device__ float load(int i) const { return vec[kSlot][i]; }
  template <int kSlot>
  __device__ float load(int r, int col) const { return vec[kSlot][static_cast<long long>(r) * ld[kSlot] + col]; }
};

extern "C" __global__ void kiln_epilogue_probe(ProbeCtx c, const float* acc, const float* gate, const float* up,
                                               float* out, int m_count, int n_count, int expert) {
  static_assert(KilnEpilogue::kNumOperands <= 8, "the probe context holds at most 8 operands");
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m_count * n_count) return;
  const int m = i / n_count, n = i % n_count;
  out[i] = KilnEpilogue::apply(c, acc[i], gate[i], up[i], m, n, expert);
}
)";
  return s;
}

struct Case {
  const char* name;
  const char* text;
  EpilogueContext ctx;
  // kiln does not fold constants (the device computes what was written), so arithmetic on two
  // literals that overflows or underflows draws NVRTC's warning #222 "floating-point operation
  // result is out of range" — a warning, never an error.
  bool constant_out_of_range = false;
};

const Case kCases[] = {
    {"GptOssSwiglu",
     "g = min(gate, 7.0); u = clamp(up, -7.0, 7.0); out = g * sigmoid(1.702 * g) * (u + 1.0)",
     {.glu = true, .grouped = true}},
    {"GptOssSwigluWithBias",
     "g = min(gate + gate_bias[e,n], 7.0); u = clamp(up + up_bias[e,n], -7.0, 7.0); "
     "out = g * sigmoid(1.702 * g) * (u + 1.0)",
     {.glu = true, .grouped = true}},
    {"Swiglu", "out = silu(gate) * up", {.glu = true, .grouped = false}},
    {"Geglu", "out = gelu(gate) * up", {.glu = true, .grouped = false}},
    {"SiluBiasScale", "out = silu(acc + bias[n]) * scale[m]", {}},
    {"ExpertVectors",
     "out = relu2(acc * colscale[e,n] + bias[e,n]) * expert_scale[e] * scale[m] + residual[m,n]",
     {.glu = false, .grouped = true}},
    {"EveryFunction",
     "a = min(acc, 1.0) + max(acc, -1.0) + clamp(acc, -2.0, 2.0); b = exp(a) + log(abs(a) + 1.0) + tanh(a); "
     "c = sqrt(abs(b)) + rsqrt(abs(b) + 1.0); out = sigmoid(c) + silu(c) + gelu(c) + gelu_tanh(c) + relu(c) "
     "+ "
     "relu2(c) - acc * -1e-45 / 3.4028235e38",
     {}},
    {"NamesThatAreCppKeywords", "int = acc; asm = int * 2.0; struct = asm - int; out = struct", {}},
    {"Constant", "out = -2.5", {}},
    {"ConstantOutOfRange", "out = acc + 3e38 * 10.0 + 1e-45 / 3e38", {}, true},
};

class EpilogueNvrtcTest : public ::testing::TestWithParam<std::tuple<Case, std::string>> {};

TEST_P(EpilogueNvrtcTest, FunctorCompilesWithoutSpills) {
  const auto& [c, arch_name] = GetParam();
  StatusOr<Epilogue> ep = parse_epilogue(c.text, c.ctx);
  ASSERT_TRUE(ep.ok()) << ep.status().to_string();
  StatusOr<EpilogueCode> code = emit_epilogue(*ep);
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  StatusOr<Arch> arch = parse_arch(arch_name);
  ASSERT_TRUE(arch.ok()) << arch.status().to_string();
  const std::string source = probe_source(code->functor);
  StatusOr<CompiledKernel> r = compile_cuda(source, *arch, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string() << "\n" << source;
  EXPECT_GT(r->cubin.size(), 64u);
  EXPECT_EQ(r->spill_stores, 0) << r->log;
  EXPECT_EQ(r->spill_loads, 0) << r->log;
  if (!c.constant_out_of_range) EXPECT_EQ(r->log.find("warning"), std::string::npos) << r->log;
}

INSTANTIATE_TEST_SUITE_P(Epilogues, EpilogueNvrtcTest,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values("sm_90a", "sm_80")),
                         [](const auto& info) {
                           std::string arch = std::get<1>(info.param);
                           return std::string(std::get<0>(info.param).name) + "_" + arch;
                         });

}  // namespace
}  // namespace kiln

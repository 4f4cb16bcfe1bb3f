// Host evaluation of a lowered epilogue (evaluate_epilogue): kiln's CPU reference and the tests.
// The formulas mirror templates/epilogue/functions.cuh operation for operation; keep them in step.
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "compiler/epilogue/epilogue.hpp"

namespace kiln {
namespace {

float ep_min(float a, float b) { return (a < b || a != a) ? a : b; }
float ep_max(float a, float b) { return (a > b || a != a) ? a : b; }

float call(EpFunction f, const float* x) {
  switch (f) {
    case EpFunction::kMin: return ep_min(x[0], x[1]);
    case EpFunction::kMax: return ep_max(x[0], x[1]);
    case EpFunction::kClamp: return ep_min(ep_max(x[0], x[1]), x[2]);
    case EpFunction::kExp: return std::exp(x[0]);
    case EpFunction::kLog: return std::log(x[0]);
    case EpFunction::kTanh: return std::tanh(x[0]);
    case EpFunction::kSqrt: return std::sqrt(x[0]);
    case EpFunction::kRsqrt: return 1.0f / std::sqrt(x[0]);
    case EpFunction::kAbs: return std::fabs(x[0]);
    case EpFunction::kSigmoid: return 1.0f / (1.0f + std::exp(-x[0]));
    case EpFunction::kSilu: return x[0] / (1.0f + std::exp(-x[0]));
    case EpFunction::kGelu: return x[0] * 0.5f * (1.0f + std::erf(x[0] * 0.707106781186547524f));
    case EpFunction::kGeluTanh: {
      const float cube = x[0] * x[0] * x[0];
      return 0.5f * x[0] * (1.0f + std::tanh(0.797884560802865356f * (x[0] + 0.044715f * cube)));
    }
    case EpFunction::kRelu: return ep_max(x[0], 0.0f);
    case EpFunction::kRelu2: {
      const float r = ep_max(x[0], 0.0f);
      return r * r;
    }
  }
  return std::numeric_limits<float>::quiet_NaN();
}

}  // namespace

float evaluate_epilogue(const EpilogueProgram& program, const EpilogueValues& values) {
  constexpr size_t kInline = 128;
  std::array<float, kInline> small;
  std::vector<float> large;
  float* v = small.data();
  if (program.nodes.size() > kInline) {
    large.resize(program.nodes.size());
    v = large.data();
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int count = static_cast<int>(program.nodes.size());
  for (int id = 0; id < count; ++id) {
    const EpilogueProgram::Node& n = program.nodes[static_cast<size_t>(id)];
    // A program from lower_epilogue always passes these checks; anything else evaluates to NaN
    // rather than reading out of bounds.
    float x[3] = {0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 3; ++i) {
      if (n.arg[i] >= id) return nan;
      if (n.arg[i] >= 0) x[i] = v[n.arg[i]];
    }
    switch (n.op) {
      case EpOp::kLiteral: v[id] = n.value; break;
      case EpOp::kAcc: v[id] = values.acc; break;
      case EpOp::kGate: v[id] = values.gate; break;
      case EpOp::kUp: v[id] = values.up; break;
      case EpOp::kVector:
        if (values.operands == nullptr || n.slot < 0 || n.slot >= static_cast<int>(program.operands.size()))
          return nan;
        v[id] = values.operands[n.slot];
        break;
      case EpOp::kNeg: v[id] = -x[0]; break;
      case EpOp::kAdd: v[id] = x[0] + x[1]; break;
      case EpOp::kSub: v[id] = x[0] - x[1]; break;
      case EpOp::kMul: v[id] = x[0] * x[1]; break;
      case EpOp::kDiv: v[id] = x[0] / x[1]; break;
      case EpOp::kCall: v[id] = call(n.function, x); break;
      default: return nan;
    }
  }
  if (program.root < 0 || program.root >= count) return nan;
  return v[program.root];
}

}  // namespace kiln

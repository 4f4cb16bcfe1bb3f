// The fixed names of the epilogue language (epilogue.hpp, internal/names.hpp): functions with their
// arity and device implementation, vectors with the indexes they accept.
#include "compiler/epilogue/internal/names.hpp"

#include <algorithm>
#include <cstdlib>

namespace kiln {
namespace {

struct FunctionInfo {
  EpFunction f;
  const char* name;
  int arity;
  const char* params;  // for messages: "x, lo, hi"
  const char* device;  // templates/epilogue/functions.cuh
};
constexpr FunctionInfo kFunctions[kEpFunctionCount] = {
    {EpFunction::kMin, "min", 2, "x, y", "kiln_dev::ep_min"},
    {EpFunction::kMax, "max", 2, "x, y", "kiln_dev::ep_max"},
    {EpFunction::kClamp, "clamp", 3, "x, lo, hi", "kiln_dev::ep_clamp"},
    {EpFunction::kExp, "exp", 1, "x", "kiln_dev::ep_exp"},
    {EpFunction::kLog, "log", 1, "x", "kiln_dev::ep_log"},
    {EpFunction::kTanh, "tanh", 1, "x", "kiln_dev::ep_tanh"},
    {EpFunction::kSqrt, "sqrt", 1, "x", "kiln_dev::ep_sqrt"},
    {EpFunction::kRsqrt, "rsqrt", 1, "x", "kiln_dev::ep_rsqrt"},
    {EpFunction::kAbs, "abs", 1, "x", "kiln_dev::ep_abs"},
    {EpFunction::kSigmoid, "sigmoid", 1, "x", "kiln_dev::ep_sigmoid"},
    {EpFunction::kSilu, "silu", 1, "x", "kiln_dev::ep_silu"},
    {EpFunction::kGelu, "gelu", 1, "x", "kiln_dev::ep_gelu"},
    {EpFunction::kGeluTanh, "gelu_tanh", 1, "x", "kiln_dev::ep_gelu_tanh"},
    {EpFunction::kRelu, "relu", 1, "x", "kiln_dev::ep_relu"},
    {EpFunction::kRelu2, "relu2", 1, "x", "kiln_dev::ep_relu2"},
};

const FunctionInfo* function_info(EpFunction f) {
  for (const FunctionInfo& info : kFunctions) {
    if (info.f == f) return &info;
  }
  return nullptr;  // only for a value cast from an out-of-range integer
}

struct VectorInfo {
  EpVector v;
  const char* name;
  EpIndex dense;    // the index form outside grouped GEMMs ([e]: grouped only)
  bool per_expert;  // also [e,n] when grouped
  bool glu_only;    // only with gate_up (a GLU pair per output column)
};
constexpr VectorInfo kVectors[kEpVectorCount] = {
    {EpVector::kBias, "bias", EpIndex::kN, true, false},
    {EpVector::kScale, "scale", EpIndex::kM, false, false},
    {EpVector::kColScale, "colscale", EpIndex::kN, true, false},
    {EpVector::kExpertScale, "expert_scale", EpIndex::kE, false, false},
    {EpVector::kResidual, "residual", EpIndex::kMN, false, false},
    {EpVector::kGateBias, "gate_bias", EpIndex::kN, true, true},
    {EpVector::kUpBias, "up_bias", EpIndex::kN, true, true},
};

const VectorInfo* vector_info(EpVector v) {
  for (const VectorInfo& info : kVectors) {
    if (info.v == v) return &info;
  }
  return nullptr;
}

}  // namespace

const char* ep_function_name(EpFunction f) {
  const FunctionInfo* i = function_info(f);
  return i ? i->name : "?";
}
int ep_function_arity(EpFunction f) {
  const FunctionInfo* i = function_info(f);
  return i ? i->arity : 0;
}
const char* ep_function_device(EpFunction f) {
  const FunctionInfo* i = function_info(f);
  return i ? i->device : nullptr;
}
const char* ep_vector_name(EpVector v) {
  const VectorInfo* i = vector_info(v);
  return i ? i->name : "?";
}

const char* ep_index_name(EpIndex i) {
  switch (i) {
    case EpIndex::kM: return "[m]";
    case EpIndex::kN: return "[n]";
    case EpIndex::kE: return "[e]";
    case EpIndex::kEN: return "[e,n]";
    case EpIndex::kMN: return "[m,n]";
  }
  return "[?]";
}

bool ep_vector_accepts(EpVector v, EpIndex i, const EpilogueContext& ctx) {
  const VectorInfo* info = vector_info(v);
  if (info == nullptr || (info->glu_only && !ctx.glu)) return false;
  if (info->dense == EpIndex::kE) return i == EpIndex::kE && ctx.grouped;  // expert_scale
  if (i == info->dense) return true;
  return info->per_expert && ctx.grouped && i == EpIndex::kEN;
}

EpilogueContext EpilogueContext::of(const KernelSpec& spec) {
  EpilogueContext c;
  c.glu = spec.gate_up != GateUp::kNone;
  c.grouped = spec.op == Op::kGroupedGemm;
  return c;
}

int ep_op_arity(const EpNode& n) {
  switch (n.op) {
    case EpOp::kNeg: return 1;
    case EpOp::kAdd:
    case EpOp::kSub:
    case EpOp::kMul:
    case EpOp::kDiv: return 2;
    case EpOp::kCall: return ep_function_arity(n.function);
    default: return 0;
  }
}

namespace epilogue_internal {

std::optional<EpFunction> function_from_name(std::string_view name) {
  for (const FunctionInfo& info : kFunctions) {
    if (name == info.name) return info.f;
  }
  return std::nullopt;
}

std::optional<EpVector> vector_from_name(std::string_view name) {
  for (const VectorInfo& info : kVectors) {
    if (name == info.name) return info.v;
  }
  return std::nullopt;
}

std::string function_signature(EpFunction f) {
  const FunctionInfo* i = function_info(f);
  if (i == nullptr) return "?";
  return std::string(i->name) + "(" + i->params + ")";
}

std::string vector_forms(EpVector v, const EpilogueContext& ctx) {
  const VectorInfo* info = vector_info(v);
  if (info == nullptr) return "?";
  std::string s;
  for (EpIndex i : {EpIndex::kM, EpIndex::kN, EpIndex::kE, EpIndex::kEN, EpIndex::kMN}) {
    if (!ep_vector_accepts(v, i, ctx)) continue;
    if (!s.empty()) s += " or ";
    s += info->name;
    s += ep_index_name(i);
  }
  return s;
}

std::string vector_requirement(EpVector v, EpIndex i, const EpilogueContext& ctx) {
  const VectorInfo* info = vector_info(v);
  if (info == nullptr) return "";
  if (info->glu_only && !ctx.glu) return "a spec with gate_up=interleaved or gate_up=stacked";
  EpilogueContext grouped = ctx;
  grouped.grouped = true;
  if (!ctx.grouped && ep_vector_accepts(v, i, grouped)) return "a grouped_gemm spec";
  return "";
}

bool is_reserved(std::string_view name) {
  for (const char* r : {"acc", "gate", "up", "out", "m", "n", "e"}) {
    if (name == r) return true;
  }
  return function_from_name(name).has_value() || vector_from_name(name).has_value();
}

namespace {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), early exit past
// `limit`. Names are at most kEpilogueMaxNameLength characters.
int osa_distance(std::string_view a, std::string_view b, int limit) {
  const int la = static_cast<int>(a.size()), lb = static_cast<int>(b.size());
  if (std::abs(la - lb) > limit) return limit + 1;
  std::vector<int> prev2(lb + 1), prev(lb + 1), cur(lb + 1);
  for (int j = 0; j <= lb; ++j) prev[j] = j;
  for (int i = 1; i <= la; ++i) {
    cur[0] = i;
    int row_min = cur[0];
    for (int j = 1; j <= lb; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min > limit) return limit + 1;
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[lb];
}

}  // namespace

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const int limit = name.size() <= 4 ? 1 : 2;
  std::vector<std::pair<int, const std::string*>> close;
  for (const std::string& c : candidates) {
    const int d = osa_distance(name, c, limit);
    if (d <= limit && c != name) close.emplace_back(d, &c);
  }
  if (close.empty()) return "";
  std::stable_sort(close.begin(), close.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::string s = " did you mean ";
  const size_t n = std::min<size_t>(close.size(), 3);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += i + 1 == n ? " or " : ", ";
    s += "'" + *close[i].second + "'";
  }
  return s + "?";
}

}  // namespace epilogue_internal
}  // namespace kiln

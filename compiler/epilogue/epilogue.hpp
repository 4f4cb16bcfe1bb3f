// compiler/epilogue/epilogue.hpp — epilogue expressions: parse, print, lower (CSE), emit, evaluate.
//
// An epilogue is what a kernel computes from each fp32 accumulator element before it stores the
// output, written as a few let-bound statements (docs/epilogue.md):
//
//   g = min(gate, 7.0); u = clamp(up, -7.0, 7.0); out = g * sigmoid(1.702 * g) * (u + 1.0)
//   out = silu(acc + bias[n]) * scale[m]
//
// Why a closed language. Spec text may come from an untrusted caller, and the epilogue becomes C++
// that NVRTC compiles. So the grammar is closed (numbers, a fixed set of names and functions,
// + - * / and parentheses), every name is resolved against kiln's tables at parse time, and the
// generated functor is written only from kiln's own strings: functions map to kiln_dev::ep_*,
// temporaries are t0, t1, ... (never the user's names), literals are re-printed from the parsed
// float (never the user's digits). Hostile text (C++ tokens, preprocessor lines, huge literals,
// deep nesting, NUL bytes) is rejected with a positioned error "line:col: what; expected what".
//
// Invariants:
//   - parse_epilogue(print_epilogue(e), e.context) == e for every e that parse_epilogue returned;
//   - the arena of an Epilogue lists children before parents and a statement's names only refer
//     to earlier statements; every let-bound name is used; the last statement assigns `out`;
//   - lower_epilogue computes each distinct subexpression once (hash-consing on a DAG), so
//     `sigmoid(1.702 * g)` written twice is one temporary; emitted code and host evaluation both
//     run the lowered program: the same operations in the same order (the device may fuse a
//     multiply and an add into an FMA, and its exp/tanh/erf differ from libm by a few ulp).
//
//   kiln::EpilogueContext ctx = kiln::EpilogueContext::of(spec);   // glu / grouped from the spec
//   KILN_ASSIGN_OR_RETURN(kiln::Epilogue ep, kiln::parse_epilogue("out = silu(acc + bias[n])", ctx));
//   std::string canonical = kiln::print_epilogue(ep);              // "out = silu(acc + bias[n])"
//   KILN_ASSIGN_OR_RETURN(kiln::EpilogueCode code, kiln::emit_epilogue(ep));
//   // code.functor: "struct KilnEpilogue { ... apply(c, acc, gate, up, m, n, e) ... };"
//   // code.operands: {bias, [n], slot 0} — the vectors the kernel must be given, in slot order
//
// Non-goals: the epilogue does not choose the output format or its quantization (the spec does),
// and it has no control flow, no state and no reductions across elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/spec.hpp"

namespace kiln {

// Limits of the text form; exceeding one is a positioned INVALID_ARGUMENT.
inline constexpr size_t kEpilogueMaxBytes = 16 * 1024;  // text length
inline constexpr int kEpilogueMaxDepth = 64;            // nested parentheses, calls and unary minus
inline constexpr int kEpilogueMaxNodes = 4096;          // operands + operations, all statements
inline constexpr int kEpilogueMaxNameLength = 64;       // let-bound names
inline constexpr int kEpilogueMaxLiteralLength = 64;    // characters of one number

// What the kernel around the epilogue provides.
struct EpilogueContext {
  bool glu = false;      // spec gate_up != none: the accumulator is a (gate, up) pair; no `acc`
  bool grouped = false;  // grouped_gemm: per-expert vectors ([e], [e,n]) are available
  static EpilogueContext of(const KernelSpec& spec);
  bool operator==(const EpilogueContext&) const = default;
};

// The fixed function set (names, arity and meaning: docs/epilogue.md).
// min, max and clamp propagate NaN; clamp(x, lo, hi) = min(max(x, lo), hi).
enum class EpFunction : uint8_t {
  kMin,
  kMax,
  kClamp,
  kExp,
  kLog,
  kTanh,
  kSqrt,
  kRsqrt,
  kAbs,
  kSigmoid,
  kSilu,
  kGelu,
  kGeluTanh,
  kRelu,
  kRelu2,
};
inline constexpr int kEpFunctionCount = 15;

// The fixed vector operands. Each is a device tensor the kernel receives, indexed per row [m], per
// column [n], per expert [e], per expert and column [e,n], or per element [m,n] (residual).
enum class EpVector : uint8_t {
  kBias,         // bias[n], bias[e,n]: added per output column (per expert: grouped only)
  kScale,        // scale[m]: per row (token): router weights, per-token dequantization scales
  kColScale,     // colscale[n], colscale[e,n]: per output column (channel) multiplier
  kExpertScale,  // expert_scale[e]: one value per expert (grouped only)
  kResidual,     // residual[m,n]: a matrix in the output's shape, added or blended
  kGateBias,     // gate_bias[n], gate_bias[e,n]: GLU only, added to gate (gpt-oss's interleaved bias)
  kUpBias,       // up_bias[n], up_bias[e,n]: GLU only, added to up
};
inline constexpr int kEpVectorCount = 7;

enum class EpIndex : uint8_t { kM, kN, kE, kEN, kMN };

const char* ep_function_name(EpFunction f);    // "gelu_tanh"
int ep_function_arity(EpFunction f);           // 1, 2 (min, max) or 3 (clamp)
const char* ep_function_device(EpFunction f);  // "kiln_dev::ep_gelu_tanh" (templates/epilogue/functions.cuh)
const char* ep_vector_name(EpVector v);        // "bias"
const char* ep_index_name(EpIndex i);          // "[m]", "[e,n]"
// Whether v[i] is valid in ctx (bias[e,n] needs grouped, gate_bias needs glu, bias[m] never is).
bool ep_vector_accepts(EpVector v, EpIndex i, const EpilogueContext& ctx);

// ---- the syntax tree (what parse_epilogue returns; positions are for messages only) ----
enum class EpOp : uint8_t {
  kLiteral,  // value: finite f32, never negative (a minus sign is a kNeg node)
  kAcc,
  kGate,
  kUp,
  kVector,  // vector[index]
  kLet,     // a name bound by an earlier statement
  kNeg,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kCall,  // function(args)
};

struct EpPos {
  int line = 1;
  int col = 1;
};

struct EpNode {
  EpOp op = EpOp::kLiteral;
  EpFunction function = EpFunction::kMin;  // kCall
  EpVector vector = EpVector::kBias;       // kVector
  EpIndex index = EpIndex::kN;             // kVector
  float value = 0.0f;                      // kLiteral
  int let = -1;                            // kLet: index of the statement that binds the name
  int arg[3] = {-1, -1, -1};               // operand node ids (each smaller than this node's id)
  EpPos pos;                               // where it was written (not part of equality)
};
int ep_op_arity(const EpNode& n);  // operands used: 0 (leaves), 1 (neg), 2 (binary), or the function's

struct EpStatement {
  std::string name;  // "out" for the last statement; a let-bound name otherwise (never emitted)
  int root = -1;     // node id of the value
  EpPos pos;         // of the name
};

struct Epilogue {
  EpilogueContext context;
  std::vector<EpNode> nodes;            // arena: children before parents
  std::vector<EpStatement> statements;  // the last one assigns `out`
};
// Structural equality: context, statement names and expression trees; positions are ignored.
bool operator==(const Epilogue& a, const Epilogue& b);

// Parses and type-checks the text form. Errors are INVALID_ARGUMENT "line:col: ...; expected ...".
StatusOr<Epilogue> parse_epilogue(std::string_view text, const EpilogueContext& context);
// How many times parse_epilogue ran in this process (a plan parses its spec's epilogue once; the unit
// tier checks it).
int64_t epilogue_parse_count();
// Canonical text: statements joined by "; ", single spaces around binary operators, only the
// parentheses the tree needs, literals in their shortest round-trip form ("1.702", "7.0").
std::string print_epilogue(const Epilogue& ep);

// ---- the lowered program: a hash-consed DAG, each distinct subexpression once ----
struct EpilogueOperand {
  EpVector vector = EpVector::kBias;
  EpIndex index = EpIndex::kN;
  int slot = 0;  // Ctx::load<slot>, and the position in EpilogueProgram::operands
  bool operator==(const EpilogueOperand&) const = default;
};

struct EpilogueProgram {
  struct Node {
    EpOp op = EpOp::kLiteral;  // never kLet (resolved) and never kNeg of a literal (folded)
    EpFunction function = EpFunction::kMin;
    int slot = -1;       // kVector: operand slot
    float value = 0.0f;  // kLiteral (may be negative after folding)
    int arg[3] = {-1, -1, -1};
  };
  std::vector<Node> nodes;  // children first; only what `out` depends on
  int root = -1;
  std::vector<EpilogueOperand> operands;  // slot order = first use
  // Nodes that become a temporary in emitted code (everything but literals and acc/gate/up).
  int temporaries() const;
};

// Resolves names, folds negated literals, hash-conses equal subexpressions (operands of + and * in
// a canonical order, as they commute exactly in IEEE arithmetic) and keeps only what `out` needs.
// Fails (INVALID_ARGUMENT) only on an Epilogue that parse_epilogue could not have returned.
StatusOr<EpilogueProgram> lower_epilogue(const Epilogue& ep);

struct EpilogueCode {
  std::string functor;                    // "struct KilnEpilogue { ... };" (see emit.cpp)
  std::vector<EpilogueOperand> operands;  // what the kernel's Ctx must provide, in slot order
  int temporaries = 0;
  bool reads_acc = false, reads_gate = false, reads_up = false;
};
StatusOr<EpilogueCode> emit_epilogue(const Epilogue& ep);
StatusOr<EpilogueCode> emit_epilogue(const EpilogueProgram& program);

// Host reference (kiln's CPU reference GEMM and tests): the program on one element. operands[s]
// is the value of operand slot s at this element (already indexed by m, n, e). Same operations in
// the same order as the device (see the invariants above for where they may differ by an ulp).
struct EpilogueValues {
  float acc = 0.0f, gate = 0.0f, up = 0.0f;
  const float* operands = nullptr;  // program.operands.size() values
};
float evaluate_epilogue(const EpilogueProgram& program, const EpilogueValues& values);

// ---- epilogues attached to a spec (KernelSpec::epilogue; docs/epilogue.md "In a spec") ----
// The spec's epilogue parsed in its context and lowered; nullopt when the spec has none. The
// kernel families, the runtime's operand checks and the host reference all use this one program,
// so they agree on the operand slots.
StatusOr<std::optional<EpilogueProgram>> spec_epilogue_program(const KernelSpec& spec);
// The same from an epilogue already parsed in its spec's context (validate_spec hands it back).
StatusOr<EpilogueProgram> spec_epilogue_program(const Epilogue& parsed);
// How many vector operands a kernel's parameter block can carry (templates/common/gemm_params.cuh
// kMaxEpilogueOperands): one per EpVector, as an epilogue reads each vector in one index form.
inline constexpr int kMaxEpilogueOperands = 8;

}  // namespace kiln

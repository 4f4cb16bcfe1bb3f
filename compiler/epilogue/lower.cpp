// Epilogue (syntax tree) -> EpilogueProgram (hash-consed DAG): lower_epilogue.
//
// Each statement's tree is walked in post-order (explicit stack); every node is interned by its
// operation and its operands' DAG ids, so an expression written twice, directly or through
// different let-bound names, becomes one node and later one temporary. Before interning:
//   - a let-bound name is replaced by its statement's value (names vanish here);
//   - -literal folds to a negative literal and -(-x) to x (both exact in IEEE arithmetic);
//   - the operands of + and * are put in DAG-id order: IEEE addition and multiplication commute
//     exactly, so a + b and b + a are one node. min and max are NOT reordered: their results for
//     (-0, +0) depend on the operand order (templates/epilogue/functions.cuh).
// Nothing is reassociated or constant-folded beyond that: the kernel computes exactly the
// operations written, in the order written, so host evaluation and the device agree.
// Finally only what `out` depends on is kept, renumbered in order, and vector operands get slots in
// the order of their first use.
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/epilogue/epilogue.hpp"

namespace kiln {
namespace {

struct Interner {
  struct Item {
    EpilogueProgram::Node node;
    EpVector vector = EpVector::kBias;  // kVector
    EpIndex index = EpIndex::kN;
  };
  std::vector<Item> items;
  std::map<std::array<uint32_t, 6>, int> ids;

  int intern(const Item& it) {
    const EpilogueProgram::Node& n = it.node;
    const std::array<uint32_t, 6> key = {
        static_cast<uint32_t>(n.op) | static_cast<uint32_t>(n.function) << 8 |
            static_cast<uint32_t>(it.vector) << 16 | static_cast<uint32_t>(it.index) << 24,
        std::bit_cast<uint32_t>(n.value),
        static_cast<uint32_t>(n.arg[0]),
        static_cast<uint32_t>(n.arg[1]),
        static_cast<uint32_t>(n.arg[2]),
        0u};
    const auto [pos, inserted] = ids.emplace(key, static_cast<int>(items.size()));
    if (inserted) items.push_back(it);
    return pos->second;
  }
};

Status malformed(const std::string& what) {
  return InvalidArgument("lower_epilogue: malformed epilogue: " + what);
}

}  // namespace

int EpilogueProgram::temporaries() const {
  int t = 0;
  for (const Node& n : nodes) {
    if (n.op != EpOp::kLiteral && n.op != EpOp::kAcc && n.op != EpOp::kGate && n.op != EpOp::kUp) ++t;
  }
  return t;
}

StatusOr<EpilogueProgram> lower_epilogue(const Epilogue& ep) {
  if (ep.statements.empty() || ep.statements.back().name != "out")
    return malformed("the last statement must assign 'out'");
  const int num_nodes = static_cast<int>(ep.nodes.size());
  if (num_nodes > kEpilogueMaxNodes)
    return malformed("more than " + std::to_string(kEpilogueMaxNodes) + " nodes");
  Interner in;
  std::vector<int> dag_of(ep.nodes.size(), -1);
  std::vector<int> value_of(ep.statements.size(), -1);
  std::array<int, kEpVectorCount> vector_index{};
  vector_index.fill(-1);
  const EpilogueContext& ctx = ep.context;

  for (size_t s = 0; s < ep.statements.size(); ++s) {
    const int root = ep.statements[s].root;
    if (root < 0 || root >= num_nodes) return malformed("statement root out of range");
    std::vector<std::pair<int, bool>> stack{{root, false}};
    while (!stack.empty()) {
      const auto [id, expanded] = stack.back();
      stack.pop_back();
      if (dag_of[static_cast<size_t>(id)] >= 0) continue;
      const EpNode& n = ep.nodes[static_cast<size_t>(id)];
      const int arity = ep_op_arity(n);
      if (!expanded) {
        stack.emplace_back(id, true);
        for (int i = arity - 1; i >= 0; --i) {  // the first operand is interned first: text order
          if (n.arg[i] < 0 || n.arg[i] >= id)
            return malformed("an operand id is not smaller than its user's");
          stack.emplace_back(n.arg[i], false);
        }
        continue;
      }
      Interner::Item it;
      it.node.op = n.op;
      for (int i = 0; i < arity; ++i) it.node.arg[i] = dag_of[static_cast<size_t>(n.arg[i])];
      switch (n.op) {
        case EpOp::kLiteral:
          if (!std::isfinite(n.value)) return malformed("a literal is not finite");
          it.node.value = n.value;
          break;
        case EpOp::kAcc:
          if (ctx.glu) return malformed("acc with gate_up");
          break;
        case EpOp::kGate:
        case EpOp::kUp:
          if (!ctx.glu) return malformed("gate or up without gate_up");
          break;
        case EpOp::kVector: {
          if (!ep_vector_accepts(n.vector, n.index, ctx))
            return malformed("a vector index form this context lacks");
          const auto v = static_cast<size_t>(n.vector);
          if (vector_index[v] >= 0 && vector_index[v] != static_cast<int>(n.index))
            return malformed(std::string(ep_vector_name(n.vector)) + " is read in two index forms");
          vector_index[v] = static_cast<int>(n.index);
          it.vector = n.vector;
          it.index = n.index;
          break;
        }
        case EpOp::kLet:
          if (n.let < 0 || n.let >= static_cast<int>(s))
            return malformed("a name refers to a later statement");
          dag_of[static_cast<size_t>(id)] = value_of[static_cast<size_t>(n.let)];
          continue;
        case EpOp::kNeg: {
          const Interner::Item& a = in.items[static_cast<size_t>(it.node.arg[0])];
          if (a.node.op == EpOp::kLiteral) {
            it.node = EpilogueProgram::Node{};
            it.node.value = -a.node.value;
          } else if (a.node.op == EpOp::kNeg) {
            dag_of[static_cast<size_t>(id)] = a.node.arg[0];
            continue;
          }
          break;
        }
        case EpOp::kAdd:
        case EpOp::kMul:
          if (it.node.arg[0] > it.node.arg[1]) std::swap(it.node.arg[0], it.node.arg[1]);
          break;
        case EpOp::kSub:
        case EpOp::kDiv: break;
        case EpOp::kCall:
          if (ep_function_device(n.function) == nullptr) return malformed("unknown function");
          it.node.function = n.function;
          break;
        default: return malformed("unknown operation");
      }
      dag_of[static_cast<size_t>(id)] = in.intern(it);
    }
    value_of[s] = dag_of[static_cast<size_t>(root)];
  }

  // Keep what out depends on (operands precede their users, so one backward sweep marks it all).
  const int out = value_of.back();
  std::vector<char> live(in.items.size(), 0);
  live[static_cast<size_t>(out)] = 1;
  for (int id = out; id >= 0; --id) {
    if (!live[static_cast<size_t>(id)]) continue;
    const EpilogueProgram::Node& n = in.items[static_cast<size_t>(id)].node;
    for (int a : n.arg) {
      if (a >= 0) live[static_cast<size_t>(a)] = 1;
    }
  }
  EpilogueProgram p;
  std::vector<int> renumber(in.items.size(), -1);
  for (size_t id = 0; id < in.items.size(); ++id) {
    if (!live[id]) continue;
    EpilogueProgram::Node n = in.items[id].node;
    for (int& a : n.arg) {
      if (a >= 0) a = renumber[static_cast<size_t>(a)];
    }
    if (n.op == EpOp::kVector) {
      n.slot = static_cast<int>(p.operands.size());
      p.operands.push_back(EpilogueOperand{in.items[id].vector, in.items[id].index, n.slot});
    }
    renumber[id] = static_cast<int>(p.nodes.size());
    p.nodes.push_back(n);
  }
  p.root = renumber[static_cast<size_t>(out)];
  return p;
}

}  // namespace kiln

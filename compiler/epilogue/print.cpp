// Epilogue -> canonical text (print_epilogue) and structural equality.
//
// Printing writes the parentheses the tree needs and no others: a left operand is parenthesized
// when it binds more loosely than its operator, a right operand also when it binds equally (the
// operators are left-associative and f32 addition is not associative, so (a + b) + c and
// a + (b + c) are different trees and must print differently). Literals print in the shortest form
// that reads back to the same f32 (std::to_chars, locale-independent), with ".0" added to integers.
// Both walks use an explicit stack: a left-deep chain of 4096 additions must not recurse 4096 deep.
// Operand ids always decrease along a walk (a malformed arena prints '?'), so both walks terminate.
#include <bit>
#include <charconv>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/epilogue/epilogue.hpp"

namespace kiln {
namespace {

int precedence(EpOp op) {
  switch (op) {
    case EpOp::kAdd:
    case EpOp::kSub: return 1;
    case EpOp::kMul:
    case EpOp::kDiv: return 2;
    case EpOp::kNeg: return 3;
    default: return 4;
  }
}

const char* binary_text(EpOp op) {
  switch (op) {
    case EpOp::kAdd: return " + ";
    case EpOp::kSub: return " - ";
    case EpOp::kMul: return " * ";
    default: return " / ";
  }
}

std::string literal_text(float v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Whether node `arg` may be read as an operand of node `parent` (in range and earlier).
bool operand_ok(const Epilogue& ep, int parent, int arg) {
  return arg >= 0 && arg < parent && parent < static_cast<int>(ep.nodes.size());
}

void print_expr(const Epilogue& ep, int root, std::string& out) {
  struct Piece {
    int node;  // -1: text
    bool paren;
    std::string_view text;
  };
  std::vector<Piece> stack;
  if (root < 0 || root >= static_cast<int>(ep.nodes.size())) {
    out += '?';
    return;
  }
  stack.push_back({root, false, {}});
  while (!stack.empty()) {
    const Piece p = stack.back();
    stack.pop_back();
    if (p.node < 0) {
      out += p.text;
      continue;
    }
    const EpNode& n = ep.nodes[static_cast<size_t>(p.node)];
    const int arity = ep_op_arity(n);
    bool ok = true;
    for (int i = 0; i < arity; ++i) ok = ok && operand_ok(ep, p.node, n.arg[i]);
    if (!ok) {
      out += '?';
      continue;
    }
    if (p.paren) {
      out += '(';
      stack.push_back({-1, false, ")"});
    }
    switch (n.op) {
      case EpOp::kLiteral: out += literal_text(n.value); break;
      case EpOp::kAcc: out += "acc"; break;
      case EpOp::kGate: out += "gate"; break;
      case EpOp::kUp: out += "up"; break;
      case EpOp::kVector:
        out += ep_vector_name(n.vector);
        out += ep_index_name(n.index);
        break;
      case EpOp::kLet:
        if (n.let >= 0 && n.let < static_cast<int>(ep.statements.size())) {
          out += ep.statements[static_cast<size_t>(n.let)].name;
        } else {
          out += '?';
        }
        break;
      case EpOp::kNeg: {
        // -(a + b) needs its parentheses; - -x is written with a space rather than as -(-x), so the
        // canonical form never nests deeper than the text it came from (kEpilogueMaxDepth).
        const int a = n.arg[0];
        const EpOp inner = ep.nodes[static_cast<size_t>(a)].op;
        out += inner == EpOp::kNeg ? "- " : "-";
        stack.push_back({a, precedence(inner) < precedence(EpOp::kNeg), {}});
        break;
      }
      case EpOp::kAdd:
      case EpOp::kSub:
      case EpOp::kMul:
      case EpOp::kDiv: {
        const int prec = precedence(n.op);
        const int l = n.arg[0], r = n.arg[1];
        stack.push_back({r, precedence(ep.nodes[static_cast<size_t>(r)].op) <= prec, {}});
        stack.push_back({-1, false, binary_text(n.op)});
        stack.push_back({l, precedence(ep.nodes[static_cast<size_t>(l)].op) < prec, {}});
        break;
      }
      case EpOp::kCall:
        out += ep_function_name(n.function);
        out += '(';
        stack.push_back({-1, false, ")"});
        for (int i = arity - 1; i >= 0; --i) {
          stack.push_back({n.arg[i], false, {}});
          if (i > 0) stack.push_back({-1, false, ", "});
        }
        break;
    }
  }
}

bool same_tree(const Epilogue& a, int root_a, const Epilogue& b, int root_b) {
  std::vector<std::pair<int, int>> stack{{root_a, root_b}};
  while (!stack.empty()) {
    const auto [ia, ib] = stack.back();
    stack.pop_back();
    if (ia < 0 || ia >= static_cast<int>(a.nodes.size()) || ib < 0 || ib >= static_cast<int>(b.nodes.size()))
      return false;
    const EpNode& x = a.nodes[static_cast<size_t>(ia)];
    const EpNode& y = b.nodes[static_cast<size_t>(ib)];
    if (x.op != y.op) return false;
    switch (x.op) {
      case EpOp::kLiteral:
        if (std::bit_cast<uint32_t>(x.value) != std::bit_cast<uint32_t>(y.value)) return false;
        break;
      case EpOp::kVector:
        if (x.vector != y.vector || x.index != y.index) return false;
        break;
      case EpOp::kLet:
        if (x.let != y.let) return false;
        break;
      case EpOp::kCall:
        if (x.function != y.function) return false;
        break;
      default: break;
    }
    const int arity = ep_op_arity(x);
    for (int i = 0; i < arity; ++i) {
      if (!operand_ok(a, ia, x.arg[i]) || !operand_ok(b, ib, y.arg[i])) return false;
      stack.emplace_back(x.arg[i], y.arg[i]);
    }
  }
  return true;
}

}  // namespace

std::string print_epilogue(const Epilogue& ep) {
  std::string out;
  for (size_t i = 0; i < ep.statements.size(); ++i) {
    if (i > 0) out += "; ";
    out += ep.statements[i].name;
    out += " = ";
    print_expr(ep, ep.statements[i].root, out);
  }
  return out;
}

bool operator==(const Epilogue& a, const Epilogue& b) {
  if (!(a.context == b.context) || a.statements.size() != b.statements.size()) return false;
  for (size_t i = 0; i < a.statements.size(); ++i) {
    if (a.statements[i].name != b.statements[i].name) return false;
    if (!same_tree(a, a.statements[i].root, b, b.statements[i].root)) return false;
  }
  return true;
}

}  // namespace kiln

// Epilogue text -> Epilogue (parse_epilogue): syntax and type checks in one pass. Grammar
// (docs/epilogue.md):
//
//   epilogue  := statement (';' statement)* [';']        -- the last statement assigns `out`
//   statement := NAME '=' expr
//   expr      := term (('+' | '-') term)*
//   term      := unary (('*' | '/') unary)*
//   unary     := '-' unary | primary
//   primary   := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | NAME '[' index ']' | '(' expr ')'
//   index     := 'm' | 'n' | 'e' | 'e' ',' 'n' | 'm' ',' 'n'
//
// Recursive descent with one token of lookahead. Binary chains are loops, so the recursion depth is
// the nesting of parentheses, calls and unary minus, capped at kEpilogueMaxDepth before it can
// exhaust the stack; node count and text length are capped too. Every scalar is f32, so "type
// checking" is about names: each one resolves, at its use, to a built-in value that exists in this
// context (acc, or gate and up with GLU), a vector in an index form it accepts, a function with
// its exact arity, or a name bound by an earlier statement.
#include <atomic>
#include <array>
#include <optional>
#include <string>
#include <unordered_map>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/epilogue/internal/lexer.hpp"
#include "compiler/epilogue/internal/names.hpp"

namespace kiln {
namespace epilogue_internal {
namespace {

using std::string;

const char* index_meaning(EpIndex i) {
  switch (i) {
    case EpIndex::kM: return "per row (token)";
    case EpIndex::kN: return "per output column";
    case EpIndex::kE: return "per expert";
    case EpIndex::kEN: return "per expert and output column";
    case EpIndex::kMN: return "per output element";
  }
  return "?";
}

class Parser {
 public:
  Parser(std::string_view text, const EpilogueContext& ctx) : text_(text), lex_(text) { ep_.context = ctx; }
  StatusOr<Epilogue> run();

 private:
  Status error(EpPos p, const string& msg) const { return InvalidArgument(pos_prefix(p) + msg); }
  Status unexpected(const Token& t, const string& expected) const {
    if (t.kind == Tok::kError) return error(t.pos, t.error);
    return error(t.pos, "expected " + expected + ", got " + describe(t));
  }
  Status finish(EpPos end) const;
  Status statement(const Token& name);
  StatusOr<int> expr();
  StatusOr<int> term();
  StatusOr<int> unary();
  StatusOr<int> primary();
  StatusOr<int> call(const Token& name);
  StatusOr<int> vector(const Token& name);
  StatusOr<int> value(const Token& name);
  StatusOr<int> add(const EpNode& n);
  Status enter(EpPos p);
  string scalar_names() const;
  string value_list() const;
  std::vector<string> value_candidates() const;

  std::string_view text_;
  Lexer lex_;
  Epilogue ep_;
  int depth_ = 0;
  std::string_view current_;                        // the name being defined
  std::unordered_map<std::string_view, int> lets_;  // name -> statement
  std::vector<bool> used_;                          // per statement
  struct VectorUse {
    bool seen = false;
    EpIndex index = EpIndex::kN;
    EpPos pos;
  };
  std::array<VectorUse, kEpVectorCount> vectors_{};
};

// Leaves a nesting level when the recursive call that entered it returns.
class Nesting {
 public:
  explicit Nesting(int& depth) : depth_(depth) {}
  ~Nesting() { --depth_; }
  Nesting(const Nesting&) = delete;
  Nesting& operator=(const Nesting&) = delete;

 private:
  int& depth_;
};

Status Parser::enter(EpPos p) {
  if (++depth_ > kEpilogueMaxDepth)
    return error(p, "expression nested deeper than " + std::to_string(kEpilogueMaxDepth) +
                        " levels (parentheses, calls and unary minus); expected a flatter expression, "
                        "or intermediate names");
  return Status::Ok();
}

StatusOr<int> Parser::add(const EpNode& n) {
  if (ep_.nodes.size() >= static_cast<size_t>(kEpilogueMaxNodes))
    return error(n.pos, "more than " + std::to_string(kEpilogueMaxNodes) +
                            " operands and operations; expected a smaller epilogue");
  ep_.nodes.push_back(n);
  return static_cast<int>(ep_.nodes.size() - 1);
}

string Parser::scalar_names() const { return ep_.context.glu ? "gate, up" : "acc"; }

string Parser::value_list() const {
  string vecs;
  for (int v = 0; v < kEpVectorCount; ++v) {
    const string forms = vector_forms(static_cast<EpVector>(v), ep_.context);
    if (forms.empty()) continue;
    if (!vecs.empty()) vecs += ", ";
    vecs += forms;
  }
  return scalar_names() + ", a vector (" + vecs +
         "), a number, a function call, or a name assigned by an earlier statement";
}

std::vector<string> Parser::value_candidates() const {
  std::vector<string> c;
  if (ep_.context.glu) {
    c = {"gate", "up"};
  } else {
    c = {"acc"};
  }
  for (const EpStatement& s : ep_.statements) c.push_back(s.name);
  for (int v = 0; v < kEpVectorCount; ++v) c.emplace_back(ep_vector_name(static_cast<EpVector>(v)));
  for (int f = 0; f < kEpFunctionCount; ++f) c.emplace_back(ep_function_name(static_cast<EpFunction>(f)));
  return c;
}

StatusOr<Epilogue> Parser::run() {
  if (text_.size() > kEpilogueMaxBytes)
    return error(position_of(text_, kEpilogueMaxBytes), "epilogue text is " + std::to_string(text_.size()) +
                                                            " bytes; expected at most " +
                                                            std::to_string(kEpilogueMaxBytes));
  for (;;) {
    const Token t = lex_.take();
    if (t.kind == Tok::kEnd) {
      KILN_RETURN_IF_ERROR(finish(t.pos));
      break;
    }
    if (t.kind == Tok::kError) return error(t.pos, t.error);
    if (!ep_.statements.empty() && ep_.statements.back().name == "out")
      return error(t.pos, "nothing may follow the statement that assigns 'out'; got " + describe(t));
    if (t.kind != Tok::kName) return unexpected(t, "a statement 'name = expression'");
    KILN_RETURN_IF_ERROR(statement(t));
    const Token sep = lex_.take();
    if (sep.kind == Tok::kSemicolon) continue;
    if (sep.kind == Tok::kEnd) {
      KILN_RETURN_IF_ERROR(finish(sep.pos));
      break;
    }
    return unexpected(sep, "an operator, ';' or the end of the epilogue");
  }
  for (size_t i = 0; i + 1 < ep_.statements.size(); ++i) {
    if (!used_[i])
      return error(
          ep_.statements[i].pos,
          "'" + ep_.statements[i].name + "' is assigned but never used; expected it in a later statement");
  }
  // The canonical form may be longer than the text ("1+1e9" prints as "1.0 + 1e+09"). It must fit
  // the same limit, or print -> parse would not round-trip.
  const size_t canonical = print_epilogue(ep_).size();
  if (canonical > kEpilogueMaxBytes)
    return error(EpPos{}, "the canonical form of this epilogue is " + std::to_string(canonical) +
                              " bytes; expected at most " + std::to_string(kEpilogueMaxBytes) +
                              " (fewer or shorter names and literals)");
  return std::move(ep_);
}

Status Parser::finish(EpPos end) const {
  if (ep_.statements.empty())
    return error(end, "empty epilogue; expected statements ending with 'out = <expression>'");
  if (ep_.statements.back().name != "out")
    return error(end, "expected a final statement 'out = <expression>' (the value the kernel stores)");
  return Status::Ok();
}

Status Parser::statement(const Token& name) {
  const std::string_view n = name.text;
  if (n != "out") {
    if (is_reserved(n))
      return error(name.pos,
                   "'" + string(n) + "' is a built-in name; expected a new name or 'out' to assign");
    if (const auto it = lets_.find(n); it != lets_.end())
      return error(name.pos, "'" + string(n) + "' is already assigned at " +
                                 pos_text(ep_.statements[it->second].pos) + "; expected a new name");
  }
  const Token eq = lex_.take();
  if (eq.kind != Tok::kEquals) return unexpected(eq, "'=' after '" + echo(n) + "'");
  current_ = n;
  KILN_ASSIGN_OR_RETURN(const int root, expr());
  if (n != "out") lets_.emplace(n, static_cast<int>(ep_.statements.size()));
  ep_.statements.push_back(EpStatement{string(n), root, name.pos});
  used_.push_back(false);
  return Status::Ok();
}

StatusOr<int> Parser::expr() {
  KILN_ASSIGN_OR_RETURN(int lhs, term());
  while (lex_.peek().kind == Tok::kPlus || lex_.peek().kind == Tok::kMinus) {
    const Token op = lex_.take();
    KILN_ASSIGN_OR_RETURN(const int rhs, term());
    EpNode n;
    n.op = op.kind == Tok::kPlus ? EpOp::kAdd : EpOp::kSub;
    n.arg[0] = lhs;
    n.arg[1] = rhs;
    n.pos = op.pos;
    KILN_ASSIGN_OR_RETURN(lhs, add(n));
  }
  return lhs;
}

StatusOr<int> Parser::term() {
  KILN_ASSIGN_OR_RETURN(int lhs, unary());
  while (lex_.peek().kind == Tok::kStar || lex_.peek().kind == Tok::kSlash) {
    const Token op = lex_.take();
    KILN_ASSIGN_OR_RETURN(const int rhs, unary());
    EpNode n;
    n.op = op.kind == Tok::kStar ? EpOp::kMul : EpOp::kDiv;
    n.arg[0] = lhs;
    n.arg[1] = rhs;
    n.pos = op.pos;
    KILN_ASSIGN_OR_RETURN(lhs, add(n));
  }
  return lhs;
}

StatusOr<int> Parser::unary() {
  if (lex_.peek().kind != Tok::kMinus) return primary();
  const Token minus = lex_.take();
  KILN_RETURN_IF_ERROR(enter(minus.pos));
  Nesting level(depth_);
  KILN_ASSIGN_OR_RETURN(const int operand, unary());
  EpNode n;
  n.op = EpOp::kNeg;
  n.arg[0] = operand;
  n.pos = minus.pos;
  return add(n);
}

StatusOr<int> Parser::primary() {
  const Token t = lex_.take();
  switch (t.kind) {
    case Tok::kNumber: {
      EpNode n;
      n.op = EpOp::kLiteral;
      n.value = t.value;
      n.pos = t.pos;
      return add(n);
    }
    case Tok::kLParen: {
      KILN_RETURN_IF_ERROR(enter(t.pos));
      Nesting level(depth_);
      KILN_ASSIGN_OR_RETURN(const int inner, expr());
      const Token close = lex_.take();
      if (close.kind != Tok::kRParen) return unexpected(close, "')' to close the '(' at " + pos_text(t.pos));
      return inner;
    }
    case Tok::kName:
      if (lex_.peek().kind == Tok::kLParen) return call(t);
      if (lex_.peek().kind == Tok::kLBracket) return vector(t);
      return value(t);
    default: return unexpected(t, "an expression (a number, a name, a call or '(')");
  }
}

StatusOr<int> Parser::call(const Token& name) {
  const auto f = function_from_name(name.text);
  if (!f) {
    std::vector<string> fns;
    string all;
    for (int i = 0; i < kEpFunctionCount; ++i) {
      fns.emplace_back(ep_function_name(static_cast<EpFunction>(i)));
      all += (i ? ", " : "") + fns.back();
    }
    const string hint = did_you_mean(name.text, fns);
    return error(name.pos, "unknown function '" + echo(name.text) + "';" +
                               (hint.empty() ? " expected one of " + all : hint));
  }
  const Token open = lex_.take();  // '(' (peeked by primary)
  KILN_RETURN_IF_ERROR(enter(open.pos));
  Nesting level(depth_);
  const int arity = ep_function_arity(*f);
  const string sig = function_signature(*f);
  EpNode n;
  n.op = EpOp::kCall;
  n.function = *f;
  n.pos = name.pos;
  int count = 0;
  if (lex_.peek().kind == Tok::kRParen)
    return error(lex_.peek().pos, string(ep_function_name(*f)) + " takes " + std::to_string(arity) +
                                      " argument" + (arity == 1 ? "" : "s") + ": expected " + sig +
                                      ", got no arguments");
  for (;;) {
    KILN_ASSIGN_OR_RETURN(const int a, expr());
    n.arg[count++] = a;
    const Token sep = lex_.take();
    if (sep.kind == Tok::kRParen) {
      if (count < arity)
        return error(sep.pos, string(ep_function_name(*f)) + " takes " + std::to_string(arity) +
                                  " arguments: expected " + sig + ", got " + std::to_string(count));
      break;
    }
    if (sep.kind == Tok::kComma) {
      if (count == arity)
        return error(sep.pos, string(ep_function_name(*f)) + " takes " + std::to_string(arity) + " argument" +
                                  (arity == 1 ? "" : "s") + ": expected ')' after " + sig);
      continue;
    }
    return unexpected(sep, string(count < arity ? "',' or ')'" : "')'") + " in the call " + sig);
  }
  return add(n);
}

StatusOr<int> Parser::vector(const Token& name) {
  const auto v = vector_from_name(name.text);
  if (!v) {
    if (name.text == "acc" || name.text == "gate" || name.text == "up")
      return error(lex_.peek().pos, "'" + string(name.text) + "' is a scalar; expected no index after it");
    std::vector<string> names;
    string all;
    for (int i = 0; i < kEpVectorCount; ++i) {
      names.emplace_back(ep_vector_name(static_cast<EpVector>(i)));
      all += (i ? ", " : "") + names.back();
    }
    const string hint = did_you_mean(name.text, names);
    return error(name.pos, "unknown vector '" + echo(name.text) + "';" +
                               (hint.empty() ? " expected one of " + all : hint));
  }
  const Token open = lex_.take();  // '[' (peeked by primary)
  char letters[2] = {0, 0};
  int count = 0;
  for (;;) {
    const Token t = lex_.take();
    if (t.kind != Tok::kName || !(t.text == "m" || t.text == "n" || t.text == "e"))
      return unexpected(t, "an index m, n or e");
    letters[count++] = t.text[0];
    const Token sep = lex_.take();
    if (sep.kind == Tok::kRBracket) break;
    if (sep.kind != Tok::kComma || count == 2) return unexpected(sep, count == 2 ? "']'" : "',' or ']'");
  }
  std::optional<EpIndex> index;
  if (count == 1) {
    index = letters[0] == 'm' ? EpIndex::kM : letters[0] == 'n' ? EpIndex::kN : EpIndex::kE;
  } else if (letters[0] == 'e' && letters[1] == 'n') {
    index = EpIndex::kEN;
  } else if (letters[0] == 'm' && letters[1] == 'n') {
    index = EpIndex::kMN;
  }
  const string vname = ep_vector_name(*v);
  const string forms = vector_forms(*v, ep_.context);
  if (!index || !ep_vector_accepts(*v, *index, ep_.context)) {
    const string needs = index ? vector_requirement(*v, *index, ep_.context) : "";
    if (!needs.empty()) {
      return error(open.pos, vname + ep_index_name(*index) + " (" + index_meaning(*index) + ") needs " +
                                 needs + (forms.empty() ? "" : "; expected " + forms));
    }
    string got = "[";
    got += letters[0];
    if (count == 2) {
      got += ',';
      got += letters[1];
    }
    got += ']';
    const EpilogueContext everything{.glu = true, .grouped = true};
    return error(open.pos, "wrong index " + got + " for " + vname + "; expected " +
                               (forms.empty() ? vector_forms(*v, everything) : forms));
  }
  VectorUse& use = vectors_[static_cast<size_t>(*v)];
  if (use.seen && use.index != *index)
    return error(open.pos, vname + " is read as " + vname + ep_index_name(use.index) + " at " +
                               pos_text(use.pos) + "; expected the same index form here, got " + vname +
                               ep_index_name(*index));
  if (!use.seen) use = VectorUse{true, *index, name.pos};
  EpNode n;
  n.op = EpOp::kVector;
  n.vector = *v;
  n.index = *index;
  n.pos = name.pos;
  return add(n);
}

StatusOr<int> Parser::value(const Token& name) {
  const std::string_view s = name.text;
  EpNode n;
  n.pos = name.pos;
  if (s == "acc") {
    if (ep_.context.glu)
      return error(name.pos,
                   "'acc' is not available with gate_up: the accumulator is a (gate, up) pair; "
                   "expected gate or up");
    n.op = EpOp::kAcc;
    return add(n);
  }
  if (s == "gate" || s == "up") {
    if (!ep_.context.glu)
      return error(name.pos, "'" + string(s) +
                                 "' needs a spec with gate_up=interleaved or gate_up=stacked (GLU pairs); "
                                 "expected acc");
    n.op = s == "gate" ? EpOp::kGate : EpOp::kUp;
    return add(n);
  }
  if (s == "out") return error(name.pos, "'out' is the result of the epilogue and cannot be read");
  if (s == "m" || s == "n" || s == "e")
    return error(name.pos, "'" + string(s) +
                               "' is an index; it is only valid inside a vector's brackets, as in bias[n]");
  if (const auto f = function_from_name(s))
    return error(name.pos, "'" + string(s) + "' is a function; expected a call " + function_signature(*f));
  if (const auto v = vector_from_name(s)) {
    const string forms = vector_forms(*v, ep_.context);
    if (forms.empty()) {
      const EpilogueContext everything{.glu = true, .grouped = true};
      return error(
          name.pos,
          "'" + string(s) + "' is a vector (" + vector_forms(*v, everything) + ") that needs " +
              vector_requirement(*v, *v == EpVector::kExpertScale ? EpIndex::kE : EpIndex::kN, ep_.context));
    }
    return error(name.pos, "'" + string(s) + "' is a vector; expected an index: " + forms);
  }
  if (const auto it = lets_.find(s); it != lets_.end()) {
    used_[static_cast<size_t>(it->second)] = true;
    n.op = EpOp::kLet;
    n.let = it->second;
    return add(n);
  }
  if (s == current_) return error(name.pos, "'" + string(s) + "' is used in its own definition");
  const string hint = did_you_mean(s, value_candidates());
  return error(name.pos,
               "unknown name '" + echo(s) + "';" + (hint.empty() ? " expected " + value_list() : hint));
}

}  // namespace
}  // namespace epilogue_internal

namespace {
std::atomic<int64_t> g_parse_count{0};
}  // namespace

int64_t epilogue_parse_count() { return g_parse_count.load(std::memory_order_relaxed); }

StatusOr<Epilogue> parse_epilogue(std::string_view text, const EpilogueContext& context) {
  g_parse_count.fetch_add(1, std::memory_order_relaxed);
  return epilogue_internal::Parser(text, context).run();
}

}  // namespace kiln

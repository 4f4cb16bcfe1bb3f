// Tokens of the DSL text form (internal/lexer.hpp).
#include "compiler/spec/internal/lexer.hpp"

namespace kiln::spec_internal {
namespace {

bool is_word_char(char c) {
  return lex::is_letter(c) || lex::is_digit(c) || c == '_' || c == '.' || c == '+' || c == '-';
}

}  // namespace

std::string describe(const Token& t) {
  if (t.kind == Tok::kEnd) return "end of input";
  if (t.kind == Tok::kError) return "an invalid character";
  if (t.kind == Tok::kString) return "a quoted string";
  // Built by appending: GCC 12 at -O3 reports a false -Wrestrict on `"'" + std::string(...)`.
  std::string quoted(1, '\'');
  quoted += t.kind == Tok::kWord ? echo(t.text) : std::string(t.text);
  quoted += '\'';
  return quoted;
}

void Lexer::skip_space_and_comments() {
  for (;;) {
    cur_.skip_space();
    if (cur_.done() || cur_.peek() != '#') return;
    cur_.skip_while([](char c) { return c != '\n'; });
  }
}

void Lexer::advance() {
  skip_space_and_comments();
  next_ = Token{};
  next_.pos = cur_.pos();
  if (cur_.done()) {
    next_.kind = Tok::kEnd;
    return;
  }
  const char c = cur_.peek();
  const size_t start = cur_.offset();
  if (is_word_char(c)) {
    cur_.skip_while(is_word_char);
    next_.kind = Tok::kWord;
    next_.text = cur_.since(start);
    end_ = cur_.pos();
    return;
  }
  if (c == '"') {
    cur_.bump();
    cur_.skip_while([](char ch) { return ch != '"'; });
    if (cur_.done()) {
      next_.kind = Tok::kError;
      next_.error = "unterminated string: the '\"' here has no closing '\"'";
      return;
    }
    next_.kind = Tok::kString;
    next_.text = cur_.since(start + 1);
    cur_.bump();  // the closing '"'
    end_ = cur_.pos();
    return;
  }
  switch (c) {
    case '[':
      next_.kind = Tok::kLBracket;
      break;
    case ']':
      next_.kind = Tok::kRBracket;
      break;
    case ',':
      next_.kind = Tok::kComma;
      break;
    case '=':
      next_.kind = Tok::kEquals;
      break;
    case ':':
      next_.kind = Tok::kColon;
      break;
    default:
      next_.kind = Tok::kError;
      next_.error = lex::unexpected_byte(
          c, "spec", "a spec is words, '=', ':', [,] after grouped_gemm, and a quoted epilogue=\"...\"");
      cur_.bump();  // errors stop the parse; the position stays at the bad byte
      return;
  }
  cur_.bump();
  next_.text = cur_.since(start);
  end_ = cur_.pos();
}

Token Lexer::take() {
  Token t = next_;
  if (t.kind != Tok::kEnd && t.kind != Tok::kError) {
    after_last_ = end_;
    advance();
  }
  return t;
}

}  // namespace kiln::spec_internal

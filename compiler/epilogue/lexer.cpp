// Tokens of epilogue text (internal/lexer.hpp).
#include "compiler/epilogue/internal/lexer.hpp"

#include <charconv>
#include <cmath>

namespace kiln::epilogue_internal {
namespace {

using lex::is_digit;
using lex::is_letter;
bool is_name_char(char c) { return is_letter(c) || is_digit(c) || c == '_'; }

EpPos ep_pos(lex::Pos p) { return EpPos{p.line, p.col}; }
lex::Pos lex_pos(EpPos p) { return lex::Pos{p.line, p.col}; }

}  // namespace

std::string pos_prefix(EpPos p) { return lex::pos_prefix(lex_pos(p)); }
std::string pos_text(EpPos p) { return lex::pos_text(lex_pos(p)); }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd: return "end of input";
    case Tok::kError: return "an invalid token";
    case Tok::kName: {
      std::string s = "name '";
      s += echo(t.text);
      s += '\'';
      return s;
    }
    case Tok::kNumber: {
      std::string s = "number '";
      s += echo(t.text);
      s += '\'';
      return s;
    }
    default: {
      std::string s(1, '\'');
      s += t.text;
      s += '\'';
      return s;
    }
  }
}

EpPos position_of(std::string_view text, size_t offset) { return ep_pos(lex::position_of(text, offset)); }

void Lexer::lex_name() {
  const size_t start = cur_.offset();
  cur_.skip_while(is_name_char);
  next_.text = cur_.since(start);
  if (next_.text.size() > static_cast<size_t>(kEpilogueMaxNameLength)) {
    next_.kind = Tok::kError;
    next_.error = "name '" + echo(next_.text) + "' is longer than " + std::to_string(kEpilogueMaxNameLength) +
                  " characters";
    return;
  }
  next_.kind = Tok::kName;
}

// digits [ '.' digits* ] [ (e|E) [+-] digits+ ]  or  '.' digits+ [ exponent ]. A number followed
// directly by a letter, digit, '_' or '.' is malformed (0x10, 1.2.3, 2f), not two tokens.
void Lexer::lex_number() {
  const size_t start = cur_.offset();
  bool malformed = false;
  cur_.skip_while(is_digit);
  if (!cur_.done() && cur_.peek() == '.') {
    cur_.bump();
    cur_.skip_while(is_digit);
  }
  if (!cur_.done() && (cur_.peek() == 'e' || cur_.peek() == 'E')) {
    cur_.bump();
    if (!cur_.done() && (cur_.peek() == '+' || cur_.peek() == '-')) cur_.bump();
    if (cur_.done() || !is_digit(cur_.peek())) malformed = true;
    cur_.skip_while(is_digit);
  }
  while (!cur_.done() && (is_name_char(cur_.peek()) || cur_.peek() == '.')) {
    malformed = true;
    cur_.bump();
  }
  next_.text = cur_.since(start);
  next_.kind = Tok::kError;
  if (malformed) {
    next_.error = "malformed number '" + echo(next_.text) +
                  "'; expected digits with an optional fraction and exponent (7, 1.702, 2.5e-3)";
    return;
  }
  if (next_.text.size() > static_cast<size_t>(kEpilogueMaxLiteralLength)) {
    next_.error = "number of " + std::to_string(next_.text.size()) + " characters; at most " +
                  std::to_string(kEpilogueMaxLiteralLength);
    return;
  }
  // from_chars is locale-independent and rounds the decimal text to the nearest f32 directly.
  // It does not take a leading '.', so ".5" is read as "0.5".
  std::string digits;
  if (next_.text.front() == '.') digits = "0";
  digits += next_.text;
  float v = 0.0f;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v, std::chars_format::general);
  if (r.ec == std::errc::result_out_of_range || (r.ec == std::errc() && !std::isfinite(v))) {
    next_.error = "number '" + echo(next_.text) +
                  "' is outside the f32 range; expected a magnitude up to 3.4028235e+38 and, "
                  "if not zero, at least 1e-45";
    return;
  }
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
    next_.error = "malformed number '" + echo(next_.text) + "'";
    return;
  }
  next_.kind = Tok::kNumber;
  next_.value = v;
}

void Lexer::advance() {
  cur_.skip_space();
  next_ = Token{};
  next_.pos = ep_pos(cur_.pos());
  if (cur_.done()) {
    next_.kind = Tok::kEnd;
    return;
  }
  const char c = cur_.peek();
  if (is_letter(c)) return lex_name();
  if (is_digit(c) || (c == '.' && cur_.has(1) && is_digit(cur_.peek(1)))) return lex_number();
  Tok kind = Tok::kError;
  switch (c) {
    case '+': kind = Tok::kPlus; break;
    case '-': kind = Tok::kMinus; break;
    case '*': kind = Tok::kStar; break;
    case '/': kind = Tok::kSlash; break;
    case '(': kind = Tok::kLParen; break;
    case ')': kind = Tok::kRParen; break;
    case '[': kind = Tok::kLBracket; break;
    case ']': kind = Tok::kRBracket; break;
    case ',': kind = Tok::kComma; break;
    case '=': kind = Tok::kEquals; break;
    case ';': kind = Tok::kSemicolon; break;
    default: break;
  }
  if (kind != Tok::kError) {
    const size_t start = cur_.offset();
    next_.kind = kind;
    cur_.bump();
    next_.text = cur_.since(start);
    return;
  }
  next_.kind = Tok::kError;
  if (c == '_') {
    next_.error = "names start with a letter, not '_'";
  } else {
    next_.error = lex::unexpected_byte(c, "epilogue",
                                       "an epilogue is statements 'name = expression' separated by ';', "
                                       "built from names, numbers, + - * /, ( ), [ ] and ','");
  }
  // The parse stops at an error; the token keeps the position of the bad byte.
}

Token Lexer::take() {
  Token t = next_;
  if (t.kind != Tok::kEnd && t.kind != Tok::kError) {
    after_last_ = t.pos;
    after_last_.col += static_cast<int>(t.text.size());
    advance();
  }
  return t;
}

}  // namespace kiln::epilogue_internal

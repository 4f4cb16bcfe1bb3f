// Tokens of epilogue text (internal/lexer.hpp).
#include "compiler/epilogue/internal/lexer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace kiln::epilogue_internal {
namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_letter(c) || is_digit(c) || c == '_'; }

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(c));
  return buf;
}

}  // namespace

std::string pos_prefix(EpPos p) { return std::to_string(p.line) + ":" + std::to_string(p.col) + ": "; }

std::string echo(std::string_view word) {
  constexpr size_t kMaxEcho = 40;
  if (word.size() <= kMaxEcho) return std::string(word);
  return std::string(word.substr(0, kMaxEcho)) + "... (" + std::to_string(word.size()) + " characters)";
}

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

EpPos position_of(std::string_view text, size_t offset) {
  EpPos p;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.col = 1;
    } else {
      ++p.col;
    }
  }
  return p;
}

void Lexer::bump(char c) {
  ++i_;
  if (c == '\n') {
    ++pos_.line;
    pos_.col = 1;
  } else {
    ++pos_.col;
  }
}

void Lexer::lex_name() {
  const size_t start = i_;
  while (i_ < text_.size() && is_name_char(text_[i_])) bump(text_[i_]);
  next_.text = text_.substr(start, i_ - start);
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
  const size_t start = i_;
  bool malformed = false;
  while (i_ < text_.size() && is_digit(text_[i_])) bump(text_[i_]);
  if (i_ < text_.size() && text_[i_] == '.') {
    bump('.');
    while (i_ < text_.size() && is_digit(text_[i_])) bump(text_[i_]);
  }
  if (i_ < text_.size() && (text_[i_] == 'e' || text_[i_] == 'E')) {
    bump(text_[i_]);
    if (i_ < text_.size() && (text_[i_] == '+' || text_[i_] == '-')) bump(text_[i_]);
    if (i_ >= text_.size() || !is_digit(text_[i_])) malformed = true;
    while (i_ < text_.size() && is_digit(text_[i_])) bump(text_[i_]);
  }
  while (i_ < text_.size() && (is_name_char(text_[i_]) || text_[i_] == '.')) {
    malformed = true;
    bump(text_[i_]);
  }
  next_.text = text_.substr(start, i_ - start);
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
  while (i_ < text_.size()) {
    const char c = text_[i_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    bump(c);
  }
  next_ = Token{};
  next_.pos = pos_;
  if (i_ >= text_.size()) {
    next_.kind = Tok::kEnd;
    return;
  }
  const char c = text_[i_];
  if (is_letter(c)) return lex_name();
  if (is_digit(c) || (c == '.' && i_ + 1 < text_.size() && is_digit(text_[i_ + 1]))) return lex_number();
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
    next_.kind = kind;
    next_.text = text_.substr(i_, 1);
    bump(c);
    return;
  }
  const auto u = static_cast<unsigned char>(c);
  next_.kind = Tok::kError;
  if (c == '_') {
    next_.error = "names start with a letter, not '_'";
  } else if (u < 0x20 || u == 0x7F) {
    next_.error = "unexpected control byte " + hex_byte(u);
  } else if (u >= 0x80) {
    next_.error = "unexpected byte " + hex_byte(u) + "; epilogue text is ASCII";
  } else {
    next_.error = std::string("unexpected character '") + c +
                  "'; an epilogue is statements 'name = expression' separated by ';', built from names, "
                  "numbers, + - * /, ( ), [ ] and ','";
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

// Tokens of the DSL text form (internal/lexer.hpp).
#include "compiler/spec/internal/lexer.hpp"

#include <cstdio>

namespace kiln::spec_internal {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '+' || c == '-';
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(c));
  return buf;
}

}  // namespace

std::string pos_prefix(Pos p) { return std::to_string(p.line) + ":" + std::to_string(p.col) + ": "; }

std::string echo(std::string_view word) {
  constexpr size_t kMaxEcho = 40;
  if (word.size() <= kMaxEcho) return std::string(word);
  return std::string(word.substr(0, kMaxEcho)) + "... (" + std::to_string(word.size()) + " characters)";
}

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

void Lexer::bump(char c) {
  ++i_;
  if (c == '\n') {
    ++pos_.line;
    pos_.col = 1;
  } else {
    ++pos_.col;
  }
}

void Lexer::skip_space_and_comments() {
  while (i_ < text_.size()) {
    const char c = text_[i_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      bump(c);
    } else if (c == '#') {
      while (i_ < text_.size() && text_[i_] != '\n') bump(text_[i_]);
    } else {
      return;
    }
  }
}

void Lexer::advance() {
  skip_space_and_comments();
  next_ = Token{};
  next_.pos = pos_;
  if (i_ >= text_.size()) {
    next_.kind = Tok::kEnd;
    return;
  }
  const char c = text_[i_];
  const size_t start = i_;
  if (is_word_char(c)) {
    while (i_ < text_.size() && is_word_char(text_[i_])) bump(text_[i_]);
    next_.kind = Tok::kWord;
    next_.text = text_.substr(start, i_ - start);
    end_ = pos_;
    return;
  }
  if (c == '"') {
    bump(c);
    while (i_ < text_.size() && text_[i_] != '"') bump(text_[i_]);
    if (i_ >= text_.size()) {
      next_.kind = Tok::kError;
      next_.error = "unterminated string: the '\"' here has no closing '\"'";
      return;
    }
    next_.kind = Tok::kString;
    next_.text = text_.substr(start + 1, i_ - start - 1);
    bump('"');
    end_ = pos_;
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
    default: {
      const auto u = static_cast<unsigned char>(c);
      next_.kind = Tok::kError;
      if (u < 0x20 || u == 0x7F) {
        next_.error = "unexpected control byte " + hex_byte(u);
      } else if (u >= 0x80) {
        next_.error = "unexpected byte " + hex_byte(u) + "; spec text is ASCII";
      } else {
        next_.error = std::string("unexpected character '") + c +
                      "'; a spec is words, '=', ':', [,] after grouped_gemm, and a quoted epilogue=\"...\"";
      }
      bump(c);  // errors stop the parse; the position stays at the bad byte
      return;
    }
  }
  next_.text = text_.substr(start, 1);
  bump(c);
  end_ = pos_;
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

// compiler/lex/lexer_core.hpp — the character-level core of kiln's two hand-written lexers, the spec
// DSL's (compiler/spec/lexer.cpp) and the epilogue language's (compiler/epilogue/lexer.cpp): character
// classes, a cursor that tracks line:column, and the pieces of their error messages.
//
// Positions are 1-based; columns count bytes, and a '\n' starts the next line. Both languages are
// ASCII: a byte no token starts with becomes an error message (unexpected_byte) that names it.
//
//   lex::Cursor cur(text);
//   cur.skip_space();
//   const lex::Pos at = cur.pos();
//   const size_t start = cur.offset();
//   cur.skip_while(lex::is_digit);
//   std::string_view digits = cur.since(start);
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::lex {

struct Pos {
  int line = 1;
  int col = 1;
};
std::string pos_text(Pos p);    // "3:14"
std::string pos_prefix(Pos p);  // "3:14: ", the prefix of every positioned message

inline bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
// The white space both languages skip: ' ', '\t', '\n', '\r'.
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A read position in text: the byte offset and its line:column.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool done() const { return i_ >= text_.size(); }
  // The byte `ahead` bytes past the current one; callers check has(ahead) (or !done()) first.
  char peek(size_t ahead = 0) const { return text_[i_ + ahead]; }
  bool has(size_t ahead) const { return i_ + ahead < text_.size(); }
  size_t offset() const { return i_; }
  Pos pos() const { return pos_; }
  // The text from byte `start` to the current one.
  std::string_view since(size_t start) const { return text_.substr(start, i_ - start); }

  // Past the current byte: the next column, or the first of the next line after a '\n'.
  void bump() {
    if (text_[i_++] == '\n') {
      ++pos_.line;
      pos_.col = 1;
    } else {
      ++pos_.col;
    }
  }
  template <typename Pred>
  void skip_while(Pred pred) {
    while (!done() && pred(peek())) bump();
  }
  void skip_space() { skip_while(is_space); }

 private:
  std::string_view text_;
  size_t i_ = 0;
  Pos pos_;
};

// Line and column of byte `offset` of text (the end of text for larger offsets).
Pos position_of(std::string_view text, size_t offset);

// User text echoed in a message, cut to 40 characters: the first 40, then "... (75 characters)".
std::string echo(std::string_view word);
// "0x07", "0xC3".
std::string hex_byte(unsigned char c);
// The message for a byte no token of `language` starts with: "unexpected control byte 0x07",
// "unexpected byte 0xC3; <language> text is ASCII", or "unexpected character '<c>'; <hint>", where
// hint says what the language is made of.
std::string unexpected_byte(char c, std::string_view language, std::string_view hint);

}  // namespace kiln::lex

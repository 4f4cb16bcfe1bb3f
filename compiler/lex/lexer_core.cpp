// The character-level core of kiln's lexers (lexer_core.hpp).
#include "compiler/lex/lexer_core.hpp"

#include <cstdio>

namespace kiln::lex {

std::string pos_text(Pos p) { return std::to_string(p.line) + ":" + std::to_string(p.col); }

std::string pos_prefix(Pos p) { return pos_text(p) + ": "; }

Pos position_of(std::string_view text, size_t offset) {
  Cursor cur(text);
  while (cur.offset() < offset && !cur.done()) cur.bump();
  return cur.pos();
}

std::string echo(std::string_view word) {
  constexpr size_t kMaxEcho = 40;
  if (word.size() <= kMaxEcho) return std::string(word);
  return std::string(word.substr(0, kMaxEcho)) + "... (" + std::to_string(word.size()) + " characters)";
}

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(c));
  return buf;
}

std::string unexpected_byte(char c, std::string_view language, std::string_view hint) {
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7F) return "unexpected control byte " + hex_byte(u);
  if (u >= 0x80) {
    std::string s = "unexpected byte " + hex_byte(u) + "; ";
    s += language;
    s += " text is ASCII";
    return s;
  }
  // Built by appending: GCC 12 at -O3 reports a false -Wrestrict on `"literal" + std::string`.
  std::string s = "unexpected character '";
  s += c;
  s += "'; ";
  s += hint;
  return s;
}

}  // namespace kiln::lex

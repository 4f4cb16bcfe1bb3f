// compiler/epilogue/internal/lexer.hpp — private to compiler/epilogue: tokens of epilogue text.
//
// Like the spec lexer, it never fails hard: a byte it cannot use, an over-long name or a malformed
// or out-of-range number becomes a kError token carrying its message, so the parser reports the
// first problem in reading order. Columns count bytes. Only printable ASCII and the white space
// ' ', '\t', '\r', '\n' are accepted; there are no comments, strings or escapes, so nothing in the
// text can reach generated code by being "skipped". Characters, positions and message pieces come
// from the shared core (compiler/lex/lexer_core.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "compiler/epilogue/epilogue.hpp"
#include "compiler/lex/lexer_core.hpp"

namespace kiln::epilogue_internal {

std::string pos_prefix(EpPos p);  // "3:14: "
std::string pos_text(EpPos p);    // "3:14"

enum class Tok {
  kName,    // [A-Za-z][A-Za-z0-9_]*, at most kEpilogueMaxNameLength characters
  kNumber,  // digits [. digits] [e [+-] digits] (or .digits ...); value: finite f32
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kComma,
  kEquals,
  kSemicolon,
  kEnd,
  kError,
};

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;  // as written; empty at kEnd
  EpPos pos;
  float value = 0.0f;  // kNumber
  std::string error;   // kError
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : cur_(text) { advance(); }
  const Token& peek() const { return next_; }
  Token take();
  // Position just after the last token taken (where a missing item was expected).
  EpPos after_last() const { return after_last_; }

 private:
  void advance();
  void lex_name();
  void lex_number();

  lex::Cursor cur_;
  Token next_;
  EpPos after_last_;
};

// A token in "got ..." messages: "';'", "end of input", "name 'abc'", "number '1.5'".
std::string describe(const Token& t);
// User text echoed in a message, cut to a sane length.
using lex::echo;
// Position of byte `offset` of text (line and column, 1-based).
EpPos position_of(std::string_view text, size_t offset);

}  // namespace kiln::epilogue_internal

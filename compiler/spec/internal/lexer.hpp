// compiler/spec/internal/lexer.hpp — private to compiler/spec: tokens of the DSL text form.
//
// The lexer never fails hard: a byte it cannot use becomes a kError token that carries its
// message, so the parser reports the *first* problem in reading order. Columns count bytes.
// Characters, positions and message pieces come from the shared core (compiler/lex/lexer_core.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "compiler/lex/lexer_core.hpp"

namespace kiln::spec_internal {

using Pos = lex::Pos;
using lex::pos_prefix;  // "3:14: "
using lex::pos_text;    // "3:14"

enum class Tok { kWord, kString, kLBracket, kRBracket, kComma, kEquals, kColon, kEnd, kError };

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;  // the word, the string's contents (no quotes) or the punctuation; empty at kEnd
  Pos pos;                // kString: of the opening quote
  std::string error;  // kError only
};

// Words are runs of [A-Za-z0-9_.+-]: names, integers (also signed, so experts=-1 gets a range
// message rather than a character error). '#' starts a comment to the end of the line.
// Strings ("...", the value of epilogue=) run to the next '"' and may span lines; they have no
// escapes (the epilogue language has no '"' or '\\'), and '#' inside one is text, not a comment.
// Their bytes are checked by the epilogue parser, which reports positions inside the string.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : cur_(text) { advance(); }
  const Token& peek() const { return next_; }
  Token take();
  // Position just after the last token taken (where a missing item was expected).
  Pos after_last() const { return after_last_; }

 private:
  void advance();
  void skip_space_and_comments();

  lex::Cursor cur_;
  Token next_;
  Pos after_last_;
  Pos end_;  // position just after the current token (strings may span lines)
};

// Human-readable form of a token for "got ..." ("'['", "end of input", "word 'abc'").
std::string describe(const Token& t);
// A word echoed in a message, cut to a sane length.
using lex::echo;

}  // namespace kiln::spec_internal

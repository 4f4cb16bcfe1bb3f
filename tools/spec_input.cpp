// `kiln` CLI: reading SPEC arguments (inline text, a file, or stdin) and presenting parse errors.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "compiler/spec/spec.hpp"
#include "tools/cli.hpp"

namespace kiln::cli {
namespace {

StatusOr<std::string> read_stream(std::istream& in, const std::string& origin) {
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return InvalidArgument("could not read the spec from " + origin);
  return text;
}

// A SPEC argument that names no existing file is spec text, unless it plainly is a path.
bool looks_like_path(const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;  // every spec has operand=format
  return arg.find('/') != std::string::npos || arg.ends_with(".kiln") || arg.ends_with(".json");
}

// "12:7: rest" -> (12, 7, "rest"); false when the message carries no position.
bool split_position(const std::string& msg, int* line, int* col, std::string* rest) {
  size_t i = 0;
  auto number = [&](int* out) {
    size_t start = i;
    while (i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i]))) ++i;
    if (i == start || i - start > 9) return false;
    *out = std::stoi(msg.substr(start, i - start));
    return true;
  };
  if (!number(line) || i >= msg.size() || msg[i] != ':') return false;
  ++i;
  if (!number(col) || i >= msg.size() || msg[i] != ':') return false;
  ++i;
  while (i < msg.size() && msg[i] == ' ') ++i;
  *rest = msg.substr(i);
  return true;
}

std::string nth_line(const std::string& text, int line) {
  std::istringstream in(text);
  std::string l;
  for (int n = 1; std::getline(in, l); ++n) {
    if (n == line) return l;
  }
  return {};
}

}  // namespace

StatusOr<SpecInput> read_spec_input(const std::string& arg) {
  if (arg == "-") {
    KILN_ASSIGN_OR_RETURN(std::string text, read_stream(std::cin, "<stdin>"));
    return SpecInput{std::move(text), "<stdin>"};
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) {
    std::ifstream f(arg, std::ios::binary);
    if (!f) return InvalidArgument("cannot open spec file '" + arg + "'");
    KILN_ASSIGN_OR_RETURN(std::string text, read_stream(f, "'" + arg + "'"));
    return SpecInput{std::move(text), arg};
  }
  if (looks_like_path(arg)) {
    return InvalidArgument("spec file '" + arg +
                           "' does not exist (SPEC is spec text, a file holding one, or - for stdin)");
  }
  return SpecInput{arg, "<spec>"};
}

StatusOr<KernelSpec> parse_spec_input(const SpecInput& in) {
  StatusOr<KernelSpec> spec = parse_spec(in.text);
  if (spec.ok()) return spec;
  const Status& s = spec.status();
  int line = 0, col = 0;
  std::string rest;
  if (!split_position(s.message(), &line, &col, &rest)) {
    return Status(s.code(), in.origin + ": " + s.message());
  }
  std::string msg = in.origin + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + rest;
  std::string src = nth_line(in.text, line);
  if (!src.empty() && col >= 1 && static_cast<size_t>(col) <= src.size() + 1) {
    std::string caret(static_cast<size_t>(col - 1), ' ');
    // Keep tabs so the caret lines up under the same column in a terminal.
    for (size_t i = 0; i < caret.size(); ++i) {
      if (src[i] == '\t') caret[i] = '\t';
    }
    msg += "\n    " + src + "\n    " + caret + "^";
  }
  return Status(s.code(), msg);
}

}  // namespace kiln::cli

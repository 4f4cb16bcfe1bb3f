// libFuzzer target for the epilogue language: every input is parsed in the four contexts (GLU or
// not, grouped or not) and must satisfy tests/fuzz/epilogue_invariants.hpp — a rejection is a
// positioned INVALID_ARGUMENT, an acceptance round-trips through print -> parse and emits a functor
// made only of kiln's own vocabulary. A violation traps (a crash libFuzzer records with its input).
// Built by scripts/fuzz.sh (clang, -fsanitize=fuzzer,address); see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "tests/fuzz/epilogue_invariants.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (int i = 0; i < 4; ++i) {
    const std::string broken = kiln::fuzz::check_epilogue_text(text, kiln::fuzz::context_number(i));
    if (!broken.empty()) {
      // A test harness, not library code: say what broke before trapping.
      std::fprintf(stderr, "epilogue invariant violated (context %d): %s\n", i, broken.c_str());
      __builtin_trap();
    }
  }
  return 0;
}

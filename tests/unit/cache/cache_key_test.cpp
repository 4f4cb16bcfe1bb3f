// Cache keys: SHA-256 itself, and that every input field (and nothing else) changes the key.
#include "cache/cache_key.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace kiln {
namespace {

KeyInputs base_inputs() {
  KeyInputs in;
  in.template_hash = sha256_hex("templates");
  in.source = "#include \"kernels/sm80_gemm.cuh\"\n";
  in.nvrtc_version = "13.0";
  in.options = {"--gpu-architecture=sm_90a", "--std=c++17", "-Xptxas=-v", "-default-device"};
  in.arch = "sm_90a";
  return in;
}

TEST(Sha256Test, MatchesFipsVectors) {
  // FIPS 180-2 appendix B.1 and the empty message.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, HashesEmbeddedNulBytes) {
  const std::string with_nul("a\0b", 3);
  EXPECT_NE(sha256_hex(with_nul), sha256_hex("a"));
  EXPECT_EQ(sha256_hex(with_nul).size(), 64u);
}

TEST(KernelCacheKeyTest, IsDeterministicHex) {
  const std::string key = kernel_cache_key(base_inputs());
  EXPECT_EQ(key, kernel_cache_key(base_inputs()));
  ASSERT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(KernelCacheKeyTest, ChangesWhenAnyFieldChanges) {
  std::set<std::string> keys = {kernel_cache_key(base_inputs())};
  auto add = [&](const char* what, auto mutate) {
    KeyInputs in = base_inputs();
    mutate(in);
    EXPECT_TRUE(keys.insert(kernel_cache_key(in)).second) << "changing " << what << " did not change the key";
  };
  add("codegen_version", [](KeyInputs& in) { in.codegen_version += 1; });
  add("template_hash", [](KeyInputs& in) { in.template_hash = sha256_hex("templates v2"); });
  add("source", [](KeyInputs& in) { in.source += " "; });
  add("nvrtc_version", [](KeyInputs& in) { in.nvrtc_version = "13.1"; });
  add("options (added)", [](KeyInputs& in) { in.options.push_back("-DKILN_DEBUG=1"); });
  add("options (changed)", [](KeyInputs& in) { in.options[0] = "--gpu-architecture=sm_89"; });
  add("options (removed)", [](KeyInputs& in) { in.options.pop_back(); });
  add("arch", [](KeyInputs& in) { in.arch = "sm_89"; });
}

TEST(KernelCacheKeyTest, OptionOrderDoesNotMatter) {
  KeyInputs a = base_inputs();
  KeyInputs b = base_inputs();
  std::reverse(b.options.begin(), b.options.end());
  EXPECT_EQ(kernel_cache_key(a), kernel_cache_key(b));
}

TEST(KernelCacheKeyTest, LengthPrefixesPreventBoundaryShifts) {
  // Plain concatenation would give "abc" twice.
  KeyInputs a = base_inputs(), b = base_inputs();
  a.source = "ab";
  a.nvrtc_version = "c";
  b.source = "a";
  b.nvrtc_version = "bc";
  EXPECT_NE(kernel_cache_key(a), kernel_cache_key(b));

  // The same across the options list: {"-a", "-b"} + arch "x" vs {"-a"} + ... and merged options.
  KeyInputs c = base_inputs(), d = base_inputs();
  c.options = {"-a", "-b"};
  d.options = {"-a-b"};
  EXPECT_NE(kernel_cache_key(c), kernel_cache_key(d));
  KeyInputs e = base_inputs(), f = base_inputs();
  e.options = {"-a"};
  e.arch = "sm_90a";
  f.options = {"-a", "sm_90a"};
  f.arch = "";
  EXPECT_NE(kernel_cache_key(e), kernel_cache_key(f));
}

}  // namespace
}  // namespace kiln

// Unit tests of common/env: how KILN_* switches read. No CUDA.
#include "common/env.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace kiln {
namespace {

constexpr const char* kVar = "KILN_ENV_TEST_SWITCH";

// An on switch (flag) and an off switch (flag_off, e.g. KILN_PDL=0): unset and empty are neither.
TEST(EnvTest, FlagAndFlagOffReadTheirWordsAndNothingElse) {
  unsetenv(kVar);
  EXPECT_FALSE(env::flag(kVar));
  EXPECT_FALSE(env::flag_off(kVar));
  setenv(kVar, "", 1);
  EXPECT_FALSE(env::flag(kVar));
  EXPECT_FALSE(env::flag_off(kVar));
  for (const char* on : {"1", "true", "yes", "on"}) {
    setenv(kVar, on, 1);
    EXPECT_TRUE(env::flag(kVar)) << on;
    EXPECT_FALSE(env::flag_off(kVar)) << on;
  }
  for (const char* off : {"0", "false", "no", "off"}) {
    setenv(kVar, off, 1);
    EXPECT_FALSE(env::flag(kVar)) << off;
    EXPECT_TRUE(env::flag_off(kVar)) << off;
  }
  setenv(kVar, "2", 1);  // neither word: the default applies
  EXPECT_FALSE(env::flag(kVar));
  EXPECT_FALSE(env::flag_off(kVar));
  unsetenv(kVar);
}

}  // namespace
}  // namespace kiln

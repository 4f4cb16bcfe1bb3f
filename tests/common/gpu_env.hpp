// tests/common/gpu_env.hpp — GTEST_SKIP helpers for the gpu tier: never fail for lack of a device.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/driver/driver.hpp"
#include "kiln/kiln.hpp"

#define KILN_REQUIRE_GPU()                                                         \
  do {                                                                             \
    auto kiln_drv_ = ::kiln::Driver::get();                                        \
    if (!kiln_drv_.ok()) GTEST_SKIP() << "no GPU: " << kiln_drv_.status().to_string(); \
  } while (0)

namespace kiln {

// A runtime without the kernel cache (every test compiles what it runs); a failure fails the test.
// KILN_TEST_KEEP_CUBINS=1 keeps the cache (KILN_CACHE_DIR), e.g. to read the SASS of a kernel a sanitizer
// report points into.
inline std::shared_ptr<Runtime> make_test_runtime() {
  RuntimeOptions o;
  o.disable_cache = std::getenv("KILN_TEST_KEEP_CUBINS") == nullptr;
  auto rt = Runtime::create(o);
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  return *rt;
}

// "" when the device is an sm_90 part, else why a test of the sm90 family skips.
inline std::string sm90_skip_reason(Runtime& rt) {
  auto d = Driver::get();
  if (!d.ok()) return "no GPU: " + d.status().to_string();
  auto a = rt.device_arch();
  if (!a.ok()) return "no device arch: " + a.status().to_string();
  if (a->sm() != 90) return "the sm90 family needs an sm_90 device; this is " + a->name();
  return "";
}

}  // namespace kiln

// Skips the test unless rt's device is an sm_90 part.
#define KILN_REQUIRE_SM90_OF(rt)                                   \
  do {                                                             \
    const std::string kiln_why_ = ::kiln::sm90_skip_reason(rt);    \
    if (!kiln_why_.empty()) GTEST_SKIP() << kiln_why_;             \
  } while (0)

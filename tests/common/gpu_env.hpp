// tests/common/gpu_env.hpp — GTEST_SKIP helpers for the gpu tier: never fail for lack of a device.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "runtime/driver/driver.hpp"
#include "kiln/kiln.hpp"

#define KILN_REQUIRE_GPU()                                                         \
  do {                                                                             \
    auto kiln_drv_ = ::kiln::Driver::get();                                        \
    if (!kiln_drv_.ok()) GTEST_SKIP() << "no GPU: " << kiln_drv_.status().to_string(); \
  } while (0)

namespace kiln {

// A runtime without the kernel cache (every test compiles what it runs); a failure fails the test.
inline std::shared_ptr<Runtime> make_test_runtime() {
  RuntimeOptions o;
  o.disable_cache = true;
  auto rt = Runtime::create(o);
  EXPECT_TRUE(rt.ok()) << rt.status().to_string();
  return *rt;
}

}  // namespace kiln

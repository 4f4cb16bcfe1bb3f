// tests/common/gpu_env.hpp — GTEST_SKIP helpers for the gpu tier: never fail for lack of a device.
#pragma once

#include <gtest/gtest.h>

#include "runtime/driver/driver.hpp"

#define KILN_REQUIRE_GPU()                                                         \
  do {                                                                             \
    auto kiln_drv_ = ::kiln::Driver::get();                                        \
    if (!kiln_drv_.ok()) GTEST_SKIP() << "no GPU: " << kiln_drv_.status().to_string(); \
  } while (0)

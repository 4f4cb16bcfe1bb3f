// tests/common/check_passes.hpp — the gpu tier's one-line checks: plan a spec, run it once on fresh random
// inputs against kiln's reference kernel (verify/check.hpp) and expect it to pass; run one plan twice on the
// same inputs and expect bitwise equal outputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime/device_buffer.hpp"
#include "runtime/driver/driver.hpp"
#include "verify/check.hpp"
#include "verify/check_inputs.hpp"

namespace kiln::test {

// m: rows (masked: per expert); groups: per-expert rows (empty: a random split).
inline void expect_check_passes(Runtime& rt, const std::string& text, int64_t m, int64_t n, int64_t k,
                                const PlanOptions& po = {}, std::vector<int32_t> groups = {}) {
  auto s = parse_spec(text);
  ASSERT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  const int64_t plan_m = s->layout == GroupLayout::kMasked ? m * s->experts : m;
  auto plan = rt.plan(*s, {plan_m, n, k}, po);
  ASSERT_TRUE(plan.ok()) << text << " " << m << "x" << n << "x" << k << ": " << plan.status().to_string();
  CheckOptions o;
  o.m = m;
  o.group_rows = std::move(groups);
  auto r = run_check(rt, *plan, o);
  ASSERT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  EXPECT_TRUE(r->passed) << text << " M=" << m << " N=" << n << " K=" << k << " config " << r->config
                         << ": rel_fro_err " << r->rel_fro_err << " (tol " << r->tolerance << "), unwritten "
                         << r->unwritten << ", overwritten " << r->overwritten << ", nonfinite " << r->nonfinite
                         << ", seed " << r->seed;
}

// Plans text for (m, n, k) with po and runs it twice on the same random inputs (output poisoned before each
// run): the outputs must be bitwise equal (no float atomics on the path).
inline void expect_repeat_runs_bitwise_equal(Runtime& rt, const std::string& text, int64_t m, int64_t n, int64_t k,
                                             const PlanOptions& po = {}) {
  auto s = parse_spec(text);
  ASSERT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  ScopedContext ctx;
  ASSERT_TRUE(ctx.enter(*Driver::get(), 0).ok());
  auto plan = rt.plan(*s, {m, n, k}, po);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  uint64_t seed = 7;
  auto h = random_operands(plan->spec(), m, n, k, {}, seed);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  auto dev = DeviceOperands::upload(*h);
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  std::vector<std::vector<uint8_t>> outs;
  for (int rep = 0; rep < 2; ++rep) {
    ASSERT_TRUE(dev->out().fill_bytes(0xFF).ok());
    ASSERT_TRUE(plan->run(dev->operands(), nullptr, 0, nullptr).ok());
    std::vector<uint8_t> o(h->out.bytes.size());
    ASSERT_TRUE(dev->out().download(o.data(), o.size()).ok());
    outs.push_back(std::move(o));
  }
  EXPECT_EQ(outs[0], outs[1]) << text;
}

}  // namespace kiln::test

// tests/common/check_passes.hpp — the gpu tier's one-line correctness check: plan a spec, run it once on
// fresh random inputs against kiln's reference kernel (verify/check.hpp) and expect it to pass.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.hpp"
#include "verify/check.hpp"

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

}  // namespace kiln::test

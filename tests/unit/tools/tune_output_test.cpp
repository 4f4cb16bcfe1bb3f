// `kiln tune --json`'s per-candidate list ("tried"): what summarize() takes from a TuneResult for each
// candidate (its outcome, time, error, registers, why it failed), and that the list survives the JSON
// round trip the `--devices` children use to hand their summaries to the parent.
#include "tools/tune_output.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln::cli {
namespace {

TileConfig config_n(int block_n) {
  TileConfig c;
  c.block_n = block_n;
  return c;
}

TuneResult three_candidates() {
  TuneResult r;
  r.shape.m = 4096;
  r.shape.n = 7168;
  r.shape.k = 2048;
  r.m_bucket = 4096;
  CandidateResult timed;
  timed.config = config_n(128);
  timed.is_default = true;
  timed.estimate.est_us = 91.5;
  timed.outcome = CandidateOutcome::kTimed;
  timed.registers = 168;
  timed.spills = 0;
  timed.measurement.verified = true;
  timed.measurement.median_us = 98.25;
  timed.measurement.rel_err = 1.5e-3;
  CandidateResult wrong = timed;
  wrong.config = config_n(256);
  wrong.is_default = false;
  wrong.outcome = CandidateOutcome::kRejected;
  wrong.measurement.verified = false;
  wrong.measurement.median_us = INFINITY;
  wrong.measurement.rel_err = 0.5;
  wrong.measurement.detail = "rel_fro_err 0.5 (tolerance 0.01), 3 unwritten";
  CandidateResult failed;
  failed.config = config_n(64);
  failed.estimate.est_us = INFINITY;  // the model found no room for a block
  failed.outcome = CandidateOutcome::kCompileFailed;
  failed.compile_status = InvalidArgument("too much shared memory");
  r.candidates = {timed, wrong, failed};
  r.best = 0;
  r.baseline = 0;
  return r;
}

TEST(TuneOutput, TriedListsEveryCandidateInOrder) {
  const SummaryRow row = summarize(three_candidates());
  ASSERT_EQ(row.tried.size(), 3u);
  EXPECT_EQ(row.tried[0].config, config_n(128).to_string());
  EXPECT_EQ(row.tried[0].outcome, "timed");
  EXPECT_TRUE(row.tried[0].is_default);
  EXPECT_DOUBLE_EQ(row.tried[0].us, 98.25);
  EXPECT_DOUBLE_EQ(row.tried[0].rel_err, 1.5e-3);
  EXPECT_DOUBLE_EQ(row.tried[0].est_us, 91.5);
  EXPECT_EQ(row.tried[0].registers, 168);
  EXPECT_EQ(row.tried[0].spills, 0);
  EXPECT_TRUE(row.tried[0].detail.empty());
  // A rejected candidate has no time (it can never win) but keeps its error and the reason.
  EXPECT_EQ(row.tried[1].outcome, "rejected (wrong result)");
  EXPECT_EQ(row.tried[1].us, 0);
  EXPECT_DOUBLE_EQ(row.tried[1].rel_err, 0.5);
  EXPECT_NE(row.tried[1].detail.find("3 unwritten"), std::string::npos);
  EXPECT_EQ(row.tried[2].outcome, "compile failed");
  EXPECT_EQ(row.tried[2].registers, -1);
  EXPECT_TRUE(std::isnan(row.tried[2].rel_err));  // never measured: unset, not 0
  EXPECT_TRUE(std::isinf(row.tried[2].est_us));
  EXPECT_NE(row.tried[2].detail.find("too much shared memory"), std::string::npos);
}

TEST(TuneOutput, TriedSurvivesTheJsonRoundTrip) {
  const SummaryRow row = summarize(three_candidates());
  const nlohmann::json j = row_to_json(row);
  ASSERT_TRUE(j.at("tried").is_array());
  EXPECT_TRUE(j["tried"][1]["us"].is_null());  // not timed: null, not 0
  EXPECT_TRUE(j["tried"][2]["rel_err"].is_null());  // never measured
  EXPECT_TRUE(j["tried"][2]["est_us"].is_null());   // infinite
  EXPECT_DOUBLE_EQ(j["tried"][0]["us"].get<double>(), 98.25);
  const SummaryRow back = row_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.tried.size(), row.tried.size());
  for (size_t i = 0; i < row.tried.size(); ++i) {
    EXPECT_EQ(back.tried[i].config, row.tried[i].config) << i;
    EXPECT_EQ(back.tried[i].outcome, row.tried[i].outcome) << i;
    EXPECT_EQ(back.tried[i].is_default, row.tried[i].is_default) << i;
    EXPECT_DOUBLE_EQ(back.tried[i].us, row.tried[i].us) << i;
    // Unset (NaN) and infinite values come back as they were.
    EXPECT_EQ(std::isnan(back.tried[i].rel_err), std::isnan(row.tried[i].rel_err)) << i;
    if (!std::isnan(row.tried[i].rel_err)) EXPECT_DOUBLE_EQ(back.tried[i].rel_err, row.tried[i].rel_err) << i;
    EXPECT_EQ(back.tried[i].est_us, row.tried[i].est_us) << i;
    EXPECT_EQ(back.tried[i].registers, row.tried[i].registers) << i;
    EXPECT_EQ(back.tried[i].spills, row.tried[i].spills) << i;
    EXPECT_EQ(back.tried[i].detail, row.tried[i].detail) << i;
  }
  EXPECT_EQ(back.best_config, row.best_config);
  EXPECT_DOUBLE_EQ(back.best_us, 98.25);
}

TEST(TuneOutput, MalformedTriedEntriesAreSkipped) {
  nlohmann::json j = row_to_json(summarize(three_candidates()));
  j["tried"].push_back(42);      // not an object: skipped
  j["tried"][0]["us"] = "fast";  // mistyped: left at 0
  const SummaryRow back = row_from_json(j);
  ASSERT_EQ(back.tried.size(), 3u);
  EXPECT_EQ(back.tried[0].us, 0);
  EXPECT_EQ(back.tried[0].config, config_n(128).to_string());
}

}  // namespace
}  // namespace kiln::cli

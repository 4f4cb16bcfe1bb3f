// tools/tune_output.hpp — what `kiln tune` prints: the progress bar (stderr), the dry-run candidate
// listing, and the summary table (stdout), plus the JSON form of a summary row that sharded child
// processes hand back to the parent.
//
//   ProgressBar bar(stderr_is_tty, "gpu0");
//   TunerOptions o; o.on_progress = [&](const TuneProgress& p) { bar.update(p, i, total); };
//   SummaryRow row = summarize(result, stored);  print_summary({row});
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/tuner.hpp"

namespace kiln::cli {

class ProgressBar {
 public:
  // tty: redraw one line with \r; otherwise print a line at most every few seconds.
  ProgressBar(bool tty, std::string prefix) : tty_(tty), prefix_(std::move(prefix)) {}
  void update(const TuneProgress& p, size_t shape_index, size_t shapes, bool timing);
  void finish();  // ends the line (tty)

 private:
  bool tty_;
  std::string prefix_;
  bool open_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// One candidate of a tuned shape, as `kiln tune --json` lists it ("tried"), in the static model's order.
struct TriedRow {
  std::string config;   // TileConfig::to_string()
  std::string outcome;  // candidate_outcome_name: "timed", "rejected (wrong result)", "compile failed", ...
  bool is_default = false;          // the heuristic's config (the baseline)
  double est_us = INFINITY;  // the static model's estimate (a ranking, not a time); JSON null if infinite
  double us = 0;                    // measured median; 0: not timed
  double rel_err = NAN;  // against the reference (timed or rejected candidates); JSON null if unset
  int registers = -1, spills = -1;  // -1: not compiled
  std::string detail;               // why it failed or was rejected; empty otherwise
};

struct SummaryRow {
  std::string label;
  std::string spec;
  int64_t m = 0, bucket = 0, n = 0, k = 0;
  std::string status;  // "ok", "compiled", or why not ("unsupported: ...")
  int candidates = 0, compile_failed = 0, rejected = 0, run_failed = 0, timed = 0, skipped = 0;
  std::string best_config;
  double best_us = 0;  // 0: none
  std::string baseline_config;
  double baseline_us = 0;  // 0: not timed
  std::string recorded;    // "new", "faster", "kept existing", "not recorded", ""
  // The winner re-timed against the reference (TuneResult::recheck): rounds 0 when not done.
  int recheck_rounds = 0;
  std::string recheck_reference;  // "incumbent" or "heuristic"
  double recheck_winner_us = 0, recheck_reference_us = 0;
  double elapsed_s = 0;
  std::vector<TriedRow> tried;  // every candidate (JSON only)
};
SummaryRow summarize(const TuneResult& r);
SummaryRow failed_row(const TuneShape& shape, const Status& why);
nlohmann::json row_to_json(const SummaryRow& r);
SummaryRow row_from_json(const nlohmann::json& j);  // lenient: missing fields stay default

void print_summary(std::FILE* to, const std::vector<SummaryRow>& rows, bool timing);
// The dry run for one shape: the pruning account and the candidates, best estimate first.
void print_candidates(std::FILE* to, const TuneShape& shape, int64_t bucket, const PrunedSpace& space);
nlohmann::json candidates_json(const TuneShape& shape, int64_t bucket, const PrunedSpace& space);

}  // namespace kiln::cli

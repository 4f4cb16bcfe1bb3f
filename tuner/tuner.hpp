// tuner/tuner.hpp — the autotuner: candidates -> parallel compile -> verify -> time -> winner.
//
// For one shape (spec, M, N, K) on one device identity, tune():
//   1. maps M to its bucket (the runtime's dispatch bucket: of M, or of the rows per expert of a
//      grouped problem) and measures there (M = the bucket, or bucket x experts);
//   2. takes the candidates of prune_space() (static model: shared memory, registers, waves),
//      always including the heuristic's config, the baseline;
//   3. compiles them on a thread pool through Runtime::compile (so the cubins land in the kernel
//      cache: compile on a CPU machine, time on the GPU one). A failed compile is data: the
//      candidate keeps its Status and an infinite time, and the search goes on;
//   4. runs each compiled candidate through a real Plan (PlanOptions::config) with the runner:
//      verified against the reference first, a wrong result is rejected and never recorded, then
//      timed the way bench/ times every library (a CUDA graph replayed over rotating copies of the
//      inputs, median per launch; TunerOptions::graph_timing = false: CUDA events after an L2 flush);
//   5. stops starting work at the time budget (the baseline is always measured) and reports
//      progress after every compile and every measurement;
//   6. re-times the winner against the reference (the incumbent, the config plans run today for the
//      bucket, or without one the heuristic's) in `recheck_rounds` interleaved rounds; the winner is
//      recorded only if the median of its rounds is below the reference's (TuneResult::recheck). One
//      timing of each is noisy, and a record slower than what runs today makes tuning a loss.
// The winner (the fastest verified candidate) is what record() turns into a TuningRecord. Library
// code: no prints; progress goes to the on_progress callback (the CLI draws the bar).
//
//   Tuner tuner(*rt, opts);
//   KILN_ASSIGN_OR_RETURN(TuneResult r, tuner.tune(shape, device));
//   if (auto rec = r.record()) KILN_RETURN_IF_ERROR(store->record(*rec).status());
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/tuning_store.hpp"
#include "kiln/kiln.hpp"
#include "tuner/config_space.hpp"

namespace kiln {

struct TuneShape {
  KernelSpec spec;
  int64_t m = 1;  // rows (grouped: the total over experts); tuned at its bucket (Tuner::bucket_of)
  int64_t n = 0;
  int64_t k = 0;
  std::string label;  // "gpt-oss-20b gate_up, 16 tokens" (for progress and summaries)
};

// What a runner reports for one candidate.
struct Measurement {
  bool verified = false;  // matched the reference within tolerance, every element written
  double rel_err = 0;     // relative Frobenius error vs the reference
  double tolerance = 0;
  double median_us = INFINITY;
  std::string detail;  // why it was rejected ("3 unwritten elements", ...)
};

// Verifies and times a candidate's plan. A wrong result is verified = false; an error Status is a
// failure of this candidate (a launch error) except NO_DEVICE, which ends the timing of the shape.
class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  virtual StatusOr<Measurement> measure(Runtime& rt, const Plan& plan, int64_t m) = 0;
  // Times a plan already verified (the winner's recheck): measure() without the check by default.
  virtual StatusOr<double> time_us(Runtime& rt, const Plan& plan, int64_t m) {
    KILN_ASSIGN_OR_RETURN(Measurement r, measure(rt, plan, m));
    return r.median_us;
  }
};

struct TuneProgress {
  std::string label;
  size_t candidates = 0;
  size_t compiled = 0, compile_failed = 0;
  size_t measured = 0, rejected = 0;  // measured includes rejected ones
  double best_us = INFINITY;
  std::string best_config;  // TileConfig::to_string()
  double elapsed_s = 0;
  double eta_s = 0;  // remaining, from the rates so far, capped by the budget
};

struct TunerOptions {
  double budget_s = 30;     // per shape: no new compile or measurement starts after it
  int compile_threads = 0;  // 0: one per hardware thread
  PruneOptions prune;
  bool time = true;  // false: compile only (fills the kernel cache; no GPU needed)
  int warmup = 3;
  int repeats = 20;
  bool graph_timing = true;  // the default runner: graph replay over input copies (false: events)
  int recheck_rounds = 5;    // winner vs reference re-timing rounds (0: no recheck)
  uint64_t seed = 0;                                     // 0: fresh per run (the runner reports it)
  std::function<void(const TuneProgress&)> on_progress;  // called from the tuner's threads, serialised
  // Seams (tests, other benches). Empty: Runtime::compile / the run_check runner / prune_space.
  std::function<StatusOr<CompiledKernel>(const TileConfig&)> compile;
  std::shared_ptr<CandidateRunner> runner;
  std::vector<TileConfig> candidates;  // non-empty: these (and the heuristic's), no static pruning
};

enum class CandidateOutcome {
  kPending,        // not reached
  kSkipped,        // the budget ran out first
  kCompileFailed,  // compile_status says why
  kCompiled,       // compiled, not measured (compile-only runs)
  kRunFailed,      // the runner failed for it (run_status)
  kRejected,       // wrong result
  kTimed,          // verified and timed
};
const char* candidate_outcome_name(CandidateOutcome o);

struct CandidateResult {
  TileConfig config;
  bool is_default = false;
  bool is_incumbent = false;  // the config plans run today for the bucket (a record)
  ConfigEstimate estimate;
  CandidateOutcome outcome = CandidateOutcome::kPending;
  Status compile_status;
  double compile_ms = 0;
  bool from_cache = false;
  int registers = -1, spills = -1;
  Status run_status;
  Measurement measurement;  // median_us stays infinite unless kTimed
  double time_us() const { return outcome == CandidateOutcome::kTimed ? measurement.median_us : INFINITY; }
};

struct TuneResult {
  TuneShape shape;
  int64_t m_bucket = 0;
  Arch arch;
  KernelFamily family = KernelFamily::kSm80Gemm;
  TuningDevice device;
  size_t enumerated = 0;
  std::map<std::string, int> dropped_by_rule;
  std::vector<CandidateResult> candidates;  // ranked by the static model
  std::optional<size_t> best;               // fastest verified candidate
  std::optional<size_t> baseline;           // the heuristic's config
  std::optional<size_t> incumbent;          // the config plans run today (a record), when there is one
  // The winner re-timed against the reference (the incumbent, else the baseline), interleaved: medians
  // of the rounds. Not done (rounds 0) when the winner is the reference, or nothing was timed.
  struct Recheck {
    int rounds = 0;
    size_t reference = 0;  // candidate index
    double winner_us = INFINITY, reference_us = INFINITY;
    Status status;  // why the recheck could not finish (the search's winner then stands, unconfirmed)
    bool winner_faster() const { return winner_us < reference_us; }
  };
  Recheck recheck;
  Status timing_status;                     // why nothing was timed (NO_DEVICE, compile-only)
  double elapsed_s = 0;

  size_t count(CandidateOutcome o) const;
  // The winner as a tuning (nullopt without one, or when the recheck found it no faster than the
  // reference: what runs today stays).
  std::optional<TuningRecord> record() const;
  // When the recheck found the winner no faster: the reference as a tuning, with its recheck median (online
  // tuning records it, so an untuned bucket is searched once, not at every plan()).
  std::optional<TuningRecord> reference_record() const;
  // The recheck timed the winner against the incumbent record and the winner was faster: the record should
  // replace the incumbent whatever median the database holds for it (a median of another run, or another
  // timing method, is not comparable with this run's).
  bool replaces_incumbent() const;

 private:
  TuningRecord record_of(size_t index, double median_us) const;
};

class Tuner {
 public:
  Tuner(Runtime& rt, TunerOptions options);

  // The arch tunings for device are made for (sm_90 -> sm_90a, as the runtime plans).
  static Arch arch_of(const TuningDevice& device);
  // The M bucket a shape is tuned for, and the sizes it is measured at (M = the bucket, or bucket
  // rows per expert for a grouped problem).
  static int64_t bucket_of(const TuneShape& shape);
  static ProblemSizes measured_sizes(const TuneShape& shape);
  // Candidates after pruning, with the model's estimates: the dry run (no GPU, no compile). The
  // incumbent (below) leads them when there is one.
  StatusOr<PrunedSpace> candidates(const TuneShape& shape, const TuningDevice& device) const;
  // The config a plan runs today for the shape's bucket on family: the exact bucket's record in the
  // user database or the pre-tuned table, if the planner still accepts it.
  std::optional<TileConfig> incumbent(const TuneShape& shape, const TuningDevice& device, KernelFamily family) const;
  // UNSUPPORTED / INVALID_ARGUMENT when the shape has no kernel on device; otherwise a result,
  // whatever happened to the candidates.
  StatusOr<TuneResult> tune(const TuneShape& shape, const TuningDevice& device);

 private:
  Runtime& rt_;
  TunerOptions options_;
};

// The runner the tuner uses by default: verify/check.hpp's run_check on fresh random inputs
// (poisoned output, kiln's reference kernel), timed by graph replay over input copies or (graph = false)
// CUDA events after an L2 flush.
std::shared_ptr<CandidateRunner> make_check_runner(int warmup, int repeats, uint64_t seed, bool graph = true);

}  // namespace kiln

#include "tuner/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "verify/check.hpp"
#include "runtime/tuned_configs.hpp"
#include "tuner/thread_pool.hpp"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class CheckRunner : public CandidateRunner {
 public:
  CheckRunner(int warmup, int repeats, uint64_t seed, bool graph)
      : warmup_(warmup), repeats_(repeats), seed_(seed), graph_(graph) {}
  StatusOr<Measurement> measure(Runtime& rt, const Plan& plan, int64_t m) override { return run(rt, plan, m, true); }
  StatusOr<double> time_us(Runtime& rt, const Plan& plan, int64_t m) override {
    KILN_ASSIGN_OR_RETURN(Measurement r, run(rt, plan, m, false));
    return r.median_us;
  }

 private:
  StatusOr<Measurement> run(Runtime& rt, const Plan& plan, int64_t m, bool check) {
    CheckOptions o;
    o.m = m;
    const KernelSpec& spec = plan.spec();
    if (spec.op == Op::kGroupedGemm && spec.experts > 0) {
      // The bucket's rows on every expert (a uniform split: the tuner measures the bucket, not one
      // routing); the masked layout takes rows per expert, the offsets layout the total.
      const int64_t per_expert = rows_per_expert(spec, m);
      o.group_rows.assign(static_cast<size_t>(spec.experts), static_cast<int32_t>(per_expert));
      o.m = spec.layout == GroupLayout::kMasked ? per_expert : per_expert * spec.experts;
    }
    // One random draw per shape, shared by its candidates (a fresh draw per candidate cost seconds of
    // host time for large weights: 30 s per shape). A new shape draws anew.
    const std::string key = print_spec(spec) + "|" + std::to_string(o.m) + "|" + std::to_string(plan.sizes().n) +
                            "|" + std::to_string(plan.sizes().k);
    if (key != inputs_key_ || !inputs_) {
      uint64_t s = seed_ ? seed_ : static_cast<uint64_t>(Clock::now().time_since_epoch().count()) | 1;
      inputs_seed_ = s;
      KILN_ASSIGN_OR_RETURN(HostOperands h, random_operands(spec, o.m, plan.sizes().n, plan.sizes().k, o.group_rows, s));
      inputs_ = std::make_shared<const HostOperands>(std::move(h));
      inputs_key_ = key;
    }
    o.inputs = inputs_;
    o.seed = inputs_seed_;
    o.check = check;
    o.time = true;
    o.warmup = warmup_;
    o.repeats = repeats_;
    o.timing = graph_ ? CheckOptions::Timing::kGraph : CheckOptions::Timing::kEvents;
    KILN_ASSIGN_OR_RETURN(CheckReport r, run_check(rt, plan, o));
    Measurement out;
    out.verified = !check || (r.checked && r.passed);
    out.rel_err = r.rel_fro_err;
    out.tolerance = r.tolerance;
    out.median_us = r.median_ms * 1e3;
    if (!out.verified) {
      out.detail = "rel_fro_err " + std::to_string(r.rel_fro_err) + " (tolerance " +
                   std::to_string(r.tolerance) + "), " + std::to_string(r.unwritten) + " unwritten, " +
                   std::to_string(r.overwritten) + " overwritten, " + std::to_string(r.nonfinite) +
                   " non-finite; seed " + std::to_string(r.seed);
    }
    return out;
  }

  int warmup_, repeats_;
  uint64_t seed_;
  bool graph_;
  std::string inputs_key_;                     // the shape inputs_ was drawn for
  std::shared_ptr<const HostOperands> inputs_;
  uint64_t inputs_seed_ = 0;
};

// Progress bookkeeping shared by the compile workers and the timing loop.
class ProgressTracker {
 public:
  ProgressTracker(const TunerOptions& o, std::string label, size_t candidates, Clock::time_point t0)
      : cb_(o.on_progress), budget_s_(o.budget_s), time_(o.time), t0_(t0) {
    p_.label = std::move(label);
    p_.candidates = candidates;
  }
  void compiled(bool ok, double wall_s) {
    std::lock_guard<std::mutex> lock(mu_);
    (ok ? p_.compiled : p_.compile_failed) += 1;
    compile_wall_s_ += wall_s;
    emit();
  }
  void measured(bool verified, double us, const TileConfig& cfg, double wall_s) {
    std::lock_guard<std::mutex> lock(mu_);
    p_.measured += 1;
    if (!verified) p_.rejected += 1;
    measure_wall_s_ += wall_s;
    if (verified && us < p_.best_us) {
      p_.best_us = us;
      p_.best_config = cfg.to_string();
    }
    emit();
  }
  void skipped() {
    std::lock_guard<std::mutex> lock(mu_);
    skipped_ += 1;
    emit();
  }

 private:
  void emit() {
    p_.elapsed_s = seconds_since(t0_);
    // ETA: remaining compiles at the observed rate (the pool overlaps them: wall time per finished
    // compile already divides by the pool's parallelism), plus remaining measurements.
    const size_t done_c = p_.compiled + p_.compile_failed + skipped_;
    const size_t left_c = p_.candidates > done_c ? p_.candidates - done_c : 0;
    const double per_c = done_c > 0 ? p_.elapsed_s / static_cast<double>(done_c) : 0;
    const size_t left_m =
        time_ && p_.candidates > p_.measured + skipped_ ? p_.candidates - p_.measured - skipped_ : 0;
    const double per_m = p_.measured > 0 ? measure_wall_s_ / static_cast<double>(p_.measured) : per_c;
    double eta = std::max(static_cast<double>(left_c) * per_c, static_cast<double>(left_m) * per_m);
    eta = std::min(eta, std::max(0.0, budget_s_ - p_.elapsed_s));
    p_.eta_s = eta;
    if (cb_) cb_(p_);
  }

  std::mutex mu_;
  std::function<void(const TuneProgress&)> cb_;
  double budget_s_;
  bool time_;
  Clock::time_point t0_;
  TuneProgress p_;
  double compile_wall_s_ = 0, measure_wall_s_ = 0;
  size_t skipped_ = 0;
};

}  // namespace

const char* candidate_outcome_name(CandidateOutcome o) {
  switch (o) {
    case CandidateOutcome::kPending: return "pending";
    case CandidateOutcome::kSkipped: return "skipped (budget)";
    case CandidateOutcome::kCompileFailed: return "compile failed";
    case CandidateOutcome::kCompiled: return "compiled";
    case CandidateOutcome::kRunFailed: return "run failed";
    case CandidateOutcome::kRejected: return "rejected (wrong result)";
    case CandidateOutcome::kTimed: return "timed";
  }
  return "unknown";
}

size_t TuneResult::count(CandidateOutcome o) const {
  return static_cast<size_t>(std::count_if(candidates.begin(), candidates.end(),
                                           [o](const CandidateResult& c) { return c.outcome == o; }));
}

std::optional<TuningRecord> TuneResult::record() const {
  if (!best) return std::nullopt;
  if (recheck.rounds > 0 && !recheck.winner_faster()) return std::nullopt;  // what runs today stays
  return record_of(*best, recheck.rounds > 0 ? recheck.winner_us : candidates[*best].measurement.median_us);
}

std::optional<TuningRecord> TuneResult::reference_record() const {
  if (!best || recheck.rounds == 0 || recheck.winner_faster()) return std::nullopt;
  return record_of(recheck.reference, recheck.reference_us);
}

bool TuneResult::replaces_incumbent() const {
  return best && incumbent && recheck.rounds > 0 && recheck.reference == *incumbent && recheck.winner_faster();
}

TuningRecord TuneResult::record_of(size_t index, double median_us) const {
  const CandidateResult& w = candidates[index];
  TuningRecord r;
  r.device = device;
  r.problem = tuning_problem(shape.spec, {m_bucket, shape.n, shape.k});
  r.m_bucket = m_bucket;
  r.family = family_name(family);
  r.config_json = config_to_json(w.config).dump();
  r.median_us = median_us;
  r.candidates =
      static_cast<int>(count(CandidateOutcome::kTimed) + count(CandidateOutcome::kRejected) +
                       count(CandidateOutcome::kRunFailed) + count(CandidateOutcome::kCompileFailed));
  r.tuned_unix = static_cast<int64_t>(std::time(nullptr));
  return r;
}

std::shared_ptr<CandidateRunner> make_check_runner(int warmup, int repeats, uint64_t seed, bool graph) {
  return std::make_shared<CheckRunner>(warmup, repeats, seed, graph);
}

Tuner::Tuner(Runtime& rt, TunerOptions options) : rt_(rt), options_(std::move(options)) {}

Arch Tuner::arch_of(const TuningDevice& device) {
  return arch_for_part(device.key.cc, device.key.sm_count);
}

int64_t Tuner::bucket_of(const TuneShape& shape) { return tuning_m_bucket(rows_per_expert(shape.spec, shape.m)); }

ProblemSizes Tuner::measured_sizes(const TuneShape& shape) {
  const int64_t bucket = bucket_of(shape);
  const bool grouped = shape.spec.op == Op::kGroupedGemm && shape.spec.experts > 0;
  return {grouped ? bucket * shape.spec.experts : bucket, shape.n, shape.k};
}

StatusOr<PrunedSpace> Tuner::candidates(const TuneShape& shape, const TuningDevice& device) const {
  const Arch arch = arch_of(device);
  const ProblemSizes sizes = measured_sizes(shape);
  KILN_RETURN_IF_ERROR(can_implement(shape.spec, arch, sizes));
  const GpuInfo* known = find_gpu(device.key.cc, device.key.sm_count);
  const GpuModel gpu = gpu_model(arch, device.key.sm_count, known ? known->dram_gbps : 0);
  // The bucket's family: an sm90 plan runs grouped FP8 decode buckets on the portable family, so they
  // are tuned there (and recorded as portable configs, which the plan then runs on that family).
  KILN_ASSIGN_OR_RETURN(KernelFamily family, select_bucket_family(shape.spec, arch, bucket_of(shape)));
  if (options_.candidates.empty()) {
    PruneOptions prune = options_.prune;
    prune.family = family;
    PrunedSpace s = prune_space(shape.spec, gpu, sizes, prune);
    // The incumbent: the config plans run today for this bucket (user database or pre-tuned table).
    // It is timed right after the baseline, so a re-tune whose candidate cap misses it (the space
    // grows: TMA stores, odd N tiles) cannot record something slower than what already runs.
    if (std::optional<TileConfig> inc = incumbent(shape, device, family)) {
      auto same = [&](const PrunedCandidate& p) { return p.config == *inc; };
      auto it = std::find_if(s.kept.begin(), s.kept.end(), same);
      PrunedCandidate pc = it != s.kept.end()
                               ? *it
                               : PrunedCandidate{*inc, estimate_config(shape.spec, gpu, family, *inc, sizes), false};
      if (it != s.kept.end()) s.kept.erase(it);
      s.kept.insert(s.kept.begin(), pc);
    }
    return s;
  }

  PrunedSpace s;
  s.family = family;
  const TileConfig heuristic = default_config(shape.spec, arch, family, {bucket_of(shape), sizes.n, sizes.k});
  bool has_heuristic = false;
  for (const TileConfig& cfg : options_.candidates) {
    s.enumerated += 1;
    s.kept.push_back({cfg, estimate_config(shape.spec, gpu, s.family, cfg, sizes), cfg == heuristic});
    has_heuristic |= cfg == heuristic;
  }
  // The baseline is always measured, so every result says what tuning gained over the heuristic.
  if (!has_heuristic)
    s.kept.push_back({heuristic, estimate_config(shape.spec, gpu, s.family, heuristic, sizes), true});
  return s;
}

std::optional<TileConfig> Tuner::incumbent(const TuneShape& shape, const TuningDevice& device,
                                           KernelFamily family) const {
  std::shared_ptr<TuningStore> store = tuning_store_for(rt_);
  if (!store) return std::nullopt;
  const int64_t bucket = bucket_of(shape);
  StatusOr<std::optional<TuningHit>> hit =
      store->lookup(device.key, tuning_problem(shape.spec, measured_sizes(shape)), bucket);
  if (!hit.ok() || !*hit || (*hit)->record.m_bucket != bucket) return std::nullopt;
  auto usable = usable_tuned_config((*hit)->record, shape.spec, family, arch_of(device));
  if (!usable || usable->second != family) return std::nullopt;  // e.g. a portable record of an sm90 bucket
  return usable->first;
}

StatusOr<TuneResult> Tuner::tune(const TuneShape& shape, const TuningDevice& device) {
  const Clock::time_point t0 = Clock::now();
  const auto deadline =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.budget_s));
  TuneResult result;
  result.shape = shape;
  result.device = device;
  result.arch = arch_of(device);
  result.m_bucket = bucket_of(shape);
  const ProblemSizes sizes = measured_sizes(shape);
  KILN_ASSIGN_OR_RETURN(result.family, select_bucket_family(shape.spec, result.arch, result.m_bucket));
  KILN_ASSIGN_OR_RETURN(PrunedSpace space, candidates(shape, device));
  result.enumerated = space.enumerated;
  result.dropped_by_rule = space.dropped_by_rule;
  for (const PrunedCandidate& pc : space.kept) {
    CandidateResult c;
    c.config = pc.config;
    c.is_default = pc.is_default;
    c.estimate = pc.estimate;
    result.candidates.push_back(std::move(c));
    if (pc.is_default && !result.baseline) result.baseline = result.candidates.size() - 1;
  }
  if (std::optional<TileConfig> inc = incumbent(shape, device, result.family)) {
    for (size_t i = 0; i < result.candidates.size(); ++i)
      if (result.candidates[i].config == *inc) {
        result.candidates[i].is_incumbent = true;
        result.incumbent = i;
        break;
      }
  }
  const size_t count = result.candidates.size();
  ProgressTracker progress(options_, shape.label, count, t0);

  // ---- compile, in parallel, best estimate first (the pool is FIFO) ----
  auto compile_fn = options_.compile;
  if (!compile_fn) {
    compile_fn = [this, &shape, &result](const TileConfig& cfg) {
      return rt_.compile(shape.spec, result.family, cfg, result.arch);
    };
  }
  int threads = options_.compile_threads > 0
                    ? options_.compile_threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min<int>(threads, static_cast<int>(std::max<size_t>(count, 1)));
  std::vector<std::future<void>> compiled(count);
  {
    ThreadPool pool(threads);
    for (size_t i = 0; i < count; ++i) {
      CandidateResult* c = &result.candidates[i];
      compiled[i] = pool.submit([c, &compile_fn, &progress, deadline] {
        if (!c->is_default && Clock::now() > deadline) {
          c->outcome = CandidateOutcome::kSkipped;
          progress.skipped();
          return;
        }
        // A config that the planner rejects is a failed compile like any other (it never gets to
        // NVRTC): the tuner records it and moves on.
        const Clock::time_point c0 = Clock::now();
        StatusOr<CompiledKernel> k = compile_fn(c->config);
        if (k.ok()) {
          c->outcome = CandidateOutcome::kCompiled;
          c->compile_ms = k->compile_ms;
          c->from_cache = k->from_cache;
          c->registers = k->registers;
          c->spills = std::max(k->spill_stores, k->spill_loads);
        } else {
          c->outcome = CandidateOutcome::kCompileFailed;
          c->compile_status = k.status();
        }
        progress.compiled(k.ok(), seconds_since(c0));
      });
    }

    // ---- verify and time, in the same order, as compiles finish (serial: one GPU) ----
    std::shared_ptr<CandidateRunner> runner = options_.runner;
    if (!options_.time) {
      runner = nullptr;
      result.timing_status = NotReady("compile only: nothing was timed");
    } else if (!runner) {
      Status dev = rt_.device_status();
      if (dev.ok()) {
        runner = make_check_runner(options_.warmup, options_.repeats, options_.seed, options_.graph_timing);
      } else {
        result.timing_status = dev.with_context("timing needs a GPU");
      }
    }
    // A plan whose every bucket runs config (what a candidate is measured through).
    auto pinned_plan = [&](const TileConfig& config) {
      PlanOptions pin;
      pin.arch = result.arch;
      pin.config = config;
      pin.family = result.family;
      return rt_.plan(shape.spec, sizes, pin);
    };
    // The baseline is measured first, so even a budget spent on compiles leaves a comparison.
    std::vector<size_t> order(count);
    for (size_t i = 0; i < count; ++i) order[i] = i;
    if (result.baseline)
      std::stable_partition(order.begin(), order.end(), [&](size_t i) { return i == *result.baseline; });
    for (size_t i : order) {
      if (!runner) break;
      CandidateResult& c = result.candidates[i];
      if (!c.is_default && Clock::now() > deadline) break;
      compiled[i].wait();
      if (c.outcome != CandidateOutcome::kCompiled) continue;
      const Clock::time_point m0 = Clock::now();
      StatusOr<Plan> plan = pinned_plan(c.config);
      StatusOr<Measurement> m =
          plan.ok() ? runner->measure(rt_, *plan, sizes.m) : StatusOr<Measurement>(plan.status());
      if (!m.ok()) {
        c.outcome = CandidateOutcome::kRunFailed;
        c.run_status = m.status();
        progress.measured(false, INFINITY, c.config, seconds_since(m0));
        if (m.status().code() == StatusCode::kNoDevice) {
          result.timing_status = m.status();
          break;
        }
        continue;
      }
      c.measurement = *m;
      c.outcome = m->verified ? CandidateOutcome::kTimed : CandidateOutcome::kRejected;
      if (!m->verified) c.measurement.median_us = INFINITY;  // a wrong kernel never wins
      progress.measured(m->verified, c.time_us(), c.config, seconds_since(m0));
      if (c.outcome == CandidateOutcome::kTimed &&
          (!result.best || c.time_us() < result.candidates[*result.best].time_us())) {
        result.best = i;
      }
    }
    // The winner against what runs today, interleaved (each round times both, so drift between rounds
    // hits both); outside the budget, like the baseline: it decides whether anything is recorded.
    const std::optional<size_t> ref = result.incumbent && result.candidates[*result.incumbent].outcome ==
                                                               CandidateOutcome::kTimed
                                          ? result.incumbent
                                          : result.baseline;
    if (runner && result.best && ref && *ref != *result.best && options_.recheck_rounds > 0 &&
        result.candidates[*ref].outcome == CandidateOutcome::kTimed) {
      std::vector<double> won, kept;
      Status st = Status::Ok();
      for (int round = 0; st.ok() && round < options_.recheck_rounds; ++round) {
        // Alternate which goes first, so a drift within a round favours neither.
        const size_t first = round % 2 == 0 ? *result.best : *ref, second = round % 2 == 0 ? *ref : *result.best;
        for (size_t i : {first, second}) {
          StatusOr<Plan> plan = pinned_plan(result.candidates[i].config);
          StatusOr<double> us = plan.ok() ? runner->time_us(rt_, *plan, sizes.m) : StatusOr<double>(plan.status());
          if (!us.ok()) {
            st = us.status();
            break;
          }
          (i == *result.best ? won : kept).push_back(*us);
        }
      }
      if (st.ok() && !won.empty() && won.size() == kept.size()) {
        auto median = [](std::vector<double> v) {
          std::sort(v.begin(), v.end());
          return v[v.size() / 2];
        };
        result.recheck.rounds = static_cast<int>(won.size());
        result.recheck.reference = *ref;
        result.recheck.winner_us = median(won);
        result.recheck.reference_us = median(kept);
      } else if (!st.ok()) {
        // The search's verified winner stands, unconfirmed (the summary says why).
        result.recheck.status = st.with_context("re-timing the winner against the reference");
      }
    }
    // Leaving the scope joins the pool: compiles still queued see the deadline and skip.
  }
  for (CandidateResult& c : result.candidates) {
    if (c.outcome == CandidateOutcome::kCompiled && options_.time && !result.timing_status.ok()) continue;
    if (c.outcome == CandidateOutcome::kCompiled && options_.time && Clock::now() > deadline) {
      c.outcome = CandidateOutcome::kSkipped;  // compiled, but the budget ended before its turn
    }
  }
  result.elapsed_s = seconds_since(t0);
  return result;
}

}  // namespace kiln

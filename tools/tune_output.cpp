#include "tools/tune_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/spec/spec.hpp"

namespace kiln::cli {
namespace {

std::string shape_text(const std::string& spec, int64_t m, int64_t bucket, int64_t n, int64_t k) {
  std::string s = fmt::format("{}  M={}", spec, m);
  if (bucket != m) s += fmt::format(" (bucket {})", bucket);
  return s + fmt::format(" N={} K={}", n, k);
}

std::string us_text(double us) { return us > 0 && std::isfinite(us) ? fmt::format("{:.1f}", us) : "-"; }

std::string kib(int bytes) { return fmt::format("{:.0f}K", bytes / 1024.0); }

}  // namespace

void ProgressBar::update(const TuneProgress& p, size_t shape_index, size_t shapes, bool timing) {
  const auto now = std::chrono::steady_clock::now();
  const size_t total = std::max<size_t>(p.candidates, 1);
  const size_t compiled = p.compiled + p.compile_failed;
  const bool done = compiled >= p.candidates && (!timing || p.measured + p.compile_failed >= p.candidates);
  if (!tty_ && !done && now - last_ < std::chrono::seconds(5)) return;
  last_ = now;
  const double frac = timing
                          ? (static_cast<double>(compiled) + static_cast<double>(p.measured)) / (2.0 * total)
                          : static_cast<double>(compiled) / total;
  constexpr int kWidth = 20;
  const int filled = std::clamp(static_cast<int>(frac * kWidth + 0.5), 0, kWidth);
  std::string line = prefix_.empty() ? "" : "[" + prefix_ + "] ";
  line += fmt::format("[{}/{}] [{}{}] compiled {}/{}", shape_index + 1, shapes, std::string(filled, '#'),
                      std::string(kWidth - filled, '.'), compiled, p.candidates);
  if (p.compile_failed) line += fmt::format(" ({} failed)", p.compile_failed);
  if (timing) {
    line += fmt::format(", timed {}/{}", p.measured, p.candidates);
    if (p.rejected) line += fmt::format(" ({} rejected)", p.rejected);
    line +=
        std::isfinite(p.best_us) ? fmt::format(", best {:.1f} us {}", p.best_us, p.best_config) : ", best -";
  }
  line += fmt::format(", {:.0f}s, ETA {:.0f}s  {}", p.elapsed_s, p.eta_s, p.label);
  if (tty_) {
    fmt::print(stderr, "\r{}\x1b[K", line);  // erase what a longer previous line left
    open_ = true;
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (tty_ && open_) fmt::print(stderr, "\n");
  open_ = false;
}

SummaryRow summarize(const TuneResult& r) {
  SummaryRow row;
  row.label = r.shape.label;
  row.spec = print_spec(r.shape.spec);
  row.m = r.shape.m;
  row.bucket = r.m_bucket;
  row.n = r.shape.n;
  row.k = r.shape.k;
  row.candidates = static_cast<int>(r.candidates.size());
  row.compile_failed = static_cast<int>(r.count(CandidateOutcome::kCompileFailed));
  row.rejected = static_cast<int>(r.count(CandidateOutcome::kRejected));
  row.run_failed = static_cast<int>(r.count(CandidateOutcome::kRunFailed));
  row.timed = static_cast<int>(r.count(CandidateOutcome::kTimed));
  row.skipped = static_cast<int>(r.count(CandidateOutcome::kSkipped));
  if (r.best) {
    row.best_config = r.candidates[*r.best].config.to_string();
    row.best_us = r.candidates[*r.best].time_us();
  }
  if (r.baseline) {
    row.baseline_config = r.candidates[*r.baseline].config.to_string();
    const double t = r.candidates[*r.baseline].time_us();
    row.baseline_us = std::isfinite(t) ? t : 0;
  }
  if (!r.recheck.status.ok()) row.recheck_reference = "not rechecked: " + r.recheck.status.to_string();
  if (r.recheck.rounds > 0) {
    row.recheck_rounds = r.recheck.rounds;
    row.recheck_reference = r.incumbent && r.recheck.reference == *r.incumbent ? "incumbent" : "heuristic";
    row.recheck_winner_us = r.recheck.winner_us;
    row.recheck_reference_us = r.recheck.reference_us;
  }
  if (r.best) {
    row.status = "ok";
  } else if (!r.timing_status.ok() && r.timing_status.code() == StatusCode::kNotReady) {
    row.status = "compiled";
  } else if (!r.timing_status.ok()) {
    row.status = r.timing_status.to_string();
  } else {
    row.status = "no verified candidate";
  }
  row.elapsed_s = r.elapsed_s;
  for (const CandidateResult& c : r.candidates) {
    TriedRow t;
    t.config = c.config.to_string();
    t.outcome = candidate_outcome_name(c.outcome);
    t.is_default = c.is_default;
    t.est_us = c.estimate.est_us;
    t.registers = c.registers;
    t.spills = c.spills;
    if (c.outcome == CandidateOutcome::kTimed) t.us = c.time_us();
    if (c.outcome == CandidateOutcome::kTimed || c.outcome == CandidateOutcome::kRejected)
      t.rel_err = c.measurement.rel_err;
    if (c.outcome == CandidateOutcome::kRejected) t.detail = c.measurement.detail;
    if (c.outcome == CandidateOutcome::kCompileFailed) t.detail = c.compile_status.to_string();
    if (c.outcome == CandidateOutcome::kRunFailed) t.detail = c.run_status.to_string();
    row.tried.push_back(std::move(t));
  }
  return row;
}

SummaryRow failed_row(const TuneShape& shape, const Status& why) {
  SummaryRow row;
  row.label = shape.label;
  row.spec = print_spec(shape.spec);
  row.m = shape.m;
  row.bucket = Tuner::bucket_of(shape);
  row.n = shape.n;
  row.k = shape.k;
  row.status = why.to_string();
  return row;
}

nlohmann::json row_to_json(const SummaryRow& r) {
  // Numbers that are unset or not finite are null (nlohmann would write null for them anyway, and
  // row_from_json reads null back as unset).
  auto finite_or_null = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  nlohmann::json tried = nlohmann::json::array();
  for (const TriedRow& t : r.tried) {
    tried.push_back({{"config", t.config},
                     {"outcome", t.outcome},
                     {"default", t.is_default},
                     {"est_us", finite_or_null(t.est_us)},
                     {"us", t.us > 0 ? finite_or_null(t.us) : nlohmann::json(nullptr)},
                     {"rel_err", finite_or_null(t.rel_err)},
                     {"registers", t.registers},
                     {"spills", t.spills},
                     {"detail", t.detail}});
  }
  return {{"label", r.label},
          {"spec", r.spec},
          {"m", r.m},
          {"m_bucket", r.bucket},
          {"n", r.n},
          {"k", r.k},
          {"status", r.status},
          {"candidates", r.candidates},
          {"compile_failed", r.compile_failed},
          {"rejected", r.rejected},
          {"run_failed", r.run_failed},
          {"timed", r.timed},
          {"skipped", r.skipped},
          {"best_config", r.best_config},
          {"best_us", r.best_us},
          {"baseline_config", r.baseline_config},
          {"baseline_us", r.baseline_us},
          {"recorded", r.recorded},
          {"recheck", {{"rounds", r.recheck_rounds},
                       {"reference", r.recheck_reference},
                       {"winner_us", r.recheck_winner_us},
                       {"reference_us", r.recheck_reference_us}}},
          {"elapsed_s", r.elapsed_s},
          {"tried", tried}};
}

SummaryRow row_from_json(const nlohmann::json& j) {
  SummaryRow r;
  if (!j.is_object()) return r;
  // Lenient readers: a missing or mistyped field leaves out as it was.
  auto str = [](const nlohmann::json& o, const char* k, std::string& out) {
    if (auto it = o.find(k); it != o.end() && it->is_string()) out = it->get<std::string>();
  };
  auto i64 = [](const nlohmann::json& o, const char* k, int64_t& out) {
    if (auto it = o.find(k); it != o.end() && it->is_number_integer()) out = it->get<int64_t>();
  };
  auto i32 = [&](const nlohmann::json& o, const char* k, int& out) {
    int64_t v = out;
    i64(o, k, v);
    out = static_cast<int>(v);
  };
  auto num = [](const nlohmann::json& o, const char* k, double& out) {
    if (auto it = o.find(k); it != o.end() && it->is_number()) out = it->get<double>();
  };
  str(j, "label", r.label);
  str(j, "spec", r.spec);
  i64(j, "m", r.m);
  i64(j, "m_bucket", r.bucket);
  i64(j, "n", r.n);
  i64(j, "k", r.k);
  str(j, "status", r.status);
  i32(j, "candidates", r.candidates);
  i32(j, "compile_failed", r.compile_failed);
  i32(j, "rejected", r.rejected);
  i32(j, "run_failed", r.run_failed);
  i32(j, "timed", r.timed);
  i32(j, "skipped", r.skipped);
  str(j, "best_config", r.best_config);
  num(j, "best_us", r.best_us);
  str(j, "baseline_config", r.baseline_config);
  num(j, "baseline_us", r.baseline_us);
  str(j, "recorded", r.recorded);
  if (auto rc = j.find("recheck"); rc != j.end() && rc->is_object()) {
    i32(*rc, "rounds", r.recheck_rounds);
    str(*rc, "reference", r.recheck_reference);
    num(*rc, "winner_us", r.recheck_winner_us);
    num(*rc, "reference_us", r.recheck_reference_us);
  }
  num(j, "elapsed_s", r.elapsed_s);
  if (auto it = j.find("tried"); it != j.end() && it->is_array()) {
    for (const nlohmann::json& e : *it) {
      if (!e.is_object()) continue;
      TriedRow t;
      str(e, "config", t.config);
      str(e, "outcome", t.outcome);
      if (auto d = e.find("default"); d != e.end() && d->is_boolean()) t.is_default = d->get<bool>();
      num(e, "est_us", t.est_us);
      num(e, "us", t.us);
      num(e, "rel_err", t.rel_err);
      i32(e, "registers", t.registers);
      i32(e, "spills", t.spills);
      str(e, "detail", t.detail);
      r.tried.push_back(std::move(t));
    }
  }
  return r;
}

void print_summary(std::FILE* to, const std::vector<SummaryRow>& rows, bool timing) {
  if (rows.empty()) return;
  fmt::print(to, "\nkiln tune: summary\n");
  if (timing) {
    fmt::print(to,
               "{:>6}  {:>6}  {:>6}  {:>5}  {:>4}  {:>4}  {:<30}  {:>9}  {:>8}  {:>9}  {:>7}  {:<13}  {}\n",
               "M", "N", "K", "cands", "fail", "rej", "best config", "best us", "TFLOP/s", "heur. us",
               "speedup", "recorded", "spec / status");
  } else {
    fmt::print(to, "{:>6}  {:>6}  {:>6}  {:>5}  {:>4}  {}\n", "M", "N", "K", "cands", "fail",
               "spec / status");
  }
  for (const SummaryRow& r : rows) {
    const std::string m = r.bucket == r.m ? std::to_string(r.m) : fmt::format("{}>{}", r.m, r.bucket);
    const bool ok = r.status == "ok" || r.status == "compiled";
    const std::string tail = ok ? r.spec : r.spec + "  [" + r.status + "]";
    if (!timing) {
      fmt::print(to, "{:>6}  {:>6}  {:>6}  {:>5}  {:>4}  {}\n", m, r.n, r.k, r.candidates, r.compile_failed,
                 tail);
      continue;
    }
    const double tflops = r.best_us > 0 ? 2.0 * r.bucket * r.n * r.k / (r.best_us * 1e6) : 0;
    const std::string speedup =
        r.best_us > 0 && r.baseline_us > 0 ? fmt::format("{:.2f}x", r.baseline_us / r.best_us) : "-";
    fmt::print(
        to, "{:>6}  {:>6}  {:>6}  {:>5}  {:>4}  {:>4}  {:<30}  {:>9}  {:>8}  {:>9}  {:>7}  {:<13}  {}\n", m,
        r.n, r.k, r.candidates, r.compile_failed, r.rejected, r.best_config.empty() ? "-" : r.best_config,
        us_text(r.best_us), tflops > 0 ? fmt::format("{:.1f}", tflops) : "-", us_text(r.baseline_us), speedup,
        r.recorded.empty() ? "-" : r.recorded, tail);
  }
}

void print_candidates(std::FILE* to, const TuneShape& shape, int64_t bucket, const PrunedSpace& space) {
  fmt::print(to, "{}{}\n", shape.label.empty() ? "" : shape.label + ": ",
             shape_text(print_spec(shape.spec), shape.m, bucket, shape.n, shape.k));
  std::string dropped;
  for (const auto& [rule, count] : space.dropped_by_rule) {
    dropped += fmt::format("{}{} {}", dropped.empty() ? "" : ", ", rule, count);
  }
  fmt::print(to, "  {} configs enumerated; dropped: {}; {} candidates\n", space.enumerated,
             dropped.empty() ? "none" : dropped, space.kept.size());
  if (space.kept.empty()) return;
  fmt::print(to, "  {:>3}  {:<30}  {:>5}  {:>4}  {:>4}  {:>6}  {:>6}  {:>6}  {:>5}  {:>8}\n", "#", "config",
             "smem", "regs", "acc", "blk/SM", "tiles", "waves", "last", "est us");
  for (size_t i = 0; i < space.kept.size(); ++i) {
    const PrunedCandidate& c = space.kept[i];
    const ConfigEstimate& e = c.estimate;
    fmt::print(to, "  {:>3}  {:<30}  {:>5}  {:>4}  {:>4}  {:>6}  {:>6}  {:>6.2f}  {:>4.0f}%  {:>8.1f}{}\n",
               i + 1, c.config.to_string(), kib(e.smem_bytes), e.registers, e.accumulators, e.blocks_per_sm,
               e.tiles, e.waves, 100 * e.last_wave_fill, e.est_us, c.is_default ? "  (heuristic)" : "");
  }
}

nlohmann::json candidates_json(const TuneShape& shape, int64_t bucket, const PrunedSpace& space) {
  nlohmann::json list = nlohmann::json::array();
  for (const PrunedCandidate& c : space.kept) {
    const ConfigEstimate& e = c.estimate;
    list.push_back({{"config", config_to_json(c.config)},
                    {"name", c.config.to_string()},
                    {"heuristic", c.is_default},
                    {"smem_bytes", e.smem_bytes},
                    {"registers_est", e.registers},
                    {"accumulators", e.accumulators},
                    {"blocks_per_sm", e.blocks_per_sm},
                    {"tiles", e.tiles},
                    {"waves", e.waves},
                    {"last_wave_fill", e.last_wave_fill},
                    {"est_us", e.est_us}});
  }
  return {{"label", shape.label},
          {"spec", print_spec(shape.spec)},
          {"m", shape.m},
          {"m_bucket", bucket},
          {"n", shape.n},
          {"k", shape.k},
          {"enumerated", space.enumerated},
          {"dropped_by_rule", space.dropped_by_rule},
          {"candidates", list}};
}

}  // namespace kiln::cli

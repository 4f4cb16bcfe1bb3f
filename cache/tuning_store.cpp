#include "cache/tuning_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "cache/cache_db.hpp"
#include "cache/sqlite_util.hpp"

namespace kiln {
namespace {

using nlohmann::json;
using sqlite::Stmt;

// BEGIN IMMEDIATE already waits kBusyTimeoutMs for the write lock; these retries cover a writer that
// holds it longer (a VACUUM of a large cache), as in KernelCache::put.
constexpr int kWriteAttempts = 4;

int64_t now_unix() { return static_cast<int64_t>(std::time(nullptr)); }

constexpr const char* kKeyWhere =
    "cc = ?1 AND sm_count = ?2 AND codegen = ?3 AND nvrtc_major = ?4 AND spec = ?5 AND n = ?6 AND k = ?7 AND "
    "experts = ?8";

void bind_key(Stmt& s, const TuningHardKey& key, const TuningProblem& p) {
  s.bind_int64(1, key.cc);
  s.bind_int64(2, key.sm_count);
  s.bind_int64(3, key.codegen_version);
  s.bind_int64(4, key.nvrtc_major);
  s.bind_text(5, p.spec);
  s.bind_int64(6, p.n);
  s.bind_int64(7, p.k);
  s.bind_int64(8, p.experts);
}

// Columns of a full row, in this order, for list() and read_layers().
constexpr const char* kRowColumns =
    "cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket, family, config, median_us, "
    "candidates, "
    "tuned, gpu_name, driver";

TuningRecord read_row(const Stmt& s) {
  TuningRecord r;
  r.device.key.cc = static_cast<int>(s.column_int64(0));
  r.device.key.sm_count = static_cast<int>(s.column_int64(1));
  r.device.key.codegen_version = static_cast<int>(s.column_int64(2));
  r.device.key.nvrtc_major = static_cast<int>(s.column_int64(3));
  r.problem.spec = s.column_text(4);
  r.problem.n = s.column_int64(5);
  r.problem.k = s.column_int64(6);
  r.problem.experts = static_cast<int>(s.column_int64(7));
  r.m_bucket = s.column_int64(8);
  r.family = s.column_text(9);
  r.config_json = s.column_text(10);
  r.median_us = s.column_double(11);
  r.candidates = static_cast<int>(s.column_int64(12));
  r.tuned_unix = s.column_int64(13);
  r.device.gpu_name = s.column_text(14);
  r.device.driver = s.column_text(15);
  return r;
}

// Runs body inside BEGIN IMMEDIATE ... COMMIT, rolling back on failure and retrying when another
// writer held the lock past the busy timeout.
Status write_transaction(sqlite3* db, const std::string& path, const std::function<Status()>& body) {
  for (int attempt = 1;; ++attempt) {
    Status s = sqlite::exec(db, path, "BEGIN IMMEDIATE");
    if (s.ok()) s = body();
    if (s.ok()) s = sqlite::exec(db, path, "COMMIT");
    if (s.ok()) return s;
    const int rc = sqlite3_extended_errcode(db);
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    if (!sqlite::is_busy(rc) || attempt == kWriteAttempts) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * attempt));
  }
}

// ---- JSON field readers: "origin: tunings[3].n: expected an integer, got "x"" ----

struct JsonReader {
  const json& j;
  std::string where;  // "h200.json: tunings[3]"

  Status error(const std::string& field, const std::string& what) const {
    return InvalidArgument(where + "." + field + ": " + what);
  }
  const json* find(const char* field) const {
    auto it = j.find(field);
    return it == j.end() ? nullptr : &*it;
  }
  Status integer(const char* field, int64_t* out) const {
    const json* v = find(field);
    if (v == nullptr) return error(field, "missing");
    if (!v->is_number_integer()) return error(field, "expected an integer, got " + v->dump());
    *out = v->get<int64_t>();
    return Status::Ok();
  }
  Status integer(const char* field, int* out) const {
    int64_t v = 0;
    KILN_RETURN_IF_ERROR(integer(field, &v));
    if (v < INT32_MIN || v > INT32_MAX) return error(field, std::to_string(v) + " is out of range");
    *out = static_cast<int>(v);
    return Status::Ok();
  }
  Status number(const char* field, double* out) const {
    const json* v = find(field);
    if (v == nullptr) return error(field, "missing");
    if (!v->is_number()) return error(field, "expected a number, got " + v->dump());
    *out = v->get<double>();
    return Status::Ok();
  }
  Status text(const char* field, std::string* out, bool optional = false) const {
    const json* v = find(field);
    if (v == nullptr) {
      if (optional) return Status::Ok();
      return error(field, "missing");
    }
    if (!v->is_string()) return error(field, "expected a string, got " + v->dump());
    *out = v->get<std::string>();
    return Status::Ok();
  }
  Status only(std::initializer_list<const char*> known) const {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const bool ok = std::any_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; });
      if (!ok) return error(it.key(), "unknown field");
    }
    return Status::Ok();
  }
};

StatusOr<TuningRecord> record_from_json(const json& j, const std::string& where) {
  if (!j.is_object())
    return InvalidArgument(where + ": expected a JSON object, got " + std::string(j.type_name()));
  JsonReader r{j, where};
  KILN_RETURN_IF_ERROR(r.only({"device", "spec", "n", "k", "experts", "m_bucket", "family", "config",
                               "median_us", "candidates", "tuned_unix"}));
  TuningRecord t;
  const json* dev = r.find("device");
  if (dev == nullptr) return r.error("device", "missing");
  if (!dev->is_object()) return r.error("device", "expected an object, got " + dev->dump());
  JsonReader d{*dev, where + ".device"};
  KILN_RETURN_IF_ERROR(d.only({"cc", "sm_count", "codegen_version", "nvrtc_major", "gpu_name", "driver"}));
  KILN_RETURN_IF_ERROR(d.integer("cc", &t.device.key.cc));
  KILN_RETURN_IF_ERROR(d.integer("sm_count", &t.device.key.sm_count));
  KILN_RETURN_IF_ERROR(d.integer("codegen_version", &t.device.key.codegen_version));
  KILN_RETURN_IF_ERROR(d.integer("nvrtc_major", &t.device.key.nvrtc_major));
  KILN_RETURN_IF_ERROR(d.text("gpu_name", &t.device.gpu_name, /*optional=*/true));
  KILN_RETURN_IF_ERROR(d.text("driver", &t.device.driver, /*optional=*/true));
  KILN_RETURN_IF_ERROR(r.text("spec", &t.problem.spec));
  KILN_RETURN_IF_ERROR(r.integer("n", &t.problem.n));
  KILN_RETURN_IF_ERROR(r.integer("k", &t.problem.k));
  KILN_RETURN_IF_ERROR(r.integer("experts", &t.problem.experts));
  KILN_RETURN_IF_ERROR(r.integer("m_bucket", &t.m_bucket));
  KILN_RETURN_IF_ERROR(r.text("family", &t.family));
  const json* cfg = r.find("config");
  if (cfg == nullptr) return r.error("config", "missing");
  if (!cfg->is_object()) return r.error("config", "expected an object, got " + cfg->dump());
  t.config_json = cfg->dump();  // nlohmann sorts object keys: the canonical form
  KILN_RETURN_IF_ERROR(r.number("median_us", &t.median_us));
  KILN_RETURN_IF_ERROR(r.integer("candidates", &t.candidates));
  KILN_RETURN_IF_ERROR(r.integer("tuned_unix", &t.tuned_unix));
  Status v = validate_tuning_record(t);
  if (!v.ok()) return v.with_context(where);
  return t;
}

// The faster of two records for one key (the UPSERT rule, applied to in-memory layers).
void keep_faster(std::map<int64_t, TuningRecord>& by_bucket, const TuningRecord& r) {
  auto [it, inserted] = by_bucket.emplace(r.m_bucket, r);
  if (!inserted && r.median_us < it->second.median_us) it->second = r;
}

}  // namespace

// ---------------------------------------------------------------- buckets and keys

int64_t tuning_m_bucket(int64_t m) {
  for (int64_t b : kTuningMBuckets) {
    if (m <= b) return b;
  }
  return kTuningMBuckets.back();
}

bool is_tuning_m_bucket(int64_t m) {
  return std::find(kTuningMBuckets.begin(), kTuningMBuckets.end(), m) != kTuningMBuckets.end();
}

std::string TuningHardKey::to_string() const {
  return "cc" + std::to_string(cc) + "/sm" + std::to_string(sm_count) + "/codegen" +
         std::to_string(codegen_version) + "/nvrtc" + std::to_string(nvrtc_major);
}

const char* tuning_source_name(TuningSource s) {
  switch (s) {
    case TuningSource::kMemory: return "memory";
    case TuningSource::kUserDb: return "user database";
    case TuningSource::kPretuned: return "pre-tuned";
  }
  return "unknown";
}

Status validate_tuning_record(const TuningRecord& r) {
  const TuningHardKey& k = r.device.key;
  if (k.cc < 10 || k.cc > 1000)
    return InvalidArgument("tuning: cc=" + std::to_string(k.cc) +
                           " is not a compute capability (90 for sm_90)");
  if (k.sm_count < 1)
    return InvalidArgument("tuning: sm_count=" + std::to_string(k.sm_count) + " must be >= 1");
  if (k.codegen_version < 1)
    return InvalidArgument("tuning: codegen_version=" + std::to_string(k.codegen_version) + " must be >= 1");
  if (k.nvrtc_major < 1)
    return InvalidArgument("tuning: nvrtc_major=" + std::to_string(k.nvrtc_major) + " must be >= 1");
  if (r.problem.spec.empty()) return InvalidArgument("tuning: the spec is empty");
  if (r.problem.n < 1 || r.problem.k < 1)
    return InvalidArgument("tuning: n=" + std::to_string(r.problem.n) + " k=" + std::to_string(r.problem.k) +
                           "; both must be >= 1");
  if (r.problem.experts < 0)
    return InvalidArgument("tuning: experts=" + std::to_string(r.problem.experts) + " must be >= 0");
  if (!is_tuning_m_bucket(r.m_bucket))
    return InvalidArgument("tuning: m_bucket=" + std::to_string(r.m_bucket) +
                           " is not on the M grid (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, ..., 8192)");
  if (r.family.empty()) return InvalidArgument("tuning: the family is empty");
  const json cfg = json::parse(r.config_json, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object())
    return InvalidArgument("tuning: config '" + r.config_json + "' is not a JSON object");
  if (!std::isfinite(r.median_us) || r.median_us <= 0)
    return InvalidArgument("tuning: median_us=" + std::to_string(r.median_us) + " must be a positive time");
  if (r.candidates < 0)
    return InvalidArgument("tuning: candidates=" + std::to_string(r.candidates) + " must be >= 0");
  return Status::Ok();
}

// ---------------------------------------------------------------- JSON

json tunings_to_json(const std::vector<TuningRecord>& records) {
  json list = json::array();
  for (const TuningRecord& r : records) {
    json cfg = json::parse(r.config_json, nullptr, false);
    list.push_back({{"device",
                     {{"cc", r.device.key.cc},
                      {"sm_count", r.device.key.sm_count},
                      {"codegen_version", r.device.key.codegen_version},
                      {"nvrtc_major", r.device.key.nvrtc_major},
                      {"gpu_name", r.device.gpu_name},
                      {"driver", r.device.driver}}},
                    {"spec", r.problem.spec},
                    {"n", r.problem.n},
                    {"k", r.problem.k},
                    {"experts", r.problem.experts},
                    {"m_bucket", r.m_bucket},
                    {"family", r.family},
                    {"config", cfg.is_discarded() ? json(r.config_json) : cfg},
                    {"median_us", r.median_us},
                    {"candidates", r.candidates},
                    {"tuned_unix", r.tuned_unix}});
  }
  return {{"format", "kiln-tunings"}, {"version", 1}, {"tunings", list}};
}

StatusOr<std::vector<TuningRecord>> tunings_from_json(const json& j, const std::string& origin) {
  const json* list = &j;
  if (j.is_object()) {
    auto fmt = j.find("format");
    if (fmt == j.end() || *fmt != "kiln-tunings")
      return InvalidArgument(origin + ": not a kiln tunings file (expected \"format\": \"kiln-tunings\")");
    auto ver = j.find("version");
    if (ver == j.end() || !ver->is_number_integer() || ver->get<int64_t>() != 1)
      return InvalidArgument(origin + ": unsupported tunings file version " +
                             (ver == j.end() ? "(missing)" : ver->dump()) + "; this kiln reads version 1");
    auto t = j.find("tunings");
    if (t == j.end()) return InvalidArgument(origin + ": missing \"tunings\" array");
    list = &*t;
  }
  if (!list->is_array())
    return InvalidArgument(origin + ": \"tunings\" must be an array, got " + std::string(list->type_name()));
  std::vector<TuningRecord> out;
  out.reserve(list->size());
  for (size_t i = 0; i < list->size(); ++i) {
    KILN_ASSIGN_OR_RETURN(TuningRecord r,
                          record_from_json((*list)[i], origin + ": tunings[" + std::to_string(i) + "]"));
    out.push_back(std::move(r));
  }
  return out;
}

StatusOr<std::vector<TuningRecord>> tunings_from_json_text(std::string_view text, const std::string& origin) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(origin + ": not valid JSON");
  return tunings_from_json(j, origin);
}

StatusOr<std::vector<TuningRecord>> builtin_pretuned_records() {
  static const StatusOr<std::vector<TuningRecord>> kRecords = []() -> StatusOr<std::vector<TuningRecord>> {
    std::vector<TuningRecord> all;
    for (const PretunedSource& src : builtin_pretuned_sources()) {
      KILN_ASSIGN_OR_RETURN(std::vector<TuningRecord> recs,
                            tunings_from_json_text(src.json, std::string("tuner/pretuned/") + src.name));
      all.insert(all.end(), recs.begin(), recs.end());
    }
    return all;
  }();
  return kRecords;
}

// ---------------------------------------------------------------- TuningStore

TuningStore::TuningStore(sqlite3* db, std::string path, std::vector<TuningRecord> pretuned)
    : db_(db), path_(std::move(path)) {
  for (const TuningRecord& r : pretuned) keep_faster(pretuned_[{r.device.key, r.problem}], r);
}

TuningStore::~TuningStore() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

StatusOr<std::unique_ptr<TuningStore>> TuningStore::open(Options options) {
  for (const TuningRecord& r : options.pretuned) {
    KILN_RETURN_IF_ERROR(validate_tuning_record(r).with_context("TuningStore::open: a pre-tuned record"));
  }
  sqlite3* db = nullptr;
  std::string path;
  if (!options.dir.empty()) {
    KILN_RETURN_IF_ERROR(ensure_private_dir(options.dir));
    path = options.dir;
    if (path.back() != '/') path += '/';
    path += "kiln.db";
    KILN_ASSIGN_OR_RETURN(db, open_cache_db(path));
  }
  return std::unique_ptr<TuningStore>(new TuningStore(db, std::move(path), std::move(options.pretuned)));
}

StatusOr<TuningStore::Answers> TuningStore::read_layers(const ProblemKey& pk) {
  const auto& [key, problem] = pk;
  std::map<int64_t, TuningRecord> user;
  if (db_ != nullptr) {
    KILN_ASSIGN_OR_RETURN(
        Stmt s,
        Stmt::prepare(db_, path_, std::string("SELECT ") + kRowColumns + " FROM tunings WHERE " + kKeyWhere));
    bind_key(s, key, problem);
    while (true) {
      KILN_ASSIGN_OR_RETURN(bool row, s.step());
      if (!row) break;
      TuningRecord r = read_row(s);
      // A row that the writer would have refused (a hand-edited file) is not an answer.
      if (validate_tuning_record(r).ok()) keep_faster(user, r);
    }
  }
  Answers answers;
  auto pre = pretuned_.find(pk);
  for (size_t b = 0; b < kTuningMBuckets.size(); ++b) {
    const int64_t bucket = kTuningMBuckets[b];
    if (auto u = user.find(bucket); u != user.end()) {
      answers[b] = TuningHit{u->second, TuningSource::kUserDb, false};
    } else if (pre != pretuned_.end()) {
      if (auto p = pre->second.find(bucket); p != pre->second.end())
        answers[b] = TuningHit{p->second, TuningSource::kPretuned, false};
    }
  }
  return answers;
}

StatusOr<std::optional<TuningHit>> TuningStore::lookup(const TuningHardKey& key, const TuningProblem& problem,
                                                       int64_t m) {
  const int64_t bucket = tuning_m_bucket(m);
  const size_t b = static_cast<size_t>(std::find(kTuningMBuckets.begin(), kTuningMBuckets.end(), bucket) -
                                       kTuningMBuckets.begin());
  const ProblemKey pk{key, problem};
  std::lock_guard<std::mutex> lock(mu_);
  if (auto mem = memory_.find(pk); mem != memory_.end()) {
    if (auto r = mem->second.find(bucket); r != mem->second.end())
      return std::optional<TuningHit>(TuningHit{r->second, TuningSource::kMemory, true});
  }
  auto it = memo_.find(pk);
  if (it != memo_.end()) {
    std::optional<TuningHit> hit = it->second[b];
    if (hit) hit->memoized = true;
    return hit;
  }
  KILN_ASSIGN_OR_RETURN(Answers answers, read_layers(pk));
  std::optional<TuningHit> hit = answers[b];
  memo_.emplace(pk, std::move(answers));
  return hit;
}

StatusOr<bool> TuningStore::record(const TuningRecord& in) { return upsert(in, /*keep_faster=*/true); }

StatusOr<bool> TuningStore::replace(const TuningRecord& in) { return upsert(in, /*keep_faster=*/false); }

StatusOr<bool> TuningStore::upsert(const TuningRecord& in, bool keep_faster) {
  KILN_RETURN_IF_ERROR(validate_tuning_record(in).with_context("TuningStore::record"));
  TuningRecord r = in;
  if (r.tuned_unix <= 0) r.tuned_unix = now_unix();
  json cfg = json::parse(r.config_json, nullptr, false);
  r.config_json = cfg.dump();  // canonical: keys sorted
  const ProblemKey pk{r.device.key, r.problem};
  std::lock_guard<std::mutex> lock(mu_);
  if (db_ == nullptr) {
    auto& mem = memory_[pk];
    auto it = mem.find(r.m_bucket);
    if (keep_faster && it != mem.end() && it->second.median_us <= r.median_us) return false;
    mem[r.m_bucket] = r;
    return true;
  }
  bool stored = false;
  Status s = write_transaction(db_, path_, [&]() -> Status {
    KILN_ASSIGN_OR_RETURN(
        Stmt st, Stmt::prepare(
                     db_, path_,
                     "INSERT INTO tunings(cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket, "
                     "family, config, median_us, candidates, tuned, gpu_name, driver) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) "
                     "ON CONFLICT(cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket) "
                     "DO UPDATE SET family = excluded.family, config = excluded.config, "
                     "median_us = excluded.median_us, candidates = excluded.candidates, "
                     "tuned = excluded.tuned, gpu_name = excluded.gpu_name, driver = excluded.driver "
                     "WHERE ?17 = 0 OR excluded.median_us < tunings.median_us"));
    bind_key(st, r.device.key, r.problem);
    st.bind_int64(9, r.m_bucket);
    st.bind_text(10, r.family);
    st.bind_text(11, r.config_json);
    st.bind_double(12, r.median_us);
    st.bind_int64(13, r.candidates);
    st.bind_int64(14, r.tuned_unix);
    st.bind_text(15, r.device.gpu_name);
    st.bind_text(16, r.device.driver);
    st.bind_int64(17, keep_faster ? 1 : 0);
    KILN_RETURN_IF_ERROR(st.step().status());
    stored = sqlite3_changes(db_) > 0;  // 0: the WHERE of DO UPDATE kept a faster row
    return Status::Ok();
  });
  KILN_RETURN_IF_ERROR(s);
  // The next look-up of this problem reads SQLite again (one query), so it sees the winner, whoever
  // wrote it. Not the run path: plans look up once, at plan time.
  memo_.erase(pk);
  return stored;
}

Status TuningStore::remember(const TuningRecord& in) {
  KILN_RETURN_IF_ERROR(validate_tuning_record(in).with_context("TuningStore::remember"));
  TuningRecord r = in;
  r.config_json = json::parse(r.config_json, nullptr, false).dump();
  std::lock_guard<std::mutex> lock(mu_);
  memory_[{r.device.key, r.problem}][r.m_bucket] = r;
  return Status::Ok();
}

void TuningStore::forget_memory() {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.clear();
  memo_.clear();
}

Status TuningStore::record_untuned(const TuningDevice& device, const TuningProblem& problem,
                                   int64_t m_bucket) {
  if (m_bucket != 0 && !is_tuning_m_bucket(m_bucket))
    return InvalidArgument("record_untuned: m_bucket=" + std::to_string(m_bucket) +
                           " is not on the M grid (or 0)");
  if (db_ == nullptr) return Status::Ok();  // nowhere to keep it: the cache is disabled
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = now_unix();
  return write_transaction(db_, path_, [&]() -> Status {
    KILN_ASSIGN_OR_RETURN(
        Stmt st, Stmt::prepare(
                     db_, path_,
                     "INSERT INTO untuned(cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket, "
                     "gpu_name, driver, seen, first_seen, last_seen) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 1, ?12, ?12) "
                     "ON CONFLICT(cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket) "
                     "DO UPDATE SET seen = seen + 1, last_seen = excluded.last_seen, "
                     "gpu_name = excluded.gpu_name, driver = excluded.driver"));
    bind_key(st, device.key, problem);
    st.bind_int64(9, m_bucket);
    st.bind_text(10, device.gpu_name);
    st.bind_text(11, device.driver);
    st.bind_int64(12, now);
    return st.step().status();
  });
}

StatusOr<std::vector<UntunedShape>> TuningStore::untuned() {
  std::vector<UntunedShape> out;
  if (db_ == nullptr) return out;
  std::lock_guard<std::mutex> lock(mu_);
  KILN_ASSIGN_OR_RETURN(
      Stmt s,
      Stmt::prepare(db_, path_,
                    "SELECT cc, sm_count, codegen, nvrtc_major, spec, n, k, experts, m_bucket, gpu_name, "
                    "driver, seen, first_seen, last_seen FROM untuned "
                    "ORDER BY cc, sm_count, spec, n, k, experts, m_bucket"));
  while (true) {
    KILN_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    UntunedShape u;
    u.device.key = {static_cast<int>(s.column_int64(0)), static_cast<int>(s.column_int64(1)),
                    static_cast<int>(s.column_int64(2)), static_cast<int>(s.column_int64(3))};
    u.problem.spec = s.column_text(4);
    u.problem.n = s.column_int64(5);
    u.problem.k = s.column_int64(6);
    u.problem.experts = static_cast<int>(s.column_int64(7));
    u.m_bucket = s.column_int64(8);
    u.device.gpu_name = s.column_text(9);
    u.device.driver = s.column_text(10);
    u.seen = s.column_int64(11);
    u.first_seen_unix = s.column_int64(12);
    u.last_seen_unix = s.column_int64(13);
    out.push_back(std::move(u));
  }
  return out;
}

StatusOr<std::vector<TuningRecord>> TuningStore::list() {
  std::vector<TuningRecord> out;
  if (db_ == nullptr) return out;
  std::lock_guard<std::mutex> lock(mu_);
  KILN_ASSIGN_OR_RETURN(Stmt s, Stmt::prepare(db_, path_,
                                              std::string("SELECT ") + kRowColumns +
                                                  " FROM tunings ORDER BY cc, sm_count, codegen, "
                                                  "nvrtc_major, spec, n, k, experts, m_bucket"));
  while (true) {
    KILN_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    TuningRecord r = read_row(s);
    if (validate_tuning_record(r).ok()) out.push_back(std::move(r));
  }
  return out;
}

Status TuningStore::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.clear();
  memo_.clear();
  if (db_ == nullptr) return Status::Ok();
  return write_transaction(
      db_, path_, [&]() { return sqlite::exec(db_, path_, "DELETE FROM tunings; DELETE FROM untuned;"); });
}

}  // namespace kiln

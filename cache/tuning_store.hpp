// cache/tuning_store.hpp — tuning winners: which tile config is fastest for a problem on a GPU.
//
// A tuning is keyed by
//   - the hard key: compute capability, SM count, kiln codegen version, NVRTC major. All four must
//     match for a row to be used (a different SM count changes the wave count; a different codegen
//     or compiler changes the kernels). GPU name and driver are soft fields recorded beside it, so a
//     shipped pre-tuned table still applies under a user's different driver;
//   - the problem: canonical spec text with sizes stripped (experts=0), N, K, experts;
//   - the M bucket: a value of the fixed grid kTuningMBuckets (the runtime's Plan buckets).
// and holds the explicit config (a self-describing JSON object, never an index into a space that
// may change), its family, the median time in microseconds, how many candidates were tried, and
// when. The config stays opaque JSON here: cache/ does not know TileConfig; the runtime parses and
// re-checks it (runtime/tuned_configs.cpp), so a row that no longer passes check_config is ignored.
//
// Look-up order (lookup()): in-memory map -> the user database (table `tunings` of kiln.db) ->
// the read-only pre-tuned tables (tuner/pretuned/*.json, embedded by the build) -> nothing (the
// caller's heuristic). The first look-up of a problem reads every bucket of it from SQLite once and
// memoizes hits and misses, so later look-ups (and everything on the run path) never touch SQLite.
// Writes (record()) are one BEGIN IMMEDIATE UPSERT that keeps the faster result.
//
// Invariants: a TuningRecord that passed validate_tuning_record() is what the database holds; rows
// that fail it (a hand-edited or foreign file) are skipped on read, never returned. Thread-safe.
//
//   KILN_ASSIGN_OR_RETURN(auto store, kiln::TuningStore::open({.dir = cache_dir}));
//   KILN_ASSIGN_OR_RETURN(std::optional<TuningHit> hit, store->lookup(device.key, problem, m));
//   if (hit) cfg_json = hit->record.config_json;       // else: default_config()
//   KILN_ASSIGN_OR_RETURN(bool stored, store->record(winner));  // false: an equal or faster one exists
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kiln/status.hpp"

struct sqlite3;

namespace kiln {

// The fixed, irregular M grid (== kMBuckets in runtime/runtime_impl.hpp; static_assert'ed there).
inline constexpr std::array<int64_t, 17> kTuningMBuckets = {1,  2,   4,   8,   16,   24,   32,   48,  64,
                                                            96, 128, 256, 512, 1024, 2048, 4096, 8192};
// The bucket a row count belongs to: the nearest bucket at or above m (1 for m <= 1, the last
// bucket for m above it). The same rule Plan::run uses to pick its kernel.
int64_t tuning_m_bucket(int64_t m);
bool is_tuning_m_bucket(int64_t m);

struct TuningHardKey {
  int cc = 0;               // compute capability * 10 + minor: 90 for sm_90
  int sm_count = 0;         // multiprocessors
  int codegen_version = 0;  // kCodegenVersion (cache/cache_key.hpp)
  int nvrtc_major = 0;      // 13 for NVRTC 13.0
  auto operator<=>(const TuningHardKey&) const = default;
  std::string to_string() const;  // "cc90/sm132/codegen1/nvrtc13"
};

struct TuningDevice {
  TuningHardKey key;
  std::string gpu_name;  // soft: "NVIDIA H200"
  std::string driver;    // soft: "13.0"
};

struct TuningProblem {
  std::string spec;  // canonical spec text with sizes stripped (runtime: tuning_problem())
  int64_t n = 0;
  int64_t k = 0;
  int experts = 0;  // 0 for dense problems
  auto operator<=>(const TuningProblem&) const = default;
};

struct TuningRecord {
  TuningDevice device;
  TuningProblem problem;
  int64_t m_bucket = 0;
  std::string family;       // "sm80_gemm"
  std::string config_json;  // canonical JSON object ({"block_m":128,...}, keys sorted)
  double median_us = 0;     // of the winner, measured at M = m_bucket
  int candidates = 0;       // how many configs the search compiled or timed
  int64_t tuned_unix = 0;   // when
};
// INVALID_ARGUMENT naming the first bad field (m_bucket off the grid, non-positive time, config
// not a JSON object, ...).
Status validate_tuning_record(const TuningRecord& r);

enum class TuningSource { kMemory, kUserDb, kPretuned };
const char* tuning_source_name(TuningSource s);  // "memory", "user database", "pre-tuned"

struct TuningHit {
  TuningRecord record;
  TuningSource source;    // the layer the record came from (kMemory: set with remember())
  bool memoized = false;  // answered from the in-memory map without reading its layer again
};

// A problem that ran on the heuristic config (KILN_RECORD_UNTUNED=1), for later offline tuning.
struct UntunedShape {
  TuningDevice device;
  TuningProblem problem;
  int64_t m_bucket = 0;  // 0: the plan had no M hint (tune the default M list)
  int64_t seen = 0;
  int64_t first_seen_unix = 0, last_seen_unix = 0;
};

// ---- JSON: `kiln cache export/import` and the pre-tuned files (one format) ----
// {"format": "kiln-tunings", "version": 1, "tunings": [record, ...]} where a record is
// {"device": {"cc", "sm_count", "codegen_version", "nvrtc_major", "gpu_name", "driver"},
//  "spec", "n", "k", "experts", "m_bucket", "family", "config": {...}, "median_us", "candidates",
//  "tuned_unix"}. Other top-level fields ("about", "generated_by") are allowed and ignored.
nlohmann::json tunings_to_json(const std::vector<TuningRecord>& records);
// origin names the file in messages ("h200.json: tunings[3].m_bucket=100 is not on the M grid").
StatusOr<std::vector<TuningRecord>> tunings_from_json(const nlohmann::json& j, const std::string& origin);
StatusOr<std::vector<TuningRecord>> tunings_from_json_text(std::string_view text, const std::string& origin);

// The pre-tuned tables compiled into this binary (tuner/pretuned/*.json; tuner/CMakeLists.txt).
struct PretunedSource {
  const char* name;  // "h200.json"
  const char* json;
};
const std::vector<PretunedSource>& builtin_pretuned_sources();
// Every record of every built-in table (parsed once; a malformed table is an error here and fails
// the build's test tier, never a crash at look-up).
StatusOr<std::vector<TuningRecord>> builtin_pretuned_records();

class TuningStore {
 public:
  struct Options {
    std::string dir;                     // kiln.db's directory; empty: no user database
    std::vector<TuningRecord> pretuned;  // the read-only layer (e.g. builtin_pretuned_records())
  };
  static StatusOr<std::unique_ptr<TuningStore>> open(Options options);
  ~TuningStore();

  // The layered look-up for m's bucket. nullopt: no layer has it (use the heuristic). A failing
  // read of the user database is CacheError; callers on the planning path treat it as a miss.
  StatusOr<std::optional<TuningHit>> lookup(const TuningHardKey& key, const TuningProblem& problem,
                                            int64_t m);
  // UPSERT into the user database keeping the faster result, and into memory. true when r is now
  // the stored result (new, or faster than what was there). Without a user database: memory only.
  StatusOr<bool> record(const TuningRecord& r);
  // The same UPSERT without the median comparison: r replaces the row of its key whatever its median (the
  // tuner's recheck measured r faster than that row's config in the same run, which a median stored by
  // another run or timing method cannot be compared with).
  StatusOr<bool> replace(const TuningRecord& r);
  // Memory only, overriding every layer for this process (an online tuning result, an API choice).
  Status remember(const TuningRecord& r);
  // Drops the memoized look-ups (the next look-up reads SQLite again).
  void forget_memory();

  Status record_untuned(const TuningDevice& device, const TuningProblem& problem, int64_t m_bucket);
  StatusOr<std::vector<UntunedShape>> untuned();
  // Every valid row of the user database (export), ordered by key.
  StatusOr<std::vector<TuningRecord>> list();
  // Removes every tuning (and untuned row) of the user database; the kernels table is untouched.
  Status clear();

  bool has_user_db() const { return db_ != nullptr; }
  const std::string& path() const { return path_; }  // kiln.db, or empty

 private:
  StatusOr<bool> upsert(const TuningRecord& r, bool keep_faster);
  using ProblemKey = std::tuple<TuningHardKey, TuningProblem>;
  // One answer per bucket of kTuningMBuckets: the user database's row, else the pre-tuned one,
  // else nothing (a memoized miss). Filled for every bucket by the problem's first look-up.
  using Answers = std::array<std::optional<TuningHit>, kTuningMBuckets.size()>;

  TuningStore(sqlite3* db, std::string path, std::vector<TuningRecord> pretuned);
  StatusOr<Answers> read_layers(const ProblemKey& pk);

  sqlite3* db_;
  std::string path_;
  std::map<ProblemKey, std::map<int64_t, TuningRecord>> pretuned_;  // by bucket
  std::mutex mu_;
  std::map<ProblemKey, std::map<int64_t, TuningRecord>> memory_;  // remember(): wins over all
  std::map<ProblemKey, Answers> memo_;
};

}  // namespace kiln

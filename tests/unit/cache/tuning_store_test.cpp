// TuningStore on real SQLite files: the M grid, UPSERT keeping the faster result, the layered
// look-up (memory > user database > pre-tuned > nothing), memoization, schema migration from older
// versions, rebuilding after corruption, the untuned table and the JSON export/import format.
// No CUDA: configs are opaque JSON here.
#include "cache/tuning_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cache/kernel_cache.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

TuningDevice h200() {
  TuningDevice d;
  d.key = {90, 132, 2, 13};
  d.gpu_name = "NVIDIA H200";
  d.driver = "13.0";
  return d;
}

TuningProblem problem(int64_t n = 7168, int64_t k = 7168) { return {"gemm a=bf16 b=bf16 out=bf16", n, k, 0}; }

TuningRecord rec(int64_t bucket, double us, int block_m = 128, int64_t n = 7168) {
  TuningRecord r;
  r.device = h200();
  r.problem = problem(n);
  r.m_bucket = bucket;
  r.family = "sm80_gemm";
  r.config_json = nlohmann::json{{"block_m", block_m}, {"block_n", 128}, {"block_k", 32}, {"stages", 4},
                                 {"warps_m", 2},       {"warps_n", 4},   {"group_m", 8}}
                      .dump();
  r.median_us = us;
  r.candidates = 12;
  r.tuned_unix = 1700000000;
  return r;
}

int block_m_of(const TuningRecord& r) {
  return nlohmann::json::parse(r.config_json).at("block_m").get<int>();
}

class TuningStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kiln-tuning-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<TuningStore> open(std::vector<TuningRecord> pretuned = {}, bool with_db = true) {
    TuningStore::Options o;
    if (with_db) o.dir = dir_;
    o.pretuned = std::move(pretuned);
    auto s = TuningStore::open(o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::string db_path() const { return dir_ + "/kiln.db"; }
  void raw_exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << sql << ": " << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  std::string raw_text(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    std::string v = "<none>";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      v = t ? reinterpret_cast<const char*>(t) : "<null>";
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
  }
  std::optional<TuningHit> lookup(TuningStore& s, int64_t m, const TuningProblem& p = problem()) {
    auto hit = s.lookup(h200().key, p, m);
    EXPECT_TRUE(hit.ok()) << hit.status().to_string();
    return hit.ok() ? *hit : std::nullopt;
  }
  std::string dir_;
};

// ---- the M grid ----

TEST(TuningBucketTest, NearestBucketAtOrAboveM) {
  const std::pair<int64_t, int64_t> cases[] = {
      {-5, 1},      {0, 1},       {1, 1},       {2, 2},         {3, 4},      {5, 8},
      {16, 16},     {17, 24},     {24, 24},     {25, 32},       {33, 48},    {49, 64},
      {65, 96},     {97, 128},    {129, 256},   {257, 512},     {513, 1024}, {4096, 4096},
      {4097, 8192}, {8192, 8192}, {8193, 8192}, {1 << 20, 8192}};
  for (auto [m, bucket] : cases) EXPECT_EQ(tuning_m_bucket(m), bucket) << "m=" << m;
}

TEST(TuningBucketTest, EveryBucketMapsToItselfAndOnlyGridValuesAreBuckets) {
  for (int64_t b : kTuningMBuckets) {
    EXPECT_EQ(tuning_m_bucket(b), b);
    EXPECT_TRUE(is_tuning_m_bucket(b));
  }
  for (int64_t m : {0, 3, 100, 192, 8191, 16384}) EXPECT_FALSE(is_tuning_m_bucket(m)) << m;
}

TEST_F(TuningStoreTest, LookUpUsesTheBucketOfM) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->record(rec(128, 50)).ok());
  for (int64_t m : {97, 100, 128}) {
    auto hit = lookup(*s, m);
    ASSERT_TRUE(hit.has_value()) << m;
    EXPECT_EQ(hit->record.m_bucket, 128);
  }
  EXPECT_FALSE(lookup(*s, 96).has_value());   // bucket 96
  EXPECT_FALSE(lookup(*s, 129).has_value());  // bucket 256
}

// ---- UPSERT ----

TEST_F(TuningStoreTest, UpsertKeepsTheFasterResult) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  auto first = s->record(rec(4096, 100, 64));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(*first);
  auto faster = s->record(rec(4096, 80, 128));
  ASSERT_TRUE(faster.ok());
  EXPECT_TRUE(*faster);
  auto slower = s->record(rec(4096, 90, 256));
  ASSERT_TRUE(slower.ok());
  EXPECT_FALSE(*slower);
  auto equal = s->record(rec(4096, 80, 32));
  ASSERT_TRUE(equal.ok());
  EXPECT_FALSE(*equal);  // a tie keeps what is there

  auto hit = lookup(*s, 4096);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(block_m_of(hit->record), 128);
  EXPECT_DOUBLE_EQ(hit->record.median_us, 80);
  EXPECT_EQ(raw_text("SELECT count(*) FROM tunings"), "1");
  EXPECT_EQ(raw_text("SELECT median_us FROM tunings"), "80.0");
}

// replace(): the tuner's recheck measured the new config faster than the row's in the same run, so the row is
// replaced even when its stored median (another run's, or another timing method's) is lower; the lookup sees it.
TEST_F(TuningStoreTest, ReplaceIgnoresTheStoredMedian) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->record(rec(4096, 80, 128)).ok());
  auto kept = s->record(rec(4096, 95, 64));
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(*kept);
  auto replaced = s->replace(rec(4096, 95, 64));
  ASSERT_TRUE(replaced.ok()) << replaced.status().to_string();
  EXPECT_TRUE(*replaced);
  auto hit = lookup(*s, 4096);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(block_m_of(hit->record), 64);
  EXPECT_EQ(raw_text("SELECT median_us FROM tunings"), "95.0");
  EXPECT_EQ(raw_text("SELECT count(*) FROM tunings"), "1");
  auto memory_only = open({}, /*with_db=*/false);
  ASSERT_NE(memory_only, nullptr);
  ASSERT_TRUE(memory_only->record(rec(64, 10, 64)).ok());
  auto mem = memory_only->replace(rec(64, 30, 32));
  ASSERT_TRUE(mem.ok());
  EXPECT_TRUE(*mem);
}

TEST_F(TuningStoreTest, UpsertThroughAnotherConnectionIsSeenAfterRecord) {
  auto a = open();
  auto b = open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->record(rec(16, 30, 64)).ok());
  ASSERT_TRUE(b->record(rec(16, 20, 32)).ok());
  // a memoized nothing for this problem yet: it reads the winner of both writers.
  auto hit = lookup(*a, 16);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(block_m_of(hit->record), 32);
}

TEST_F(TuningStoreTest, RejectsInvalidRecords) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  TuningRecord off_grid = rec(100, 10);
  EXPECT_EQ(s->record(off_grid).status().code(), StatusCode::kInvalidArgument);
  TuningRecord no_time = rec(128, 0);
  EXPECT_EQ(s->record(no_time).status().code(), StatusCode::kInvalidArgument);
  TuningRecord inf_time = rec(128, INFINITY);
  EXPECT_EQ(s->record(inf_time).status().code(), StatusCode::kInvalidArgument);
  TuningRecord bad_cfg = rec(128, 10);
  bad_cfg.config_json = "3";
  EXPECT_EQ(s->record(bad_cfg).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(raw_text("SELECT count(*) FROM tunings"), "0");
}

// ---- the layered look-up ----

TEST_F(TuningStoreTest, NothingAnywhereIsAMiss) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(lookup(*s, 64).has_value());
}

TEST_F(TuningStoreTest, PretunedAnswersWhenTheUserDatabaseHasNothing) {
  auto s = open({rec(64, 40, 64)});
  ASSERT_NE(s, nullptr);
  auto hit = lookup(*s, 64);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->source, TuningSource::kPretuned);
  EXPECT_EQ(block_m_of(hit->record), 64);
}

TEST_F(TuningStoreTest, UserDatabaseWinsOverPretunedEvenWhenSlower) {
  // The user's own measurement on this machine beats a table measured elsewhere.
  auto s = open({rec(64, 10, 64)});
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->record(rec(64, 40, 32)).ok());
  auto hit = lookup(*s, 64);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->source, TuningSource::kUserDb);
  EXPECT_EQ(block_m_of(hit->record), 32);
}

TEST_F(TuningStoreTest, MemoryWinsOverEveryLayer) {
  auto s = open({rec(64, 10, 64)});
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->record(rec(64, 40, 32)).ok());
  ASSERT_TRUE(s->remember(rec(64, 99, 16)).ok());
  auto hit = lookup(*s, 64);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->source, TuningSource::kMemory);
  EXPECT_EQ(block_m_of(hit->record), 16);
  EXPECT_EQ(raw_text("SELECT count(*) FROM tunings"), "1");  // remember() never writes SQLite
}

TEST_F(TuningStoreTest, HardKeyMustMatchSoftFieldsNeedNot) {
  TuningRecord pre = rec(64, 10, 64);
  pre.device.gpu_name = "NVIDIA H200 NVL";
  pre.device.driver = "12.9";
  auto s = open({pre});
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(lookup(*s, 64).has_value());  // another driver, same hard key: used
  for (TuningHardKey other : {TuningHardKey{90, 114, 2, 13}, TuningHardKey{89, 132, 2, 13},
                              TuningHardKey{90, 132, 3, 13}, TuningHardKey{90, 132, 2, 12}}) {
    auto hit = s->lookup(other, problem(), 64);
    ASSERT_TRUE(hit.ok());
    EXPECT_FALSE(hit->has_value()) << other.to_string();
  }
  auto other_shape = s->lookup(h200().key, problem(7168, 2048), 64);
  ASSERT_TRUE(other_shape.ok());
  EXPECT_FALSE(other_shape->has_value());
}

TEST_F(TuningStoreTest, WithoutUserDatabaseRecordGoesToMemory) {
  auto s = open({rec(64, 10, 64)}, /*with_db=*/false);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->has_user_db());
  auto first = s->record(rec(64, 30, 32));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);
  auto hit = lookup(*s, 64);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->source, TuningSource::kMemory);
  EXPECT_FALSE(fs::exists(db_path()));
}

TEST_F(TuningStoreTest, LookUpsAreMemoizedUntilForgotten) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(lookup(*s, 64).has_value());  // reads SQLite once for every bucket of the problem
  raw_exec(
      "INSERT INTO tunings VALUES(90, 132, 2, 13, 'gemm a=bf16 b=bf16 out=bf16', 7168, 7168, 0, 64, "
      "'sm80_gemm', '{\"block_m\":64}', 5.0, 3, 1700000000, '', '')");
  auto again = lookup(*s, 64);  // answered from memory: the hot path never touches SQLite again
  EXPECT_FALSE(again.has_value());
  auto other_bucket = s->lookup(h200().key, problem(), 128);
  ASSERT_TRUE(other_bucket.ok());
  EXPECT_FALSE(other_bucket->has_value());
  s->forget_memory();
  auto fresh = lookup(*s, 64);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->source, TuningSource::kUserDb);
  EXPECT_FALSE(fresh->memoized);
  auto memo = lookup(*s, 64);
  ASSERT_TRUE(memo.has_value());
  EXPECT_TRUE(memo->memoized);
}

TEST_F(TuningStoreTest, InvalidRowsInTheFileAreSkipped) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  // A hand-edited row: off-grid bucket, a config that is not an object, a negative time.
  raw_exec(
      "INSERT INTO tunings VALUES(90, 132, 2, 13, 'gemm a=bf16 b=bf16 out=bf16', 7168, 7168, 0, 100, "
      "'sm80_gemm', '{}', 5.0, 3, 1, '', '')");
  raw_exec(
      "INSERT INTO tunings VALUES(90, 132, 2, 13, 'gemm a=bf16 b=bf16 out=bf16', 7168, 7168, 0, 64, "
      "'sm80_gemm', 'not json', 5.0, 3, 1, '', '')");
  raw_exec(
      "INSERT INTO tunings VALUES(90, 132, 2, 13, 'gemm a=bf16 b=bf16 out=bf16', 7168, 7168, 0, 128, "
      "'sm80_gemm', '{}', -1.0, 3, 1, '', '')");
  EXPECT_FALSE(lookup(*s, 64).has_value());
  EXPECT_FALSE(lookup(*s, 128).has_value());
  auto all = s->list();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

// ---- schema ----

TEST_F(TuningStoreTest, FreshDatabaseIsAtTheLatestVersionWithBothTables) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(raw_text("PRAGMA user_version"), std::to_string(KernelCache::kSchemaVersion));
  EXPECT_EQ(KernelCache::kSchemaVersion, 2);
  EXPECT_EQ(raw_text("SELECT count(*) FROM sqlite_master WHERE name IN ('kernels', 'tunings', 'untuned')"),
            "3");
}

TEST_F(TuningStoreTest, MigratesFromVersion1KeepingTheKernels) {
  // A kiln.db as kiln with schema 1 left it: kernels only.
  raw_exec(
      "CREATE TABLE kernels(key TEXT PRIMARY KEY NOT NULL, arch TEXT, entry TEXT, spec TEXT, config TEXT, "
      "cubin BLOB NOT NULL, cubin_sha256 TEXT NOT NULL, registers INTEGER, smem INTEGER, spills INTEGER, "
      "compile_ms REAL, created INTEGER, last_used INTEGER);"
      "CREATE INDEX kernels_by_last_used ON kernels(last_used);"
      "INSERT INTO kernels VALUES('k1', 'sm_90a', 'e', 's', 'c', x'7f454c46', "
      "'0000', 1, 2, 0, 1.0, 1, 1);"
      "PRAGMA application_id = 1802071150; PRAGMA user_version = 1;");
  ASSERT_EQ(raw_text("PRAGMA user_version"), "1");
  auto s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(raw_text("PRAGMA user_version"), "2");
  EXPECT_EQ(raw_text("SELECT count(*) FROM kernels"), "1");
  EXPECT_EQ(raw_text("SELECT key FROM kernels"), "k1");
  ASSERT_TRUE(s->record(rec(64, 10)).ok());
  EXPECT_EQ(raw_text("SELECT count(*) FROM tunings"), "1");
  // No set-aside happened: the file was migrated in place.
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find("corrupt"), std::string::npos) << e.path();
  }
}

TEST_F(TuningStoreTest, MigratesFromVersion0) {
  // An empty SQLite database (user_version 0, no tables): what a first open finds.
  raw_exec("PRAGMA user_version = 0; VACUUM;");
  ASSERT_EQ(raw_text("PRAGMA user_version"), "0");
  auto s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(raw_text("PRAGMA user_version"), "2");
  EXPECT_EQ(raw_text("PRAGMA application_id"), "1802071150");
  EXPECT_EQ(raw_text("SELECT count(*) FROM sqlite_master WHERE name IN ('kernels', 'tunings', 'untuned')"),
            "3");
}

TEST_F(TuningStoreTest, KernelCacheAndTuningStoreShareTheFile) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->record(rec(64, 10)).ok());
  auto cache = KernelCache::open(dir_);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  ASSERT_TRUE((*cache)->clear().ok());  // `kiln cache clear` empties kernels only
  s->forget_memory();
  EXPECT_TRUE(lookup(*s, 64).has_value());
}

TEST_F(TuningStoreTest, CorruptDatabaseIsRebuiltWithoutItsTunings) {
  {
    auto s = open();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->record(rec(64, 10)).ok());
  }
  // Bytes that are not SQLite where kiln.db was (and no journal that could resurrect it).
  fs::remove(db_path() + "-wal");
  fs::remove(db_path() + "-shm");
  std::ofstream(db_path(), std::ios::binary | std::ios::trunc) << std::string(8192, 'x');
  auto s = open();
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(lookup(*s, 64).has_value());
  EXPECT_EQ(raw_text("PRAGMA user_version"), "2");
  int set_aside = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().filename().string().rfind("kiln.db.corrupt-", 0) == 0) ++set_aside;
  }
  EXPECT_GE(set_aside, 1);
  ASSERT_TRUE(s->record(rec(64, 12)).ok());  // and the fresh file takes tunings again
  s->forget_memory();
  EXPECT_TRUE(lookup(*s, 64).has_value());
}

// ---- untuned shapes ----

TEST_F(TuningStoreTest, UntunedShapesAreCountedPerKey) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->record_untuned(h200(), problem(), 16).ok());
  ASSERT_TRUE(s->record_untuned(h200(), problem(), 16).ok());
  ASSERT_TRUE(s->record_untuned(h200(), problem(2048), 0).ok());
  EXPECT_EQ(s->record_untuned(h200(), problem(), 17).code(), StatusCode::kInvalidArgument);
  auto rows = s->untuned();
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), 2u);
  int64_t seen16 = 0;
  for (const UntunedShape& u : *rows) {
    if (u.m_bucket == 16) seen16 = u.seen;
    EXPECT_EQ(u.device.key, h200().key);
  }
  EXPECT_EQ(seen16, 2);
}

// ---- JSON ----

TEST_F(TuningStoreTest, ExportImportRoundTrip) {
  std::vector<TuningRecord> written = {rec(1, 5, 16), rec(64, 20, 64), rec(4096, 400, 128, 2048)};
  written[2].problem.spec = "grouped_gemm[experts=0,layout=offsets] a=bf16 b=bf16 out=bf16";
  written[2].problem.experts = 32;
  {
    auto s = open();
    ASSERT_NE(s, nullptr);
    for (const TuningRecord& r : written) ASSERT_TRUE(s->record(r).ok());
  }
  auto src = open();
  auto exported = src->list();
  ASSERT_TRUE(exported.ok());
  ASSERT_EQ(exported->size(), 3u);
  const std::string text = tunings_to_json(*exported).dump(2);

  const std::string other = dir_ + "/other";
  TuningStore::Options o;
  o.dir = other;
  auto dst = TuningStore::open(o);
  ASSERT_TRUE(dst.ok()) << dst.status().to_string();
  auto parsed = tunings_from_json_text(text, "export.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  for (const TuningRecord& r : *parsed) ASSERT_TRUE((*dst)->record(r).ok());
  auto imported = (*dst)->list();
  ASSERT_TRUE(imported.ok());
  ASSERT_EQ(imported->size(), exported->size());
  for (size_t i = 0; i < imported->size(); ++i) {
    const TuningRecord &a = (*exported)[i], &b = (*imported)[i];
    EXPECT_EQ(a.device.key, b.device.key);
    EXPECT_EQ(a.device.gpu_name, b.device.gpu_name);
    EXPECT_EQ(a.device.driver, b.device.driver);
    EXPECT_EQ(a.problem, b.problem);
    EXPECT_EQ(a.m_bucket, b.m_bucket);
    EXPECT_EQ(a.family, b.family);
    EXPECT_EQ(a.config_json, b.config_json);
    EXPECT_DOUBLE_EQ(a.median_us, b.median_us);
    EXPECT_EQ(a.candidates, b.candidates);
    EXPECT_EQ(a.tuned_unix, b.tuned_unix);
  }
  // Importing a slower copy of a row changes nothing; a faster one replaces it.
  TuningRecord slower = written[0];
  slower.median_us = 50;
  auto kept = (*dst)->record(slower);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(*kept);
}

TEST(TuningJsonTest, ConfigIsAnObjectInTheFile) {
  TuningRecord r = rec(64, 20, 64);
  nlohmann::json j = tunings_to_json({r});
  EXPECT_EQ(j.at("format"), "kiln-tunings");
  EXPECT_EQ(j.at("version"), 1);
  EXPECT_TRUE(j.at("tunings").at(0).at("config").is_object());
  EXPECT_EQ(j.at("tunings").at(0).at("config").at("block_m"), 64);
}

TEST(TuningJsonTest, ErrorsNameTheFileTheRecordAndTheField) {
  const std::string good = tunings_to_json({rec(64, 20)}).dump();
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return tunings_from_json_text(t, "x.json");
  };
  auto r1 = bad("\"m_bucket\":64", "\"m_bucket\":100");
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("x.json: tunings[0]"), std::string::npos) << r1.status().message();
  EXPECT_NE(r1.status().message().find("m_bucket=100"), std::string::npos) << r1.status().message();
  auto r2 = bad("\"family\"", "\"famly\"");
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("famly: unknown field"), std::string::npos) << r2.status().message();
  auto r3 = bad("\"kiln-tunings\"", "\"something-else\"");
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.status().message().find("not a kiln tunings file"), std::string::npos);
  auto r4 = bad("\"config\":{", "\"config\":[{");
  EXPECT_FALSE(r4.ok());
  EXPECT_FALSE(tunings_from_json_text("{", "x.json").ok());
  auto bare =
      tunings_from_json_text(nlohmann::json(tunings_to_json({rec(64, 20)}).at("tunings")).dump(), "y");
  EXPECT_TRUE(bare.ok());  // a bare list of records is accepted too
}

TEST(TuningJsonTest, BuiltInPretunedTablesParse) {
  ASSERT_FALSE(builtin_pretuned_sources().empty());
  bool has_h200 = false;
  for (const PretunedSource& s : builtin_pretuned_sources()) has_h200 |= std::string(s.name) == "h200.json";
  EXPECT_TRUE(has_h200);
  auto recs = builtin_pretuned_records();
  ASSERT_TRUE(recs.ok()) << recs.status().to_string();
  for (const TuningRecord& r : *recs) EXPECT_TRUE(validate_tuning_record(r).ok());
}

}  // namespace
}  // namespace kiln

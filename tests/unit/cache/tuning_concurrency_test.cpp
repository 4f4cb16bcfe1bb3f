// Many processes tuning into one database at once (`kiln tune --devices`, several jobs on one
// machine): 8 forked writers x 200 UPSERTs each, released together. Every row must be present,
// contested keys must hold the fastest result, and SQLite's integrity check must say "ok".
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cache/tuning_store.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr int kProcesses = 8;
constexpr int kWritesEach = 200;
constexpr int kContested = 20;  // of each process's writes, this many go to keys every process writes

TuningRecord record_for(int process, int i) {
  TuningRecord r;
  r.device.key = {90, 132, 2, 13};
  r.device.gpu_name = "NVIDIA H200";
  r.device.driver = "13.0";
  r.problem.spec = "gemm a=bf16 b=bf16 out=bf16";
  if (i < kContested) {
    // Shared keys: every process writes them; process p measures 100 + p us, so process 0 must win.
    r.problem.n = 1;
    r.problem.k = 16 * (i + 1);
    r.median_us = 100 + process;
  } else {
    r.problem.n = 1000 + process;  // distinct per process
    r.problem.k = 16 * (i + 1);
    r.median_us = 10 + i;
  }
  r.m_bucket = kTuningMBuckets[static_cast<size_t>(i) % kTuningMBuckets.size()];
  r.family = "sm80_gemm";
  r.config_json = nlohmann::json{{"block_m", 16 << (process % 4)}, {"process", process}}.dump();
  r.candidates = 1;
  r.tuned_unix = 1700000000 + i;
  return r;
}

TEST(TuningConcurrencyTest, EightProcessesWritingAtOnceLoseNothing) {
  std::string tmpl = (fs::temp_directory_path() / "kiln-tuning-mp-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);

  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      char c;
      // Wait for the start signal: all writers begin together (EOF when the parent closes the pipe).
      while (::read(go[0], &c, 1) > 0) {
      }
      TuningStore::Options o;
      o.dir = dir;
      auto store = TuningStore::open(o);
      if (!store.ok()) {
        std::fprintf(stderr, "writer %d: %s\n", p, store.status().to_string().c_str());
        ::_exit(10);
      }
      for (int i = 0; i < kWritesEach; ++i) {
        auto stored = (*store)->record(record_for(p, i));
        if (!stored.ok()) {
          std::fprintf(stderr, "writer %d, write %d: %s\n", p, i, stored.status().to_string().c_str());
          ::_exit(11);
        }
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);  // release them all
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "writer " << pid << " failed (10: open, 11: record)";
  }

  TuningStore::Options o;
  o.dir = dir;
  auto store = TuningStore::open(o);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  auto rows = (*store)->list();
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  EXPECT_EQ(rows->size(), static_cast<size_t>(kContested + kProcesses * (kWritesEach - kContested)));
  for (int i = 0; i < kContested; ++i) {
    const TuningRecord want = record_for(0, i);
    auto hit = (*store)->lookup(want.device.key, want.problem, want.m_bucket);
    ASSERT_TRUE(hit.ok() && hit->has_value()) << i;
    EXPECT_DOUBLE_EQ((*hit)->record.median_us, 100.0) << i;
    EXPECT_EQ(nlohmann::json::parse((*hit)->record.config_json).at("process"), 0) << i;
  }
  for (int p = 0; p < kProcesses; ++p) {
    for (int i = kContested; i < kWritesEach; ++i) {
      const TuningRecord want = record_for(p, i);
      auto hit = (*store)->lookup(want.device.key, want.problem, want.m_bucket);
      ASSERT_TRUE(hit.ok() && hit->has_value()) << "process " << p << " write " << i;
    }
  }

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/kiln.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace kiln

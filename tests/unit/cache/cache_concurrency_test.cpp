// Many processes sharing the kernels table at once (several inference workers starting together on
// one machine): 8 forked processes, released together, each inserting kernels every process inserts
// and kernels only it inserts, and reading all of them back. Nothing may be lost, every cubin must
// read back intact, and SQLite's integrity check must say "ok" — with WAL and with the rollback
// journal (KILN_CACHE_JOURNAL=delete, what kiln uses where WAL is unavailable), and with a size cap
// that forces evictions while the others insert. No CUDA: cubins are fake bytes. The same with real
// NVRTC compiles through Runtime::compile: tests/nvrtc/kernel_cache_concurrency_test.cpp.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr int kProcesses = 8;
constexpr int kShared = 16;  // kernels every process inserts
constexpr int kOwn = 16;     // kernels only process p inserts

CompiledKernel kernel(const std::string& name) {
  CompiledKernel k;
  KeyInputs in;
  in.source = "kernel " + name;
  in.nvrtc_version = "13.0";
  in.arch = "sm_90a";
  k.key = kernel_cache_key(in);
  k.arch = "sm_90a";
  k.entry = "kiln_" + name;
  k.spec = "gemm a=bf16 b=bf16 out=bf16";
  k.cubin = std::string("\x7f" "ELF\0", 5) + name + std::string(2000 + 17 * name.size(), name.back());
  return k;
}
std::string shared_name(int i) { return "shared" + std::to_string(i); }
std::string own_name(int p, int i) { return "p" + std::to_string(p) + "_" + std::to_string(i); }

std::string integrity(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out = "open failed";
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// Child: insert (interleaving shared and own kernels, in an order that differs per process), then
// read back. Exit codes say what failed: 10 open, 11 put, 12 get, 13 a missing or wrong kernel.
[[noreturn]] void writer(const std::string& dir, int p, int64_t cap, int go_fd) {
  char c;
  while (::read(go_fd, &c, 1) > 0) {
  }
  int code = 0;
  {
    KernelCacheOptions o;
    o.max_cubin_bytes = cap;
    auto cache = KernelCache::open(dir, o);
    if (!cache.ok()) {
      std::fprintf(stderr, "process %d: %s\n", p, cache.status().to_string().c_str());
      ::_exit(10);
    }
    for (int j = 0; j < kShared + kOwn && code == 0; ++j) {
      const int i = (j / 2 + p) % kShared;
      const CompiledKernel k = j % 2 == 0 ? kernel(shared_name(i)) : kernel(own_name(p, j / 2));
      Status s = (*cache)->put(k);
      if (!s.ok()) {
        std::fprintf(stderr, "process %d, put %s: %s\n", p, k.entry.c_str(), s.to_string().c_str());
        code = 11;
      }
    }
    // With a cap, other processes may legitimately evict what this one wrote: only the uncapped
    // runs can demand every kernel back. Reads must succeed (and verify their sha256) either way.
    for (int j = 0; j < kShared + kOwn && code == 0; ++j) {
      const CompiledKernel want = j < kShared ? kernel(shared_name(j)) : kernel(own_name(p, j - kShared));
      auto got = (*cache)->get(want.key);
      if (!got.ok()) {
        std::fprintf(stderr, "process %d, get %s: %s\n", p, want.entry.c_str(), got.status().to_string().c_str());
        code = 12;
      } else if (got->has_value() ? (*got)->cubin != want.cubin : cap == 0) {
        std::fprintf(stderr, "process %d: %s is %s\n", p, want.entry.c_str(), got->has_value() ? "wrong" : "missing");
        code = 13;
      }
    }
  }
  ::_exit(code);
}

struct Param {
  const char* journal;  // KILN_CACHE_JOURNAL
  int64_t cap;          // bytes; 0: none
};

class CacheConcurrencyTest : public ::testing::TestWithParam<Param> {};

TEST_P(CacheConcurrencyTest, EightProcessesInsertingAndReadingAtOnceLoseNothing) {
  const Param param = GetParam();
  std::string tmpl = (fs::temp_directory_path() / "kiln-kernels-mp-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  const char* old_journal = std::getenv("KILN_CACHE_JOURNAL");
  const std::string saved = old_journal ? old_journal : "";
  ::setenv("KILN_CACHE_JOURNAL", param.journal, 1);  // inherited by the children

  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();  // before anything opens SQLite: a connection never crosses a fork
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      writer(dir, p, param.cap, go[0]);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);  // release them all at once
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "process " << pid << " died";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "process " << pid << " failed (10 open, 11 put, 12 get, 13 missing/wrong)";
  }

  {
    KernelCacheOptions o;
    o.max_cubin_bytes = param.cap;
    auto cache = KernelCache::open(dir, o);
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    auto st = (*cache)->stats();
    ASSERT_TRUE(st.ok()) << st.status().to_string();
    EXPECT_EQ(st->journal_mode, param.journal);
    if (param.cap == 0) {
      EXPECT_EQ(st->kernels, kShared + kProcesses * kOwn);
      for (int p = 0; p < kProcesses; ++p) {
        for (int i = 0; i < kOwn; ++i) {
          auto got = (*cache)->get(kernel(own_name(p, i)).key);
          ASSERT_TRUE(got.ok() && got->has_value()) << own_name(p, i);
        }
      }
    } else {
      // Every insert evicted down to the cap inside its own write transaction, so the cap holds
      // after the last one, whoever made it.
      EXPECT_LE(st->cubin_bytes, param.cap);
      EXPECT_GT(st->kernels, 0);
    }
  }
  EXPECT_EQ(integrity(dir + "/kiln.db"), "ok");

  if (old_journal) {
    ::setenv("KILN_CACHE_JOURNAL", saved.c_str(), 1);
  } else {
    ::unsetenv("KILN_CACHE_JOURNAL");
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

INSTANTIATE_TEST_SUITE_P(Journals, CacheConcurrencyTest,
                         ::testing::Values(Param{"wal", 0}, Param{"delete", 0}, Param{"wal", 40000},
                                           Param{"delete", 40000}),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::string(info.param.journal) + (info.param.cap ? "_capped" : "_uncapped");
                         });

}  // namespace
}  // namespace kiln

// KernelCache on a real SQLite file: layout, round trips, integrity checks, schema versions, recovery
// from a bad file, and sharing between threads and between processes. No CUDA: cubins are fake bytes.
#include "cache/kernel_cache.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "cache/cache_key.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kiln-cache-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/nested/cache";  // parents do not exist yet
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::unique_ptr<KernelCache> open_cache() {
    StatusOr<std::unique_ptr<KernelCache>> cache = KernelCache::open(dir_);
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    return cache.ok() ? std::move(cache).value() : nullptr;
  }

  // Runs one statement on a separate, raw connection (what a tamperer or another tool would do).
  void raw_exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  int64_t raw_int(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
      v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
  }

  std::string db_path() const { return dir_ + "/kiln.db"; }

  std::string root_;
  std::string dir_;
};

CompiledKernel make_kernel(const std::string& name) {
  CompiledKernel k;
  KeyInputs in;
  in.source = "kernel " + name;
  in.nvrtc_version = "13.0";
  in.arch = "sm_90a";
  k.key = kernel_cache_key(in);
  k.arch = "sm_90a";
  k.entry = "kiln_" + name;
  k.spec = "gemm a=bf16 b=bf16 out=bf16";
  k.config = "128x128x64 s4";
  // Fake ELF with a NUL inside: blobs must keep every byte.
  k.cubin = std::string("\x7f" "ELF\0\x02", 6) + name + std::string(1000, static_cast<char>(name.size()));
  k.registers = 128;
  k.smem_static = 49152;
  k.spill_stores = 0;
  k.spill_loads = 0;
  k.compile_ms = 812.5;
  return k;
}

TEST_F(CacheTest, CreatesDirectoryWithMode0700) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((root_ + "/nested").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(cache->path(), db_path());
  EXPECT_TRUE(fs::exists(db_path()));
}

TEST_F(CacheTest, CreatesDirectoryWith0700UnderPermissiveUmask) {
  mode_t old = ::umask(0);
  auto cache = open_cache();
  ::umask(old);
  ASSERT_NE(cache, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(CacheTest, UsesExistingDirectoryWithoutChangingItsMode) {
  fs::create_directories(dir_);
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST_F(CacheTest, RejectsAFileWhereTheDirectoryShouldBe) {
  fs::create_directories(root_ + "/nested");
  std::ofstream(dir_) << "not a directory";
  StatusOr<std::unique_ptr<KernelCache>> cache = KernelCache::open(dir_);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kCacheError);
  EXPECT_NE(cache.status().message().find(dir_), std::string::npos) << cache.status().message();
}

TEST_F(CacheTest, PutThenGetRoundTripsEveryField) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  const CompiledKernel k = make_kernel("a");
  ASSERT_TRUE(cache->put(k).ok());
  StatusOr<std::optional<CompiledKernel>> got = cache->get(k.key);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(got->has_value());
  const CompiledKernel& g = **got;
  EXPECT_EQ(g.key, k.key);
  EXPECT_EQ(g.arch, k.arch);
  EXPECT_EQ(g.entry, k.entry);
  EXPECT_EQ(g.spec, k.spec);
  EXPECT_EQ(g.config, k.config);
  EXPECT_EQ(g.cubin, k.cubin);
  EXPECT_EQ(g.registers, k.registers);
  EXPECT_EQ(g.smem_static, k.smem_static);
  EXPECT_EQ(g.spill_stores, k.spill_stores);
  EXPECT_EQ(g.spill_loads, k.spill_loads);
  EXPECT_DOUBLE_EQ(g.compile_ms, k.compile_ms);
  EXPECT_GT(g.created_unix, 0);
  EXPECT_GE(g.last_used_unix, g.created_unix);
  EXPECT_TRUE(g.from_cache);
  // What the table does not keep comes back empty.
  EXPECT_TRUE(g.source.empty());
  EXPECT_TRUE(g.ptx.empty());
  EXPECT_TRUE(g.log.empty());
  EXPECT_EQ(g.stack_frame, -1);
  EXPECT_EQ(raw_int("SELECT count(*) FROM kernels WHERE cubin_sha256 = '" + sha256_hex(k.cubin) + "'"), 1);
}

// One spills column: put keeps the larger of stores and loads, get returns it in both fields.
TEST_F(CacheTest, StoresTheLargerSpillAndReturnsItAsBoth) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  CompiledKernel k = make_kernel("a");
  k.spill_stores = 16;
  k.spill_loads = 24;
  ASSERT_TRUE(cache->put(k).ok());
  EXPECT_EQ(raw_int("SELECT spills FROM kernels"), 24);
  auto got = cache->get(k.key);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->spill_stores, 24);
  EXPECT_EQ((*got)->spill_loads, 24);
}

TEST_F(CacheTest, MissOnUnknownKey) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  StatusOr<std::optional<CompiledKernel>> got = cache->get(sha256_hex("nothing"));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_FALSE(got->has_value());
}

TEST_F(CacheTest, PutKeepsTheFirstEntryForAKey) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  CompiledKernel k = make_kernel("a");
  ASSERT_TRUE(cache->put(k).ok());
  CompiledKernel again = k;
  again.compile_ms = 1;
  ASSERT_TRUE(cache->put(again).ok());
  auto got = cache->get(k.key);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_DOUBLE_EQ((*got)->compile_ms, k.compile_ms);
  EXPECT_EQ(cache->stats()->kernels, 1);
}

TEST_F(CacheTest, PutRejectsEmptyKeyOrCubin) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  CompiledKernel k = make_kernel("a");
  k.key.clear();
  EXPECT_EQ(cache->put(k).code(), StatusCode::kInvalidArgument);
  k = make_kernel("a");
  k.cubin.clear();
  EXPECT_EQ(cache->put(k).code(), StatusCode::kInvalidArgument);
}

TEST_F(CacheTest, TamperedCubinIsAMissAndTheRowIsDeleted) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  const CompiledKernel k = make_kernel("a");
  const CompiledKernel other = make_kernel("b");
  ASSERT_TRUE(cache->put(k).ok());
  ASSERT_TRUE(cache->put(other).ok());
  raw_exec("UPDATE kernels SET cubin = x'7f454c4600' WHERE key = '" + k.key + "'");
  auto got = cache->get(k.key);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(raw_int("SELECT count(*) FROM kernels WHERE key = '" + k.key + "'"), 0);
  auto untouched = cache->get(other.key);
  ASSERT_TRUE(untouched.ok() && untouched->has_value());
  // And the key can be filled again with the good cubin.
  ASSERT_TRUE(cache->put(k).ok());
  auto refilled = cache->get(k.key);
  ASSERT_TRUE(refilled.ok() && refilled->has_value());
  EXPECT_EQ((*refilled)->cubin, k.cubin);
}

TEST_F(CacheTest, HitRefreshesLastUsed) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  const CompiledKernel k = make_kernel("a");
  ASSERT_TRUE(cache->put(k).ok());
  raw_exec("UPDATE kernels SET last_used = 1000");
  auto got = cache->get(k.key);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_GT((*got)->last_used_unix, 1000);
  EXPECT_EQ(raw_int("SELECT last_used FROM kernels"), (*got)->last_used_unix);
}

TEST_F(CacheTest, SetsSchemaVersionApplicationIdAndWal) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(raw_int("PRAGMA user_version"), KernelCache::kSchemaVersion);
  EXPECT_EQ(raw_int("PRAGMA application_id"), 0x6b696c6e);
  StatusOr<CacheStats> st = cache->stats();
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_EQ(st->user_version, KernelCache::kSchemaVersion);
  EXPECT_EQ(st->journal_mode, "wal");
  EXPECT_EQ(st->path, db_path());
}

TEST_F(CacheTest, ReopensAnExistingCache) {
  const CompiledKernel k = make_kernel("a");
  {
    auto cache = open_cache();
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(cache->put(k).ok());
  }
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  auto got = cache->get(k.key);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->cubin, k.cubin);
}

TEST_F(CacheTest, NewerSchemaVersionIsACacheErrorAndTheFileIsKept) {
  { ASSERT_NE(open_cache(), nullptr); }
  raw_exec("PRAGMA user_version = 99");
  StatusOr<std::unique_ptr<KernelCache>> cache = KernelCache::open(dir_);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kCacheError);
  const std::string& msg = cache.status().message();
  EXPECT_NE(msg.find("newer kiln"), std::string::npos) << msg;
  EXPECT_NE(msg.find("99"), std::string::npos) << msg;
  EXPECT_NE(msg.find(db_path()), std::string::npos) << msg;
  EXPECT_EQ(raw_int("PRAGMA user_version"), 99);  // left alone for the newer kiln
}

TEST_F(CacheTest, GarbageFileIsSetAsideAndRebuilt) {
  fs::create_directories(dir_);
  std::string garbage(8192, 'x');
  std::ofstream(db_path(), std::ios::binary) << garbage;
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  const CompiledKernel k = make_kernel("a");
  ASSERT_TRUE(cache->put(k).ok());
  EXPECT_TRUE(cache->get(k.key)->has_value());

  int set_aside = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("kiln.db.corrupt-", 0) == 0 && name.find("-wal") == std::string::npos) {
      ++set_aside;
      std::ifstream in(e.path(), std::ios::binary);
      std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(kept, garbage);
    }
  }
  EXPECT_EQ(set_aside, 1);
}

TEST_F(CacheTest, ForeignDatabaseIsSetAsideAndRebuilt) {
  fs::create_directories(dir_);
  raw_exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, data BLOB); INSERT INTO photos(data) VALUES(x'00')");
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(raw_int("SELECT count(*) FROM sqlite_master WHERE name = 'photos'"), 0);
  EXPECT_EQ(raw_int("PRAGMA user_version"), KernelCache::kSchemaVersion);
}

TEST_F(CacheTest, EmptyFileBecomesAFreshCache) {
  fs::create_directories(dir_);
  std::ofstream(db_path()).flush();
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(raw_int("PRAGMA user_version"), KernelCache::kSchemaVersion);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find("corrupt"), std::string::npos) << e.path();
  }
}

TEST_F(CacheTest, StatsListAndClear) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  const CompiledKernel a = make_kernel("a"), b = make_kernel("bb");
  ASSERT_TRUE(cache->put(a).ok());
  ASSERT_TRUE(cache->put(b).ok());

  StatusOr<CacheStats> st = cache->stats();
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  EXPECT_EQ(st->kernels, 2);
  EXPECT_EQ(st->cubin_bytes, static_cast<int64_t>(a.cubin.size() + b.cubin.size()));
  EXPECT_GE(st->file_bytes, st->cubin_bytes);

  auto listed = cache->list();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  ASSERT_EQ(listed->size(), 2u);
  std::set<std::string> keys;
  for (const CompiledKernel& k : *listed) {
    keys.insert(k.key);
    EXPECT_TRUE(k.cubin.empty());
    EXPECT_EQ(k.arch, "sm_90a");
    EXPECT_EQ(k.registers, 128);
  }
  EXPECT_EQ(keys, (std::set<std::string>{a.key, b.key}));

  auto with_cubins = cache->list(/*with_cubins=*/true);
  ASSERT_TRUE(with_cubins.ok());
  for (const CompiledKernel& k : *with_cubins) EXPECT_EQ(k.cubin, k.key == a.key ? a.cubin : b.cubin);

  ASSERT_TRUE(cache->clear().ok());
  st = cache->stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->kernels, 0);
  EXPECT_EQ(st->cubin_bytes, 0);
  EXPECT_FALSE(cache->get(a.key)->has_value());
  EXPECT_TRUE(cache->list()->empty());
}

TEST_F(CacheTest, ConcurrentPutsFromFourThreads) {
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  constexpr int kThreads = 4, kPerThread = 50;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (!cache->put(make_kernel("t" + std::to_string(t) + "_" + std::to_string(i))).ok()) ++failures[t];
        // Interleave reads with the writes of the other threads.
        (void)cache->get(make_kernel("t" + std::to_string((t + 1) % kThreads) + "_" + std::to_string(i)).key);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(cache->stats()->kernels, kThreads * kPerThread);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      const CompiledKernel k = make_kernel("t" + std::to_string(t) + "_" + std::to_string(i));
      auto got = cache->get(k.key);
      ASSERT_TRUE(got.ok() && got->has_value()) << k.entry;
      EXPECT_EQ((*got)->cubin, k.cubin);
    }
  }
}

// Child side of the process tests: never returns into GoogleTest; the exit code is the verdict.
[[noreturn]] void child_exit(bool ok) { ::_exit(ok ? 0 : 1); }

int wait_child(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(CacheTest, TwoProcessesWriteConcurrentlyAndSeeEachOthersEntries) {
  constexpr int kEach = 40;
  auto name = [](const char* who, int i) { return std::string(who) + std::to_string(i); };
  int to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  // Fork before either side opens SQLite: a connection must never cross a fork.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    bool ok = true;
    {
      auto cache = KernelCache::open(dir_);
      if (!cache.ok()) child_exit(false);
      for (int i = 0; i < kEach; ++i) ok &= (*cache)->put(make_kernel(name("child", i))).ok();
      char c = 1;
      ok &= ::write(to_parent[1], &c, 1) == 1;
      ok &= ::read(to_child[0], &c, 1) == 1;  // the parent has finished its puts
      for (int i = 0; i < kEach; ++i) {
        auto got = (*cache)->get(make_kernel(name("parent", i)).key);
        ok &= got.ok() && got->has_value() && (*got)->cubin == make_kernel(name("parent", i)).cubin;
      }
    }
    child_exit(ok);
  }
  {
    auto cache = open_cache();
    ASSERT_NE(cache, nullptr);
    for (int i = 0; i < kEach; ++i) EXPECT_TRUE(cache->put(make_kernel(name("parent", i))).ok());
    char c = 1;
    ASSERT_EQ(::write(to_child[1], &c, 1), 1);
    ASSERT_EQ(::read(to_parent[0], &c, 1), 1);  // the child has finished its puts
    for (int i = 0; i < kEach; ++i) {
      auto got = cache->get(make_kernel(name("child", i)).key);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_TRUE(got->has_value()) << "child entry " << i;
    }
    EXPECT_EQ(cache->stats()->kernels, 2 * kEach);
  }
  EXPECT_EQ(wait_child(pid), 0) << "the child could not write or did not see the parent's entries";
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) ::close(fd);
}

TEST_F(CacheTest, EntriesOfAFinishedProcessAreHitsInANewCache) {
  constexpr int kEntries = 10;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    bool ok = true;
    {
      auto cache = KernelCache::open(dir_);
      if (!cache.ok()) child_exit(false);
      for (int i = 0; i < kEntries; ++i) ok &= (*cache)->put(make_kernel("k" + std::to_string(i))).ok();
    }
    child_exit(ok);
  }
  ASSERT_EQ(wait_child(pid), 0);
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  for (int i = 0; i < kEntries; ++i) {
    const CompiledKernel k = make_kernel("k" + std::to_string(i));
    auto got = cache->get(k.key);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_TRUE(got->has_value()) << i;
    EXPECT_EQ((*got)->cubin, k.cubin);
  }
}

TEST_F(CacheTest, ProcessesRecoveringTheSameGarbageFileSetItAsideOnce) {
  fs::create_directories(dir_);
  std::ofstream(db_path(), std::ios::binary) << std::string(4096, 'g');
  constexpr int kProcs = 4;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      bool ok = true;
      {
        auto cache = KernelCache::open(dir_);
        if (!cache.ok()) child_exit(false);
        ok &= (*cache)->put(make_kernel("p" + std::to_string(p))).ok();
      }
      child_exit(ok);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) EXPECT_EQ(wait_child(pid), 0);
  int set_aside = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("kiln.db.corrupt-", 0) == 0 && name.find("-wal") == std::string::npos) ++set_aside;
  }
  EXPECT_EQ(set_aside, 1);
  auto cache = open_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->stats()->kernels, kProcs);  // nobody moved another's fresh database away
}

TEST(KernelCacheDefaultDirTest, FollowsEnvironmentPrecedence) {
  auto saved = [](const char* n) { const char* v = std::getenv(n); return v ? std::optional<std::string>(v) : std::nullopt; };
  auto restore = [](const char* n, const std::optional<std::string>& v) {
    if (v) ::setenv(n, v->c_str(), 1); else ::unsetenv(n);
  };
  const auto cache_dir = saved("KILN_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");

  ::setenv("KILN_CACHE_DIR", "/x/kiln-here", 1);
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(KernelCache::default_dir(), "/x/kiln-here");
  ::unsetenv("KILN_CACHE_DIR");
  EXPECT_EQ(KernelCache::default_dir(), "/xdg/kiln");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // invalid per the XDG spec: ignored
  EXPECT_EQ(KernelCache::default_dir(), "/home/u/.cache/kiln");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(KernelCache::default_dir(), "/home/u/.cache/kiln");
  ::unsetenv("HOME");
  EXPECT_EQ(KernelCache::default_dir(), "/tmp/kiln-cache-" + std::to_string(::getuid()));

  restore("KILN_CACHE_DIR", cache_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

}  // namespace
}  // namespace kiln

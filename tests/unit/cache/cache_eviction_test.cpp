// KernelCache's size cap: least-recently-used eviction order, the kernel being inserted never
// evicted, hits refreshing last_used, KILN_CACHE_MAX_MB, and the forced rollback journal
// (KILN_CACHE_JOURNAL=delete). No CUDA: cubins are fake bytes of chosen sizes.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "cache/cache_key.hpp"
#include "cache/kernel_cache.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class CacheEvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kiln-evict-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::unique_ptr<KernelCache> open_cache(int64_t max_cubin_bytes) {
    KernelCacheOptions o;
    o.max_cubin_bytes = max_cubin_bytes;
    StatusOr<std::unique_ptr<KernelCache>> cache = KernelCache::open(dir_, o);
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    return cache.ok() ? std::move(cache).value() : nullptr;
  }

  // One statement on a separate connection (to set last_used as if time had passed).
  void raw_exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/kiln.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  void set_last_used(const CompiledKernel& k, int64_t t) {
    raw_exec("UPDATE kernels SET last_used = " + std::to_string(t) + " WHERE key = '" + k.key + "'");
  }

  bool present(KernelCache& cache, const CompiledKernel& k) {
    // list() reads without touching last_used, unlike get().
    auto rows = cache.list();
    EXPECT_TRUE(rows.ok()) << rows.status().to_string();
    if (!rows.ok()) return false;
    for (const CompiledKernel& r : *rows) {
      if (r.key == k.key) return true;
    }
    return false;
  }

  std::string dir_;
};

// A kernel whose cubin is exactly `bytes` long.
CompiledKernel kernel_of_size(const std::string& name, size_t bytes) {
  CompiledKernel k;
  KeyInputs in;
  in.source = "kernel " + name;
  in.nvrtc_version = "13.0";
  in.arch = "sm_90a";
  k.key = kernel_cache_key(in);
  k.arch = "sm_90a";
  k.entry = "kiln_" + name;
  k.cubin = std::string("\x7f" "ELF", 4) + name;
  k.cubin.resize(bytes, 'x');
  return k;
}

TEST_F(CacheEvictionTest, EvictsLeastRecentlyUsedFirstUntilUnderTheCap) {
  auto cache = open_cache(4000);
  ASSERT_NE(cache, nullptr);
  const CompiledKernel a = kernel_of_size("a", 1000), b = kernel_of_size("b", 1000),
                       c = kernel_of_size("c", 1000);
  for (const CompiledKernel* k : {&a, &b, &c}) ASSERT_TRUE(cache->put(*k).ok());
  // Used in the order a, c, b: a is the least recently used, then c.
  set_last_used(a, 100);
  set_last_used(c, 200);
  set_last_used(b, 300);
  const CompiledKernel d = kernel_of_size("d", 2000);  // 5000 B in all: 1000 B must go
  ASSERT_TRUE(cache->put(d).ok());
  EXPECT_FALSE(present(*cache, a));
  EXPECT_TRUE(present(*cache, b));
  EXPECT_TRUE(present(*cache, c));
  EXPECT_TRUE(present(*cache, d));
  EXPECT_EQ(cache->evictions(), 1);

  const CompiledKernel e = kernel_of_size("e", 1500);  // 5500 B: c (200), then b (300) must go
  ASSERT_TRUE(cache->put(e).ok());
  EXPECT_FALSE(present(*cache, c));
  EXPECT_FALSE(present(*cache, b));
  EXPECT_TRUE(present(*cache, d));
  EXPECT_TRUE(present(*cache, e));
  EXPECT_EQ(cache->evictions(), 3);
  auto st = cache->stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->cubin_bytes, 3500);
  EXPECT_EQ(st->max_cubin_bytes, 4000);
}

TEST_F(CacheEvictionTest, AHitMakesAKernelTheMostRecentlyUsed) {
  auto cache = open_cache(2500);
  ASSERT_NE(cache, nullptr);
  const CompiledKernel a = kernel_of_size("a", 1000), b = kernel_of_size("b", 1000);
  ASSERT_TRUE(cache->put(a).ok());
  ASSERT_TRUE(cache->put(b).ok());
  set_last_used(a, 100);  // a is older ...
  set_last_used(b, 200);
  auto hit = cache->get(a.key);  // ... until it is used again
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_GT((*hit)->last_used_unix, 200);
  ASSERT_TRUE(cache->put(kernel_of_size("c", 1000)).ok());
  EXPECT_TRUE(present(*cache, a));
  EXPECT_FALSE(present(*cache, b));
}

TEST_F(CacheEvictionTest, TiesOnLastUsedEvictTheOldestCreatedFirst) {
  auto cache = open_cache(2500);
  ASSERT_NE(cache, nullptr);
  const CompiledKernel a = kernel_of_size("a", 1000), b = kernel_of_size("b", 1000);
  ASSERT_TRUE(cache->put(a).ok());
  ASSERT_TRUE(cache->put(b).ok());
  raw_exec("UPDATE kernels SET last_used = 500");
  raw_exec("UPDATE kernels SET created = 20 WHERE key = '" + a.key + "'");
  raw_exec("UPDATE kernels SET created = 10 WHERE key = '" + b.key + "'");
  ASSERT_TRUE(cache->put(kernel_of_size("c", 1000)).ok());
  EXPECT_TRUE(present(*cache, a));
  EXPECT_FALSE(present(*cache, b));
}

TEST_F(CacheEvictionTest, TheKernelBeingInsertedIsNeverEvictedEvenAboveTheCap) {
  auto cache = open_cache(1000);
  ASSERT_NE(cache, nullptr);
  const CompiledKernel small = kernel_of_size("small", 500), big = kernel_of_size("big", 3000);
  ASSERT_TRUE(cache->put(small).ok());
  ASSERT_TRUE(cache->put(big).ok());  // alone over the cap: everything else goes, it stays
  EXPECT_FALSE(present(*cache, small));
  auto hit = cache->get(big.key);
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->cubin, big.cubin);
  // Putting it again (another process compiled it too) keeps it and evicts nothing.
  ASSERT_TRUE(cache->put(big).ok());
  EXPECT_TRUE(present(*cache, big));
  EXPECT_EQ(cache->evictions(), 1);
}

TEST_F(CacheEvictionTest, NoCapKeepsEverything) {
  auto cache = open_cache(0);
  ASSERT_NE(cache, nullptr);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(cache->put(kernel_of_size("k" + std::to_string(i), 4096)).ok());
  EXPECT_EQ(cache->stats()->kernels, 20);
  EXPECT_EQ(cache->evictions(), 0);
  EXPECT_EQ(cache->stats()->max_cubin_bytes, 0);
}

TEST_F(CacheEvictionTest, EnforceCapTrimsACacheWhoseCapWasLowered) {
  {
    auto big = open_cache(0);
    ASSERT_NE(big, nullptr);
    for (int i = 0; i < 10; ++i) {
      const CompiledKernel k = kernel_of_size("k" + std::to_string(i), 1000);
      ASSERT_TRUE(big->put(k).ok());
      set_last_used(k, 100 + i);  // k0 is the least recently used
    }
  }
  auto cache = open_cache(3000);
  ASSERT_NE(cache, nullptr);
  auto evicted = cache->enforce_cap();
  ASSERT_TRUE(evicted.ok()) << evicted.status().to_string();
  EXPECT_EQ(*evicted, 7);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(present(*cache, kernel_of_size("k" + std::to_string(i), 1000)), i >= 7) << i;
}

TEST_F(CacheEvictionTest, CapComesFromTheEnvironmentInMiB) {
  {
    ScopedEnv env("KILN_CACHE_MAX_MB", "3");
    auto cache = open_cache(-1);
    ASSERT_NE(cache, nullptr);
    EXPECT_EQ(cache->max_cubin_bytes(), int64_t{3} << 20);
  }
  {
    ScopedEnv env("KILN_CACHE_MAX_MB", "0");
    auto cache = open_cache(-1);
    ASSERT_NE(cache, nullptr);
    EXPECT_EQ(cache->max_cubin_bytes(), 0);
  }
  {
    ScopedEnv env("KILN_CACHE_MAX_MB", nullptr);
    auto cache = open_cache(-1);
    ASSERT_NE(cache, nullptr);
    EXPECT_EQ(cache->max_cubin_bytes(), KernelCache::kDefaultMaxCubinBytes);
  }
  {
    ScopedEnv env("KILN_CACHE_MAX_MB", "7");  // an explicit option wins over the environment
    auto cache = open_cache(12345);
    ASSERT_NE(cache, nullptr);
    EXPECT_EQ(cache->max_cubin_bytes(), 12345);
  }
}

TEST_F(CacheEvictionTest, MalformedCapIsAnInvalidArgumentNamingTheValue) {
  for (const char* bad : {"lots", "-5", "12MB", "1.5"}) {
    ScopedEnv env("KILN_CACHE_MAX_MB", bad);
    StatusOr<std::unique_ptr<KernelCache>> cache = KernelCache::open(dir_);
    ASSERT_FALSE(cache.ok()) << bad;
    EXPECT_EQ(cache.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(cache.status().message().find(std::string("KILN_CACHE_MAX_MB='") + bad + "'"), std::string::npos)
        << cache.status().message();
  }
}

TEST_F(CacheEvictionTest, RollbackJournalCanBeForcedAndWorks) {
  ScopedEnv env("KILN_CACHE_JOURNAL", "delete");
  {
    auto cache = open_cache(2500);
    ASSERT_NE(cache, nullptr);
    auto st = cache->stats();
    ASSERT_TRUE(st.ok()) << st.status().to_string();
    EXPECT_EQ(st->journal_mode, "delete");
    const CompiledKernel a = kernel_of_size("a", 1000), b = kernel_of_size("b", 1000),
                         c = kernel_of_size("c", 1000);
    ASSERT_TRUE(cache->put(a).ok());
    ASSERT_TRUE(cache->put(b).ok());
    set_last_used(a, 100);
    set_last_used(b, 200);
    ASSERT_TRUE(cache->put(c).ok());
    EXPECT_FALSE(present(*cache, a));
    EXPECT_TRUE(present(*cache, b));
    auto hit = cache->get(c.key);
    ASSERT_TRUE(hit.ok() && hit->has_value());
  }
  EXPECT_FALSE(fs::exists(dir_ + "/kiln.db-wal"));
}

TEST_F(CacheEvictionTest, AWalCacheSwitchesToTheRollbackJournalWhenAskedAndBack) {
  {
    auto wal = open_cache(0);
    ASSERT_NE(wal, nullptr);
    ASSERT_TRUE(wal->put(kernel_of_size("a", 100)).ok());
    EXPECT_EQ(wal->stats()->journal_mode, "wal");
  }
  {
    ScopedEnv env("KILN_CACHE_JOURNAL", "delete");
    auto cache = open_cache(0);
    ASSERT_NE(cache, nullptr);
    EXPECT_EQ(cache->stats()->journal_mode, "delete");
    EXPECT_TRUE(present(*cache, kernel_of_size("a", 100)));  // nothing lost in the switch
  }
  auto cache = open_cache(0);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->stats()->journal_mode, "wal");
}

TEST_F(CacheEvictionTest, ForcedRollbackJournalWhileAnotherConnectionHoldsWalUsesWal) {
  auto wal = open_cache(0);
  ASSERT_NE(wal, nullptr);
  ScopedEnv env("KILN_CACHE_JOURNAL", "delete");
  auto second = open_cache(0);  // cannot leave WAL while `wal` is open: works in WAL with it
  ASSERT_NE(second, nullptr);
  const CompiledKernel a = kernel_of_size("a", 100);
  ASSERT_TRUE(second->put(a).ok());
  auto hit = wal->get(a.key);
  ASSERT_TRUE(hit.ok() && hit->has_value());
}

TEST_F(CacheEvictionTest, MalformedJournalModeIsAnInvalidArgument) {
  ScopedEnv env("KILN_CACHE_JOURNAL", "memory");
  StatusOr<std::unique_ptr<KernelCache>> cache = KernelCache::open(dir_);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cache.status().message().find("KILN_CACHE_JOURNAL='memory'"), std::string::npos)
      << cache.status().message();
}

}  // namespace
}  // namespace kiln

// nvrtc tier: 8 processes compiling through Runtime::compile into one kernel cache at once (several
// inference workers starting together), with real NVRTC compiles and no GPU. Process p asks for a
// kernel every process wants, its own kernel and its neighbour's (each of those is wanted by two
// processes), twice each. Nothing may be lost, and each process compiles a kernel at most once: the
// second round is all cache hits, and a fresh Runtime afterwards compiles nothing. The kernels are
// the naive reference GEMM (the cheapest family to compile), which keeps this under a minute on CI's
// two cores. The cache-only version with more processes' worth of rows, both journal modes and a
// size cap: tests/unit/cache/cache_concurrency_test.cpp.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr int kProcesses = 8;

struct KernelChoice {
  const char* spec;
  const char* arch;
};

// Index 0: wanted by every process; 1 + p: by process p and process p - 1 (mod 8).
constexpr KernelChoice kKernels[1 + kProcesses] = {
    {"gemm a=bf16 b=bf16 out=f32", "sm_80"},  {"gemm a=bf16 b=bf16 out=bf16", "sm_80"},
    {"gemm a=f16 b=f16 out=f16", "sm_80"},    {"gemm a=f16 b=f16 out=f32", "sm_80"},
    {"gemm a=bf16 b=bf16 out=f32", "sm_86"},  {"gemm a=bf16 b=bf16 out=bf16", "sm_86"},
    {"gemm a=f16 b=f16 out=f16", "sm_86"},    {"gemm a=f16 b=f16 out=f32", "sm_86"},
    {"gemm a=bf16 b=bf16 out=f16", "sm_80"},
};

StatusOr<CompiledKernel> compile(Runtime& rt, int index) {
  const KernelChoice& c = kKernels[index];
  KILN_ASSIGN_OR_RETURN(KernelSpec spec, parse_spec(c.spec));
  KILN_ASSIGN_OR_RETURN(Arch arch, parse_arch(c.arch));
  return rt.compile(spec, KernelFamily::kReferenceGemm, TileConfig{}, arch);
}

std::vector<int> wanted_by(int p) { return {0, 1 + p, 1 + (p + 1) % kProcesses}; }

// Child: two rounds over its three kernels, then reports "p compiles hits" on report_fd.
// Exit codes: 10 runtime, 11 compile, 12 a second-round compile (not a hit), 13 wrong counters.
[[noreturn]] void worker(const std::string& dir, int p, int go_fd, int report_fd) {
  char c;
  while (::read(go_fd, &c, 1) > 0) {
  }
  int code = 0;
  {
    RuntimeOptions o;
    o.cache_dir = dir;
    auto rt = Runtime::create(o);
    if (!rt.ok()) {
      std::fprintf(stderr, "process %d: %s\n", p, rt.status().to_string().c_str());
      ::_exit(10);
    }
    std::vector<std::string> first_cubins;
    for (int round = 0; round < 2 && code == 0; ++round) {
      int i = 0;
      for (int index : wanted_by(p)) {
        auto k = compile(**rt, index);
        if (!k.ok()) {
          std::fprintf(stderr, "process %d, kernel %d: %s\n", p, index, k.status().to_string().c_str());
          code = 11;
          break;
        }
        if (round == 0) {
          first_cubins.push_back(k->cubin);
        } else if (!k->from_cache || k->cubin != first_cubins[static_cast<size_t>(i)]) {
          std::fprintf(stderr, "process %d, kernel %d: second round %s\n", p, index,
                       k->from_cache ? "returned another cubin" : "compiled again");
          code = 12;
          break;
        }
        ++i;
      }
    }
    const RuntimeCounters n = (*rt)->counters();
    if (code == 0 && (n.compiles > 3 || n.compiles + n.cache_hits != 6)) code = 13;
    const std::string line =
        std::to_string(p) + " " + std::to_string(n.compiles) + " " + std::to_string(n.cache_hits) + "\n";
    // One short write: atomic on a pipe, so the lines of the 8 processes never interleave.
    if (::write(report_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()) && code == 0) code = 13;
  }
  ::_exit(code);
}

TEST(KernelCacheConcurrencyTest, EightProcessesCompilingAtOnceLoseNothingAndCompileEachKernelOnce) {
  std::string tmpl = (fs::temp_directory_path() / "kiln-compile-mp-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  int go[2], report[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(report), 0);

  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();  // before this process loads NVRTC or opens SQLite
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      ::close(report[0]);
      worker(dir, p, go[0], report[1]);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(report[1]);
  ::close(go[1]);  // release them all at once
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "process " << pid << " died";
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "process " << pid << " failed (10 runtime, 11 compile, 12 compiled twice, 13 counters)";
  }
  std::string reports;
  char buf[256];
  for (ssize_t got; (got = ::read(report[0], buf, sizeof(buf))) > 0;) reports.append(buf, static_cast<size_t>(got));
  ::close(report[0]);

  int64_t total_compiles = 0;
  int lines = 0;
  for (size_t pos = 0; pos < reports.size();) {
    const size_t end = reports.find('\n', pos);
    int p = -1;
    long long compiles = -1, hits = -1;
    ASSERT_EQ(std::sscanf(reports.substr(pos, end - pos).c_str(), "%d %lld %lld", &p, &compiles, &hits), 3) << reports;
    std::printf("process %d: %lld compiles, %lld cache hits\n", p, compiles, hits);
    total_compiles += compiles;
    ++lines;
    pos = end + 1;
  }
  EXPECT_EQ(lines, kProcesses);
  // Every kernel compiled at least once somewhere, and at most once per process that wanted it.
  EXPECT_GE(total_compiles, 1 + kProcesses);
  EXPECT_LE(total_compiles, kProcesses + 2 * kProcesses);

  // Nothing lost: a fresh runtime (a ninth process, as it were) finds every kernel in the cache.
  RuntimeOptions o;
  o.cache_dir = dir;
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  for (int index = 0; index < 1 + kProcesses; ++index) {
    auto k = compile(**rt, index);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_TRUE(k->from_cache) << kKernels[index].spec << " on " << kKernels[index].arch;
  }
  EXPECT_EQ((*rt)->counters().compiles, 0);
  EXPECT_EQ((*rt)->counters().cache_hits, 1 + kProcesses);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace kiln

// gpu tier: the `kiln` CLI end to end, as a user runs it (a child process; its exit codes are part
// of the contract: 0 ok, 1 error or failed check, 2 bad usage or spec, 3 no GPU).
// With a GPU, `kiln run --check` must pass; without one it must compile, print the report and exit
// 3, or 0 with --allow-no-gpu (the README's main-job command on CPU-only machines). The usage and
// spec error cases need no GPU and run everywhere.
// KILN_CLI_PATH comes from tools/CMakeLists.txt.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "runtime/driver/driver.hpp"

#ifndef KILN_CLI_PATH
#error "tools/CMakeLists.txt defines KILN_CLI_PATH for this test"
#endif

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln_cli_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs `kiln <args>` (args already shell-quoted) with a private cache.
  Result kiln(const std::string& args) {
    const auto out = dir_ / "stdout", err = dir_ / "stderr";
    // $KILN_CLI overrides the build tree's binary (a test binary carried to another machine).
    const char* cli = std::getenv("KILN_CLI");
    const std::string exe = (cli != nullptr && *cli != '\0') ? cli : KILN_CLI_PATH;
    const std::string cmd = "KILN_CACHE_DIR='" + (dir_ / "cache").string() + "' '" + exe + "' " + args +
                            " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  std::filesystem::path dir_;
};

bool has_gpu() { return kiln::Driver::get().ok(); }

TEST_F(CliTest, HelpAndVersionExitZero) {
  Result r = kiln("--help");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("compile"), std::string::npos) << r.out;
  EXPECT_EQ(kiln("run --help").code, 0);
  EXPECT_EQ(kiln("cache stats --help").code, 0);
  r = kiln("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_FALSE(r.out.empty());
}

TEST_F(CliTest, BadUsageExitsTwo) {
  Result r = kiln("");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  r = kiln("run 'gemm a=bf16 b=bf16 out=bf16' --m 64");  // --k is required
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--k"), std::string::npos) << r.err;
  r = kiln("run 'gemm a=bf16 b=bf16 out=bf16' --m 64 --k 64");  // a GEMM needs --n (a quantize spec does not)
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--n is required"), std::string::npos) << r.err;
  r = kiln("compile 'gemm a=bf16 b=bf16 out=bf16' --emit cubin");  // binary needs --out FILE
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  r = kiln("compile 'gemm a=bf16 b=bf16 out=bf16' --arch sm_70");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sm_70"), std::string::npos) << r.err;
}

TEST_F(CliTest, BadSpecExitsTwoWithLineAndColumn) {
  Result r = kiln("compile 'gemm a=e4m4 b=bf16 out=bf16'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("<spec>:1:8:"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "errors go to stderr only: " << r.out;

  std::ofstream(dir_ / "bad.kiln") << "# a comment\ngemm\n  a=bf16\n  b=e4m5\n  out=bf16\n";
  r = kiln("run '" + (dir_ / "bad.kiln").string() + "' --m 1 --n 64 --k 64");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.kiln:4:5:"), std::string::npos) << r.err;

  r = kiln("compile '" + (dir_ / "missing.kiln").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
}

TEST_F(CliTest, CacheCommandsOnAnEmptyCache) {
  Result r = kiln("cache stats --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"kernels\": 0"), std::string::npos) << r.out;
  EXPECT_EQ(kiln("cache list").code, 0);
  EXPECT_EQ(kiln("cache clear").code, 0);
}

TEST_F(CliTest, RunChecksOnGpuAndCompilesWithout) {
  const std::string spec = "'gemm a=bf16 b=bf16 out=bf16' --m 96 --n 128 --k 256";
  if (has_gpu()) {
    Result r = kiln("run " + spec + " --check --seed 11 --repeats 3");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("PASSED"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("seed       11"), std::string::npos) << r.out;
    return;
  }
  Result r = kiln("run " + spec + " --check");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("no GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("registers"), std::string::npos) << "the compile report is printed: " << r.out;
  r = kiln("run " + spec + " --check --allow-no-gpu --json");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\"gpu\": false"), std::string::npos) << r.out;
}

// --config pins one tile config: names as kiln prints them or JSON, refused with the rule they break
// (exit 2), compiled as given even where the plan would choose another (here MXFP8's dequantizing
// mainloop, block_k 64, with 2 stages where the plan takes 3), and with an sm_90 GPU run and checked.
TEST_F(CliTest, ConfigPinsOneTileConfig) {
  const std::string mx = "'gemm a=mxfp8 b=mxfp8 out=bf16'";
  Result r = kiln("compile 'gemm a=bf16 b=bf16 out=bf16' --arch sm_90a --config bm128_bn256_bk64_s3_w8x1");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("5 of the 6 required parts"), std::string::npos) << r.err;
  r = kiln("compile " + mx + " --arch sm_90a --config bm128_bn256_bk128_s3_w8x1_g8");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("promotes every 32-K step"), std::string::npos) << r.err;
  r = kiln("compile " + mx + " --arch sm_90a --config '{\"block_m\": 128}'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing field"), std::string::npos) << r.err;
  r = kiln("compile " + mx + " --arch sm_90a --m 4096 --n 7168 --k 7168 --config bm128_bn256_bk64_s2_w8x1_g8");
  EXPECT_EQ(r.code, 0) << r.err;
  // Two producer warpgroups (the dequantizing producer) beside two consumers.
  EXPECT_NE(r.out.find("bm128_bn256_bk64_s2_w8x1_g8 (512 threads)"), std::string::npos) << r.out;
  // A fresh compile lists ptxas's performance notes (none here: no serialized wgmma), unless NVRTC served the
  // program from its own cache (a machine with the driver that compiled it before): then it says so.
  EXPECT_TRUE(r.out.find("  ptxas      no performance notes") != std::string::npos ||
              r.out.find("  ptxas      n/a (NVRTC returned no ptxas report") != std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("registers  n/a"), std::string::npos) << r.out;  // read from the cubin if not the log
  r = kiln("compile " + mx + " --arch sm_90a --config "
           "'{\"block_m\": 256, \"block_n\": 128, \"block_k\": 64, \"stages\": 2, \"warps_m\": 8, "
           "\"warps_n\": 1, \"group_m\": 8}'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("bm256_bn128_bk64_s2_w8x1_g8"), std::string::npos) << r.out;
  if (!has_gpu() || kiln("compile " + mx).out.find("sm_90a") == std::string::npos) return;
  r = kiln("run " + mx + " --m 77 --n 200 --k 544 --check --repeats 3 --config bm128_bn256_bk64_s2_w8x1_g8");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASSED"), std::string::npos) << r.out;
}

// `kiln tune --json` lists every candidate it tried ("tried"): compiled only without timing (no GPU
// needed), and with a GPU each timed one's median, the fastest of which is the shape's winner.
TEST_F(CliTest, TuneJsonListsEveryCandidate) {
  const std::string shape =
      "--spec 'gemm a=bf16 b=bf16 out=bf16' --m 64 --n 256 --k 512 --max-candidates 3 --json";
  Result r = kiln("tune " + shape + " --gpu h200 --compile-only");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_array() && j.size() == 1) << r.out;
  ASSERT_TRUE(j[0]["tried"].is_array()) << r.out;
  EXPECT_EQ(j[0]["tried"].size(), j[0]["candidates"].get<size_t>());
  for (const auto& t : j[0]["tried"]) {
    EXPECT_EQ(t["outcome"], "compiled") << t.dump();
    EXPECT_TRUE(t["us"].is_null()) << t.dump();
    EXPECT_GT(t["registers"].get<int>(), 0) << t.dump();
  }
  if (!has_gpu()) return;
  r = kiln("tune " + shape + " --no-record --budget 120");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array() && j.size() == 1) << r.out;
  // The winner is a timed entry with the least median (ties go to the one timed first: compare times).
  double fastest = INFINITY, best_entry_us = INFINITY;
  for (const auto& t : j[0]["tried"]) {
    if (t["outcome"] != "timed") continue;
    ASSERT_TRUE(t["us"].is_number()) << t.dump();
    EXPECT_LT(t["rel_err"].get<double>(), 1e-2) << t.dump();
    fastest = std::min(fastest, t["us"].get<double>());
    if (t["config"] == j[0]["best_config"]) best_entry_us = t["us"].get<double>();
  }
  ASSERT_TRUE(std::isfinite(fastest)) << r.out;
  EXPECT_DOUBLE_EQ(best_entry_us, fastest) << r.out;
  EXPECT_DOUBLE_EQ(j[0]["best_us"].get<double>(), fastest);
}

}  // namespace

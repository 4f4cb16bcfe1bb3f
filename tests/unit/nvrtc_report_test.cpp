// parse_ptxas_report on program logs captured from NVRTC 13.0 (CUDA 13.0 toolkit, 2026-11-29) with
// -Xptxas=-v, plus the older layout. No NVRTC is loaded: the logs are embedded verbatim.
#include <gtest/gtest.h>

#include "compiler/nvrtc/nvrtc.hpp"

namespace kiln {
namespace {

// sm_90a, two entry functions: k2 with a local array (stack, no spills), k1 with static smem.
constexpr const char* kSm90aTwoKernels =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'k2' for 'sm_90a'\n"
    "ptxas info    : Function properties for k2\n"
    "ptxas         .     512 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 0 barriers, 512 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 25.411 ms\n"
    "ptxas info    : Compiling entry function 'k1' for 'sm_90a'\n"
    "ptxas info    : Function properties for k1\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 12 registers, used 1 barriers, 384 bytes smem\n"
    "ptxas info    : Compile time = 3.424 ms\n";

// sm_89: a warning line, cmem clauses, a template kernel (mangled name) and a kernel that spills
// under __launch_bounds__(1024, 2).
constexpr const char* kSm89Spilling =
    "ptxas warning : Value of threads per SM for entry spill is out of range. .minnctapersm will be ignored\n"
    "ptxas info    : 512 bytes gmem, 256 bytes cmem[3], 8 bytes cmem[4]\n"
    "ptxas info    : Compiling entry function '_Z2tkILi3EEvPi' for 'sm_89'\n"
    "ptxas info    : Function properties for _Z2tkILi3EEvPi\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 10 registers, used 1 barriers, 360 bytes cmem[0]\n"
    "ptxas info    : Compile time = 1.987 ms\n"
    "ptxas info    : Compiling entry function 'spill' for 'sm_89'\n"
    "ptxas info    : Function properties for spill\n"
    "ptxas         .     23224 bytes stack frame, 26640 bytes spill stores, 47152 bytes spill loads\n"
    "ptxas info    : Used 64 registers, used 0 barriers, 23224 bytes cumulative stack size, 360 bytes cmem[0]\n"
    "ptxas info    : Compile time = 10170.135 ms\n";

// The layout of earlier toolkits: the stack line indented with spaces, smem and cmem on the Used line.
constexpr const char* kOlderLayout =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'kiln_sm80_gemm' for 'sm_80'\n"
    "ptxas info    : Function properties for kiln_sm80_gemm\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 128 registers, used 1 barriers, 384 bytes smem, 400 bytes cmem[0]\n";

TEST(PtxasReportTest, TakesTheMaximumOverKernels) {
  CompileResult r;
  parse_ptxas_report(kSm90aTwoKernels, r);
  EXPECT_EQ(r.registers, 32);
  EXPECT_EQ(r.smem_static, 384);
  EXPECT_EQ(r.stack_frame, 512);
  EXPECT_EQ(r.spill_stores, 0);
  EXPECT_EQ(r.spill_loads, 0);
}

TEST(PtxasReportTest, ReadsSpillsAndIgnoresWarningsAndCmem) {
  CompileResult r;
  parse_ptxas_report(kSm89Spilling, r);
  EXPECT_EQ(r.registers, 64);
  EXPECT_EQ(r.smem_static, 0);  // reported kernels, none with static shared memory
  EXPECT_EQ(r.stack_frame, 23224);
  EXPECT_EQ(r.spill_stores, 26640);
  EXPECT_EQ(r.spill_loads, 47152);
}

TEST(PtxasReportTest, ReadsTheOlderLayout) {
  CompileResult r;
  parse_ptxas_report(kOlderLayout, r);
  EXPECT_EQ(r.registers, 128);
  EXPECT_EQ(r.smem_static, 384);
  EXPECT_EQ(r.stack_frame, 0);
  EXPECT_EQ(r.spill_stores, 0);
  EXPECT_EQ(r.spill_loads, 0);
}

TEST(PtxasReportTest, HandlesCrLfLineEnds) {
  std::string log = kSm90aTwoKernels;
  for (size_t pos = 0; (pos = log.find('\n', pos)) != std::string::npos; pos += 2) log.insert(pos, "\r");
  CompileResult r;
  parse_ptxas_report(log, r);
  EXPECT_EQ(r.registers, 32);
  EXPECT_EQ(r.smem_static, 384);
  EXPECT_EQ(r.stack_frame, 512);
}

TEST(PtxasReportTest, NoReportLeavesEverythingUnknown) {
  // A PTX-only (compute_XX) compile prints nothing; compiler diagnostics are not a report.
  for (const char* log : {"", "kiln_kernel.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n"}) {
    CompileResult r;
    r.registers = 7;  // stale values from an earlier parse are reset
    parse_ptxas_report(log, r);
    EXPECT_EQ(r.registers, -1) << log;
    EXPECT_EQ(r.smem_static, -1) << log;
    EXPECT_EQ(r.stack_frame, -1) << log;
    EXPECT_EQ(r.spill_stores, -1) << log;
    EXPECT_EQ(r.spill_loads, -1) << log;
  }
}

TEST(PtxasReportTest, NonEntryFunctionSpillsCount) {
  // A noinline device function gets its own properties block with no "Used" line.
  const char* log =
      "ptxas info    : Function properties for _Z6helperPf\n"
      "ptxas         .     64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers\n";
  CompileResult r;
  parse_ptxas_report(log, r);
  EXPECT_EQ(r.registers, 40);
  EXPECT_EQ(r.smem_static, 0);
  EXPECT_EQ(r.stack_frame, 64);
  EXPECT_EQ(r.spill_stores, 8);
  EXPECT_EQ(r.spill_loads, 8);
}

// ptxas's performance notes, as NVRTC 13.0 printed them for a serialized register-A wgmma kernel
// (bench/NOTES.md session 14): code and reason, without the prefix and the function name, once each.
TEST(PtxasReportTest, PerformanceNotes) {
  const std::string log =
      "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due "
      "to "
      "non wgmma instructions defining input registers of a wgmma between start and end of the pipeline "
      "stage in "
      "the function 'kiln_sm90_gemm'\n"
      "ptxas info    : 401 bytes gmem\n"
      "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due "
      "to "
      "non wgmma instructions defining input registers of a wgmma between start and end of the pipeline "
      "stage in "
      "the function 'kiln_sm90_gemm'\r\n"
      "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due "
      "to "
      "insufficient register resources for the function 'k2'\n"
      "ptxas info    : Used 128 registers, used 1 barriers\n";
  const std::vector<std::string> notes = ptxas_performance_notes(log);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0],
            "C7513: wgmma.mma_async instructions are serialized due to non wgmma instructions defining input "
            "registers of a wgmma between start and end of the pipeline stage");
  EXPECT_EQ(notes[1],
            "C7512: wgmma.mma_async instructions are serialized due to insufficient register resources");
  EXPECT_TRUE(ptxas_performance_notes(kSm90aTwoKernels).empty());
  EXPECT_TRUE(ptxas_performance_notes("").empty());
}

}  // namespace
}  // namespace kiln

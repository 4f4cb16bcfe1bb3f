// parse_ptxas_report on program logs captured from NVRTC 13.0 (CUDA 13.0 toolkit, 2026-11-29) with
// -Xptxas=-v, plus the older layout. No NVRTC is loaded: the logs are embedded verbatim.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

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
  CompiledKernel r;
  parse_ptxas_report(kSm90aTwoKernels, r);
  EXPECT_EQ(r.registers, 32);
  EXPECT_EQ(r.smem_static, 384);
  EXPECT_EQ(r.stack_frame, 512);
  EXPECT_EQ(r.spill_stores, 0);
  EXPECT_EQ(r.spill_loads, 0);
}

TEST(PtxasReportTest, ReadsSpillsAndIgnoresWarningsAndCmem) {
  CompiledKernel r;
  parse_ptxas_report(kSm89Spilling, r);
  EXPECT_EQ(r.registers, 64);
  EXPECT_EQ(r.smem_static, 0);  // reported kernels, none with static shared memory
  EXPECT_EQ(r.stack_frame, 23224);
  EXPECT_EQ(r.spill_stores, 26640);
  EXPECT_EQ(r.spill_loads, 47152);
}

TEST(PtxasReportTest, ReadsTheOlderLayout) {
  CompiledKernel r;
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
  CompiledKernel r;
  parse_ptxas_report(log, r);
  EXPECT_EQ(r.registers, 32);
  EXPECT_EQ(r.smem_static, 384);
  EXPECT_EQ(r.stack_frame, 512);
}

TEST(PtxasReportTest, HasAReportOnlyWithARegisterLine) {
  EXPECT_TRUE(has_ptxas_report(kSm90aTwoKernels));
  EXPECT_TRUE(has_ptxas_report(kOlderLayout));
  EXPECT_FALSE(has_ptxas_report(""));  // NVRTC's own cache: an empty log
  EXPECT_FALSE(has_ptxas_report(
      "kiln_kernel.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n"));
}

TEST(PtxasReportTest, NoReportLeavesEverythingUnknown) {
  // A PTX-only (compute_XX) compile prints nothing; compiler diagnostics are not a report.
  for (const char* log : {"", "kiln_kernel.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n"}) {
    CompiledKernel r;
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
  CompiledKernel r;
  parse_ptxas_report(log, r);
  EXPECT_EQ(r.registers, 40);
  EXPECT_EQ(r.smem_static, 0);
  EXPECT_EQ(r.stack_frame, 64);
  EXPECT_EQ(r.spill_stores, 8);
  EXPECT_EQ(r.spill_loads, 8);
}

// ptxas's performance notes, as NVRTC 13.0 printed them for a serialized register-A wgmma kernel
// (docs/performance.md): code and reason, without the prefix and the function name, once each.
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

// ---- read_cubin_resources: the cubin's .nv.info attributes (NVRTC's cache returns an empty log) ----

// A minimal ELF64 of three sections (null, .shstrtab, .nv.info) whose .nv.info holds `attrs` (raw bytes),
// laid out as a cubin is: header, section data, section headers.
std::string tiny_cubin(const std::string& attrs) {
  const std::string strtab = std::string("\0.shstrtab\0.nv.info\0", 20);
  std::string elf(64, '\0');
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F', elf[4] = 2, elf[5] = 1, elf[6] = 1;
  const uint64_t strtab_off = elf.size();
  elf += strtab;
  const uint64_t info_off = elf.size();
  elf += attrs;
  const uint64_t shoff = elf.size();
  auto put = [&](size_t at, auto v) { std::memcpy(&elf[at], &v, sizeof(v)); };
  put(0x28, shoff);
  put(0x3a, uint16_t{64});  // e_shentsize
  put(0x3c, uint16_t{3});   // e_shnum
  put(0x3e, uint16_t{1});   // e_shstrndx
  auto header = [&](uint32_t name, uint32_t type, uint64_t off, uint64_t size) {
    std::string h(64, '\0');
    std::memcpy(&h[0], &name, 4);
    std::memcpy(&h[4], &type, 4);
    std::memcpy(&h[0x18], &off, 8);
    std::memcpy(&h[0x20], &size, 8);
    elf += h;
  };
  header(0, 0, 0, 0);
  header(1, 3, strtab_off, strtab.size());
  header(11, 0x70000000, info_off, attrs.size());
  return elf;
}

// EIFMT_SVAL attribute attr with (symbol, value).
std::string sval(uint8_t attr, uint32_t symbol, uint32_t value) {
  std::string a = {4, static_cast<char>(attr), 8, 0};
  a.append(reinterpret_cast<const char*>(&symbol), 4);
  a.append(reinterpret_cast<const char*>(&value), 4);
  return a;
}

TEST(CubinResourcesTest, ReadsRegistersAndFrameFromNvInfo) {
  // As NVRTC 13.0 writes it for a kernel of 240 registers and no stack (plus an HVAL and an NVAL to skip).
  const std::string attrs = sval(0x2f, 0x94, 240) + std::string{3, 0x1b, 0x10, 0} + sval(0x11, 0x91, 0) +
                            sval(0x11, 0x94, 0) + std::string{1, 0x54, 0, 0} + sval(0x12, 0x94, 0);
  CompiledKernel r;
  ASSERT_TRUE(read_cubin_resources(tiny_cubin(attrs), r));
  EXPECT_EQ(r.registers, 240);
  EXPECT_EQ(r.stack_frame, 0);
  EXPECT_EQ(r.spill_stores, 0);  // no frame: nothing spilled
  EXPECT_EQ(r.spill_loads, 0);
  EXPECT_EQ(r.smem_static, -1);  // not read from the cubin
  // A frame leaves the spills unknown; fields the log already gave are kept.
  CompiledKernel f;
  f.smem_static = 384;
  ASSERT_TRUE(read_cubin_resources(tiny_cubin(sval(0x2f, 10, 32) + sval(0x11, 10, 256)), f));
  EXPECT_EQ(f.registers, 32);
  EXPECT_EQ(f.stack_frame, 256);
  EXPECT_EQ(f.spill_stores, -1);
  EXPECT_EQ(f.smem_static, 384);
}

TEST(CubinResourcesTest, RecordsOfEveryFormatAreSkippedWhole) {
  // NVAL (1: format, attribute, 2 unused bytes, as nvcc 13.0 writes `01 3e 00 00`), BVAL (2), HVAL (3) before
  // the register count; an unknown format byte ends the walk (what follows is not read as records).
  const std::string nval{1, 0x3e, 0, 0}, bval{2, 0x4c, 16, 0}, hval{3, 0x1b, 0x10, 0};
  CompiledKernel r;
  ASSERT_TRUE(read_cubin_resources(tiny_cubin(nval + bval + hval + sval(0x2f, 7, 96)), r));
  EXPECT_EQ(r.registers, 96);
  CompiledKernel stop;
  EXPECT_FALSE(read_cubin_resources(tiny_cubin(std::string{7, 0, 0, 0} + sval(0x2f, 7, 96)), stop));
  EXPECT_EQ(stop.registers, -1);
}

TEST(CubinResourcesTest, RefusesWhatIsNotACubinWithARegisterCount) {
  const std::string good = tiny_cubin(sval(0x2f, 1, 64));
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  std::string bad_shoff = good;
  const uint64_t far = 1ull << 40;
  std::memcpy(&bad_shoff[0x28], &far, 8);
  std::string bad_attr_size = tiny_cubin(std::string{4, 0x2f, 100, 0} + std::string(8, '\0'));
  std::string wrapping_shoff = good;  // section headers near 2^64: offsets must not wrap
  const uint64_t near_top = ~uint64_t{0} - 32;
  std::memcpy(&wrapping_shoff[0x28], &near_top, 8);
  for (const std::string& bytes :
       {std::string(), std::string("not an elf"), good.substr(0, 40), good.substr(0, good.size() - 40),
        bad_magic, bad_shoff, bad_attr_size, tiny_cubin(sval(0x11, 1, 0))}) {
    CompiledKernel r;
    EXPECT_FALSE(read_cubin_resources(bytes, r)) << bytes.size();
    EXPECT_EQ(r.registers, -1);
    EXPECT_EQ(r.stack_frame, -1);
    EXPECT_EQ(r.spill_stores, -1);
  }
}

}  // namespace
}  // namespace kiln

// compiler/nvrtc/nvrtc.hpp — CUDA C++ source -> cubin with NVRTC (dlopen'd), plus its resource report.
//
// NVRTC is loaded at first use with dlopen (libnvrtc.so.13, then libnvrtc.so; KILN_NVRTC_PATH
// overrides), so kiln links no CUDA library and an application with a warm cache needs no NVRTC.
// The embedded templates/ tree is handed to NVRTC as in-memory headers: nothing from the file
// system or the CUDA include path is visible to generated code.
//
//   KILN_ASSIGN_OR_RETURN(CompileResult r, kiln::compile_cuda(src, arch, {}));
//   // r.cubin, r.ptx, r.log, r.registers, r.smem_static, r.spill_stores, r.compile_ms
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/arch.hpp"

namespace kiln {

struct CompileOptions {
  bool want_ptx = false;              // also produce PTX (compile twice: compute_XX target)
  std::vector<std::string> extra;     // extra NVRTC options (sorted into the cache key)
};

struct CompileResult {
  std::string cubin;                  // ELF bytes
  std::string ptx;                    // when want_ptx
  std::string log;                    // NVRTC program log, includes -Xptxas=-v output
  int registers = -1;                 // per thread, from the ptxas report (-1: not reported)
  int smem_static = -1;               // bytes of static shared memory
  int stack_frame = -1;               // bytes
  int spill_stores = -1;              // bytes
  int spill_loads = -1;               // bytes
  double compile_ms = 0;
};

// Options kiln passes to NVRTC for arch (sorted; part of the cache key).
std::vector<std::string> nvrtc_options(const Arch& arch, const CompileOptions& opts);
StatusOr<CompileResult> compile_cuda(const std::string& source, const Arch& arch, const CompileOptions& opts);
// "13.0"; NO_DEVICE-free: only fails when NVRTC cannot be loaded (then COMPILE_ERROR naming the paths tried).
StatusOr<std::string> nvrtc_version();
// Parses a ptxas -v log into r (registers, smem, stack, spills). Exposed for unit tests.
void parse_ptxas_report(const std::string& log, CompileResult& r);
// Whether a program log holds ptxas's -v report. NVRTC's own cache (CUDA 12.9+, where the driver is
// installed) returns a program it compiled before with an empty log: then neither the report nor ptxas's
// performance notes are known, and "no notes" must not be said.
bool has_ptxas_report(const std::string& log);
// Fills r's fields the log left unset (-1) from the cubin's .nv.info attributes: registers and stack frame,
// and spills 0 where the frame is 0 (compiler/nvrtc/cubin_resources.cpp: NVRTC's own cache returns a
// cubin with an empty log). False, changing nothing, where the bytes are not a cubin with a register count.
bool read_cubin_resources(std::string_view cubin, CompileResult& r);
// ptxas's "Potential Performance Loss" notes in a log (e.g. C7513: wgmma.mma_async instructions are
// serialized ...), code and reason only ("C7513: wgmma.mma_async instructions are serialized due to ..."),
// without the "ptxas info" prefix and the function name; empty when there are none. ptxas prints them as
// info lines, not warnings, so a grep for warnings misses them.
std::vector<std::string> ptxas_performance_notes(const std::string& log);

}  // namespace kiln

// compiler/nvrtc/nvrtc.hpp — CUDA C++ source -> cubin with NVRTC (dlopen'd), plus its resource report.
//
// NVRTC is loaded at first use with dlopen (libnvrtc.so.13, then libnvrtc.so; KILN_NVRTC_PATH
// overrides), so kiln links no CUDA library and an application with a warm cache needs no NVRTC.
// The embedded templates/ tree is handed to NVRTC as in-memory headers: nothing from the file
// system or the CUDA include path is visible to generated code.
//
//   KILN_ASSIGN_OR_RETURN(CompiledKernel r, kiln::compile_cuda(src, arch, {}));
//   // r.cubin, r.ptx, r.log, r.registers, r.smem_static, r.spill_stores, r.compile_ms
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/arch.hpp"
#include "kiln/kernel.hpp"
#include "kiln/status.hpp"

namespace kiln {

struct CompileOptions {
  bool want_ptx = false;              // also produce PTX (compile twice: compute_XX target)
  std::vector<std::string> extra;     // extra NVRTC options (sorted into the cache key)
};

// Options kiln passes to NVRTC for arch (sorted; part of the cache key).
std::vector<std::string> nvrtc_options(const Arch& arch, const CompileOptions& opts);
// Fills the compiler's fields of the record (include/kiln/kernel.hpp): cubin, ptx (when
// opts.want_ptx), log, registers, smem_static, stack_frame, spill_stores, spill_loads, compile_ms;
// the resources are -1 where neither the ptxas report nor the cubin gives them. The rest stays default.
StatusOr<CompiledKernel> compile_cuda(const std::string& source, const Arch& arch,
                                      const CompileOptions& opts);
// "13.0"; NO_DEVICE-free: only fails when NVRTC cannot be loaded (then COMPILE_ERROR naming the paths tried).
StatusOr<std::string> nvrtc_version();
// Parses a ptxas -v log into r (registers, smem, stack, spills). Exposed for unit tests.
void parse_ptxas_report(const std::string& log, CompiledKernel& r);
// Whether a program log holds ptxas's -v report. NVRTC's own cache (CUDA 12.9+, where the driver is
// installed) returns a program it compiled before with an empty log: then neither the report nor ptxas's
// performance notes are known, and "no notes" must not be said.
bool has_ptxas_report(const std::string& log);
// Fills r's fields the log left unset (-1) from the cubin's .nv.info attributes: registers and stack frame,
// and spills 0 where the frame is 0 (compiler/nvrtc/cubin_resources.cpp: NVRTC's own cache returns a
// cubin with an empty log). False, changing nothing, where the bytes are not a cubin with a register count.
bool read_cubin_resources(std::string_view cubin, CompiledKernel& r);
// ptxas's "Potential Performance Loss" notes in a log (e.g. C7513: wgmma.mma_async instructions are
// serialized ...), code and reason only ("C7513: wgmma.mma_async instructions are serialized due to ..."),
// without the "ptxas info" prefix and the function name; empty when there are none. ptxas prints them as
// info lines, not warnings, so a grep for warnings misses them.
std::vector<std::string> ptxas_performance_notes(const std::string& log);

}  // namespace kiln

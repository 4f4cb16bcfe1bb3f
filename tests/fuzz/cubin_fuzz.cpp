// libFuzzer target for read_cubin_resources (compiler/nvrtc/cubin_resources.cpp), which walks the ELF
// section headers and the .nv.info records of bytes NVRTC returned: any input must be read without going
// out of bounds (ASan) or overflowing (UBSan), a refusal must change nothing, and an acceptance must give a
// register count (and no spills without a stack frame). A violation traps (a crash libFuzzer records).
// Built by scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined); see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "compiler/nvrtc/nvrtc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  kiln::CompiledKernel r;
  const bool ok = kiln::read_cubin_resources(bytes, r);
  const char* broken = nullptr;
  if (!ok && (r.registers != -1 || r.stack_frame != -1 || r.spill_stores != -1 || r.spill_loads != -1 ||
              r.smem_static != -1))
    broken = "a refused input changed the result";
  if (ok && r.registers < 0) broken = "an accepted input gave no register count";
  if (ok && r.stack_frame == 0 && (r.spill_stores != 0 || r.spill_loads != 0))
    broken = "no stack frame but spills not 0";
  if (ok && r.smem_static != -1) broken = "static shared memory read from a cubin";
  if (broken != nullptr) {
    std::fprintf(stderr, "cubin invariant violated: %s\n", broken);  // a test harness, not library code
    __builtin_trap();
  }
  return 0;
}

// compiler/nvrtc/cubin_resources.cpp — registers and stack frame from a cubin's ELF, for compiles whose
// program log holds no ptxas report.
//
// Why: NVRTC 13.0 on a machine with the CUDA driver keeps its own cache of compiled programs (the NVRTC
// guide's "Caching", CUDA 12.9+). A program it has compiled before, in any process, comes back with its
// cubin and an empty log (seen on an H200 machine, docs/performance.md: the second compile of the
// same source in one process, or a first compile in a new process, logged 0 bytes), so `-Xptxas=-v` says
// nothing and the report was "n/a". The cubin carries what ptxas reported in its .nv.info section, as
// EIFMT_SVAL attributes of (symbol index, value) pairs:
//   EIATTR_REGCOUNT (0x2f): registers per thread of a function;
//   EIATTR_FRAME_SIZE (0x11): bytes of its stack frame.
// Both were checked against the ptxas report of the same compile (tests/nvrtc: every kernel the tier
// compiles). A function without a stack frame has no local memory, so it cannot have spilled; with a
// frame the spill bytes are not in the cubin and stay unknown. Static shared memory is not read (the
// .nv.shared section also counts the 1 KB the sm_90 runtime reserves).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "compiler/nvrtc/nvrtc.hpp"

namespace kiln {
namespace {

// Record formats: every record starts with a format byte and an attribute byte. NVAL (1) carries 2 unused
// bytes, BVAL (2) and HVAL (3) a 2-byte value, SVAL (4) a 2-byte size and then that many bytes (seen in
// nvcc / NVRTC 13.0 cubins: `01 3e 00 00` is a whole NVAL record). Any other format byte ends the walk.
constexpr uint8_t kEifmtNval = 1, kEifmtBval = 2, kEifmtHval = 3;
constexpr uint8_t kEifmtSval = 4;
constexpr uint8_t kEiattrRegcount = 0x2f;
constexpr uint8_t kEiattrFrameSize = 0x11;

template <class T>
bool read(std::string_view d, uint64_t off, T& out) {
  if (off > d.size() || d.size() - off < sizeof(T)) return false;
  std::memcpy(&out, d.data() + off, sizeof(T));  // ELF64 little-endian, as every cubin is
  return true;
}

struct Section {
  uint32_t name = 0;
  uint64_t offset = 0, size = 0;
};

}  // namespace

bool read_cubin_resources(std::string_view cubin, CompiledKernel& r) {
  // ELF64 header: magic, class 2 (64-bit), data 1 (little-endian); section headers at e_shoff.
  if (cubin.size() < 64 ||
      cubin.substr(0, 4) != std::string_view("\x7f"
                                             "ELF",
                                             4) ||
      cubin[4] != 2 || cubin[5] != 1)
    return false;
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read(cubin, 0x28, shoff) || !read(cubin, 0x3a, shentsize) || !read(cubin, 0x3c, shnum) ||
      !read(cubin, 0x3e, shstrndx) || shentsize < 64 || shstrndx >= shnum)
    return false;
  // Every section header inside the bytes (so no offset below can wrap).
  if (shoff > cubin.size() || uint64_t{shnum} * shentsize > cubin.size() - shoff) return false;
  auto section = [&](uint16_t i, Section& s) {
    const uint64_t h = shoff + uint64_t{i} * shentsize;
    return read(cubin, h, s.name) && read(cubin, h + 0x18, s.offset) && read(cubin, h + 0x20, s.size) &&
           s.offset <= cubin.size() && s.size <= cubin.size() - s.offset;
  };
  Section names;
  if (!section(shstrndx, names)) return false;
  int registers = -1, frame = -1;
  for (uint16_t i = 0; i < shnum; ++i) {
    Section s;
    if (!section(i, s) || s.name >= names.size) continue;
    const std::string_view strtab = cubin.substr(names.offset, names.size);
    const std::string_view name = strtab.substr(s.name, strtab.find('\0', s.name) - s.name);
    if (name != ".nv.info") continue;
    // Attributes: format byte, attribute byte, then per format; only SVAL carries these two.
    const std::string_view info = cubin.substr(s.offset, s.size);
    for (uint64_t p = 0; p + 2 <= info.size();) {
      const uint8_t format = static_cast<uint8_t>(info[p]), attr = static_cast<uint8_t>(info[p + 1]);
      if (format == kEifmtNval || format == kEifmtBval || format == kEifmtHval) {
        p += 4;
        continue;
      }
      if (format != kEifmtSval) break;  // not a record: stop rather than read misaligned bytes
      uint16_t size = 0;
      if (!read(info, p + 2, size) || info.size() - (p + 4) < size) break;
      uint32_t value = 0;
      if (size >= 8 && read(info, p + 8, value)) {
        if (attr == kEiattrRegcount) registers = std::max(registers, static_cast<int>(value));
        if (attr == kEiattrFrameSize) frame = std::max(frame, static_cast<int>(value));
      }
      p += 4 + size;
    }
  }
  if (registers < 0) return false;
  if (r.registers < 0) r.registers = registers;
  if (r.stack_frame < 0) r.stack_frame = frame;
  if (frame == 0) {
    if (r.spill_stores < 0) r.spill_stores = 0;
    if (r.spill_loads < 0) r.spill_loads = 0;
  }
  return true;
}

}  // namespace kiln

// compiler/nvrtc/ptxas_report.cpp — reads registers, shared memory, stack and spills from `-Xptxas=-v`.
//
// What NVRTC 13.0 prints (observed 2026-11-29 with the CUDA 13.0 toolkit, one block per entry function;
// non-entry functions that are not inlined get a "Function properties" block without a "Used" line):
//
//   ptxas info    : 0 bytes gmem
//   ptxas info    : Compiling entry function 'k1' for 'sm_90a'
//   ptxas info    : Function properties for k1
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 12 registers, used 1 barriers, 384 bytes smem
//   ptxas info    : Compile time = 3.424 ms
//
// Older toolkits indent the stack line with spaces instead of "ptxas         .", and for sm_8x the
// "Used" line ends with ", 360 bytes cmem[0]"; clauses are absent when zero (no "bytes smem" for a
// kernel without static shared memory). The parser therefore keys on the clause text ("Used N
// registers", "N bytes smem", "N bytes stack frame", ...) wherever it sits in a line, and reports the
// maximum over all functions of the program: a spill in any of them is a spill of the kernel.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/nvrtc/nvrtc.hpp"

namespace kiln {
namespace {

// The decimal number that ends right before `pos` in line (skipping spaces), or -1.
int number_before(std::string_view line, size_t pos) {
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end || end - begin > 9) return -1;
  return std::stoi(std::string(line.substr(begin, end - begin)));
}

// The decimal number that starts right after `pos` in line (skipping spaces), or -1.
int number_after(std::string_view line, size_t pos) {
  size_t begin = pos;
  while (begin < line.size() && line[begin] == ' ') ++begin;
  size_t end = begin;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  if (begin == end || end - begin > 9) return -1;
  return std::stoi(std::string(line.substr(begin, end - begin)));
}

// Value of "<N> <clause>" in line, or -1 when the clause is absent.
int clause_value(std::string_view line, std::string_view clause) {
  size_t pos = line.find(clause);
  if (pos == std::string_view::npos) return -1;
  return number_before(line, pos);
}

void keep_max(int& field, int value) {
  if (value > field) field = value;
}

}  // namespace

void parse_ptxas_report(const std::string& log, CompiledKernel& r) {
  r.registers = r.smem_static = r.stack_frame = r.spill_stores = r.spill_loads = -1;
  std::string_view rest(log);
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find("ptxas") == std::string_view::npos && line.find("bytes stack frame") == std::string_view::npos) {
      continue;  // compiler warnings and other chatter
    }

    // "Used 128 registers, used 1 barriers, 384 bytes smem, 400 bytes cmem[0]"
    static constexpr std::string_view kUsed = "Used ";
    if (size_t pos = line.find(kUsed); pos != std::string_view::npos &&
                                       line.find(" registers", pos) != std::string_view::npos) {
      keep_max(r.registers, number_after(line, pos + kUsed.size()));
      // A kernel with a report but no smem clause uses no static shared memory.
      keep_max(r.smem_static, 0);
      keep_max(r.smem_static, clause_value(line, "bytes smem"));
    }
    // "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
    if (line.find("bytes stack frame") != std::string_view::npos) {
      keep_max(r.stack_frame, clause_value(line, "bytes stack frame"));
      keep_max(r.spill_stores, clause_value(line, "bytes spill stores"));
      keep_max(r.spill_loads, clause_value(line, "bytes spill loads"));
    }
  }
}

bool has_ptxas_report(const std::string& log) {
  CompiledKernel r;
  parse_ptxas_report(log, r);
  return r.registers >= 0;
}

std::vector<std::string> ptxas_performance_notes(const std::string& log) {
  // "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due
  //  to ... in the function 'kiln_sm90_gemm'"
  static constexpr std::string_view kMark = "Potential Performance Loss:";
  std::vector<std::string> notes;
  std::string_view rest(log);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const size_t mark = line.find(kMark);
    if (mark == std::string_view::npos) continue;
    std::string note;
    const size_t open = line.rfind('(', mark);
    const size_t close = open == std::string_view::npos ? open : line.find(')', open);
    if (close != std::string_view::npos && close < mark)
      note = std::string(line.substr(open + 1, close - open - 1)) + ": ";
    std::string_view reason = line.substr(mark + kMark.size());
    while (!reason.empty() && reason.front() == ' ') reason.remove_prefix(1);
    while (!reason.empty() && (reason.back() == '\r' || reason.back() == ' ')) reason.remove_suffix(1);
    for (const std::string_view suffix :
         {std::string_view(" in the function '"), std::string_view(" for the function '")}) {
      if (const size_t fn = reason.rfind(suffix); fn != std::string_view::npos) reason = reason.substr(0, fn);
    }
    note += std::string(reason);
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  }
  return notes;
}

}  // namespace kiln

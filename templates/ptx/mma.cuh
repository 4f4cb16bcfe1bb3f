// templates/ptx/mma.cuh — warp-level mma.sync wrappers with f32 accumulators.
//
// PTX ISA §9.7.14.5.14 "mma". D = A * B + C for one warp, A row-major (M x K), B "col" (K x N stored
// N-major, i.e. rows of W[N, K] with K contiguous — what a K-contiguous weight is).
//   m16n8k16 .bf16/.f16 (sm_80+): A = 4 x b32 (8 elements), B = 2 x b32 (4 elements), C/D = 4 x f32.
//   m16n8k32 .e4m3/.e5m2 (sm_89+, PTX ISA 8.4): A = 4 x b32 (16 elements), B = 2 x b32 (8 elements).
// Accumulator layout (both shapes): c0, c1 at row lane/4, cols 2*(lane%4) + {0,1}; c2, c3 at row
// lane/4 + 8, same cols (§9.7.14.5.8, §9.7.14.5.10).
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// FP8 x FP8 with any combination of e4m3 / e5m2 for A and B. Only instantiate for sm_89+ targets:
// ptxas rejects these opcodes below sm_89. (Four spelled-out asm statements: the type names are part
// of the opcode string, which must be a literal.)
template <Format kA, Format kB>
__device__ __forceinline__ void mma_m16n8k32_fp8(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
  static_assert(format_is_fp8(kA) && format_is_fp8(kB), "m16n8k32 fp8 mma takes e4m3/e5m2 operands only");
  if constexpr (kA == Format::kE4m3 && kB == Format::kE4m3) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (kA == Format::kE4m3 && kB == Format::kE5m2) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (kA == Format::kE5m2 && kB == Format::kE4m3) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

}  // namespace kiln_dev

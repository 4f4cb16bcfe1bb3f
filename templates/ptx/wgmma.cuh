// templates/ptx/wgmma.cuh — warpgroup MMA (sm_90a): descriptors, fences, and the m64nNk16/k32 opcodes.
//
// PTX ISA §9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate". A warpgroup (4
// consecutive warps, the first one's index divisible by 4) issues
//     wgmma.mma_async.sync.aligned.m64nNkK.f32.<a>.<b>  d, a-desc, b-desc, scale-d, ...
// computing D[64 x N] (+)= A[64 x K] * B[K x N] with A and B read from shared memory through 64-bit
// matrix descriptors and D in registers: K = 16 for bf16/f16, 32 for e4m3/e5m2 (§9.7.15.5.1). kiln
// reads FP8 operands in the "no transpose" (K-major) form only — for FP8 it is the only form — i.e.
// rows of X[M, K] and of W[N, K], K contiguous, exactly what TMA copies (ptx/tma.cuh). 16-bit operands
// may also be MN-major (trans-a / trans-b = 1): the backward passes read dY, W and X along their stored
// rows (compiler/plan/gemm_view.hpp).
//
// Matrix descriptor (§9.7.15.5.1.2.2 "Matrix Descriptor Format"), 64 bits:
//     bits  0-13  start address >> 4 (shared::cta address, 16-byte aligned)
//     bits 16-29  leading-dimension byte offset >> 4 (LBO)
//     bits 32-45  stride-dimension byte offset >> 4 (SBO)
//     bits 49-51  matrix base offset (0: the swizzle pattern starts at a 1024-byte boundary)
//     bits 62-63  swizzle: 0 none, 1 = 128-byte, 2 = 64-byte, 3 = 32-byte
// For a K-major tile in the 128-byte swizzle (rows of 128 bytes, 16-byte chunk j of row r stored at
// chunk j ^ (r % 8): what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B), the "core matrices" are 8 rows
// x 16 bytes; SBO = 1024 is the distance between consecutive groups of 8 rows; LBO (the distance
// between core matrices along K) is implied by the swizzle inside one 128-byte row and is unused
// because one instruction reads only 32 bytes of K (set to 1 by convention). The k-th 32-byte step of a
// 128-byte K tile is addressed by advancing the start address by 32 * k bytes: the hardware applies
// the XOR swizzle to the final address bits (bits 4-6 ^= bits 7-9), so with a 1024-aligned tile base
// the advanced start still selects the right chunks of every row.
// An MN-major tile in the 128-byte swizzle (§9.7.15.5.1.2.1, the MN-major canonical layouts: 16-bit
// elements, T = 8 per 16 bytes, ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))) is stored as chunks of 64
// MN elements: each chunk holds K rows of 128 bytes (one TMA box of 64 MN x K rows, swizzled as above),
// chunk after chunk. LBO is the distance between chunks along MN, SBO = 1024 the distance between groups
// of 8 K rows; one k16 step is 16 rows further (2048 bytes).
//
// Accumulator fragment (§9.7.15.5.1.1 "Register Fragments", figure "WGMMA .m64nNk16 register fragment
// layout for accumulator matrix D"; the k32 FP8 shapes use the same D layout): N/2 f32 registers per
// thread. With w = warp index within the warpgroup, g = lane / 4, t = lane % 4, register i holds
//     row = 16 * w + g + 8 * ((i / 2) % 2),   col = 8 * (i / 4) + 2 * t + (i % 2),
// i.e. per n8 block j: d[4j], d[4j+1] at (16w + g, 8j + 2t + {0,1}), d[4j+2], d[4j+3] at row + 8 —
// the m16n8 mma.sync accumulator layout, one m16 slab per warp.
//
// Ordering (§9.7.15.6-8): wgmma.fence before the first wgmma of a batch whose accumulators the thread
// touched otherwise; commit_group closes a batch; wait_group N returns once at most N batches are in
// flight — only then may the registers be read or the shared memory be overwritten. The compiler
// knows none of this, so wgmma_fence_operands() pins the accumulator registers around the async
// region (an empty asm that "modifies" each register keeps reads and writes from moving across it).
//
// The operand lists are spelled with macros: an asm statement needs one literal template string and
// one constraint per register (up to 128 for N = 256), which no C++ template can generate. The macros
// are #undef'd at the end of this header.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

// Descriptor of a K-major tile at shared address `addr` in the 128-byte swizzle (see above).
__device__ __forceinline__ u64 wgmma_desc_sw128(u32 addr) {
  return u64((addr & 0x3FFFFu) >> 4) | (u64(1) << 16) | (u64(1024 >> 4) << 32) | (u64(1) << 62);
}

// Descriptor of an MN-major tile at `addr` in the 128-byte swizzle whose 64-element MN chunks lie
// chunk_bytes apart (see above).
__device__ __forceinline__ u64 wgmma_desc_sw128_mn(u32 addr, u32 chunk_bytes) {
  return u64((addr & 0x3FFFFu) >> 4) | (u64(chunk_bytes >> 4) << 16) | (u64(1024 >> 4) << 32) | (u64(1) << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  static_assert(kPending >= 0 && kPending <= 7, "wgmma.wait_group takes 0..7");
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

template <int kRegs>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// setmaxnreg (§9.7.19.5, sm_90a): the warpgroup gives back registers down to / asks for registers up to
// the count (a multiple of 8 in 24..256). Takes effect only under a register cap at kernel entry
// (__launch_bounds__(threads, 1)); ptxas warns (C7508) when it cannot honour it.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg: a multiple of 8 in 24..256");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg: a multiple of 8 in 24..256");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

#define KILN_WG_D32                                                                            \
  "{"                                                                                          \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"                                 \
  "}"
#define KILN_WG_D64                                                                            \
  "{"                                                                                          \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, " \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
  "%56, %57, %58, %59, %60, %61, %62, %63"                                                     \
  "}"
#define KILN_WG_D128                                                                           \
  "{"                                                                                          \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, " \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
  "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, " \
  "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, " \
  "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "   \
  "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, " \
  "%123, %124, %125, %126, %127"                                                               \
  "}"
// N = 96 .. 208 (tiles that are not powers of two, so 132 SMs fill): N / 2 registers each, spelled from
// runs of 8 operand numbers.
#define KILN_WG_R0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define KILN_WG_R1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define KILN_WG_R2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define KILN_WG_R3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define KILN_WG_R4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define KILN_WG_R5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define KILN_WG_R6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define KILN_WG_R7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define KILN_WG_R8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define KILN_WG_R9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define KILN_WG_R10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define KILN_WG_R11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define KILN_WG_R12 "%96, %97, %98, %99, %100, %101, %102, %103"
// P<k>: the first k runs, comma-separated.
#define KILN_WG_P1 KILN_WG_R0
#define KILN_WG_P2 KILN_WG_P1 ", " KILN_WG_R1
#define KILN_WG_P3 KILN_WG_P2 ", " KILN_WG_R2
#define KILN_WG_P4 KILN_WG_P3 ", " KILN_WG_R3
#define KILN_WG_P5 KILN_WG_P4 ", " KILN_WG_R4
#define KILN_WG_P6 KILN_WG_P5 ", " KILN_WG_R5
#define KILN_WG_P7 KILN_WG_P6 ", " KILN_WG_R6
#define KILN_WG_P8 KILN_WG_P7 ", " KILN_WG_R7
#define KILN_WG_P9 KILN_WG_P8 ", " KILN_WG_R8
#define KILN_WG_P10 KILN_WG_P9 ", " KILN_WG_R9
#define KILN_WG_P11 KILN_WG_P10 ", " KILN_WG_R10
#define KILN_WG_P12 KILN_WG_P11 ", " KILN_WG_R11
#define KILN_WG_P13 KILN_WG_P12 ", " KILN_WG_R12
#define KILN_WG_D48 "{" KILN_WG_P6 "}"
#define KILN_WG_D56 "{" KILN_WG_P7 "}"
#define KILN_WG_D72 "{" KILN_WG_P9 "}"
#define KILN_WG_D80 "{" KILN_WG_P10 "}"
#define KILN_WG_D88 "{" KILN_WG_P11 "}"
#define KILN_WG_D96 "{" KILN_WG_P12 "}"
#define KILN_WG_D104 "{" KILN_WG_P13 "}"
#define KILN_WG_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define KILN_WG_F16(i) KILN_WG_F4(i), KILN_WG_F4(i + 4), KILN_WG_F4(i + 8), KILN_WG_F4(i + 12)
#define KILN_WG_F32(i) KILN_WG_F16(i), KILN_WG_F16(i + 16)
#define KILN_WG_F64(i) KILN_WG_F32(i), KILN_WG_F32(i + 32)
#define KILN_WG_F128(i) KILN_WG_F64(i), KILN_WG_F64(i + 64)
// One wgmma: OP = opcode, DLIST = "{%0, ...}", DA/DB/SC = the operand numbers of the descriptors and of
// scale-d (after the accumulators), TAIL = the immediates (scale-a, scale-b[, trans-a, trans-b]).
#define KILN_WGMMA(OP, DLIST, DA, DB, SC, TAIL, ...)                                              \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" SC ", 0;\n " OP " " DLIST ", %" DA ", %" DB \
               ", p, " TAIL ";\n}\n"                                                              \
               : __VA_ARGS__                                                                      \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))
#define KILN_WG_T16 "1, 1, 0, 0" /* scale-a, scale-b = +1; trans-a, trans-b = 0 (K-major) */
#define KILN_WG_T16_B "1, 1, 0, 1"  /* B MN-major */
#define KILN_WG_T16_AB "1, 1, 1, 1" /* A and B MN-major */
#define KILN_WG_T16_A "1, 1, 1, 0"  /* A MN-major */
// A 16-bit opcode with the transpose immediates of (kTA, kTB).
#define KILN_WG_16(OP, DLIST, DA, DB, SC, ...)                                    \
  if constexpr (!kTA && !kTB) {                                                   \
    KILN_WGMMA(OP, DLIST, DA, DB, SC, KILN_WG_T16, __VA_ARGS__);                  \
  } else if constexpr (!kTA) {                                                    \
    KILN_WGMMA(OP, DLIST, DA, DB, SC, KILN_WG_T16_B, __VA_ARGS__);                \
  } else if constexpr (kTB) {                                                     \
    KILN_WGMMA(OP, DLIST, DA, DB, SC, KILN_WG_T16_AB, __VA_ARGS__);               \
  } else {                                                                        \
    KILN_WGMMA(OP, DLIST, DA, DB, SC, KILN_WG_T16_A, __VA_ARGS__);                \
  }
#define KILN_WG_T8 "1, 1"        /* FP8: no transpose operands (K-major only) */
// The six operand pairings of one N (the opcode spelled from N: string literals concatenate).
#define KILN_WG_ALL(N, DLIST, DA, DB, SC, ...)                                                                  \
  if constexpr (kA == Format::kBf16 && kB == Format::kBf16) {                                                  \
    KILN_WG_16("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16", DLIST, DA, DB, SC, __VA_ARGS__)        \
  } else if constexpr (kA == Format::kF16 && kB == Format::kF16) {                                             \
    KILN_WG_16("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16", DLIST, DA, DB, SC, __VA_ARGS__)          \
  } else if constexpr (kA == Format::kE4m3 && kB == Format::kE4m3) {                                           \
    KILN_WGMMA("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3", DLIST, DA, DB, SC, KILN_WG_T8, __VA_ARGS__);  \
  } else if constexpr (kA == Format::kE4m3 && kB == Format::kE5m2) {                                           \
    KILN_WGMMA("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e5m2", DLIST, DA, DB, SC, KILN_WG_T8, __VA_ARGS__);  \
  } else if constexpr (kA == Format::kE5m2 && kB == Format::kE4m3) {                                           \
    KILN_WGMMA("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e4m3", DLIST, DA, DB, SC, KILN_WG_T8, __VA_ARGS__);  \
  } else {                                                                                                     \
    KILN_WGMMA("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e5m2", DLIST, DA, DB, SC, KILN_WG_T8, __VA_ARGS__);  \
  }


// D[64 x kN] (+)= A[64 x K] * B[K x kN] for one warpgroup; K = 16 (bf16, f16) or 32 (e4m3/e5m2 in
// any mix). scale_d = 0 ignores the incoming D (the first k-step of a tile), 1 accumulates. kTA / kTB:
// A / B MN-major (16-bit operands only).
template <int kN, Format kA, Format kB, bool kTA = false, bool kTB = false>
__device__ __forceinline__ void wgmma_m64(float (&d)[kN / 2], u64 desc_a, u64 desc_b, u32 scale_d) {
  static_assert(!(kTA || kTB) || format_is_16bit(kA), "wgmma_m64: MN-major operands are 16-bit only");
  static_assert(kN == 64 || kN == 96 || kN == 112 || kN == 128 || kN == 144 || kN == 160 || kN == 192 ||
                    kN == 176 || kN == 208 || kN == 256,
                "wgmma_m64: N = 64, 96, 112, 128, 144, 160, 176, 192, 208 or 256");
  static_assert((format_is_16bit(kA) && kA == kB) || (format_is_fp8(kA) && format_is_fp8(kB)),
                "wgmma_m64: two bf16, two f16, or two FP8 (e4m3/e5m2) operands");
  if constexpr (kN == 64) {
    KILN_WG_ALL(64, KILN_WG_D32, "32", "33", "34", KILN_WG_F32(0))
  } else if constexpr (kN == 96) {
    KILN_WG_ALL(96, KILN_WG_D48, "48", "49", "50", KILN_WG_F32(0), KILN_WG_F16(32))
  } else if constexpr (kN == 112) {
    KILN_WG_ALL(112, KILN_WG_D56, "56", "57", "58", KILN_WG_F32(0), KILN_WG_F16(32), KILN_WG_F4(48), KILN_WG_F4(52))
  } else if constexpr (kN == 128) {
    KILN_WG_ALL(128, KILN_WG_D64, "64", "65", "66", KILN_WG_F64(0))
  } else if constexpr (kN == 144) {
    KILN_WG_ALL(144, KILN_WG_D72, "72", "73", "74", KILN_WG_F64(0), KILN_WG_F4(64), KILN_WG_F4(68))
  } else if constexpr (kN == 160) {
    KILN_WG_ALL(160, KILN_WG_D80, "80", "81", "82", KILN_WG_F64(0), KILN_WG_F16(64))
  } else if constexpr (kN == 176) {
    KILN_WG_ALL(176, KILN_WG_D88, "88", "89", "90", KILN_WG_F64(0), KILN_WG_F16(64), KILN_WG_F4(80), KILN_WG_F4(84))
  } else if constexpr (kN == 192) {
    KILN_WG_ALL(192, KILN_WG_D96, "96", "97", "98", KILN_WG_F64(0), KILN_WG_F32(64))
  } else if constexpr (kN == 208) {
    KILN_WG_ALL(208, KILN_WG_D104, "104", "105", "106", KILN_WG_F64(0), KILN_WG_F32(64), KILN_WG_F4(96), KILN_WG_F4(100))
  } else if constexpr (kN == 256) {
    KILN_WG_ALL(256, KILN_WG_D128, "128", "129", "130", KILN_WG_F128(0))
  }
}

// D[64 x kN] += A[64 x 32] * B[32 x kN] with A in registers (FP8, kN = 8 or 16 tokens; the warpgroup
// decode kernel, kernels/sm90_decode.cuh). A fragment (the m16n8k32 A layout of mma.sync, one m16 slab
// per warp, §9.7.15.5.1.1): a[0] = row g, k bytes 4t..4t+3; a[1] = row g + 8, same k; a[2] = row g, k
// 16 + 4t..; a[3] = row g + 8, k 16 + 4t... The registers are read asynchronously: the caller keeps
// them (and d) unchanged until wgmma_wait returns (wgmma_fence_regs pins them for the compiler).
// TAIL: the immediates after scale-d (KILN_WG_T8 for FP8; KILN_WG_RS_T16 for 16-bit operands).
#define KILN_WG_RS(OP, DLIST, AREG, DB, SC, TAIL, ...)                                             \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" SC ", 0;\n " OP " " DLIST ", " AREG ", %" DB \
               ", p, " TAIL ";\n}\n"                                                               \
               : __VA_ARGS__                                                                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d))
#define KILN_WG_RS_T16 "1, 1, 0" /* scale-a, scale-b = +1; trans-b = 0 (K-major B) */
#define KILN_WG_RS_ALL(N, DLIST, AREG, DB, SC, ...)                                                         \
  if constexpr (kReg == Format::kE4m3 && kDesc == Format::kE4m3) {                                          \
    KILN_WG_RS("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3", DLIST, AREG, DB, SC, KILN_WG_T8, \
               __VA_ARGS__);                                                                                \
  } else if constexpr (kReg == Format::kE4m3 && kDesc == Format::kE5m2) {                                   \
    KILN_WG_RS("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e5m2", DLIST, AREG, DB, SC, KILN_WG_T8, \
               __VA_ARGS__);                                                                                \
  } else if constexpr (kReg == Format::kE5m2 && kDesc == Format::kE4m3) {                                   \
    KILN_WG_RS("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e4m3", DLIST, AREG, DB, SC, KILN_WG_T8, \
               __VA_ARGS__);                                                                                \
  } else {                                                                                                  \
    KILN_WG_RS("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e5m2", DLIST, AREG, DB, SC, KILN_WG_T8, \
               __VA_ARGS__);                                                                                \
  }
// kReg: the register operand's format (A), kDesc: the descriptor operand's (B); scale_d = 0 ignores d.
template <int kN, Format kReg, Format kDesc>
__device__ __forceinline__ void wgmma_m64_rs(float (&d)[kN / 2], const u32 (&a)[4], u64 desc_b, u32 scale_d) {
  static_assert(kN == 8 || kN == 16, "wgmma_m64_rs: N = 8 or 16");
  static_assert(format_is_fp8(kReg) && format_is_fp8(kDesc), "wgmma_m64_rs: two FP8 (e4m3/e5m2) operands");
  if constexpr (kN == 8) {
    KILN_WG_RS_ALL(8, "{%0, %1, %2, %3}", "{%4, %5, %6, %7}", "8", "9", KILN_WG_F4(0))
  } else {
    KILN_WG_RS_ALL(16, "{%0, %1, %2, %3, %4, %5, %6, %7}", "{%8, %9, %10, %11}", "12", "13", KILN_WG_F4(0),
                   KILN_WG_F4(4))
  }
}

// D[64 x kN] += A[64 x 16] * B[16 x kN], 16-bit operands, A in registers (MXFP8's register-A
// dequantizing mainloop): the m16n8k16 A layout per warp (PTX ISA wgmma register fragments):
// a[0] = row g, k 2t..2t+1; a[1] = row g + 8, same k; a[2] = row g, k 2t+8..2t+9; a[3] = row g + 8, same.
// B is K-major in shared memory (trans-b 0). The registers are read asynchronously (wgmma_fence_regs).
#define KILN_WG_RS16_FMT(N, DLIST, AREG, DB, SC, ...)                                           \
  if constexpr (kFmt == Format::kBf16) {                                                        \
    KILN_WG_RS("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16", DLIST, AREG, DB, SC, \
               KILN_WG_RS_T16, __VA_ARGS__);                                                    \
  } else {                                                                                      \
    KILN_WG_RS("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16", DLIST, AREG, DB, SC,   \
               KILN_WG_RS_T16, __VA_ARGS__);                                                    \
  }
template <int kN, Format kFmt>
__device__ __forceinline__ void wgmma_m64_rs16(float (&d)[kN / 2], const u32 (&a)[4], u64 desc_b, u32 scale_d) {
  static_assert(kFmt == Format::kBf16 || kFmt == Format::kF16, "wgmma_m64_rs16: bf16 or f16");
  if constexpr (kN == 64) {
    KILN_WG_RS16_FMT(64, KILN_WG_D32, "{%32, %33, %34, %35}", "36", "37", KILN_WG_F32(0))
  } else if constexpr (kN == 96) {
    KILN_WG_RS16_FMT(96, KILN_WG_D48, "{%48, %49, %50, %51}", "52", "53", KILN_WG_F32(0), KILN_WG_F16(32))
  } else if constexpr (kN == 112) {
    KILN_WG_RS16_FMT(112, KILN_WG_D56, "{%56, %57, %58, %59}", "60", "61", KILN_WG_F32(0), KILN_WG_F16(32),
                     KILN_WG_F4(48), KILN_WG_F4(52))
  } else if constexpr (kN == 128) {
    KILN_WG_RS16_FMT(128, KILN_WG_D64, "{%64, %65, %66, %67}", "68", "69", KILN_WG_F64(0))
  } else if constexpr (kN == 144) {
    KILN_WG_RS16_FMT(144, KILN_WG_D72, "{%72, %73, %74, %75}", "76", "77", KILN_WG_F64(0), KILN_WG_F4(64),
                     KILN_WG_F4(68))
  } else if constexpr (kN == 160) {
    KILN_WG_RS16_FMT(160, KILN_WG_D80, "{%80, %81, %82, %83}", "84", "85", KILN_WG_F64(0), KILN_WG_F16(64))
  } else if constexpr (kN == 176) {
    KILN_WG_RS16_FMT(176, KILN_WG_D88, "{%88, %89, %90, %91}", "92", "93", KILN_WG_F64(0), KILN_WG_F16(64),
                     KILN_WG_F4(80), KILN_WG_F4(84))
  } else if constexpr (kN == 192) {
    KILN_WG_RS16_FMT(192, KILN_WG_D96, "{%96, %97, %98, %99}", "100", "101", KILN_WG_F64(0), KILN_WG_F32(64))
  } else if constexpr (kN == 208) {
    KILN_WG_RS16_FMT(208, KILN_WG_D104, "{%104, %105, %106, %107}", "108", "109", KILN_WG_F64(0),
                     KILN_WG_F32(64), KILN_WG_F4(96), KILN_WG_F4(100))
  } else {
    static_assert(kN == 256, "wgmma_m64_rs16: N = 64, 96, 112, 128, 144, 160, 176, 192, 208 or 256");
    KILN_WG_RS16_FMT(256, KILN_WG_D128, "{%128, %129, %130, %131}", "132", "133", KILN_WG_F128(0))
  }
}
#undef KILN_WG_RS16_FMT

// Pins registers that an asynchronous wgmma reads (its A fragments) until this point.
template <int kRegs>
__device__ __forceinline__ void wgmma_fence_regs(u32 (&r)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

#undef KILN_WG_RS_ALL
#undef KILN_WG_RS
#undef KILN_WG_RS_T16
#undef KILN_WG_ALL
#undef KILN_WG_16
#undef KILN_WG_T8
#undef KILN_WG_T16_A
#undef KILN_WG_T16_AB
#undef KILN_WG_T16_B
#undef KILN_WG_T16
#undef KILN_WGMMA
#undef KILN_WG_F128
#undef KILN_WG_F64
#undef KILN_WG_F32
#undef KILN_WG_F16
#undef KILN_WG_F4
#undef KILN_WG_D128
#undef KILN_WG_D64
#undef KILN_WG_D48
#undef KILN_WG_D56
#undef KILN_WG_D72
#undef KILN_WG_D80
#undef KILN_WG_D88
#undef KILN_WG_D96
#undef KILN_WG_D104
#undef KILN_WG_D32
#undef KILN_WG_P1
#undef KILN_WG_P2
#undef KILN_WG_P3
#undef KILN_WG_P4
#undef KILN_WG_P5
#undef KILN_WG_P6
#undef KILN_WG_P7
#undef KILN_WG_P8
#undef KILN_WG_P9
#undef KILN_WG_P10
#undef KILN_WG_P11
#undef KILN_WG_P12
#undef KILN_WG_P13
#undef KILN_WG_R0
#undef KILN_WG_R1
#undef KILN_WG_R2
#undef KILN_WG_R3
#undef KILN_WG_R4
#undef KILN_WG_R5
#undef KILN_WG_R6
#undef KILN_WG_R7
#undef KILN_WG_R8
#undef KILN_WG_R9
#undef KILN_WG_R10
#undef KILN_WG_R11
#undef KILN_WG_R12

}  // namespace kiln_dev

// templates/ptx/ld.cuh — plain loads and stores the kernels spell out: read-only global scalars and
// 16-byte vectors, shared-memory scalars and 16-byte vectors, global stores and a global max reduction.
//
// PTX ISA §9.7.9.8 "ld": `ld.global.nc` reads through the non-coherent (texture) path, valid for data
// that no thread writes while the kernel runs — scales, offsets. The global loads are not volatile so
// the compiler may schedule them early (they only depend on the address). `ld.shared.v4.u32` needs a
// 16-byte aligned address; 8 lanes form one shared-memory phase, and lanes of a phase that give the
// same address get the data broadcast (no bank conflict).
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ u32 ldg_u8(const void* p) {
  u32 r;  // an 8-bit load may target a wider register: zero-extended (PTX ISA §9.7.9.8)
  asm("ld.global.nc.u8 %0, [%1];\n" : "=r"(r) : "l"(p));
  return r;
}

__device__ __forceinline__ int ldg_s32(const void* p) {
  int r;
  asm("ld.global.nc.s32 %0, [%1];\n" : "=r"(r) : "l"(p));
  return r;
}

__device__ __forceinline__ float ldg_f32(const void* p) {
  float r;
  asm("ld.global.nc.f32 %0, [%1];\n" : "=f"(r) : "l"(p));
  return r;
}

__device__ __forceinline__ u32 ldg_u32(const void* p) {
  u32 r;
  asm("ld.global.nc.u32 %0, [%1];\n" : "=r"(r) : "l"(p));
  return r;
}

// 16 bytes of read-only global memory (16-byte aligned address).
__device__ __forceinline__ void ldg_v4(u32 (&r)[4], const void* p) {
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "l"(p));
}

__device__ __forceinline__ void ldg_v2(u32 (&r)[2], const void* p) {
  asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(p));
}

// Weights the decode kernels read once: no L1 allocation, and a 256-byte L2 prefetch per request (a warp's
// load touches 64 bytes of each of 8-16 rows; the hint has L2 fetch whole 256-byte runs, which the
// neighbouring CTAs read: 5-12% faster on the decode shapes than no hint on an H200, measured A/B in one
// run; 128 B within noise of 256; docs/performance.md).
__device__ __forceinline__ void ldg_stream_v4(u32 (&r)[4], const void* p) {
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "l"(p));
}
__device__ __forceinline__ void ldg_stream_v2(u32 (&r)[2], const void* p) {
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(p));
}

// A coherent (not .nc) global load, for a value an earlier launch on the stream wrote.
__device__ __forceinline__ u32 ld_u32_coherent(const void* p) {
  u32 r;
  asm volatile("ld.global.u32 %0, [%1];\n" : "=r"(r) : "l"(p));
  return r;
}

// Global stores of 1, 4, 8 and 16 bytes (the address aligned to the size) and of an f32.
__device__ __forceinline__ void stg_u8(void* p, u32 v) { asm volatile("st.global.u8 [%0], %1;\n" ::"l"(p), "r"(v)); }
__device__ __forceinline__ void stg_u32(void* p, u32 v) { asm volatile("st.global.u32 [%0], %1;\n" ::"l"(p), "r"(v)); }
__device__ __forceinline__ void stg_v2(void* p, u32 a, u32 b) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};\n" ::"l"(p), "r"(a), "r"(b));
}
__device__ __forceinline__ void stg_f32(void* p, float v) { asm volatile("st.global.f32 [%0], %1;\n" ::"l"(p), "f"(v)); }
// 16 bytes (the address 16-byte aligned).
__device__ __forceinline__ void stg_v4(void* p, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// *p = max(*p, v) as unsigned integers, atomically, without a result (PTX ISA "red").
__device__ __forceinline__ void red_max_u32(void* p, u32 v) {
  asm volatile("red.global.max.u32 [%0], %1;\n" ::"l"(p), "r"(v));
}

// Shared-memory scalars by shared-state-space address. volatile: the data is written by other threads
// (or cp.async) and published through an mbarrier, which the compiler does not see.
__device__ __forceinline__ u32 lds_u32(u32 smem_addr) {
  u32 r;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(r) : "r"(smem_addr) : "memory");
  return r;
}

__device__ __forceinline__ void sts_u32(u32 smem_addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(smem_addr), "r"(v) : "memory");
}

__device__ __forceinline__ void lds_u64(u32& lo, u32& hi, u32 smem_addr) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(lo), "=r"(hi) : "r"(smem_addr) : "memory");
}

__device__ __forceinline__ void lds_128(u32 (&r)[4], u32 smem_addr) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr)
               : "memory");
}

__device__ __forceinline__ void sts_128(u32 smem_addr, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}

}  // namespace kiln_dev

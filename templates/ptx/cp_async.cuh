// templates/ptx/cp_async.cuh — asynchronous global -> shared copies (sm_80+).
//
// PTX ISA §9.7.9.25 "Data Movement and Conversion Instructions: cp.async". A 16-byte cp.async.cg
// bypasses L1 and lands in shared memory without passing through registers; `src-size` < 16 makes the
// hardware zero-fill the rest of the 16 bytes, which is how kiln predicates rows past M/N and the
// partial last K tile (src-size 0: nothing is read, 16 zero bytes are written). Copies are grouped
// with commit_group and waited on with wait_group N (PTX ISA §9.7.9.25.3.2/3): wait_group N returns
// once at most N of this thread's most recent groups are still pending. Completion is per thread;
// a __syncthreads() after the wait makes every thread's copies visible to the whole block.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

// The 32-bit shared-state-space address of a generic pointer into shared memory (what ldmatrix and
// cp.async take as their [shared] operand).
__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

// 16 bytes from global `src` to shared `dst`; bytes [src_bytes, 16) of dst are zero-filled.
// src must be a valid, 16-byte aligned global address even when src_bytes == 0.
// .L2::128B: prefetch the whole 128-byte L2 line (the next K tile of the same row usually is in it;
// PTX ISA §9.7.9.25.3.1, sm_80+).
__device__ __forceinline__ void cp_async_16(u32 dst, const void* src, u32 src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}

// 4 bytes from global `src` (4-byte aligned) to shared `dst` (4-byte aligned), through L1 (.ca: the only
// cache operator sizes below 16 take). The sm90 family stages block scales this way (kernels/sm90_gemm.cuh).
__device__ __forceinline__ void cp_async_4(u32 dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}

// 8 bytes from global `src` (8-byte aligned) to shared `dst` (8-byte aligned), through L1 (.ca).
__device__ __forceinline__ void cp_async_8(u32 dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(src) : "memory");
}

// An arrival on the mbarrier at shared address `bar` once every cp.async this thread issued before it has
// landed (PTX ISA §9.7.9.25.3.4 "cp.async.mbarrier.arrive"). .noinc: the arrival counts against the
// barrier's expected arrivals (its init count includes this thread), rather than adding one of its own.
__device__ __forceinline__ void cp_async_mbar_arrive_noinc(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace kiln_dev

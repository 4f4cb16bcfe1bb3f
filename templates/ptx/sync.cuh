// templates/ptx/sync.cuh — what a split-K reduction needs across CTAs: a named barrier for one
// warpgroup, a GPU-scope fence, an atomic ticket, and loads that bypass L1.
//
// PTX ISA 9.0: bar.sync (§9.7.13.1) with a barrier id and a thread count synchronizes a subset of the
// CTA (id 0 is __syncthreads'); fence.acq_rel.gpu (§9.7.13.4, "membar.gl") orders this thread's prior
// global writes before its later ones as seen by every thread of the GPU; atom.global.add (§9.7.13.5)
// returns the old value; ld.global.cg (§9.7.9.8) caches in L2 only, so data another SM wrote after
// this launch started is never read from a stale L1 line.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

// Synchronizes `threads` threads (a multiple of 32) on named barrier `id` (1..15; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Arrives on named barrier `id` without waiting (bar.arrive): with `threads` counting the arrivers and
// the threads that bar.sync on it, one group signals another (the other group's sync completes once all
// of them have arrived).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void fence_gpu() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }

__device__ __forceinline__ u32 atomic_add_u32(void* p, u32 v) {
  u32 old;
  asm volatile("atom.global.add.u32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

__device__ __forceinline__ float ldcg_f32(const void* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace kiln_dev

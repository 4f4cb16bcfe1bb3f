// templates/ptx/mbarrier.cuh — shared-memory barriers that count arrivals and transaction bytes (sm_90).
//
// PTX ISA §9.7.13.15 "mbarrier". An mbarrier is an 8-byte object in shared memory with a current
// phase, a pending-arrival count (reset to the init count at each phase change) and a pending
// transaction-byte count. A phase completes when both reach zero; the phase parity then flips.
//   - init(count): phase 0, `count` arrivals expected per phase.
//   - arrive: one arrival (§9.7.13.15.13).
//   - arrive.expect_tx(bytes): one arrival that also raises the pending byte count by `bytes`; the TMA
//     copies that name the barrier (`mbarrier::complete_tx::bytes`, ptx/tma.cuh) lower it as their
//     bytes land (§9.7.13.15.11). Arrival first, then the copies: the phase cannot complete early
//     because the bytes are pending before any copy is issued.
//   - try_wait.parity(p): true once the phase with parity p has completed (§9.7.13.15.16). Asked of the
//     phase *before* the current one (parity = current ^ 1) it returns true at once: that is how a
//     producer passes its first trip round a ring of fresh "empty" barriers without anyone arriving.
// The wait loops on try_wait (which may suspend the thread for a system-dependent time) rather than
// test_wait, so a waiting warp yields its issue slots. Its label lives inside a { } scope: PTX labels
// are local to their block, so every inlined copy may reuse the name.
//
// Visibility of the init to the TMA unit (the async proxy): fence.mbarrier_init.release.cluster
// (§9.7.13.4 "membar/fence") after the inits, then a CTA barrier, before any thread uses them.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes preceding mbarrier.init visible to other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// One arrival on an mbarrier of any CTA of the cluster (`bar` from cluster_map_shared, ptx/cluster.cuh).
// Default semantics (.release at .cta scope, §9.7.13.15.13), as CUTLASS's ClusterBarrier does. Not
// `.release.cluster`: ptxas 13.0 turns that into MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before each arrive
// (seen in the SASS, 2026-11-29), which drains the thread's outstanding global stores and cost the
// clustered kernel a third of its speed on the H200. Nothing needs the stronger ordering here: the
// arriving consumer's shared-memory reads were wgmma operand reads that wgmma.wait_group completed.
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Blocks until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  asm volatile(
      "{\n"
      " .reg .pred done;\n"
      "kiln_retry:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra kiln_retry;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

}  // namespace kiln_dev

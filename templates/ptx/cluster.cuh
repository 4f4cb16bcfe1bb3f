// templates/ptx/cluster.cuh — thread-block clusters (sm_90): rank, ids, barriers, remote shared memory.
//
// PTX ISA §10 "Special Registers" (%cluster_ctarank, %clusterid, %nclusterid), §9.7.13.3
// "barrier.cluster", §9.7.9.22 "mapa". A kernel declared with __cluster_dims__(X, 1, 1) is launched in
// clusters of X CTAs placed on one GPC; their shared memories form the shared::cluster window. `mapa`
// turns a shared::cta address of this CTA into the shared::cluster address of the same offset in CTA
// `rank`, which mbarrier.arrive (ptx/mbarrier.cuh) and TMA multicast (ptx/tma.cuh) take. For a plain
// launch every CTA is a cluster of one: %clusterid = %ctaid and %nclusterid = %nctaid.
//
// barrier.cluster.arrive.release + barrier.cluster.wait.acquire: every non-exited thread of the
// cluster arrives before any waiter continues, with release/acquire ordering at cluster scope. kiln uses
// it after the mbarrier inits (peers may arrive on our barriers and multicast into our shared memory
// only once they exist) and before exit (no CTA leaves while a peer may still arrive on its barriers).
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ u32 cluster_id_x() {
  u32 r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ u32 cluster_count_x() {
  u32 r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}

// All non-exited threads of the cluster; every thread of each participating warp must execute it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
}

// The shared::cluster address of shared::cta address `addr` in the cluster's CTA `rank`.
__device__ __forceinline__ u32 cluster_map_shared(u32 addr, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

}  // namespace kiln_dev

// templates/ptx/tma.cuh — bulk tensor copies global -> shared through the Tensor Memory Accelerator.
//
// PTX ISA §9.7.9.25.5.2 "cp.async.bulk.tensor". One thread issues a copy of a whole box of a tensor
// described by a tensor map (common/sm90_tma_desc.cuh): here 2-D, coordinates {c0, c1} in elements
// with c0 the innermost (contiguous) dimension. The box lands in shared memory laid out as the map's
// swizzle mode says (kiln uses 128-byte swizzle: 16-byte chunk j of box row r is stored at chunk
// j ^ (r % 8) of that row, rows 128 bytes apart, the pattern repeating every 1024 bytes; the
// destination must be 1024-byte aligned for the pattern to line up with the address bits that wgmma
// swizzles on — PTX ISA §9.7.15.5.1.2 "Shared Memory Matrix Layout").
// Elements of the box outside the tensor (rows >= M, columns >= K) are filled with zeros (the map's
// OOB fill NONE), and the copy still counts the *whole* box towards the mbarrier's transaction bytes
// (`.mbarrier::complete_tx::bytes`): the expected byte count of a stage never depends on the tail.
//
// The destination state space is `.shared::cluster`; a CTA's own shared::cta address is a valid
// shared::cluster address of itself (PTX ISA §5.1.7 "Shared State Space"), so no cluster launch is
// needed.
#pragma once

#include "common/sm90_tma_desc.cuh"
#include "common/types.cuh"

namespace kiln_dev {

// Brings the tensor map into the TMA unit's descriptor cache ahead of the first copy (§9.7.9.26
// "prefetch.tensormap"). `map` is the generic address of a __grid_constant__ parameter.
__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// Copies the box at element coordinates (c0 inner, c1 outer) of `map` to shared address `dst`;
// completion (and the box's bytes) are signalled on the mbarrier at shared address `bar`.
__device__ __forceinline__ void tma_load_2d(u32 dst, const TmaDesc* map, int c0, int c1, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], "
      "[%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// As tma_load_2d, but the box lands at the same shared offset `dst` in every CTA of the cluster whose
// bit is set in `cta_mask`, and each of them has its mbarrier at offset `bar` signalled with the bytes
// it received (".multicast::cluster", §9.7.9.25.5.2). `dst` and `bar` are this CTA's shared::cta
// addresses; the offsets are what carry over.
__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const TmaDesc* map, int c0, int c1, u32 bar,
                                                      u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}

// 3-D forms (grouped GEMMs: W [experts, N, K] as a map of extents {K, N, experts}, so a box never
// crosses into the next expert's rows: rows >= N of expert c2 are zero-filled like any other edge).
__device__ __forceinline__ void tma_load_3d(u32 dst, const TmaDesc* map, int c0, int c1, int c2, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d_multicast(u32 dst, const TmaDesc* map, int c0, int c1, int c2, u32 bar,
                                                      u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(cta_mask)
      : "memory");
}

// ---- stores: shared -> global (the TMA-store epilogue) ----------------------------------------------
// §9.7.9.25.5.2 again, the other direction: the box at shared address `src` (laid out as the map's
// swizzle says) is written to the tensor at (c0, c1); elements outside the tensor are not written. The
// copy joins the issuing thread's bulk async-group (commit with tma_store_commit); the source may be
// overwritten only after tma_store_wait_read says the group has read it (§9.7.9.25.6).
__device__ __forceinline__ void tma_store_2d(const TmaDesc* map, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<u64>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
// The same box added element-wise to the tensor in global memory (the map's element type; f32 outputs):
// each element's add is one atomic read-modify-write at L2 (PTX ISA §9.7.9.25.5.2,
// cp.reduce.async.bulk.tensor), committed and waited for like a store.
__device__ __forceinline__ void tma_reduce_add_2d(const TmaDesc* map, u32 src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<u64>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// At most N of this thread's committed bulk groups are still reading their shared memory.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// At most N of this thread's committed bulk groups are incomplete (their writes not yet performed).
template <int N>
__device__ __forceinline__ void tma_store_wait_all() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// Makes this thread's generic-proxy writes to shared memory visible to the async proxy (TMA) before a
// bulk copy reads them (§9.7.13.4 "membar/fence": fence.proxy.async).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace kiln_dev

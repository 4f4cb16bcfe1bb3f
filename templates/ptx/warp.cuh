// templates/ptx/warp.cuh — warp-wide votes and shuffles.
//
// PTX ISA §9.7.13.2 "vote.sync" and §9.7.8.6 "shfl.sync": with a full membermask every lane of the
// warp must execute them and all take part. The sm80 family uses the votes to keep a rare slow path
// warp-uniform: mma.sync.aligned requires all 32 lanes to execute the same mma instruction (PTX ISA
// §9.7.14.5.14), so a branch that contains mma must not diverge. The grouped tile scheduler
// (scheduler/group_tile.cuh) scans the per-expert offsets with the shuffles.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ bool warp_any(bool pred) {
  u32 r;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n vote.sync.any.pred q, p, 0xffffffff;\n"
      " selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(r)
      : "r"(u32(pred)));
  return r != 0;
}

// Bit l set iff lane l's pred is true.
__device__ __forceinline__ u32 warp_ballot(bool pred) {
  u32 r;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.u32 p, %1, 0;\n vote.sync.ballot.b32 %0, p, 0xffffffff;\n}\n"
      : "=r"(r)
      : "r"(u32(pred)));
  return r;
}

// The index of the lowest set bit of x (x != 0): clz(brev(x)) by bfind.shiftamt (PTX ISA §9.7.1.16).
__device__ __forceinline__ int lowest_set_bit(u32 x) {
  u32 r;
  asm("{\n .reg .b32 t;\n brev.b32 t, %1;\n bfind.shiftamt.u32 %0, t;\n}\n" : "=r"(r) : "r"(x));
  return int(r);
}

// v of lane (this lane - delta); lanes below delta get their own v.
__device__ __forceinline__ int shfl_up(int v, int delta) {
  int r;
  asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;\n" : "=r"(r) : "r"(v), "r"(delta));
  return r;
}

// v of lane src_lane.
__device__ __forceinline__ int shfl_idx(int v, int src_lane) {
  int r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 31, 0xffffffff;\n" : "=r"(r) : "r"(v), "r"(src_lane));
  return r;
}

// v of lane (this lane ^ mask): the butterfly exchange of a reduction.
__device__ __forceinline__ u32 shfl_xor_u32(u32 v, int mask) {
  u32 r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;\n" : "=r"(r) : "r"(v), "r"(mask));
  return r;
}

}  // namespace kiln_dev

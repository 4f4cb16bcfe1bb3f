// templates/ptx/warp.cuh — warp-wide votes.
//
// PTX ISA §9.7.13.2 "vote.sync": with a full membermask every lane of the warp must execute it and all
// get the same answer. The sm80 family uses it to keep a rare slow path warp-uniform: mma.sync.aligned
// requires all 32 lanes to execute the same mma instruction (PTX ISA §9.7.14.5.14), so a branch that
// contains mma must not diverge.
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

}  // namespace kiln_dev

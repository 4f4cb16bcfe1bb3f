// templates/ptx/ldmatrix.cuh — warp-wide shared memory -> mma fragment loads (sm_75+).
//
// PTX ISA §9.7.14.5.15 "ldmatrix". `.x4` loads four 8x8 matrices of 16-bit elements: lane l gives
// the address of row (l % 8) of matrix (l / 8), each row 16 contiguous bytes. Matrix j lands in the
// destination register j of every lane, lane l holding row l / 4, bytes 4 * (l % 4) .. +3 of it —
// exactly the per-register layout of the mma.m16n8k16 .bf16/.f16 A and B fragments (PTX ISA
// §9.7.14.5.8) and, byte for byte, of the mma.m16n8k32 .e4m3/.e5m2 fragments (§9.7.14.5.10): the
// instruction moves bytes, the element type only names how many elements one row holds.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

// The transposing form: matrix j's stored rows are read as its columns, so lane l holds elements
// (2 * (l % 4), l / 4) and (2 * (l % 4) + 1, l / 4) of the stored 8x8 matrix. For a matrix stored [k][m]
// (MN-major) that is the mma fragment of k pair {2t, 2t+1} at row / column g: what the backward
// kernels read their MN-major operands with (kernels/sm80_backward.cuh).
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

}  // namespace kiln_dev

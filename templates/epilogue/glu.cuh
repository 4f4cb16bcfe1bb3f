// templates/epilogue/glu.cuh — gate|up (GLU) column pairs: which row of W a GEMM column reads.
//
// A GLU spec (gate_up=interleaved or stacked) computes N GEMM columns and stores N / 2: output column
// j combines gate and up through the epilogue functor. The portable family keeps both values of a
// pair in ONE thread by making the pair two ADJACENT GEMM columns, 2j (gate) and 2j + 1 (up): in an
// m16n8 mma accumulator fragment a lane holds columns 2t and 2t + 1 (c0/c1, and c2/c3 a row below;
// PTX ISA §9.7.14.5.8 / .10), so every lane holds whole pairs and no shuffle is needed.
//   interleaved  W is [g0, u0, g1, u1, ...] (gpt-oss): GEMM column c reads W row c.
//   stacked      W is [g0 .. g(N/2-1), u0 .. u(N/2-1)]: GEMM column c reads row c / 2 (c even, gate)
//                or N / 2 + c / 2 (c odd, up). The permutation is applied where W rows are ADDRESSED
//                (the cp.async source of each B tile row, per-row weight scales, per-channel factors),
//                so the accumulators come out interleaved and the epilogue is the same for both.
// The map is a bijection of [0, N) for even N (the planner requires it: compiler/spec validate_sizes),
// and maps N - 1 to itself, so clamping a column to N - 1 before mapping stays in bounds.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

template <GateUp kGateUp>
__device__ __forceinline__ int glu_w_row(int col, int n) {
  if constexpr (kGateUp == GateUp::kStacked) {
    return (col & 1) ? (n >> 1) + (col >> 1) : (col >> 1);
  } else {
    return col;
  }
}

}  // namespace kiln_dev

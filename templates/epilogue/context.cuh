// templates/epilogue/context.cuh — the vector operands of a generated epilogue functor (the `Ctx`).
//
// compiler/epilogue emits `struct KilnEpilogue { template <class Ctx> static float apply(const Ctx& c,
// float acc, float gate, float up, int m, int n, int e); }` whose body reads vectors as
// c.template load<kSlot>(i) ([m], [n], [e]) and c.template load<kSlot>(r, col) ([e,n], [m,n]).
// EpilogueLoads implements that interface over GemmParams::ep (common/gemm_params.cuh gives the
// strides and dtypes): one element, converted exactly to f32 (bf16 / f16 decode by bit manipulation,
// common/decode.cuh). Loads go through the read-only path (ld.global.nc, not volatile, so a value the
// functor reads several times for one element may be loaded once); vectors must therefore not be
// written while the kernel runs — in particular `residual` may not overlap `out`.
//
// Indices are never out of range: kernels call the functor only for stored output elements, whose
// m, n and e the runtime checked the vectors' shapes against (runtime/operands.cpp).
#pragma once

#include "common/decode.cuh"
#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "ptx/ld.cuh"

namespace kiln_dev {

__device__ __forceinline__ u32 ldg_u16(const void* p) {
  u32 r;  // a 16-bit load into a 32-bit register: zero-extended (PTX ISA §9.7.9.8)
  asm("ld.global.nc.u16 %0, [%1];\n" : "=r"(r) : "l"(p));
  return r;
}

__device__ __forceinline__ float load_epilogue_element(const EpilogueVector& v, long long i) {
  if (v.dtype == kEpF32) return ldg_f32(static_cast<const float*>(v.data) + i);
  const u16 h = u16(ldg_u16(static_cast<const u16*>(v.data) + i));
  return v.dtype == kEpBf16 ? decode_bf16(h) : decode_f16(h);
}

struct EpilogueLoads {
  const GemmParams& p;

  template <int kSlot>
  __device__ __forceinline__ float load(int i) const {
    static_assert(kSlot >= 0 && kSlot < kMaxEpilogueOperands, "an epilogue has at most 8 vector operands");
    return load_epilogue_element(p.ep[kSlot], (long long)i * p.ep[kSlot].stride0);
  }
  template <int kSlot>
  __device__ __forceinline__ float load(int r, int col) const {
    static_assert(kSlot >= 0 && kSlot < kMaxEpilogueOperands, "an epilogue has at most 8 vector operands");
    return load_epilogue_element(p.ep[kSlot],
                                 (long long)r * p.ep[kSlot].stride0 + (long long)col * p.ep[kSlot].stride1);
  }
};

}  // namespace kiln_dev

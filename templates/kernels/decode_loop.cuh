// templates/kernels/decode_loop.cuh — the main loop the mma.sync decode kernels share (kernels/sm80_decode.cuh,
// sm80_decode_w4.cuh, sm80_decode_dgrad.cuh): warp `warp` of kWarps takes units warp, warp + kWarps, ... of
// `units`, calling load(unit_registers, u) then compute(unit_registers). With kInFlight 2 the next unit's
// loads are issued before the current unit's compute: two register sets, alternating, the body unrolled by
// two so that neither set is indexed at run time. With kInFlight 1, one set: half the load registers, so
// more warps fit an SM.
#pragma once

namespace kiln_dev {

template <int kWarps, int kInFlight, class Unit, class Index, class Load, class Compute>
__device__ __forceinline__ void decode_units(Index units, int warp, Load&& load, Compute&& compute) {
  static_assert(kInFlight == 1 || kInFlight == 2, "one or two units in flight per warp");
  if constexpr (kInFlight == 2) {
    Unit f0, f1;
    Index u = warp;
    if (u < units) load(f0, u);
    for (; u < units; u += 2 * kWarps) {
      const Index u1 = u + kWarps;
      if (u1 < units) load(f1, u1);
      compute(f0);
      if (u1 >= units) break;
      if (u1 + kWarps < units) load(f0, u1 + kWarps);
      compute(f1);
    }
  } else {
    for (Index u = warp; u < units; u += kWarps) {
      Unit f;
      load(f, u);
      compute(f);
    }
  }
}

}  // namespace kiln_dev

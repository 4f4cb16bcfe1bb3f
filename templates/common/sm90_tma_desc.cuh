// templates/common/sm90_tma_desc.cuh — the opaque TMA tensor map as a kernel parameter.
//
// A TMA copy (ptx/tma.cuh) names a 128-byte tensor map that the host encodes with the driver's
// cuTensorMapEncodeTiled (runtime/sm90_launch.cpp) and passes by value as a
// `const __grid_constant__` kernel parameter, so the map lives in parameter space and its generic
// address is valid for cp.async.bulk.tensor (CUDA C++ Programming Guide, "Using TMA to transfer
// multi-dimensional arrays"; CUDA 12.0+). NVRTC sees no cuda.h, so kiln mirrors CUtensorMap here:
// 16 x 64-bit words, 128-byte aligned, exactly like cuda.h's `CUtensorMap_st` (CUDA 13.0 declares it
// alignas(128); CUDA 12.x had 64). The host static_asserts that the two agree in size and alignment.
//
// Plain C++ (no CUDA keywords, no includes): the runtime includes it too.
#pragma once

namespace kiln_dev {

struct alignas(128) TmaDesc {
  unsigned long long data[16];
};

static_assert(sizeof(TmaDesc) == 128, "a TMA tensor map is 128 bytes (cuda.h CUtensorMap)");

}  // namespace kiln_dev

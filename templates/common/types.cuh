// templates/common/types.cuh — fixed-width integers and the element formats device code knows.
//
// NVRTC compiles kiln's kernels with nothing but the templates/ tree as headers: no <cstdint>, no
// cuda_bf16.h, no cuda_fp8.h. Device code therefore names its integers here and keeps every 16- and
// 8-bit element as raw bits (u16 / u8); arithmetic on them goes through the PTX wrappers in ptx/ and
// the decoders in common/decode.cuh.
//
// Format mirrors the host enum kiln::Format for the formats kernels read or write today. The emitter
// (compiler/emit) writes `kiln_dev::Format::kE4m3` etc. from its own table; the numeric values are not
// part of any ABI, only the names are.
#pragma once

namespace kiln_dev {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using i64 = long long;

static_assert(sizeof(u16) == 2 && sizeof(u32) == 4 && sizeof(u64) == 8,
              "kiln_dev integer aliases must have the widths their names promise");

enum class Format : int {
  kBf16,  // 1.8.7, bias 127
  kF16,   // IEEE binary16, 1.5.10, bias 15
  kF32,   // IEEE binary32
  kE4m3,  // OCP FP8 e4m3fn: bias 7, no Inf, NaN = S.1111.111 (NUMERICS.md §1.2)
  kE5m2,  // OCP FP8 e5m2: bias 15, Inf = S.11111.00, NaN = S.11111.{01,10,11}
};

__host__ __device__ constexpr int format_bytes(Format f) {
  return f == Format::kF32 ? 4 : (f == Format::kBf16 || f == Format::kF16) ? 2 : 1;
}
__host__ __device__ constexpr bool format_is_fp8(Format f) {
  return f == Format::kE4m3 || f == Format::kE5m2;
}
__host__ __device__ constexpr bool format_is_16bit(Format f) {
  return f == Format::kBf16 || f == Format::kF16;
}

}  // namespace kiln_dev

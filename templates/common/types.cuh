// templates/common/types.cuh — fixed-width integers and the element formats device code knows.
//
// NVRTC compiles kiln's kernels with nothing but the templates/ tree as headers: no <cstdint>, no
// cuda_bf16.h, no cuda_fp8.h. Device code therefore names its integers here and keeps every 16- and
// 8-bit element as raw bits (u16 / u8); arithmetic on them goes through the PTX wrappers in ptx/ and
// the decoders in common/decode.cuh.
//
// Format, Scale and ScaleType mirror the host enums kiln::Format, kiln::ScaleGranularity and
// kiln::ScaleType for what kernels read or write today. The emitter (compiler/emit) writes
// `kiln_dev::Format::kE4m3` etc. from its own table; the numeric values are not part of any ABI, only
// the names are.
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
  kE4m3,  // OCP FP8 e4m3fn: bias 7, no Inf, NaN = S.1111.111 (docs/numerics.md §1)
  kE5m2,  // OCP FP8 e5m2: bias 15, Inf = S.11111.00, NaN = S.11111.{01,10,11}
  kMxfp8,  // e4m3 elements, E8M0 scale per 32 along K (docs/numerics.md §3)
  kMxfp4,  // E2M1 elements, two per byte (even element in the low nibble), E8M0 per 32 along K
  kNvfp4,  // E2M1 elements, two per byte, UE4M3 per 16 along K, f32 global (docs/numerics.md §4)
};

// How an operand is scaled (named by problem dimension; see common/gemm_params.cuh for the layouts).
enum class Scale : int {
  kNone,
  kTensor,        // one f32
  kRow,           // one f32 per row of the operand: per token (a, "m") or per output channel (b, "n")
  kBlock1x128,    // a: one per row per 128 K
  kBlock128x128,  // b: one per 128 rows per 128 K
  kBlock1x32,     // MX: E8M0 per row per 32 K
  kBlock1x16,     // NVFP4: UE4M3 per row per 16 K
};

enum class ScaleType : int { kNone, kF32, kUe8m0, kUe4m3 };

// Dense, or one of the grouped layouts (common/gemm_params.cuh).
enum class Grouping : int { kDense, kOffsets, kMasked };

// Where the gate and up halves of a GLU's weight rows are (kiln::GateUp; epilogue/glu.cuh).
enum class GateUp : int { kNone, kInterleaved, kStacked };

// Bytes per element for the byte-addressable formats (4-bit formats: see format_bits).
__host__ __device__ constexpr int format_bytes(Format f) {
  return f == Format::kF32 ? 4 : (f == Format::kBf16 || f == Format::kF16) ? 2 : 1;
}
__host__ __device__ constexpr int format_bits(Format f) {
  return f == Format::kMxfp4 || f == Format::kNvfp4 ? 4 : 8 * format_bytes(f);
}
__host__ __device__ constexpr bool format_is_fp4(Format f) {
  return f == Format::kMxfp4 || f == Format::kNvfp4;
}
// Bytes of `elems` consecutive elements (elems even for the 4-bit formats).
__host__ __device__ constexpr long long format_span_bytes(Format f, long long elems) {
  return format_is_fp4(f) ? elems / 2 : elems * format_bytes(f);
}
// Scales that change along K: the accumulator is promoted per K block (kernels/sm80_promotion.cuh)
// or the scale is folded into the dequantized element (dequant/).
__host__ __device__ constexpr bool scale_is_k_blocked(Scale s) {
  return s == Scale::kBlock1x128 || s == Scale::kBlock128x128 || s == Scale::kBlock1x32 ||
         s == Scale::kBlock1x16;
}
__host__ __device__ constexpr bool format_is_fp8(Format f) {
  return f == Format::kE4m3 || f == Format::kE5m2;
}
__host__ __device__ constexpr bool format_is_16bit(Format f) {
  return f == Format::kBf16 || f == Format::kF16;
}

// void for any well-formed type list: detects optional members of a generated KilnConfig.
template <class...>
struct VoidOf {
  using type = void;
};

}  // namespace kiln_dev

// templates/kernels/quantize.cuh — the quantize family: bf16 / f16 / f32 activations or weights to
// FP8 (per tensor, per token, 1x128, 128x128 blocks), MXFP8, MXFP4 and NVFP4 (four-over-six
// optional), row-wise or transposed (blocks along M: the copy a wgrad GEMM reads).
//
// Contract: every code and scale byte is bitwise equal to kiln's CPU references
// (compiler/numerics: fp8_block.cpp with the DeepGEMM convention, mx.cpp, nvfp4.cpp,
// four_over_six.cpp), for every input, including zero blocks, subnormal products and saturation.
// That is why all arithmetic goes through common/encode.cuh's once-rounded operations, why an NVFP4
// block (whose four-over-six error is a sequential sum over its 16 elements) is owned by one thread,
// and why amaxes are maxima of |x|'s bits (exact and order-free).
//
// Work decomposition (256 threads per block, kQuantThreads):
//   kBlockK      blocks of kBlock along K. A thread owns a chunk of kVec consecutive elements (16
//                for NVFP4, else 8); the kBlock / kVec lanes of one block reduce its amax with
//                shuffles. Flat grid-stride walk over all chunks of X (row-major, coalesced).
//   kTensor      the same walk; the scale comes from the amax slot (QuantizeParams phases).
//   kRow         one warp per row: amax over the row, then the row again (from L1/L2).
//   kBlock2d     one CTA per 128 x 128 block: amax, block-wide reduction, then the block again.
//   kTransposed  one CTA per tile of kBlock rows x 64 columns of X, staged in shared memory as f32;
//                output row c (= X's column c) gets the kBlock codes of rows m0 .. m0 + kBlock.
//   kColumns     FP8 with one scale per column of X (per row of the transposed copy [K, M]: the copy a
//                per-token / per-channel wgrad or dgrad reads). Four launches like kTensor, with K amax
//                slots (the f32 scale vector): kPhaseAmax, one CTA per 64 columns x kColAmaxRows rows,
//                reduces each column through shared memory to one atomic max per CTA; kPhaseQuantize is
//                the kTransposed tile walk with kBlock = 128 rows, each column's amax read from its
//                slot, and output columns [M, out_cols) written as zero codes (a copy padded to whole
//                16-byte rows for the GEMM).
// Config (written by compiler/emit/quantize_emit.cpp):
//   struct KilnConfig { kIn, kOut (Format); kMode (QuantMode); kBlock; kScaleType (ScaleType);
//                       kMxFloor; kFourOverSix (0 off, 1 MAE, 2 MSE); kBound (448 | 256); kArch; };
// Requirements checked by the planner (compiler/plan/quantize_plan.cpp): K % 8 == 0 (16-byte input
// chunks), K % kBlock == 0 (kBlockK), M % kBlock == 0 (kTransposed), 16-byte aligned rows; kColumns:
// out_cols % 8 == 0 and M <= out_cols < M + 128.
#pragma once

#include "common/decode.cuh"
#include "common/encode.cuh"
#include "common/quantize_params.cuh"
#include "common/types.cuh"
#include "ptx/ld.cuh"
#include "ptx/warp.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {

enum class QuantMode : int { kTensor, kRow, kBlockK, kBlock2d, kTransposed, kColumns };

constexpr int kQuantThreads = 256;
constexpr int kTransposeCols = 64;
constexpr int kColAmaxRows = 256;  // kColumns: rows of X per CTA of the amax phase

// Max over groups of kLanes consecutive lanes (kLanes a power of two <= 32); every lane gets it.
template <int kLanes>
__device__ __forceinline__ u32 group_max(u32 v) {
#pragma unroll
  for (int o = 1; o < kLanes; o <<= 1) {
    const u32 w = shfl_xor_u32(v, o);
    v = w > v ? w : v;
  }
  return v;
}

// kVec elements of format kIn starting at p (16-byte aligned), as f32 (exact).
template <Format kIn, int kVec>
__device__ __forceinline__ void load_chunk(const void* p, float (&v)[kVec]) {
  constexpr int kBytes = kVec * format_bytes(kIn);
  static_assert(kBytes % 16 == 0, "chunks are whole 16-byte loads");
#pragma unroll
  for (int q = 0; q < kBytes / 16; ++q) {
    u32 w[4];
    ldg_v4(w, static_cast<const u8*>(p) + 16 * q);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if constexpr (kIn == Format::kF32) {
        v[4 * q + j] = f32_from_bits(w[j]);
      } else if constexpr (kIn == Format::kBf16) {
        v[8 * q + 2 * j] = decode_bf16(u16(w[j] & 0xFFFF));
        v[8 * q + 2 * j + 1] = decode_bf16(u16(w[j] >> 16));
      } else {
        static_assert(kIn == Format::kF16, "quantize reads bf16, f16 or f32");
        v[8 * q + 2 * j] = decode_f16(u16(w[j] & 0xFFFF));
        v[8 * q + 2 * j + 1] = decode_f16(u16(w[j] >> 16));
      }
    }
  }
}

template <int kVec>
__device__ __forceinline__ u32 chunk_amax_bits(const float (&v)[kVec]) {
  u32 a = 0;
#pragma unroll
  for (int j = 0; j < kVec; ++j) a = abs_bits(v[j]) > a ? abs_bits(v[j]) : a;
  return a;
}

// ---- FP8 block scales, DeepGEMM convention (compiler/numerics/fp8_block.cpp deepgemm_scale) ----
struct Fp8ScaleD {
  float decode;
  float encode;
  u32 byte;  // E8M0 of decode (ue8m0 scales)
};
template <ScaleType kType>
__device__ __forceinline__ Fp8ScaleD fp8_scale(float amax) {
  const float a = amax < 1e-4f ? 1e-4f : amax;  // NaN stays NaN, as std::max(amax, 1e-4f)
  const float sf = rn_div(a, 448.0f);
  Fp8ScaleD s;
  if constexpr (kType == ScaleType::kUe8m0) {
    if (is_nan_f32(sf)) {
      s.byte = 0xFF;
      s.decode = decode_e8m0(0xFF);
      s.encode = sf;
    } else {
      const u32 bits = bits_from_f32(sf) & 0x7FFFFFFFu;
      u32 b = (bits >> 23) + ((bits & 0x7FFFFF) != 0 ? 1 : 0);
      b = b < 1 ? 1 : b > 254 ? 254 : b;
      s.byte = b;
      s.decode = decode_e8m0(b);
      s.encode = decode_e8m0(254 - b);  // the exact reciprocal
    }
  } else {
    s.byte = 0;
    s.decode = sf;
    s.encode = rn_div(1.0f, sf);
  }
  return s;
}

template <ScaleType kType>
__device__ __forceinline__ void store_fp8_scale(void* scale, long long i, const Fp8ScaleD& s) {
  if constexpr (kType == ScaleType::kUe8m0) stg_u8(static_cast<u8*>(scale) + i, s.byte);
  else stg_f32(static_cast<float*>(scale) + i, s.decode);
}

// kVec FP8 codes of v * encode (satfinite E4M3), packed little-endian into kVec / 4 words.
template <int kArch, int kVec>
__device__ __forceinline__ void encode_fp8_chunk(const float (&v)[kVec], float encode, u32 (&w)[kVec / 4]) {
#pragma unroll
  for (int q = 0; q < kVec / 4; ++q) {
    u32 x = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) x |= encode_e4m3<kArch>(rn_mul(v[4 * q + j], encode), true) << (8 * j);
    w[q] = x;
  }
}

template <int kVec>
__device__ __forceinline__ void store_codes_fp8(void* p, const u32 (&w)[kVec / 4]) {
  if constexpr (kVec == 8) stg_v2(p, w[0], w[1]);
  else {
    static_assert(kVec == 16, "fp8 chunks are 8 or 16 codes");
    stg_v2(p, w[0], w[1]);
    stg_v2(static_cast<u8*>(p) + 8, w[2], w[3]);
  }
}

// ---- MX (compiler/numerics/mx.cpp): one E8M0 byte per 32 elements ----
template <bool kFloor, bool kFp4>
__device__ __forceinline__ u32 mx_scale_byte(float amax) {
  if constexpr (kFloor) return e8m0_scale_floor(amax, kFp4 ? 2 : 8);
  else return e8m0_scale_rceil(amax, kFp4 ? 6.0f : 448.0f);
}

// ---- NVFP4 (compiler/numerics/nvfp4.cpp, four_over_six.cpp) ----
__device__ __forceinline__ float nvfp4_encode_scale(float amax_t, float six_b) {
  float s = rn_fmin(rn_div(six_b, amax_t), kFltMax);
  if (amax_t == 0.0f || s == 0.0f) s = 1.0f;
  return s;
}
__device__ __forceinline__ float nvfp4_block_encode(u32 sf, float s_enc) {
  const float s_dec = rn_div(1.0f, s_enc);
  return rn_fmin(rn_div(1.0f, rn_mul(decode_e4m3(u8(sf)), s_dec)), kFltMax);
}
// Codes of one candidate scale byte; err (metric 1 MAE, 2 MSE) summed i = 0..15 in order.
template <int kMetric>
__device__ __forceinline__ float nvfp4_candidate(const float (&x)[16], u32 sf, float s_enc, float amax_t, float six_b,
                                                 u32 (&codes)[2]) {
  const float inv = nvfp4_block_encode(sf, s_enc);
  const float sfv = decode_e4m3(u8(sf));
  float err = 0.0f;
  codes[0] = codes[1] = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const u32 c = encode_e2m1(rn_mul(x[i], inv));
    codes[i / 8] |= c << (4 * (i % 8));
    if constexpr (kMetric != 0) {
      const float val = rn_div(rn_mul(rn_mul(decode_e2m1(c), sfv), amax_t), six_b);
      const float d = rn_sub(val, x[i]);
      err = rn_add(err, kMetric == 2 ? rn_mul(d, d) : abs_f32(d));
    }
  }
  return err;
}
// One 16-element block: writes its two packed code words, returns the UE4M3 scale byte.
template <int kArch, int kFourOverSix>
__device__ __forceinline__ u32 nvfp4_block(const float (&x)[16], float amax_t, float six_b, u32 (&codes)[2]) {
  const float s_enc = nvfp4_encode_scale(amax_t, six_b);
  const float amax_b = f32_from_bits(chunk_amax_bits<16>(x));
  if constexpr (kFourOverSix == 0) {
    const float one_sixth = rn_div(1.0f, 6.0f);
    const u32 sf = encode_e4m3<kArch>(rn_mul(amax_b, rn_mul(s_enc, one_sixth)), true);
    nvfp4_candidate<0>(x, sf, s_enc, amax_t, six_b, codes);
    return sf;
  } else {
    const float base = rn_mul(rn_div(amax_b, 6.0f), s_enc);
    const u32 sf6 = encode_e4m3<kArch>(rn_fmin(base, 448.0f), true);
    const u32 sf4 = encode_e4m3<kArch>(rn_fmin(rn_mul(base, 1.5f), 448.0f), true);
    u32 c6[2], c4[2];
    const float e6 = nvfp4_candidate<kFourOverSix>(x, sf6, s_enc, amax_t, six_b, c6);
    const float e4 = nvfp4_candidate<kFourOverSix>(x, sf4, s_enc, amax_t, six_b, c4);
    const bool four = e4 < e6;  // ties and NaN keep map-to-6
    codes[0] = four ? c4[0] : c6[0];
    codes[1] = four ? c4[1] : c6[1];
    return four ? sf4 : sf6;
  }
}

// ---- one chunk of kVec elements of a block-local format: codes and (first lane) scale ----
// Encodes v (a chunk of a block whose amax over all its lanes is amax_bits), stores the codes at
// out_bytes, and the block's scale at scale index si when `owner`.
template <class C, int kVec>
__device__ __forceinline__ void encode_store_chunk(const QuantizeParams& p, const float (&v)[kVec], u32 amax_bits,
                                                   float amax_t, u8* out_bytes, long long si, bool owner,
                                                   bool valid) {
  constexpr Format kOut = C::kOut;
  const float amax = f32_from_bits(amax_bits);
  if constexpr (kOut == Format::kNvfp4) {
    static_assert(kVec == 16, "an NVFP4 block is one thread's chunk");
    u32 codes[2];
    const u32 sf = nvfp4_block<C::kArch, C::kFourOverSix>(v, amax_t, 6.0f * float(C::kBound), codes);
    if (valid) {
      stg_v2(out_bytes, codes[0], codes[1]);
      stg_u8(static_cast<u8*>(p.scale) + si, sf);
    }
  } else if constexpr (kOut == Format::kMxfp8 || kOut == Format::kMxfp4) {
    constexpr bool kFp4 = kOut == Format::kMxfp4;
    const u32 b = mx_scale_byte<C::kMxFloor, kFp4>(amax);
    const float mul = pow2_wide(127 - int(b));  // exact: x * 2^(127-b) rounds once, as ldexp
    if constexpr (kFp4) {
      u32 w = 0;
#pragma unroll
      for (int j = 0; j < kVec; ++j) w |= encode_e2m1(rn_mul(v[j], mul)) << (4 * j);
      if (valid) stg_u32(out_bytes, w);
    } else {
      u32 w[kVec / 4];
      encode_fp8_chunk<C::kArch, kVec>(v, mul, w);
      if (valid) store_codes_fp8<kVec>(out_bytes, w);
    }
    if (valid && owner) stg_u8(static_cast<u8*>(p.scale) + si, b);
  } else {
    static_assert(kOut == Format::kE4m3, "quantize writes e4m3, mxfp8, mxfp4 or nvfp4");
    const Fp8ScaleD s = fp8_scale<C::kScaleType>(amax);
    u32 w[kVec / 4];
    encode_fp8_chunk<C::kArch, kVec>(v, s.encode, w);
    if (valid) {
      store_codes_fp8<kVec>(out_bytes, w);
      if (owner) store_fp8_scale<C::kScaleType>(p.scale, si, s);
    }
  }
}

template <class C>
__device__ __forceinline__ u32* amax_slot(const QuantizeParams& p) {
  return C::kOut == Format::kNvfp4 ? reinterpret_cast<u32*>(p.global) : static_cast<u32*>(p.scale);
}

template <Format kOut>
__device__ __forceinline__ long long out_byte_offset(long long element) {
  return format_bits(kOut) == 4 ? element / 2 : element;
}

// ---- phases ----
template <class C>
__device__ void quantize_amax(const QuantizeParams& p) {
  constexpr int kVec = 8;
  const long long cpr = p.k / kVec;
  const long long total = (long long)p.m * cpr;
  const int lane = threadIdx.x & 31;
  u32 a = 0;
  for (long long i = (long long)blockIdx.x * kQuantThreads + threadIdx.x; i < total;
       i += (long long)gridDim.x * kQuantThreads) {
    const long long r = i / cpr, c = (i % cpr) * kVec;
    float v[kVec];
    load_chunk<C::kIn, kVec>(static_cast<const u8*>(p.in) + (r * p.ld_in + c) * format_bytes(C::kIn), v);
    const u32 b = chunk_amax_bits<kVec>(v);
    a = b > a ? b : a;
  }
  a = group_max<32>(a);
  if (lane == 0 && a != 0) red_max_u32(amax_slot<C>(p), a);
}

// kColumns: the max of |x| down each column into its slot (slot c = scale[c], as bits). A thread owns one
// 8-column chunk and every 32nd row of the CTA's kColAmaxRows; the 32 row groups meet in shared memory.
template <class C>
__device__ void quantize_col_amax(const QuantizeParams& p) {
  constexpr int kVec = 8, kChunks = kTransposeCols / kVec, kGroups = kQuantThreads / kChunks;
  __shared__ u32 part[kGroups][kTransposeCols];
  const int col_tiles = (p.k + kTransposeCols - 1) / kTransposeCols;
  const long long r0 = (long long)(blockIdx.x / col_tiles) * kColAmaxRows;
  const int c0 = (blockIdx.x % col_tiles) * kTransposeCols;
  const int chunk = threadIdx.x % kChunks, group = threadIdx.x / kChunks;
  const int c = c0 + chunk * kVec;
  const long long r_end = r0 + kColAmaxRows < p.m ? r0 + kColAmaxRows : p.m;
  u32 a[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) a[j] = 0;
  if (c < p.k) {  // K % 8 == 0: a chunk is wholly inside or wholly past K
    for (long long r = r0 + group; r < r_end; r += kGroups) {
      float v[kVec];
      load_chunk<C::kIn, kVec>(static_cast<const u8*>(p.in) + (r * p.ld_in + c) * format_bytes(C::kIn), v);
#pragma unroll
      for (int j = 0; j < kVec; ++j) a[j] = abs_bits(v[j]) > a[j] ? abs_bits(v[j]) : a[j];
    }
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) part[group][chunk * kVec + j] = a[j];
  __syncthreads();
  if (threadIdx.x < kTransposeCols && c0 + int(threadIdx.x) < p.k) {
    u32 m = 0;
#pragma unroll 8
    for (int g = 0; g < kGroups; ++g) m = part[g][threadIdx.x] > m ? part[g][threadIdx.x] : m;
    if (m != 0) red_max_u32(static_cast<u32*>(p.scale) + c0 + threadIdx.x, m);
  }
}

// kBlockK and kTensor: the flat chunk walk.
template <class C>
__device__ void quantize_blocks_k(const QuantizeParams& p) {
  constexpr int kVec = C::kOut == Format::kNvfp4 ? 16 : 8;
  constexpr int kLanes = C::kMode == QuantMode::kTensor ? 1 : C::kBlock / kVec;
  static_assert(kLanes >= 1 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0, "a block is 1..32 lanes");
  const long long cpr = p.k / kVec;
  const long long total = (long long)p.m * cpr;
  const int lane = threadIdx.x & 31;
  float amax_t = 0.0f;
  if constexpr (C::kMode == QuantMode::kTensor || C::kOut == Format::kNvfp4)
    amax_t = f32_from_bits(ld_u32_coherent(amax_slot<C>(p)));
  const long long stride = (long long)gridDim.x * kQuantThreads;
  // Warp-uniform trip count: every lane reaches every shuffle.
  for (long long base = (long long)blockIdx.x * kQuantThreads + (threadIdx.x & ~31); base < total; base += stride) {
    const long long i = base + lane;
    const bool valid = i < total;
    const long long r = valid ? i / cpr : 0, c = valid ? (i % cpr) * kVec : 0;
    float v[kVec];
    if (valid) load_chunk<C::kIn, kVec>(static_cast<const u8*>(p.in) + (r * p.ld_in + c) * format_bytes(C::kIn), v);
    else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = 0.0f;
    }
    u8* out = static_cast<u8*>(p.out) + out_byte_offset<C::kOut>(r * p.ld_out + c);
    if constexpr (C::kMode == QuantMode::kTensor) {
      encode_store_chunk<C, kVec>(p, v, bits_from_f32(amax_t), amax_t, out, 0, false, valid);
    } else {
      const u32 a = group_max<kLanes>(chunk_amax_bits<kVec>(v));
      encode_store_chunk<C, kVec>(p, v, a, amax_t, out, r * p.ld_scale + c / C::kBlock, (lane % kLanes) == 0, valid);
    }
  }
}

// kRow: one warp per row (FP8 per token).
template <class C>
__device__ void quantize_rows(const QuantizeParams& p) {
  constexpr int kVec = 8;
  const int lane = threadIdx.x & 31;
  const long long r = (long long)blockIdx.x * (kQuantThreads / 32) + (threadIdx.x >> 5);
  if (r >= p.m) return;  // whole warps leave together
  const u8* row = static_cast<const u8*>(p.in) + r * p.ld_in * format_bytes(C::kIn);
  u32 a = 0;
  for (int c = lane * kVec; c < p.k; c += 32 * kVec) {
    float v[kVec];
    load_chunk<C::kIn, kVec>(row + (long long)c * format_bytes(C::kIn), v);
    const u32 b = chunk_amax_bits<kVec>(v);
    a = b > a ? b : a;
  }
  a = group_max<32>(a);
  const Fp8ScaleD s = fp8_scale<C::kScaleType>(f32_from_bits(a));
  if (lane == 0) store_fp8_scale<C::kScaleType>(p.scale, r, s);
  u8* out = static_cast<u8*>(p.out) + r * p.ld_out;
  for (int c = lane * kVec; c < p.k; c += 32 * kVec) {
    float v[kVec];
    load_chunk<C::kIn, kVec>(row + (long long)c * format_bytes(C::kIn), v);
    u32 w[kVec / 4];
    encode_fp8_chunk<C::kArch, kVec>(v, s.encode, w);
    store_codes_fp8<kVec>(out + c, w);
  }
}

// kBlock2d: one CTA per 128 x 128 block (FP8 weights).
template <class C>
__device__ void quantize_block2d(const QuantizeParams& p) {
  constexpr int kVec = 8, kB = 128, kChunksPerRow = kB / kVec;
  __shared__ u32 warp_max[kQuantThreads / 32];
  const int kb_count = p.k / kB;
  const int br = blockIdx.x / kb_count, bc = blockIdx.x % kb_count;
  const long long r0 = (long long)br * kB, c0 = (long long)bc * kB;
  const int rows = p.m - r0 < kB ? int(p.m - r0) : kB;
  const int items = rows * kChunksPerRow;
  u32 a = 0;
  for (int i = threadIdx.x; i < items; i += kQuantThreads) {
    const long long r = r0 + i / kChunksPerRow, c = c0 + (i % kChunksPerRow) * kVec;
    float v[kVec];
    load_chunk<C::kIn, kVec>(static_cast<const u8*>(p.in) + (r * p.ld_in + c) * format_bytes(C::kIn), v);
    const u32 b = chunk_amax_bits<kVec>(v);
    a = b > a ? b : a;
  }
  a = group_max<32>(a);
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = a;
  __syncthreads();
  a = 0;
#pragma unroll
  for (int w = 0; w < kQuantThreads / 32; ++w) a = warp_max[w] > a ? warp_max[w] : a;
  const Fp8ScaleD s = fp8_scale<C::kScaleType>(f32_from_bits(a));
  if (threadIdx.x == 0) store_fp8_scale<C::kScaleType>(p.scale, br * p.ld_scale + bc, s);
  for (int i = threadIdx.x; i < items; i += kQuantThreads) {
    const long long r = r0 + i / kChunksPerRow, c = c0 + (i % kChunksPerRow) * kVec;
    float v[kVec];
    load_chunk<C::kIn, kVec>(static_cast<const u8*>(p.in) + (r * p.ld_in + c) * format_bytes(C::kIn), v);
    u32 w[kVec / 4];
    encode_fp8_chunk<C::kArch, kVec>(v, s.encode, w);
    store_codes_fp8<kVec>(static_cast<u8*>(p.out) + r * p.ld_out + c, w);
  }
}

// Grouped transposed quantize: which rows of X output block `block` (columns block * kB ..) holds. Warp 0
// walks the experts 32 at a time (row vector sanitized as the GEMMs do: offsets clamped to [0, M] and made
// non-decreasing, counts clamped to [0, max_m]) with running sums of their rows rounded up to whole
// blocks; the expert whose blocks contain `block` writes its first row of X and the block's valid rows
// (1..kB) to shared memory. Rows past them are staged as zeros. No expert: rows = 0 (nothing written).
template <class C>
__device__ void grouped_block_rows(const QuantizeParams& p, long long block, long long* first_row, int* rows) {
  constexpr int kB = C::kBlock;
  const int lane = threadIdx.x & 31;
  if (threadIdx.x >= 32) return;
  int end_before = 0, found_rows = 0;
  long long padded_before = 0, found_first = 0;
  for (int e0 = 0; e0 < p.experts; e0 += 32) {
    const int e = e0 + lane;
    int start = 0, n = 0;
    if (!p.masked) {  // offsets
      int end;
      offsets_step(p.group_rows, p.experts, e0, p.m, lane, end_before, start, end);
      n = end - start;
    } else {
      n = e < p.experts ? clamp_int(ldg_s32(p.group_rows + e), 0, p.max_m) : 0;
      start = e * p.max_m;
    }
    const int blocks = (n + kB - 1) / kB;
    const int incl = warp_inclusive_sum(blocks, lane);
    const long long bend = padded_before + incl, bstart = bend - blocks;
    if (block >= bstart && block < bend) {  // at most one lane of one step
      const long long r0 = (block - bstart) * kB;
      found_first = start + r0;
      found_rows = n - r0 < kB ? int(n - r0) : kB;
    }
    padded_before += shfl_idx(incl, 31);
  }
  // One store per CTA: the finding lane's, or lane 0's zero when no expert owns the block.
  const u32 found = warp_ballot(found_rows > 0);
  if (found_rows > 0) {
    *first_row = found_first;
    *rows = found_rows;
  } else if (found == 0 && lane == 0) {
    *rows = 0;
  }
}

// kTransposed: blocks of kBlock rows x 1 column; output row c of [K, M] holds X's column c. Grouped: the
// block's rows are those grouped_block_rows finds (QuantizeParams "Grouped transposed").
template <class C>
__device__ void quantize_transposed(const QuantizeParams& p) {
  constexpr int kB = C::kBlock, kCols = kTransposeCols, kLd = kCols + 1;
  constexpr int kVec = C::kOut == Format::kNvfp4 ? 16 : 8;
  constexpr int kLanes = kB / kVec;
  static_assert(kLanes >= 1 && kLanes <= 32 && (kCols * kLanes) % 32 == 0, "tile shape");
  __shared__ float tile[kB * kLd];
  __shared__ long long grouped_first;
  __shared__ int grouped_rows;
  const int col_tiles = (p.k + kCols - 1) / kCols;
  const long long m0 = (long long)(blockIdx.x / col_tiles) * kB;  // the output column (token) of row 0
  const int k0 = (blockIdx.x % col_tiles) * kCols;
  long long src0 = m0;  // X's row of the block's row 0
  int valid_rows = kB;
  if constexpr (C::kMode == QuantMode::kColumns) {
    // Rows past M are staged as zero: their codes are the zero padding up to out_cols.
    if (m0 >= p.out_cols) return;  // CTA-uniform
    valid_rows = p.m - m0 < kB ? int(p.m - m0 > 0 ? p.m - m0 : 0) : kB;
  } else if (p.group_rows != nullptr) {
    grouped_block_rows<C>(p, m0 / kB, &grouped_first, &grouped_rows);
    __syncthreads();
    valid_rows = grouped_rows;
    src0 = grouped_first;
    if (valid_rows == 0 || m0 + kB > p.out_cols) return;  // past the last expert's blocks (CTA-uniform)
  }
  // Stage kB rows x 64 columns (8-element chunks; columns past K read as zero, never stored; grouped: rows
  // past the expert's last as zero, written as zero codes).
  for (int i = threadIdx.x; i < kB * (kCols / 8); i += kQuantThreads) {
    const int r = i / (kCols / 8), cc = (i % (kCols / 8)) * 8;
    float v[8];
    if (k0 + cc < p.k && r < valid_rows) {
      load_chunk<C::kIn, 8>(static_cast<const u8*>(p.in) + ((src0 + r) * p.ld_in + k0 + cc) * format_bytes(C::kIn), v);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) tile[r * kLd + cc + j] = v[j];
  }
  __syncthreads();
  float amax_t = 0.0f;
  if constexpr (C::kOut == Format::kNvfp4) amax_t = f32_from_bits(ld_u32_coherent(amax_slot<C>(p)));
  // Items (column, lane-of-block) in column-major order; the trip count is warp-uniform.
  for (int i = threadIdx.x; i < kCols * kLanes; i += kQuantThreads) {
    const int col = i / kLanes, sub = i % kLanes;
    float v[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = tile[(sub * kVec + j) * kLd + col];
    const long long c = k0 + col;  // the output row
    u8* out = static_cast<u8*>(p.out) + out_byte_offset<C::kOut>(c * p.ld_out + m0 + sub * kVec);
    if constexpr (C::kMode == QuantMode::kColumns) {
      // The column's amax from its slot (its scale is written by kPhaseFinalize). Codes past M are zero
      // bytes, not encodings of 0 (0 x a NaN column's encode factor would be a NaN code).
      static_assert(kVec == 8, "FP8 chunks of 8 codes");
      const long long first = m0 + sub * kVec;
      if (c < p.k && first < p.out_cols) {
        const Fp8ScaleD sc = fp8_scale<C::kScaleType>(f32_from_bits(ld_u32_coherent(static_cast<const u32*>(p.scale) + c)));
        u32 w[2];
        encode_fp8_chunk<C::kArch, kVec>(v, sc.encode, w);
        const long long real = p.m - first;  // codes of this chunk that hold rows of X
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const long long keep = real - 4 * q;  // bytes of word q below M
          w[q] = keep >= 4 ? w[q] : keep <= 0 ? 0u : w[q] & ((1u << (8 * keep)) - 1u);
        }
        store_codes_fp8<kVec>(out, w);
      }
    } else {
      const u32 a = group_max<kLanes>(chunk_amax_bits<kVec>(v));
      const bool valid = c < p.k;
      encode_store_chunk<C, kVec>(p, v, a, amax_t, out, c * p.ld_scale + m0 / kB, sub == 0, valid);
    }
  }
}

template <class C>
__device__ void quantize(const QuantizeParams& p) {
  if constexpr (C::kMode == QuantMode::kColumns) {  // K amax slots: the f32 scale vector [K]
    u32* slots = static_cast<u32*>(p.scale);
    const long long first = (long long)blockIdx.x * kQuantThreads + threadIdx.x, step = (long long)gridDim.x * kQuantThreads;
    switch (p.phase) {
      case kPhaseInit:
        for (long long c = first; c < p.k; c += step) slots[c] = 0u;
        return;
      case kPhaseAmax:
        quantize_col_amax<C>(p);
        return;
      case kPhaseFinalize:
        for (long long c = first; c < p.k; c += step)
          reinterpret_cast<float*>(slots)[c] = fp8_scale<ScaleType::kF32>(f32_from_bits(slots[c])).decode;
        return;
      default:
        break;
    }
  }
  switch (p.phase) {
    case kPhaseInit:
      if (blockIdx.x == 0 && threadIdx.x == 0) *amax_slot<C>(p) = 0u;
      return;
    case kPhaseAmax:
      quantize_amax<C>(p);
      return;
    case kPhaseFinalize:
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        const float amax = f32_from_bits(*amax_slot<C>(p));
        float* slot = reinterpret_cast<float*>(amax_slot<C>(p));
        if constexpr (C::kOut == Format::kNvfp4) *slot = rn_div(amax, 6.0f * float(C::kBound));
        else *slot = fp8_scale<ScaleType::kF32>(amax).decode;
      }
      return;
    default:
      break;
  }
  if constexpr (C::kMode == QuantMode::kRow) quantize_rows<C>(p);
  else if constexpr (C::kMode == QuantMode::kBlock2d) quantize_block2d<C>(p);
  else if constexpr (C::kMode == QuantMode::kTransposed || C::kMode == QuantMode::kColumns) quantize_transposed<C>(p);
  else quantize_blocks_k<C>(p);
}

}  // namespace kiln_dev

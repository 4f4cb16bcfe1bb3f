// templates/kernels/sm80_decode_w4.cuh — the portable family's small-M forward kernel for 4-bit weights (a
// TileConfig with decode = 1 on a bf16 x mxfp4 / nvfp4 spec): a few rows of X against a packed weight
// matrix streamed once from global memory straight into mma.sync fragments.
//
//   Y[M, N] = epilogue(X[M, K] . dequant(W)[N, K]^T)        (fprop; M small per token tile)
//
// W: E2M1 codes [N, K/2] (the even element in the low nibble; the gpt-oss `*_blocks` layout is the same
// memory) with E8M0 scales per 32 K (MXFP4) or UE4M3 per 16 K and an f32 global (NVFP4, per tensor or per
// expert). X bf16. Outputs bf16 / f16 / f32 with an epilogue functor (bias, activations; no gate|up).
// Dense, or grouped over experts (offsets / masked: one token tile of one expert per CTA,
// scheduler/group_tile.cuh; W and its scales belong to that expert).
//
// Why a kernel of its own: at a few rows per token tile the GEMM is a read of W. The mixed-input mainloop
// (kernels/sm80_mixed_gemm.cuh) stages W through shared memory in 128 x 64 tiles; here every warp streams
// W rows straight into registers, converts them there and feeds the mma, many loads in flight
// (docs/performance.md):
//
// 1. Swap A and B: W is the mma's A operand (16 weight rows = output channels per m16 row group), X its B
//    operand (8 tokens per n8 fragment). One CTA owns block_n channels and block_m tokens; its warps_n
//    warps split K in units of block_k (128 or 256 K: one or two steps), warp w taking units w,
//    w + warps_n, ...; stages = units in flight per warp (1 or 2 register sets).
// 2. A step is 128 K: lane (g, t) (g = lane / 4, t = lane % 4) loads 16 bytes (K elements 32t .. 32t + 31
//    of the step) of weight rows g and g + 8 of each row group, and 64 bytes of token g's X row. The mma's
//    k index is a permutation of the real one, the same for both operands: mma j (0..7) of the step takes
//    the lane's K elements 4j .. 4j + 3, i.e. W bytes 2j, 2j + 1 ({lo, hi} nibble = {k, k + 1}, a natural
//    bf16 pair) and X words 2j, 2j + 1.
// 3. Conversion: the lane's 16 bytes of a row are split once into low and high nibbles (two masks and a
//    shift per word), one prmt per byte puts the byte's two codes in the halves of a word, and a mask,
//    an integer multiply and a mask place their bits in a bf16 worth value * 2^-126
//    (dequant/e2m1_to_bf16.cuh); one bf16x2 fma by 2^(s-1) per register applies 2^126 and the E8M0 scale
//    when every scale of the warp's step is <= 2^1, two fmas (2^126, then the scale) otherwise and for
//    NVFP4's UE4M3 scales. Exact (docs/formats.md); NVFP4's global and the epilogue follow at the store.
// 4. Tails: K is a multiple of 32 (block scales) and N, M free. A lane's 32 K elements are all in or all
//    out; out-of-range loads are skipped (W and X zero). Weight rows past N and tokens past the group read
//    a clamped valid row whose results are never stored.
// 5. Store: kernels/decode_store.cuh (warps' partials summed in shared memory, scaled, epilogue applied,
//    one row of Y per pass of consecutive threads).
//
// Launched with grid (tile rows x ceil(N / block_n)), block warps_n * 32, warps_n * block_n * block_m * 4
// bytes of dynamic shared memory (compiler/plan smem_bytes).
#pragma once

#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "dequant/e2m1_to_bf16.cuh"
#include "kernels/decode_loop.cuh"
#include "kernels/decode_store.cuh"
#include "kernels/sm80_epilogue.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/mma.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

template <class Config>
struct DecodeW4 {
  static constexpr Format kB = Config::kB;
  static constexpr bool kMx = kB == Format::kMxfp4;
  static constexpr int kBlockM = Config::kBlockM;  // tokens per CTA
  static constexpr int kBlockN = Config::kBlockN;  // weight rows (output channels) per CTA
  static constexpr int kWarps = Config::kWarpsN;   // warps splitting K
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kSteps = Config::kBlockK / 128;  // 128-K steps per unit
  static constexpr int kInFlight = Config::kStages;
  static constexpr int kGroups = kBlockN / 16;
  static constexpr int kTok = kBlockM / 8;
  using Epi = Epilogue<Config>;

  static_assert(Config::kArch >= 80, "the decode kernel needs bf16 mma.sync (sm_80+)");
  static_assert(Config::kA == Format::kBf16, "X is bf16 (f16 X takes the mixed-input mainloop)");
  static_assert(kB == Format::kMxfp4 || kB == Format::kNvfp4, "W is MXFP4 or NVFP4");
  static_assert(Config::kScaleB == (kMx ? Scale::kBlock1x32 : Scale::kBlock1x16),
                "W's block scales: E8M0 per 32 (MXFP4), UE4M3 per 16 (NVFP4)");
  static_assert(!Epi::kGlu, "the decode kernel stores one output per channel: no gate|up");
  static_assert(kBlockM == 8 || kBlockM == 16 || kBlockM == 32, "block_m (tokens per CTA) is 8, 16 or 32");
  static_assert(kBlockN % 16 == 0 && kBlockN >= 16 && kBlockN <= 64, "block_n is 16, 32, 48 or 64 weight rows");
  static_assert(kSteps == 1 || kSteps == 2, "block_k is 128 or 256");
  static_assert(kInFlight == 1 || kInFlight == 2, "stages (units in flight) is 1 or 2");

  // One unit's registers: per step, 16 bytes of each weight row of the lane, their scale bytes (NVFP4:
  // two, for K 0..15 and 16..31 of the lane), 64 bytes of each token row.
  static constexpr int kScalesPerRow = kMx ? 1 : 2;
  struct Unit {
    u32 w[kSteps][kGroups][2][4];
    u32 s[kSteps][kGroups][2][kScalesPerRow];
    u32 x[kSteps][kTok][16];
  };

  struct Lane {
    const u8* w[kGroups][2];  // weight rows, byte 16t
    const u8* s[kGroups][2];  // their scale rows, element of K 32t
    const u8* x[kTok];        // token rows, byte 64t
    long long k;
    int t;
  };

  static __device__ __forceinline__ void load_unit(Unit& f, const Lane& l, int u) {
#pragma unroll
    for (int st = 0; st < kSteps; ++st) {
      const long long k0 = (long long)(u * kSteps + st) * 128 + 32 * l.t;  // this lane's first K element
      const bool in = k0 < l.k;
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (in) {
            ldg_stream_v4(f.w[st][rg][h], l.w[rg][h] + k0 / 2);
#pragma unroll
            for (int j = 0; j < kScalesPerRow; ++j) f.s[st][rg][h][j] = ldg_u8(l.s[rg][h] + k0 / (kMx ? 32 : 16) + j);
          } else {
            f.w[st][rg][h][0] = f.w[st][rg][h][1] = f.w[st][rg][h][2] = f.w[st][rg][h][3] = 0u;
#pragma unroll
            for (int j = 0; j < kScalesPerRow; ++j) f.s[st][rg][h][j] = kMx ? 127u : 0x38u;  // 1.0
          }
        }
      }
#pragma unroll
      for (int fr = 0; fr < kTok; ++fr) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          u32 v[4] = {0u, 0u, 0u, 0u};
          if (in) ldg_v4(v, l.x[fr] + k0 * 2 + 16 * c);
#pragma unroll
          for (int e = 0; e < 4; ++e) f.x[st][fr][4 * c + e] = v[e];
        }
      }
    }
  }

  template <bool kOneFma>
  static __device__ __forceinline__ u32 scale_word(u32 s) {
    if constexpr (kMx) {
      if constexpr (kOneFma) return bf16_broadcast(e8m0_folded_bf16(s));  // 2^(s-1): 2^126 and the scale
      return bf16_broadcast(e8m0_to_bf16(s));
    } else {
      return ue4m3_to_bf16x2(s);
    }
  }

  // 16 bytes of one weight row -> 16 bf16x2 registers {k, k + 1} in byte order, scaled.
  template <bool kOneFma>
  static __device__ __forceinline__ void convert_row(u32 (&out)[16], const u32 (&w)[4], const u32 (&s)[kScalesPerRow]) {
    const u32 s0 = scale_word<kOneFma>(s[0]);
    const u32 s1 = kMx ? s0 : scale_word<kOneFma>(s[kScalesPerRow - 1]);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const u32 lo = w[q] & 0x0F0F0F0Fu, hi = (w[q] >> 4) & 0x0F0F0F0Fu;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // byte i's low code -> bits 0..3, its high code -> bits 16..19.
        const u32 pr = prmt(lo, hi, u32(i) | (u32(4 + i) << 8));
        out[4 * q + i] = e2m1_raw_scaled<kOneFma>(e2m1_lo_pair_to_bf16x2_raw(pr), q < 2 ? s0 : s1);
      }
    }
  }

  template <bool kOneFma>
  static __device__ __forceinline__ void compute_unit(float (&acc)[kGroups][kTok][4], const Unit& f) {
#pragma unroll
    for (int st = 0; st < kSteps; ++st) {
#pragma unroll
      for (int rg = 0; rg < kGroups; ++rg) {
        u32 a0[16], a8[16];
        convert_row<kOneFma>(a0, f.w[st][rg][0], f.s[st][rg][0]);
        convert_row<kOneFma>(a8, f.w[st][rg][1], f.s[st][rg][1]);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const u32 a[4] = {a0[2 * j], a8[2 * j], a0[2 * j + 1], a8[2 * j + 1]};
#pragma unroll
          for (int fr = 0; fr < kTok; ++fr) {
            const u32 b[2] = {f.x[st][fr][2 * j], f.x[st][fr][2 * j + 1]};
            mma_m16n8k16_bf16(acc[rg][fr], a, b);
          }
        }
      }
    }
  }

  static __device__ __forceinline__ void compute(float (&acc)[kGroups][kTok][4], const Unit& f) {
    if constexpr (kMx) {
      bool small = true;  // every scale of the warp's unit <= 2^1: one fma per register
#pragma unroll
      for (int st = 0; st < kSteps; ++st)
#pragma unroll
        for (int rg = 0; rg < kGroups; ++rg) small = small && f.s[st][rg][0][0] <= 128u && f.s[st][rg][1][0] <= 128u;
      if (__all_sync(0xFFFFFFFFu, small)) {
        compute_unit<true>(acc, f);
      } else {
        compute_unit<false>(acc, f);
      }
    } else {
      compute_unit<false>(acc, f);
    }
  }

  static __device__ void run(const GemmParams& p) {
    extern __shared__ __align__(16) float red[];  // [kWarps][kBlockN][kBlockM]
    if (p.m <= 0 || p.n <= 0) return;
    const TileWork work = tile_work<Config::kGrouping, kBlockM, kBlockN>(p, 1);
    if (!work.valid) return;
    const int n0 = work.n0, m0 = work.m0, grp_rows = work.rows;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const bool grouped = Config::kGrouping != Grouping::kDense;
    const u8* b_bytes = static_cast<const u8*>(p.b) + (grouped ? (long long)work.expert * p.b_expert_stride / 2 : 0);
    const float* s_base = reinterpret_cast<const float*>(reinterpret_cast<const u8*>(p.b_scale) +
                                                         (grouped ? (long long)work.expert * p.b_scale_expert_stride : 0));
    Lane l;
#pragma unroll
    for (int rg = 0; rg < kGroups; ++rg) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int r = n0 + 16 * rg + 8 * h + g;
        r = r < p.n ? r : p.n - 1;
        l.w[rg][h] = b_bytes + (long long)r * p.ldb / 2;
        l.s[rg][h] = scale_row_bytes(s_base, Config::kScaleTypeB, r, p.lds_b);
      }
    }
#pragma unroll
    for (int fr = 0; fr < kTok; ++fr) {
      int r = m0 + 8 * fr + g;
      r = r < grp_rows ? r : grp_rows - 1;
      l.x[fr] = static_cast<const u8*>(p.a) + (work.row_base + r) * p.lda * 2;
    }
    l.k = p.k;
    l.t = t;

    float acc[kGroups][kTok][4];
#pragma unroll
    for (int rg = 0; rg < kGroups; ++rg)
#pragma unroll
      for (int fr = 0; fr < kTok; ++fr)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[rg][fr][c] = 0.0f;

    const int units = int((p.k + Config::kBlockK - 1) / Config::kBlockK);
    decode_units<kWarps, kInFlight, Unit>(
        units, warp, [&](Unit& f, int u) { load_unit(f, l, u); }, [&](const Unit& f) { compute(acc, f); });

    decode_stage_partials<kBlockN, kBlockM>(red, acc, warp, g, t);  // red[warp][channel][token]
    __syncthreads();
    const int rows = grp_rows - m0 < kBlockM ? grp_rows - m0 : kBlockM;
    decode_store<Config, kWarps, kBlockN, kBlockM, kThreads>(p, red, work, rows);
  }
};

}  // namespace sm80

template <class Config>
__device__ __forceinline__ void sm80_decode_w4(const GemmParams& p) {
  sm80::DecodeW4<Config>::run(p);
}

}  // namespace kiln_dev

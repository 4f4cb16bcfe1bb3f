// templates/kernels/sm80_decode_dgrad.cuh — the portable family's small-M dgrad kernel for 4-bit weights
// (a backward TileConfig with decode = 1): a few rows of dY against a packed MXFP4 / NVFP4 weight matrix,
// the weight streamed once from global memory straight into mma.sync fragments.
//
//   dX[M, K] = dY[M, N] . dequant(W)[N, K]       (pass=dgrad, mode dequantized; M small per token tile)
//
// W is the forward's own b: [N, K] codes, two per byte along K (the even element in the low nibble),
// with its block scales along K (MXFP4: E8M0 per 32, NVFP4: UE4M3 per 16, and NVFP4's f32 global,
// per tensor or per expert). Dense, or grouped over experts (offsets / masked, scheduler/group_tile.cuh:
// a CTA takes one token tile of one expert; W and its scales belong to that expert).
//
// Why a kernel of its own: with 8-64 rows of dY per expert (LoRA over frozen MXFP4 experts) the dgrad
// is a read of W and nothing else. The tiled backward kernel (kernels/sm80_backward.cuh) stages W's raw
// bytes, converts them to a bf16 tile in shared memory and reads that back with ldmatrix.trans: three
// passes through shared memory per weight element, 0.5-0.8 TB/s of weight bytes on an H200
// (docs/performance.md). Here W goes from global memory to registers, is converted there and fed to
// the mma as its A operand.
//
// 1. Swap: the mma computes dX^T. A = dequant(W)^T: 16 output channels (columns k of W) per m16 tile;
//    B = dY^T: 8 tokens per n8 fragment; the mma's reduction index runs over W's rows (N).
// 2. W's rows are the reduction, so an A register must pair two ROWS of W at one channel, while a byte
//    of W pairs two channels of one row. Lane (g, t) (g = lane / 4, t = lane % 4) of a 16-row k-step
//    loads 8 bytes (16 channels: 16g .. 16g + 15 of the CTA's 128) of rows 4t, 4t + 1, 4t + 2, 4t + 3.
//    The mma's k index is a permutation of the real one, the same for both operands: mma k {2t, 2t+1}
//    are rows {4t, 4t+1} and mma k {2t+8, 2t+9} rows {4t+2, 4t+3}, so the lane's dY fragment is one
//    8-byte load of token g's columns 4t .. 4t+3. The channels are permuted too: m16 tile i (0..7)
//    row g is channel 16g + 2i, row g + 8 channel 16g + 2i + 1 — byte i of the lane's 8 bytes. Per
//    byte and row pair, one prmt puts the two rows' bytes in the halves of a word, and a mask, a multiply
//    and a mask make each of the {even channel, odd channel} registers (dequant/e2m1_to_bf16.cuh's bit
//    placement, worth value * 2^-126), each scaled by one bf16x2 fma with the two rows' scales.
// 3. Scaling, exact (docs/backward.md): MXFP4 folds 2^126 and the E8M0 scale 2^(s-127) into one factor
//    2^(s-1) when every scale of the warp's step is <= 2^1 (s <= 128, the normal case of trained
//    weights), else two fmas (2^126, then 2^(s-127)); NVFP4 always two (2^126, then the UE4M3 scale).
//    The products are bf16-exact (e2m1 x power of two, e2m1 x ue4m3); NVFP4's global multiplies the
//    f32 result at the store.
// 4. The CTA owns 128 channels and block_m tokens (8, 16 or 32: 1, 2 or 4 n8 fragments); its warps_n
//    warps split the reduction in units of block_k rows (16, 32 or 64: 1, 2 or 4 k-steps), warp w taking
//    units w, w + warps_n, ...; stages = units in flight per warp (1 or 2 register sets).
// 5. Tails: K (channels) is a multiple of 32 and N a multiple of 8 (the planner's 16-byte rows), so a
//    lane's 16 channels and 4 rows are all in or all out; out-of-range loads are skipped and their
//    registers zero (W and dY both: no garbage times zero). Tokens past the group read a clamped row
//    whose results are never stored.
// 6. Store: every warp writes its accumulators to shared memory, [warp][token][channel] (row stride
//    132 floats: 16-byte stores, conflict-free reads), one barrier, then kernels/decode_store.cuh sums each
//    output over the warps (consecutive threads: consecutive channels, one row of dX), multiplies NVFP4's
//    global and stores it (accumulate=true: reads the output and adds in f32, rounded once).
//
// Launched with grid (tile rows x ceil(K / 128)) as the portable GEMM's tile grid, block warps_n * 32,
// warps_n * block_m * 132 * 4 bytes of dynamic shared memory (compiler/plan sm80_backward_smem_bytes).
#pragma once

#include "common/gemm_params.cuh"
#include "common/operand_major.cuh"
#include "common/types.cuh"
#include "dequant/block_scale.cuh"
#include "dequant/e2m1_to_bf16.cuh"
#include "kernels/decode_loop.cuh"
#include "kernels/decode_store.cuh"
#include "ptx/cvt.cuh"
#include "ptx/ld.cuh"
#include "ptx/mma.cuh"
#include "ptx/warp.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm80 {

template <class Config>
struct DecodeDgrad {
  static constexpr Format kB = Config::kB;
  static constexpr Format kOut = Config::kOut;
  static constexpr bool kMx = kB == Format::kMxfp4;
  static constexpr int kBlockM = Config::kBlockM;  // tokens per CTA
  static constexpr int kChannels = 128;            // output channels (columns of W) per CTA
  static constexpr int kWarps = Config::kWarpsN;   // warps splitting the reduction
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kSteps = Config::kBlockK / 16;  // k-steps (16 rows of W) per unit
  static constexpr int kInFlight = Config::kStages;
  static constexpr int kTok = kBlockM / 8;
  static constexpr int kTiles = 8;        // m16 tiles: 16 channels per lane group, 2 per byte
  static constexpr int kRedStride = kChannels + 4;  // floats per token row of the reduction buffer

  static_assert(Config::kArch >= 80, "the decode dgrad kernel needs bf16 mma.sync (sm_80+)");
  static_assert(ConfigTransB<Config>::kValue, "dgrad reads W MN-major");
  static_assert(!ConfigTransA<Config>::kValue, "the decode kernel runs dgrad only");
  static_assert(Config::kA == Format::kBf16, "mode dequantized computes in bf16: dY is bf16");
  static_assert(kB == Format::kMxfp4 || kB == Format::kNvfp4, "W is MXFP4 or NVFP4");
  static_assert(Config::kScaleB == (kMx ? Scale::kBlock1x32 : Scale::kBlock1x16),
                "W's block scales: E8M0 per 32 (MXFP4), UE4M3 per 16 (NVFP4)");
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "dX is bf16, f16 or f32");
  static_assert(kBlockM == 8 || kBlockM == 16 || kBlockM == 32, "block_m (tokens per CTA) is 8, 16 or 32");
  static_assert(Config::kBlockN == kChannels, "block_n (channels per CTA) is 128");
  static_assert(kSteps == 1 || kSteps == 2 || kSteps == 4, "block_k is 16, 32 or 64 rows of W");
  static_assert(kInFlight == 1 || kInFlight == 2, "stages (units in flight) is 1 or 2");
  static_assert(kWarps >= 1 && kWarps <= 8, "warps_n is 1..8");

  // One unit's registers: per k-step, 4 rows x 8 bytes of W, their 4 scale bytes, and 4 dY columns of
  // each token fragment.
  struct Unit {
    u32 w[kSteps][4][2];
    u32 s[kSteps][4];
    u32 x[kSteps][kTok][2];
  };

  struct Lane {
    const u8* w;      // W row 0 of this expert, byte of channel 16g of the CTA
    long long w_row;  // bytes per W row
    const u8* s;      // the scale of row 0 for these channels
    long long s_row;  // bytes per scale row
    const u8* x[kTok];  // dY rows of this lane's tokens, column 0
    int n_rows;         // the reduction: rows of W (N)
    bool in;            // this lane's 16 channels exist
    int t;
  };

  static __device__ __forceinline__ void load_unit(Unit& f, const Lane& l, int u) {
#pragma unroll
    for (int st = 0; st < kSteps; ++st) {
      const int r0 = (u * kSteps + st) * 16 + 4 * l.t;  // rows r0 .. r0 + 3 (all in or all out)
      const bool in = r0 < l.n_rows;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (in && l.in) {
          ldg_stream_v2(f.w[st][j], l.w + (long long)(r0 + j) * l.w_row);
          f.s[st][j] = ldg_u8(l.s + (long long)(r0 + j) * l.s_row);
        } else {
          f.w[st][j][0] = f.w[st][j][1] = 0u;
          f.s[st][j] = kMx ? 127u : 0x38u;  // 1.0: zero codes times a neutral scale
        }
      }
#pragma unroll
      for (int fr = 0; fr < kTok; ++fr) {
        if (in) {
          ldg_v2(f.x[st][fr], l.x[fr] + (long long)r0 * 2);
        } else {
          f.x[st][fr][0] = f.x[st][fr][1] = 0u;
        }
      }
    }
  }

  // The scale words of one k-step's two row pairs: bf16x2 {row a, row b}. kOneFma: MXFP4 with every
  // scale <= 2^1, the factor 2^(s-1) that also undoes the raw values' 2^-126.
  template <bool kOneFma>
  static __device__ __forceinline__ u32 scale_pair(u32 sa, u32 sb) {
    if constexpr (kMx) {
      if constexpr (kOneFma) return e8m0_folded_bf16(sa) | (e8m0_folded_bf16(sb) << 16);
      return e8m0_to_bf16(sa) | (e8m0_to_bf16(sb) << 16);
    } else {
      return prmt(ue4m3_to_bf16x2(sa), ue4m3_to_bf16x2(sb), 0x7610u);
    }
  }

  template <bool kOneFma>
  static __device__ __forceinline__ void compute_unit(float (&acc)[kTiles][kTok][4], const Unit& f) {
#pragma unroll
    for (int st = 0; st < kSteps; ++st) {
      const u32 s01 = scale_pair<kOneFma>(f.s[st][0], f.s[st][1]);
      const u32 s23 = scale_pair<kOneFma>(f.s[st][2], f.s[st][3]);
#pragma unroll
      for (int q = 0; q < 2; ++q) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          // byte i of word q of each row: rows a -> bits 0..7, b -> bits 16..23; the low nibbles are the
          // even channel, the high ones the odd channel.
          const u32 sel = u32(i) | (u32(i) << 4) | (u32(4 + i) << 8) | (u32(4 + i) << 12);
          const u32 p01 = prmt(f.w[st][0][q], f.w[st][1][q], sel);
          const u32 p23 = prmt(f.w[st][2][q], f.w[st][3][q], sel);
          const u32 a[4] = {e2m1_raw_scaled<kOneFma>(e2m1_lo_pair_to_bf16x2_raw(p01), s01),
                            e2m1_raw_scaled<kOneFma>(e2m1_hi_pair_to_bf16x2_raw(p01), s01),
                            e2m1_raw_scaled<kOneFma>(e2m1_lo_pair_to_bf16x2_raw(p23), s23),
                            e2m1_raw_scaled<kOneFma>(e2m1_hi_pair_to_bf16x2_raw(p23), s23)};
          const int tile = 4 * q + i;
#pragma unroll
          for (int fr = 0; fr < kTok; ++fr) {
            const u32 b[2] = {f.x[st][fr][0], f.x[st][fr][1]};
            mma_m16n8k16_bf16(acc[tile][fr], a, b);
          }
        }
      }
    }
  }

  static __device__ __forceinline__ void compute(float (&acc)[kTiles][kTok][4], const Unit& f) {
    if constexpr (kMx) {
      // One fma per register when every scale of this warp's unit is <= 2^1 (warp-uniform choice).
      bool small = true;
#pragma unroll
      for (int st = 0; st < kSteps; ++st)
#pragma unroll
        for (int j = 0; j < 4; ++j) small = small && f.s[st][j] <= 128u;
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
    extern __shared__ __align__(16) float red[];  // [kWarps][kBlockM][kRedStride]
    if (p.m <= 0 || p.n <= 0) return;
    const TileWork work = tile_work<Config::kGrouping, kBlockM, kChannels>(p, 1);
    if (!work.valid) return;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const bool grouped = Config::kGrouping != Grouping::kDense;

    Lane l;
    const int ch0 = work.n0 + 16 * g;  // this lane's first channel
    l.in = ch0 < p.n;
    const int ch = l.in ? ch0 : 0;
    const long long b_off = grouped ? (long long)work.expert * p.b_expert_stride : 0;  // elements
    l.w_row = p.ldb / 2;
    l.w = static_cast<const u8*>(p.b) + b_off / 2 + ch / 2;
    const u8* s_base = reinterpret_cast<const u8*>(p.b_scale) + (grouped ? (long long)work.expert * p.b_scale_expert_stride : 0);
    l.s_row = p.lds_b;
    l.s = s_base + ch / (kMx ? 32 : 16);
    l.n_rows = p.k;
    l.t = t;
    const int grp_rows = work.rows;
#pragma unroll
    for (int fr = 0; fr < kTok; ++fr) {
      int r = work.m0 + 8 * fr + g;
      r = r < grp_rows ? r : grp_rows - 1;
      l.x[fr] = static_cast<const u8*>(p.a) + (work.row_base + r) * p.lda * 2;
    }

    float acc[kTiles][kTok][4];
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
#pragma unroll
      for (int fr = 0; fr < kTok; ++fr)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][fr][c] = 0.0f;

    const int units = (p.k + 16 * kSteps - 1) / (16 * kSteps);
    decode_units<kWarps, kInFlight, Unit>(
        units, warp, [&](Unit& f, int u) { load_unit(f, l, u); }, [&](const Unit& f) { compute(acc, f); });

    // acc[i][fr][c]: channel 16g + 2i + (c >> 1), token 8fr + 2t + (c & 1). Per token the lane holds its
    // 16 channels: four 16-byte stores.
#pragma unroll
    for (int fr = 0; fr < kTok; ++fr) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float* row = red + (warp * kBlockM + 8 * fr + 2 * t + e) * kRedStride + 16 * g;
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          *reinterpret_cast<float4*>(row + 4 * v) =
              make_float4(acc[2 * v][fr][e], acc[2 * v][fr][2 + e], acc[2 * v + 1][fr][e], acc[2 * v + 1][fr][2 + e]);
        }
      }
    }
    __syncthreads();

    const int rows = grp_rows - work.m0 < kBlockM ? grp_rows - work.m0 : kBlockM;
    decode_store<Config, kWarps, kChannels, kBlockM, kThreads, kRedStride>(p, red, work, rows);
  }
};

}  // namespace sm80

template <class Config>
__device__ __forceinline__ void sm80_decode_dgrad(const GemmParams& p) {
  sm80::DecodeDgrad<Config>::run(p);
}

}  // namespace kiln_dev

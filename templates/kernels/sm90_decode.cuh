// templates/kernels/sm90_decode.cuh — the warpgroup decode kernel (a portable-family TileConfig with
// decode = 2, sm_90a only): a few FP8 rows of X against an FP8 weight matrix streamed once, on wgmma.
//
//   Y[M, N] = (X[M, K] . W[N, K]^T) * sa * sb            (fprop, M small: 1..16 tokens per CTA)
//
// Why: the mma.sync decode kernel (kernels/sm80_decode.cuh) converts every FP8 byte of W and X to f16
// on sm_90 (Hopper has no FP8 mma.sync) and issues an mma per 16 x 8 x 16; at 16 tokens it is
// instruction-bound (ncu on an H200, docs/performance.md: ALU 30%, 0.31 issues per cycle, 8 warps per SM at
// 174 registers) and reads 2.6 TB/s. wgmma takes FP8 natively and its A operand may come from
// registers, so W goes from global memory straight into A fragments, with no conversion at all.
//
// 1. Swap A and B: W is wgmma's A (64 weight rows per warpgroup = block_n), X its B (block_m = 8 or 16
//    tokens = wgmma N), staged in shared memory. A CTA owns 64 weight rows and block_m tokens; its
//    warpgroups split K: warpgroup w takes units w, w + warpgroups, ... of block_k bytes.
// 2. A fragments: lane (g, t) of warp q of a warpgroup loads bytes 16t..16t+15 of each 64-byte segment of
//    weight rows 16q + g and 16q + g + 8 (words v0..v3 and u0..u3). The wgmma k index is a permutation of
//    the real one (a dot product does not care in which order its terms are summed); k32 step c of the
//    segment takes {v[2c], u[2c], v[2c+1], u[2c+1]}, i.e. logical bytes 4t..4t+3 <- real 16t+8c..,
//    logical 16+4t.. <- real 16t+8c+4... (the same permutation as the mma.sync decode kernel).
// 3. X: every step, the warpgroup loads the unit's block_m x block_k bytes of X (16-byte pieces) and
//    stores each 4-byte word at its permuted position in a 128-byte-swizzled K-major tile (what TMA
//    would write: rows of 128 bytes, 16-byte chunk j of row r at j ^ (r % 8), 8-row groups 1024 bytes
//    apart), double-buffered per warpgroup; fence.proxy.async, a warpgroup barrier, then the wgmmas read
//    it through a descriptor (ptx/wgmma.cuh). Tokens past M and bytes past K are zeros.
// 4. Each step's wgmmas write a fresh partial that is waited for and added to an f32 accumulator
//    (promotion every block_k: wgmma's FP8 accumulator is narrower than f32); their A registers are reused
//    two steps later (wgmma_fence_regs keeps the compiler from reallocating them earlier). Two steps in
//    flight (stages 2): the next unit's loads are issued before this unit's wgmmas.
// 5. Reduction over warpgroups through shared memory, then the decode kernel's epilogue (tensor / m / n
//    scales in the sm80 order, the functor, one output per thread).
//
// Launched with grid (ceil(M / block_m) * ceil(N / 64)), block (warps_n * 32) and
// compiler/plan smem_bytes of dynamic shared memory.
#pragma once

#include "common/gemm_params.cuh"
#include "common/types.cuh"
#include "kernels/decode_store.cuh"
#include "kernels/sm80_epilogue.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/ld.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "scheduler/group_tile.cuh"

namespace kiln_dev {
namespace sm90d {

template <class Config>
struct WgDecode {
  static constexpr Format kA = Config::kA;  // X: tokens
  static constexpr Format kB = Config::kB;  // W: weight rows (wgmma's A operand)
  static constexpr int kBlockM = Config::kBlockM;
  static constexpr int kBlockN = Config::kBlockN;
  static constexpr int kWarps = Config::kWarpsN;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kWgs = kWarps / 4;
  static constexpr int kInFlight = Config::kStages;
  static constexpr int kUnitBytes = Config::kBlockK;  // FP8: one byte per element
  static constexpr int kSegs = kUnitBytes / 64;
  static constexpr int kAtomBytes = kBlockM * 128;  // one 128-byte K atom of the X tile
  static constexpr int kBufBytes = (kUnitBytes / 128) * kAtomBytes;
  static constexpr int kPieces = kBlockM * kSegs * 4;  // 16-byte pieces of X per unit
  static constexpr int kPiecesPerThread = (kPieces + 127) / 128;
  using Epi = sm80::Epilogue<Config>;

#if defined(__CUDA_ARCH__)
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(sizeof(Config) == 0, "the warpgroup decode kernel compiles for sm_90a only (wgmma)");
#endif
#endif
  static_assert(format_is_fp8(kA) && format_is_fp8(kB), "warpgroup decode: FP8 (e4m3 / e5m2) operands");
  static_assert((Config::kScaleA == Scale::kNone || Config::kScaleA == Scale::kTensor ||
                 Config::kScaleA == Scale::kRow) &&
                    (Config::kScaleB == Scale::kNone || Config::kScaleB == Scale::kTensor ||
                     Config::kScaleB == Scale::kRow),
                "warpgroup decode: tensor or per-row scales only");
  static_assert(!Epi::kGlu, "the decode kernel stores one output per channel: no gate|up");
  static_assert(kBlockM == 8 || kBlockM == 16, "block_m (tokens, wgmma N) is 8 or 16");
  static_assert(kBlockN == 64, "block_n is 64 weight rows (one wgmma M per warpgroup)");
  static_assert(kWarps % 4 == 0 && kWgs >= 1 && kWgs <= 4, "1..4 warpgroups split K");
  static_assert(kInFlight == 1 || kInFlight == 2, "stages (steps in flight) is 1 or 2");
  static_assert(kUnitBytes == 128 || kUnitBytes == 256 || kUnitBytes == 512, "block_k is 1, 2 or 4 atoms of 128");

  // W: streamed once (ptx/ld.cuh ldg_stream_v4: no L1 allocation, 256-byte L2 fetches).

  struct Unit {
    u32 w[kSegs][2][4];           // rows g, g + 8 of this warp's 16, 16 bytes of each segment
    u32 x[kPiecesPerThread][4];   // this thread's 16-byte pieces of the unit's X tile
  };
  struct Lane {
    const u8* w[2];                    // weight rows (byte 16t included)
    const u8* x[kPiecesPerThread];     // piece rows (nullptr: token past the tile's rows, or no piece)
    int xoff[kPiecesPerThread];        // piece byte offset inside a unit
    long long k_bytes;
    int t;
  };

  static __device__ __forceinline__ void load_unit(Unit& f, const Lane& l, long long u) {
#pragma unroll
    for (int s = 0; s < kSegs; ++s) {
      const long long off = u * kUnitBytes + 64 * s;
      const bool in = off + 16 * l.t < l.k_bytes;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (in) {
          ldg_stream_v4(f.w[s][h], l.w[h] + off);
        } else {
          f.w[s][h][0] = f.w[s][h][1] = f.w[s][h][2] = f.w[s][h][3] = 0u;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kPiecesPerThread; ++i) {
      const long long off = u * kUnitBytes + l.xoff[i];
      if (l.x[i] != nullptr && off < l.k_bytes) {
        ldg_v4(f.x[i], l.x[i] + off);
      } else {
        f.x[i][0] = f.x[i][1] = f.x[i][2] = f.x[i][3] = 0u;
      }
    }
  }

  // Piece i of thread `tid` (token r, segment s, 16-byte column tp): word j (real word 4tp + j of the
  // segment) goes to k32 step c = j / 2, logical word tp + 4 (j % 2).
  static __device__ __forceinline__ void store_x(u32 buf, const Unit& f, int tid) {
#pragma unroll
    for (int i = 0; i < kPiecesPerThread; ++i) {
      const int pc = tid + 128 * i;
      if (kPieces % 128 != 0 && pc >= kPieces) continue;
      const int r = pc / (kSegs * 4), q = pc % (kSegs * 4);
      const int s = q >> 2, tp = q & 3;
      const u32 row = buf + (s >> 1) * kAtomBytes + (r >> 3) * 1024 + (r & 7) * 128;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = (s & 1) * 64 + (j >> 1) * 32 + (tp + 4 * (j & 1)) * 4;
        sts_u32(row + ((((col >> 4) ^ (r & 7)) << 4) | (col & 15)), f.x[i][j]);
      }
    }
  }

  // One step: its wgmmas write a fresh partial (scale-d 0 first), waited for, then added to the f32
  // accumulator: wgmma's FP8 accumulator is narrower than f32, so the sum is promoted every step (block_k).
  static __device__ __forceinline__ void compute_unit(float (&acc)[kBlockM / 2], Unit& f, u32 buf) {
    float part[kBlockM / 2];
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kSegs; ++s) {
      const u64 desc = wgmma_desc_sw128(buf + (s >> 1) * kAtomBytes) + u64(((s & 1) * 64) >> 4);
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const u32 a[4] = {f.w[s][0][2 * c], f.w[s][1][2 * c], f.w[s][0][2 * c + 1], f.w[s][1][2 * c + 1]};
        wgmma_m64_rs<kBlockM, kB, kA>(part, a, desc + u64(2 * c), (s | c) != 0 ? 1u : 0u);
      }
    }
    wgmma_commit();
    wgmma_fence_operands(part);
    wgmma_wait<0>();
    wgmma_fence_operands(part);
#pragma unroll
    for (int i = 0; i < kBlockM / 2; ++i) acc[i] += part[i];
#pragma unroll
    for (int s = 0; s < kSegs; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) wgmma_fence_regs(f.w[s][h]);
  }

  static __device__ __forceinline__ void step(float (&acc)[kBlockM / 2], Unit& f, u32 buf, int tid, int wg) {
    store_x(buf, f, tid);
    fence_proxy_async_shared();  // generic-proxy stores, read by wgmma (async proxy)
    named_barrier_sync(1 + wg, 128);
    compute_unit(acc, f, buf);
  }

  static __device__ void run(const GemmParams& p) {
    extern __shared__ __align__(16) u8 smem_raw[];
    if (p.m <= 0 || p.n <= 0) return;
    const TileWork work = tile_work<Config::kGrouping, kBlockM, kBlockN>(p, 1);
    if (!work.valid) return;
    const int n0 = work.n0, m0 = work.m0;
    const int grp_rows = work.rows;
    const long long row_base = work.row_base;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp >> 2, wq = warp & 3, tid = threadIdx.x & 127;
    const int g = lane >> 2, t = lane & 3;
    const u8* a_bytes = static_cast<const u8*>(p.a);
    const u8* b_bytes = static_cast<const u8*>(p.b) + (long long)work.expert * p.b_expert_stride * format_bytes(kB);

    // Shared memory: X buffers [warpgroup][2] (1024-aligned), then the f32 partials [warpgroup][64][block_m].
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const u32 xbuf = base + u32(wg) * 2 * kBufBytes;
    float* red = reinterpret_cast<float*>(smem_raw + (base - smem_u32(smem_raw)) + kWgs * 2 * kBufBytes);

    Lane l;
    l.k_bytes = (long long)p.k;
    l.t = t;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int r = n0 + 16 * wq + 8 * h + g;
      r = r < p.n ? r : p.n - 1;
      l.w[h] = b_bytes + (long long)r * p.ldb + 16 * t;
    }
    const int rows = grp_rows - m0 < kBlockM ? grp_rows - m0 : kBlockM;
#pragma unroll
    for (int i = 0; i < kPiecesPerThread; ++i) {
      const int pc = tid + 128 * i;
      const int r = pc / (kSegs * 4), q = pc % (kSegs * 4);
      l.xoff[i] = 16 * q;
      l.x[i] = (pc < kPieces && r < rows) ? a_bytes + (row_base + m0 + r) * p.lda : nullptr;
    }

    float acc[kBlockM / 2];
#pragma unroll
    for (int i = 0; i < kBlockM / 2; ++i) acc[i] = 0.0f;

    // Every warpgroup runs the same number of steps (units past K load zeros and add nothing), so the
    // warpgroups reach the reduction's __syncthreads after equally many named-barrier phases.
    const long long units = (l.k_bytes + kUnitBytes - 1) / kUnitBytes;
    const long long padded = (units + kWgs - 1) / kWgs * kWgs;
    if constexpr (kInFlight == 2) {
      Unit f0, f1;
      long long u = wg;
      if (u < padded) load_unit(f0, l, u);
      for (; u < padded; u += 2 * kWgs) {
        const long long u1 = u + kWgs;
        if (u1 < padded) load_unit(f1, l, u1);
        step(acc, f0, xbuf, tid, wg);
        if (u1 >= padded) break;
        if (u1 + kWgs < padded) load_unit(f0, l, u1 + kWgs);
        step(acc, f1, xbuf + kBufBytes, tid, wg);
      }
    } else {
      int parity = 0;
      for (long long u = wg; u < padded; u += kWgs) {
        Unit f;
        load_unit(f, l, u);
        step(acc, f, xbuf + u32(parity) * kBufBytes, tid, wg);
        parity ^= 1;
      }
    }

    // Reduction over the warpgroups: red[wg][channel][token]; acc[4j + e] is channel 16 wq + g + 8 (e / 2),
    // token 8j + 2t + e % 2 (the wgmma accumulator layout, ptx/wgmma.cuh).
#pragma unroll
    for (int i = 0; i < kBlockM / 2; ++i) {
      const int ch = 16 * wq + g + 8 * ((i >> 1) & 1), tok = 8 * (i >> 2) + 2 * t + (i & 1);
      red[(wg * kBlockN + ch) * kBlockM + tok] = acc[i];
    }
    __syncthreads();
    decode_store<Config, kWgs, kBlockN, kBlockM, kThreads>(p, red, work, rows);
  }
};

}  // namespace sm90d

template <class Config>
__device__ __forceinline__ void sm90_decode(const GemmParams& p) {
  sm90d::WgDecode<Config>::run(p);
}

}  // namespace kiln_dev

// templates/kernels/reference_gemm.cuh — the naive GPU reference GEMM (ground truth on the device).
//
//   Y[m, n] = round_out( acc(m, n) * (row_factor(m) * col_factor(n)) )
//
// Obviously correct rather than fast: one thread per output element, every element decoded exactly
// to f32 by bit manipulation (common/decode.cuh: zeros, subnormals, Inf and NaN of bf16/f16/e4m3/e5m2,
// E2M1, E8M0, UE4M3), products accumulated in f32 in increasing k with one fma.rn each (a fixed,
// documented order, so repeated runs are bitwise identical), and the result rounded to nearest-even
// to the output format by cvt.rn. Accumulation is f32 — what the fast kernels do — so the tolerance of
// a comparison only has to cover accumulation order, not a precision gap (verify/check.hpp
// check_tolerance). No alignment requirement on K, lda, ldb or ldc.
//
// Scales (common/gemm_params.cuh gives the layouts):
//   - element scales that are exact in f32 are folded into the decoded element: MX E8M0 per 32 (mxfp8,
//     mxfp4) and NVFP4's UE4M3 per 16 (e2m1 * ue4m3 has 6 significant bits);
//   - FP8 block scales (block1x128 / block128x128, f32 or E8M0) are promoted per 128 K, as the fast
//     kernels do: part = sum over the block (fma chain), acc = fma(part, sa * sb, acc);
//   - row_factor(m): a's tensor scale or a_scale[m] (per token); col_factor(n): b's tensor scale or
//     b_scale[n] (per channel), times the NVFP4 global (b_global[0] or b_global[expert]). The same
//     two factors in the same order as kernels/sm80_epilogue.cuh.
// Backward passes (compiler/plan/gemm_view.hpp; reference_backward below): m, n, k are the GEMM's; an
// MN-major operand (Config kTransA / kTransB, common/operand_major.cuh) is read as element (k, m) of its
// stored rows instead of (m, k). A quantized b (mode dequantized) is dequantized per element as
// bf16_rn(f32(decode(code) * s)) with its scale that varies along the reduction (per row, blocks), a
// tensor scale and NVFP4's global multiplying the sum (docs/backward.md). Grouped wgrad: output row
// e * N + m of expert e sums the expert's rows only.
// Grouped problems: the thread finds its row's expert by a linear scan of the offsets (clamped and
// made non-decreasing exactly as scheduler/group_tile.cuh does), or by m / max_m against the count
// (masked). Rows owned by no expert are not written.
//
// Launch (compiler/plan launch_shape): block 256 threads = 16 x 16 outputs, grid
// (ceil(N / 16), min(ceil(M / 16), 65535)); rows beyond the grid are covered by a grid-stride loop.
// Instantiated by generated code as
//   struct KilnConfig { static constexpr kiln_dev::Format kA = ..., kB = ..., kOut = ...; ... };
//   extern "C" __global__ void __launch_bounds__(256, 1) kiln_reference_gemm(kiln_dev::GemmParams p) {
//     kiln_dev::reference_gemm<KilnConfig>(p);
//   }
#pragma once

#include "common/decode.cuh"
#include "common/gemm_params.cuh"
#include "common/operand_major.cuh"
#include "common/types.cuh"
#include "ptx/cvt.cuh"

namespace kiln_dev {

constexpr int kReferenceTile = 16;  // outputs per block side; block = 16 x 16 = 256 threads

namespace reference {

// Scale element i of a row of scales of type kType, as f32 (exact).
template <ScaleType kType>
__device__ __forceinline__ float scale_at(const void* row, long long i) {
  if constexpr (kType == ScaleType::kF32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (kType == ScaleType::kUe8m0) {
    return decode_e8m0(static_cast<const u8*>(row)[i]);
  } else {
    return decode_e4m3(static_cast<const u8*>(row)[i]);
  }
}

// Row `row` of a 2-D scale tensor with row stride lds scale elements.
template <ScaleType kType>
__device__ __forceinline__ const void* scale_row(const void* base, long long row, long long lds) {
  return static_cast<const u8*>(base) + row * lds * (kType == ScaleType::kF32 ? 4 : 1);
}

// The element scale folded into element k (1 when the operand has none).
template <Scale kScale, ScaleType kType>
__device__ __forceinline__ float element_scale(const void* srow, int k) {
  if constexpr (kScale == Scale::kBlock1x32) return scale_at<kType>(srow, k / 32);
  if constexpr (kScale == Scale::kBlock1x16) return scale_at<kType>(srow, k / 16);
  return 1.0f;
}


// The expert that owns output row m (dense: 0), or -1 for a row no expert owns: offsets clamped and made
// non-decreasing exactly as scheduler/group_tile.cuh does; masked rows past the expert's count.
template <Grouping kGrouping>
__device__ __forceinline__ int row_expert(const GemmParams& p, i64 m) {
  if constexpr (kGrouping == Grouping::kOffsets) {
    int start = 0;
    for (int e = 0; e < p.experts; ++e) {
      int end = p.group_rows[e];
      end = end < 0 ? 0 : end > p.m ? p.m : end;
      if (end < start) end = start;
      if (m < end) return e;
      start = end;
    }
    return -1;
  } else if constexpr (kGrouping == Grouping::kMasked) {
    const int expert = int(m / p.max_m);
    int count = p.group_rows[expert];
    count = count < 0 ? 0 : count > p.max_m ? p.max_m : count;
    return m - i64(expert) * p.max_m < count ? expert : -1;
  } else {
    return 0;
  }
}

// Round an f32 to bf16 (nearest even) and back: the dequantized backward's element value.
__device__ __forceinline__ float round_bf16(float x) { return decode_bf16(cvt_bf16(x)); }

// The rows [begin, end) of expert e of a grouped wgrad, sanitized as kernels/sm80_backward.cuh does.
template <Grouping kGrouping>
__device__ __forceinline__ void expert_rows(const GemmParams& p, int e, int& begin, int& end) {
  if constexpr (kGrouping == Grouping::kMasked) {
    int count = p.group_rows[e];
    count = count < 0 ? 0 : count > p.max_m ? p.max_m : count;
    begin = e * p.max_m;
    end = begin + count;
  } else {
    begin = 0;
    end = 0;
    for (int j = 0; j <= e; ++j) {
      int v = p.group_rows[j];
      v = v < 0 ? 0 : v > p.k ? p.k : v;
      if (j < e && v > begin) begin = v;
      if (v > end) end = v;
    }
  }
}

// Grouped quantized wgrad: expert e's columns [begin, end) of the padded column-wise copies (p.k columns):
// its rows rounded up to 128, after the earlier experts' (templates/common/quantize_params.cuh), sanitized
// as kernels/sm90/scheduler.cuh does.
template <Grouping kGrouping>
__device__ __forceinline__ void padded_columns(const GemmParams& p, int e, int& begin, int& end) {
  int padded = 0, end_before = 0;
  begin = end = 0;
  for (int j = 0; j <= e; ++j) {
    int rows;
    if constexpr (kGrouping == Grouping::kMasked) {
      rows = p.group_rows[j];
      rows = rows < 0 ? 0 : rows > p.k ? p.k : rows;
    } else {
      int v = p.group_rows[j];
      v = v < 0 ? 0 : v > p.k ? p.k : v;
      if (v < end_before) v = end_before;
      rows = v - end_before;
      end_before = v;
    }
    const int blocks = (rows + 127) / 128 * 128;
    begin = padded < p.k ? padded : p.k;
    padded += blocks;
    end = padded < p.k ? padded : p.k;
  }
}

// Backward passes: C[m, n] = sum_k A(m, k) * B(k, n), B stored [k][n] (MN-major), A stored [m][k] (dgrad)
// or [k][m] (wgrad).
template <class Config>
__device__ __forceinline__ void backward(const GemmParams& p) {
  constexpr Format kA = Config::kA;
  constexpr Format kB = Config::kB;
  constexpr Format kOut = Config::kOut;
  constexpr Scale kSB = Config::kScaleB;
  constexpr ScaleType kTB = Config::kScaleTypeB;
  constexpr Grouping kGrouping = Config::kGrouping;
  constexpr bool kWgrad = ConfigTransA<Config>::kValue;
  constexpr bool kKGrouped = kWgrad && kGrouping != Grouping::kDense;
  static_assert(format_is_16bit(kA) && Config::kScaleA == Scale::kNone, "dY is bf16 / f16 (unscaled)");
  constexpr bool kFold = kSB != Scale::kNone && kSB != Scale::kTensor;

  const int n = blockIdx.x * kReferenceTile + threadIdx.x % kReferenceTile;
  if (n >= p.n) return;
  const i64 rows_total = kKGrouped ? i64(p.m) * p.experts : p.m;
  for (i64 mm = i64(blockIdx.y) * kReferenceTile + threadIdx.x / kReferenceTile; mm < rows_total;
       mm += i64(gridDim.y) * kReferenceTile) {
    int expert = 0, k_begin = 0, k_end = p.k;
    i64 m = mm;
    if constexpr (kKGrouped) {
      expert = int(mm / p.m);
      m = mm % p.m;
      expert_rows<kGrouping>(p, expert, k_begin, k_end);
    } else {  // dgrad: the expert owning row m
      expert = row_expert<kGrouping>(p, m);
      if (expert < 0) continue;
    }
    // b: W of the expert (grouped dgrad) or X (rows global); its scales likewise.
    const i64 b_expert = kWgrad ? 0 : expert;
    const u8* b_base = static_cast<const u8*>(p.b) + format_span_bytes(kB, b_expert * p.b_expert_stride);
    const u8* s_base = reinterpret_cast<const u8*>(p.b_scale) +
                       b_expert * p.b_scale_expert_stride * (kTB == ScaleType::kF32 ? 4 : 1);
    float acc = 0.0f;
    for (int k = k_begin; k < k_end; ++k) {
      const float av = kWgrad ? decode_element<kA>(p.a, i64(k) * p.lda + m)
                              : decode_element<kA>(p.a, m * p.lda + k);
      float bv = decode_element<kB>(b_base, i64(k) * p.ldb + n);
      if constexpr (kFold) {
        float s;
        if constexpr (kSB == Scale::kRow) {
          s = reinterpret_cast<const float*>(s_base)[k];
        } else if constexpr (kSB == Scale::kBlock128x128) {
          s = scale_at<kTB>(scale_row<kTB>(s_base, k / 128, p.lds_b), n / 128);
        } else if constexpr (kSB == Scale::kBlock1x128) {
          s = scale_at<kTB>(scale_row<kTB>(s_base, k, p.lds_b), n / 128);
        } else if constexpr (kSB == Scale::kBlock1x32) {
          s = scale_at<kTB>(scale_row<kTB>(s_base, k, p.lds_b), n / 32);
        } else {
          s = scale_at<kTB>(scale_row<kTB>(s_base, k, p.lds_b), n / 16);
        }
        bv = round_bf16(bv * s);
      }
      acc = fma_rn(av, bv, acc);
    }
    float f = 1.0f;
    if constexpr (kSB == Scale::kTensor) f = reinterpret_cast<const float*>(s_base)[0];
    if constexpr (kB == Format::kNvfp4) {
      if (p.b_global != nullptr) f *= p.b_global[Config::kGlobalPerExpert ? expert : 0];
    }
    const float y = kSB == Scale::kTensor || kB == Format::kNvfp4 ? acc * f : acc;
    const i64 idx = (kKGrouped ? i64(expert) * p.m + m : m) * p.ldc + n;
    if constexpr (kOut == Format::kF32) {
      static_cast<float*>(p.out)[idx] = y;
    } else if constexpr (kOut == Format::kBf16) {
      static_cast<u16*>(p.out)[idx] = cvt_bf16(y);
    } else {
      static_cast<u16*>(p.out)[idx] = cvt_f16(y);
    }
  }
}

}  // namespace reference

template <class Config>
__device__ __forceinline__ void reference_gemm(const GemmParams& p) {
  constexpr Format kA = Config::kA;
  constexpr Format kB = Config::kB;
  constexpr Format kOut = Config::kOut;
  constexpr Scale kSA = Config::kScaleA;
  constexpr Scale kSB = Config::kScaleB;
  constexpr ScaleType kTA = Config::kScaleTypeA;
  constexpr ScaleType kTB = Config::kScaleTypeB;
  constexpr Grouping kGrouping = Config::kGrouping;
  constexpr bool kPromoteA = kSA == Scale::kBlock1x128;
  // b in 1x128 blocks: quantized wgrad's column-wise copy of X (one scale per row of Xᵀ per 128 tokens).
  constexpr bool kPromoteB = kSB == Scale::kBlock128x128 || kSB == Scale::kBlock1x128;
  constexpr bool kPromote = kPromoteA || kPromoteB;
  static_assert(kA != Format::kF32 && kB != Format::kF32,
                "operands are bf16/f16/e4m3/e5m2/mxfp8/mxfp4/nvfp4 (the planner offers no f32 operand)");
  static_assert(kOut == Format::kBf16 || kOut == Format::kF16 || kOut == Format::kF32,
                "the output is bf16, f16 or f32");
  if constexpr (ConfigTransB<Config>::kValue) {
    reference::backward<Config>(p);
    return;
  }

  const int n = blockIdx.x * kReferenceTile + threadIdx.x % kReferenceTile;
  if (n >= p.n) return;

  float a_t = 1.0f;
  if constexpr (kSA == Scale::kTensor) {
    if (p.a_scale != nullptr) a_t = *p.a_scale;
  }

  // Grouped quantized wgrad (b in 1x128 blocks, grouped): output row e * N + m of dW [E, N, K] reduces
  // expert e's columns of the padded copies dYᵀ [N, W] and Xᵀ [K, W], both read as whole 2-D tensors.
  constexpr bool kPaddedWgrad = kGrouping != Grouping::kDense && kSB == Scale::kBlock1x128;
  const i64 rows_total = kPaddedWgrad ? i64(p.m) * p.experts : p.m;
  for (i64 mm = i64(blockIdx.y) * kReferenceTile + threadIdx.x / kReferenceTile; mm < rows_total;
       mm += i64(gridDim.y) * kReferenceTile) {
    // The expert that owns row m (dense: 0); rows no expert owns are not written.
    int expert = 0, k_begin = 0, k_end = p.k;
    i64 m = mm;
    if constexpr (kPaddedWgrad) {
      expert = int(mm / p.m);
      m = mm % p.m;
      reference::padded_columns<kGrouping>(p, expert, k_begin, k_end);
    } else {
      expert = reference::row_expert<kGrouping>(p, m);
      if (expert < 0) continue;
    }

    const u8* a_row = static_cast<const u8*>(p.a) + format_span_bytes(kA, m * p.lda);
    const i64 b_expert = kPaddedWgrad ? 0 : expert;
    const u8* b_row =
        static_cast<const u8*>(p.b) + format_span_bytes(kB, b_expert * p.b_expert_stride + i64(n) * p.ldb);
    const u8* b_scales = reinterpret_cast<const u8*>(p.b_scale) +
                         b_expert * p.b_scale_expert_stride * (kTB == ScaleType::kF32 ? 4 : 1);
    // Rows of the 2-D scales this output reads.
    const void* sa_row = reference::scale_row<kTA>(p.a_scale, m, p.lds_a);
    const void* sb_row = reference::scale_row<kTB>(b_scales, kSB == Scale::kBlock128x128 ? n / 128 : n, p.lds_b);

    float acc = 0.0f;
    float part = 0.0f;
    for (int k = k_begin; k < k_end; ++k) {
      const float av = decode_element<kA>(a_row, k) * reference::element_scale<kSA, kTA>(sa_row, k);
      const float bv = decode_element<kB>(b_row, k) * reference::element_scale<kSB, kTB>(sb_row, k);
      if constexpr (kPromote) {
        part = fma_rn(av, bv, part);
        if ((k + 1) % 128 == 0) {
          float f = 1.0f;
          if constexpr (kPromoteA) f = reference::scale_at<kTA>(sa_row, k / 128);
          if constexpr (kPromoteB) f = kPromoteA ? f * reference::scale_at<kTB>(sb_row, k / 128)
                                                 : reference::scale_at<kTB>(sb_row, k / 128);
          acc = fma_rn(part, f, acc);
          part = 0.0f;
        }
      } else {
        acc = fma_rn(av, bv, acc);
      }
    }

    float row_f = a_t;
    if constexpr (kSA == Scale::kRow) row_f = p.a_scale[m];
    float col_f = 1.0f;
    if constexpr (kSB == Scale::kTensor) {
      if (p.b_scale != nullptr) col_f = p.b_scale[i64(expert) * p.b_scale_expert_stride];  // grouped: per expert
    } else if constexpr (kSB == Scale::kRow) {
      col_f = reinterpret_cast<const float*>(b_scales)[n];
    }
    if constexpr (kB == Format::kNvfp4) {
      if (p.b_global != nullptr) col_f *= p.b_global[Config::kGlobalPerExpert ? expert : 0];
    }
    const float y = acc * (row_f * col_f);
    const i64 idx = (kPaddedWgrad ? i64(expert) * p.m + m : m) * p.ldc + n;
    if constexpr (kOut == Format::kF32) {
      static_cast<float*>(p.out)[idx] = y;
    } else if constexpr (kOut == Format::kBf16) {
      static_cast<u16*>(p.out)[idx] = cvt_bf16(y);
    } else {
      static_cast<u16*>(p.out)[idx] = cvt_f16(y);
    }
  }
}

}  // namespace kiln_dev

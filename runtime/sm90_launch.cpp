// runtime/sm90_launch.cpp — tensor maps and the persistent launch of the sm90 family.
#include "runtime/sm90_launch.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "common/env.hpp"
#include "compiler/plan/gemm_view.hpp"
#include "templates/common/sm90_tma_desc.cuh"

namespace kiln {
namespace {

static_assert(sizeof(kiln_dev::TmaDesc) == sizeof(CUtensorMap) &&
                  alignof(kiln_dev::TmaDesc) == alignof(CUtensorMap),
              "templates/common/sm90_tma_desc.cuh must mirror cuda.h's CUtensorMap");

constexpr int64_t kMaxTmaStride = int64_t{1} << 40;  // cuTensorMapEncodeTiled: globalStrides < 2^40 bytes

std::array<std::atomic<int>, 64> g_sm_counts{};  // 0: not asked yet

// How many clusters of a cluster kernel the device runs at once (cuOccupancyMaxActiveClusters), per
// (kernel, device): a GPC holds a whole cluster or none, so it can be fewer than SMs / cluster size.
std::mutex g_cluster_mu;
std::map<std::pair<const void*, int>, int> g_active_clusters;

StatusOr<int> active_clusters(const Driver& d, const LoadedKernel& k, const LaunchShape& ls, int device,
                              int sms, int cluster) {
  const std::pair<const void*, int> key{k.kernel, device};
  {
    std::lock_guard<std::mutex> lock(g_cluster_mu);
    auto it = g_active_clusters.find(key);
    if (it != g_active_clusters.end()) return it->second;
  }
  CUfunction f = nullptr;
  KILN_RETURN_IF_ERROR(d.check(d.cuKernelGetFunction(&f, k.kernel), "cuKernelGetFunction"));
  CUlaunchConfig cfg{};
  cfg.gridDimX = static_cast<unsigned>(sms / cluster * cluster);
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = ls.block_x;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(ls.dynamic_smem);
  int n = 0;  // the kernel's __cluster_dims__ gives the cluster shape: no launch attribute needed
  KILN_RETURN_IF_ERROR(d.check(d.cuOccupancyMaxActiveClusters(&n, f, &cfg), "cuOccupancyMaxActiveClusters"));
  if (n <= 0) return Internal("cuOccupancyMaxActiveClusters: the device cannot run a cluster of this kernel");
  std::lock_guard<std::mutex> lock(g_cluster_mu);
  g_active_clusters[key] = n;
  return n;
}

bool tma_data_type(Format f, CUtensorMapDataType* t) {
  switch (f) {
    case Format::kBf16: *t = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; return true;
    case Format::kF16: *t = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; return true;
    case Format::kE4m3:
    case Format::kE5m2:
    case Format::kMxfp8: *t = CU_TENSOR_MAP_DATA_TYPE_UINT8; return true;  // TMA moves bytes
    case Format::kF32: *t = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; return true;  // outputs (TMA store)
    default: return false;
  }
}

}  // namespace

Status sm90_encode_operand(const Driver& d, const char* name, Format format, const void* base, int64_t rows,
                           int64_t cols, int64_t ld, int box_rows, int box_cols, CUtensorMap* map, int experts,
                           int64_t expert_stride, bool swizzle128) {
  // Messages are built on the error paths only: this runs on every launch (dispatch cost).
  auto who = [name] { return std::string("operand ") + name; };
  CUtensorMapDataType type;
  if (!tma_data_type(format, &type))
    return Unsupported(who() + ": " + format_name(format) + " has no TMA element type in the sm90 family");
  const int64_t eb = std::max(1, format_bits(format) / 8);
  const int64_t stride = ld * eb;
  if (stride % 16 != 0 || stride >= kMaxTmaStride)
    return InvalidArgument(who() + ": row stride " + std::to_string(stride) +
                           " bytes; TMA needs a multiple of 16 below 2^40");
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0)
    return InvalidArgument(who() + ": base address is not 16-byte aligned (TMA)");
  // One expert: its stride is free (any view of [1, N, K] is legal); use the dense extent.
  const int64_t expert_bytes = experts == 1 ? std::max<int64_t>(rows, 1) * stride : expert_stride * eb;
  if (experts > 0 && (expert_bytes % 16 != 0 || expert_bytes >= kMaxTmaStride || expert_bytes < rows * stride))
    return InvalidArgument(who() + ": expert stride " + std::to_string(expert_bytes) + " bytes; TMA needs a multiple "
                           "of 16 below 2^40, at least one expert's " + std::to_string(rows) + " rows");
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(std::max<int64_t>(rows, 1)),
                              static_cast<cuuint64_t>(std::max(experts, 1))};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(stride), static_cast<cuuint64_t>(expert_bytes)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r =
      d.cuTensorMapEncodeTiled(map, type, experts > 0 ? 3 : 2, const_cast<void*>(base), dims, strides, box,
                               elem_strides,
                               CU_TENSOR_MAP_INTERLEAVE_NONE,
                               swizzle128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r == CUDA_SUCCESS) return Status::Ok();
  return d.check(r, ("cuTensorMapEncodeTiled(" + who() + ")").c_str());
}

StatusOr<int> sm90_sm_count(const Driver& d, int device, int sm_cap) {
  if (device < 0 || device >= static_cast<int>(g_sm_counts.size()))
    return InvalidArgument("device ordinal " + std::to_string(device) + " out of range");
  int sms = g_sm_counts[device].load(std::memory_order_relaxed);
  if (sms > 0) return sm_cap > 0 ? std::min(sms, sm_cap) : sms;
  CUdevice dev;
  KILN_RETURN_IF_ERROR(d.check(d.cuDeviceGet(&dev, device), "cuDeviceGet"));
  KILN_RETURN_IF_ERROR(d.check(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                               "cuDeviceGetAttribute"));
  g_sm_counts[device].store(sms, std::memory_order_relaxed);
  return sm_cap > 0 ? std::min(sms, sm_cap) : sms;
}

bool sm90_pdl_enabled() {
  static const bool enabled = !env::flag_off(env::kPdl);
  return enabled;
}

Status launch_kernel(const Driver& d, CUfunction f, const LaunchShape& ls, CUstream stream, void** args,
                     bool pdl, const char* what) {
  // Local, not static: reentrant. The cluster shape of sm90 kernels is compiled in (__cluster_dims__),
  // so it takes no attribute.
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig lc{};
  lc.gridDimX = ls.grid_x;
  lc.gridDimY = ls.grid_y;
  lc.gridDimZ = ls.grid_z;
  lc.blockDimX = ls.block_x;
  lc.blockDimY = lc.blockDimZ = 1;
  lc.sharedMemBytes = static_cast<unsigned>(ls.dynamic_smem);
  lc.hStream = stream;
  lc.attrs = &attr;
  lc.numAttrs = pdl && sm90_pdl_enabled() ? 1 : 0;
  return d.check(d.cuLaunchKernelEx(&lc, f, args, nullptr), what);
}

Status sm90_launch(const Driver& d, const LoadedKernel& k, const KernelSpec& spec, const TileConfig& cfg,
                   const LaunchRule& rule, const kiln_dev::GemmParams& gp, int device, CUstream stream,
                   void* workspace, int sm_cap) {
  if (cfg.split_k > 1 && workspace == nullptr)
    return Internal("sm90_launch: config " + cfg.to_string() + " splits K but no workspace was given");
  // The last encoded pair of tensor maps, per thread: a serving loop that runs one plan on the same
  // buffers re-encodes nothing. A map depends only on what the key holds — the kernel (which fixes the
  // formats, the box and the swizzle), the base addresses, the extents and the row strides — never on
  // the memory's contents, so a hit is exactly the map an encode would produce.
  struct MapCache {
    const void* kernel = nullptr;
    const void* a = nullptr;
    const void* b = nullptr;
    long long m = -1, n = -1, k = -1, lda = -1, ldb = -1, b_expert_stride = -1;
    int experts = -1;
    const void* out = nullptr;
    long long ldc = -1;
    int out_tma = 0;
    CUtensorMap map_a, map_b, map_out;  // aligned as cuda.h declares them (64 bytes)
  };
  thread_local MapCache cache;
  const bool hit = cache.kernel == k.kernel && cache.a == gp.a && cache.b == gp.b && cache.m == gp.m &&
                   cache.n == gp.n && cache.k == gp.k && cache.lda == gp.lda && cache.ldb == gp.ldb &&
                   cache.experts == gp.experts && cache.b_expert_stride == gp.b_expert_stride &&
                   (!cfg.tma_store || (cache.out == gp.out && cache.ldc == gp.ldc));
  if (!hit) {
    cache.kernel = nullptr;  // invalid until both maps are encoded
    // A box is one 128-byte swizzle atom of K; a stage of block_k = 256 bytes (two atoms,
    // docs/performance.md) takes two boxes of each operand.
    // MN-major operands (backward passes, compiler/plan/gemm_view.hpp) are stored [k, m] / [k, n]: their
    // boxes are 64 elements of the contiguous dimension by box_k rows of K
    // (templates/kernels/sm90/producer.cuh).
    const GemmView view = gemm_view(spec, ProblemSizes{});
    if (view.a_mn_major) {
      KILN_RETURN_IF_ERROR(sm90_encode_operand(d, "a", spec.a.format, gp.a, gp.k, gp.m, gp.lda, rule.box_k,
                                               kSm90MnChunk, &cache.map_a));
    } else {
      KILN_RETURN_IF_ERROR(sm90_encode_operand(d, "a", spec.a.format, gp.a, gp.m, gp.k, gp.lda, rule.block_m,
                                               rule.box_k, &cache.map_a));
    }
    // With clusters each CTA loads block_n / cluster_m rows of B and multicasts them to its peers.
    // Grouped: W [E, N, K] as a 3-D map (templates/kernels/sm90/scheduler.cuh); grouped wgrad's X is every
    // expert's rows [M, K] (quantized: the padded copy Xᵀ [K, W]), a 2-D map like dY's, and its dW [E, N, K]
    // is E x N output rows.
    const bool grouped = spec.layout != GroupLayout::kDense;
    const bool grouped_w = grouped && spec.pass != Pass::kWgrad;
    const int64_t out_rows = grouped && spec.pass == Pass::kWgrad ? int64_t{gp.m} * gp.experts : gp.m;
    if (view.b_mn_major) {
      KILN_RETURN_IF_ERROR(sm90_encode_operand(d, "b", spec.b.format, gp.b, gp.k, gp.n, gp.ldb, rule.box_k,
                                               kSm90MnChunk, &cache.map_b, grouped_w ? gp.experts : 0,
                                               grouped_w ? gp.b_expert_stride : 0));
    } else {
      KILN_RETURN_IF_ERROR(sm90_encode_operand(d, "b", spec.b.format, gp.b, gp.n, gp.k, gp.ldb, rule.box_b_rows,
                                               rule.box_k, &cache.map_b, grouped_w ? gp.experts : 0,
                                               grouped_w ? gp.b_expert_stride : 0));
    }
    // The TMA-store epilogue (templates/kernels/sm90/epilogue_tma_store.cuh): Y [M, N] in the boxes the
    // rule names (a consumer warpgroup's rows by 128 bytes, 128-byte swizzled, or by 16 columns unswizzled
    // where the warpgroup's columns are not a whole number of 128-byte boxes, e.g. 176). An output TMA
    // cannot address (base or row stride not a multiple of 16 bytes) runs the kernel's direct epilogue
    // instead (out_tma = 0): never an error.
    cache.out_tma = 0;
    if (cfg.tma_store) {
      cache.out_tma = sm90_encode_operand(d, "out", spec.out.format, gp.out, out_rows, gp.n, gp.ldc, rule.out_box_rows,
                                          rule.out_box_cols, &cache.map_out, 0, 0, rule.out_swizzle128())
                              .ok()
                          ? 1
                          : 0;
    }
    cache.out = gp.out;
    cache.ldc = gp.ldc;
    cache.kernel = k.kernel;
    cache.a = gp.a;
    cache.b = gp.b;
    cache.m = gp.m;
    cache.n = gp.n;
    cache.k = gp.k;
    cache.lda = gp.lda;
    cache.ldb = gp.ldb;
    cache.experts = gp.experts;
    cache.b_expert_stride = gp.b_expert_stride;
  }
  KILN_ASSIGN_OR_RETURN(int sms, sm90_sm_count(d, device, sm_cap));
  LaunchShape ls = rule.shape(gp.m);
  if (cfg.cluster_m == 1) {
    ls.grid_x = std::min<unsigned>(ls.grid_x, static_cast<unsigned>(sms));
  } else {
    // The last kernel's cluster occupancy, per thread (the shared table takes a lock).
    thread_local const void* cluster_kernel = nullptr;
    thread_local int cluster_device = -1, clusters = 0;
    if (cluster_kernel != k.kernel || cluster_device != device) {
      KILN_ASSIGN_OR_RETURN(clusters, active_clusters(d, k, ls, device, sms, cfg.cluster_m));
      cluster_kernel = k.kernel;
      cluster_device = device;
    }
    ls.grid_x = std::min<unsigned>(ls.grid_x, static_cast<unsigned>(clusters * cfg.cluster_m));
    // Under an SM cap the occupancy query still counts the whole device: whole clusters within the cap.
    if (sm_cap > 0)
      ls.grid_x = std::min<unsigned>(ls.grid_x, static_cast<unsigned>(std::max(1, sms / cfg.cluster_m) * cfg.cluster_m));
  }
  // The launch copies the arguments during the call: the cached maps and gp are passed as they are.
  void* args[] = {&cache.map_a, &cache.map_b, const_cast<kiln_dev::GemmParams*>(&gp), &workspace, &cache.map_out,
                  &cache.out_tma};  // the last two only for TMA-store kernels (their signature)
  // The kernel may start before the previous kernel on the stream has finished: it waits for it before
  // touching global memory (templates/kernels/sm90/kernel.cuh).
  return launch_kernel(d, reinterpret_cast<CUfunction>(k.kernel), ls, stream, args, /*pdl=*/true,
                       "cuLaunchKernelEx(sm90_gemm)");
}

}  // namespace kiln

// runtime/sm90_launch.hpp — launching the sm90 family: TMA tensor maps + a persistent grid.
//
// The sm90 kernel takes two TMA tensor maps (X and W) before the GemmParams every family shares.
// They encode the run's base pointers and strides, so they are built on the host for every run
// (cuTensorMapEncodeTiled: a pure host call, no device round trip, no allocation) and passed by value
// as `const __grid_constant__` parameters: graph capture records them with the launch.
// Maps: A = X [M, K], B = W [N, K] (grouped: W [E, N, K] as a 3-D map), row-major with K contiguous; box =
// {block_k, block_m | block_n} (128 bytes of K by a tile of rows), 128-byte swizzle, 256-byte L2 promotion,
// out-of-bounds elements read as zeros (FLOAT_OOB_FILL_NONE; the kernel relies on it for M/N/K tails). The
// grid is min(tiles, SMs of the device): the kernel walks its tiles persistently. The launch
// (cuLaunchKernelEx) allows programmatic stream serialization (PDL): the kernel may start while the previous
// kernel on the stream finishes, and waits for it (griddepcontrol.wait) before its first global-memory access
// (templates/kernels/sm90/kernel.cuh). KILN_PDL=0 launches without.
//
//   // in Plan::run, for KernelFamily::kSm90Gemm:
//   return sm90_launch(*d, *k, spec, cfg, gp, device, stream);
#pragma once

#include "kiln/kiln.hpp"
#include "runtime/driver/driver.hpp"
#include "runtime/runtime_impl.hpp"
#include "templates/common/gemm_params.cuh"

namespace kiln {

// Encodes one operand's tensor map: `rows` x `cols` elements of `format`, row stride `ld` elements,
// box `box_rows` x `box_cols`. INVALID_ARGUMENT names the operand when TMA cannot describe it.
// experts > 0 (grouped W [experts, rows, cols]): a 3-D map {cols, rows, experts} with expert_stride
// elements between experts, so a box never reaches into the next expert's rows. swizzle128: the
// 128-byte swizzle (box rows of exactly 128 bytes), else none (narrow output boxes, templates/kernels/sm90/epilogue_tma_store.cuh).
Status sm90_encode_operand(const Driver& d, const char* name, Format format, const void* base, int64_t rows,
                           int64_t cols, int64_t ld, int box_rows, int box_cols, CUtensorMap* map,
                           int experts = 0, int64_t expert_stride = 0, bool swizzle128 = true);
// The device's multiprocessor count (cached per device ordinal), at most sm_cap when that is > 0
// (RuntimeOptions::max_sms).
StatusOr<int> sm90_sm_count(const Driver& d, int device, int sm_cap = 0);
// Whether launches of sm_90+ kernels (either family) allow programmatic dependent launch: KILN_PDL
// (common/env.hpp), read once.
bool sm90_pdl_enabled();
// Launches f with ls on stream (cuLaunchKernelEx, both families). pdl: the kernel waits for the previous
// kernel on the stream before touching global memory (compiled for sm_90+), so the launch allows
// programmatic stream serialization unless KILN_PDL=0. `what` names the call in an error.
Status launch_kernel(const Driver& d, CUfunction f, const LaunchShape& ls, CUstream stream, void** args,
                     bool pdl, const char* what);
// Launches the loaded sm90 kernel `k` for gp on stream. workspace: sm90_workspace_bytes(spec, cfg,
// sizes) bytes of device memory whose split-K counters are zero (null when that is 0). sm_cap > 0: the
// persistent grid takes at most that many SMs.
// rule: the bucket's launch rule (grid as a function of M, TMA boxes), recorded by the planner.
Status sm90_launch(const Driver& d, const LoadedKernel& k, const KernelSpec& spec, const TileConfig& cfg,
                   const LaunchRule& rule, const kiln_dev::GemmParams& gp, int device, CUstream stream,
                   void* workspace = nullptr, int sm_cap = 0);

}  // namespace kiln

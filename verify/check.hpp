// verify/check.hpp — run a plan on fresh random inputs, check it against the reference, time it.
//
// Used by `kiln run --check`, the gpu test tier and (later) the tuner's candidate checks. Inputs are
// drawn fresh in the spec's formats (seeded; the seed is reported; quantized operands come from the
// CPU quantizers, verify/check_inputs.hpp), the output is poisoned first so unwritten elements are
// caught (and, for grouped problems, elements of rows no expert owns must stay poisoned), and the result is compared with kiln's naive GPU reference kernel
// (fp32 accumulation of the exactly decoded operands; the CPU reference GEMM checks that kernel in
// the test tier). Requires a GPU: NO_DEVICE otherwise.
//
//   CheckOptions o; o.m = 4096; o.check = true; o.time = true;
//   KILN_ASSIGN_OR_RETURN(CheckReport r, kiln::run_check(*rt, plan, o));
//   // r.max_abs_err, r.rel_fro_err, r.unwritten, r.median_ms, r.tflops
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "verify/check_inputs.hpp"

namespace kiln {

struct CheckOptions {
  // Rows of X: M (dense), the total over the experts (grouped, offsets layout) or max_m per expert
  // (masked layout).
  int64_t m = 1;
  // Grouped: rows per expert (offsets: summing to m; masked: each <= m); empty for a random split with
  // empty experts (verify/check_inputs.hpp).
  std::vector<int32_t> group_rows;
  uint64_t seed = 0;        // 0: draw a seed from the clock (reported back)
  // Host inputs made earlier by random_operands for the same spec, m, n, k and group_rows (with `seed`):
  // used as they are instead of drawing new ones (the tuner checks every candidate of a shape on one
  // random draw: generating a 7168 x 16384 weight on the host takes seconds).
  std::shared_ptr<const HostOperands> inputs;
  bool check = true;        // compare with the reference
  bool time = false;        // time with CUDA events
  int warmup = 3;
  int repeats = 20;
  bool flush_l2 = true;     // time each repeat with a cold L2 (median_event_ms)
  // How the run is timed: kEvents, one launch between two events after an L2 flush (median_event_ms);
  // kGraph, the way bench/ times every library: a CUDA graph of one launch per copy of the inputs (enough
  // copies that they exceed 3x the L2, at most max_copies, as device memory allows), replayed, time per
  // launch (median_graph_ms). The two rank configs differently on small-M streaming kernels; kGraph is
  // what a serving loop sees.
  enum class Timing { kEvents, kGraph };
  Timing timing = Timing::kEvents;
  int max_copies = 16;
  // MXFP8 plans (runtime/mx_prepass.hpp): run with a workspace of plan.mx_prepass_workspace_bytes(m)
  // bytes, so that run() takes the bf16 pre-pass; INVALID_ARGUMENT where the plan has none for m.
  bool mx_prepass = false;
};

struct CheckReport {
  uint64_t seed = 0;
  int64_t m = 0, n = 0, k = 0;
  bool checked = false;
  double max_abs_err = 0;   // vs reference
  double rel_fro_err = 0;   // ||out - ref|| / ||ref||
  double tolerance = 0;     // rel_fro_err must be <= tolerance to pass
  int64_t unwritten = 0;    // poisoned elements left unwritten (must be 0)
  int64_t nonfinite = 0;    // NaN/Inf in the output where the reference is finite
  int64_t overwritten = 0;  // elements of rows no expert owns that were written (must be 0)
  bool passed = false;
  double median_ms = 0;
  double tflops = 0;
  double gbps = 0;          // bytes of A, B and out over the median time
  std::string config;       // the TileConfig used ("mx_prepass" + the bf16 plan's, with the pre-pass)
  std::string timing;       // "events" or "graph"
  int copies = 0;           // input copies the graph rotated over (kGraph)
  std::string to_json() const;
};

StatusOr<CheckReport> run_check(Runtime& rt, const Plan& plan, const CheckOptions& opts);
// Median of `repeats` CUDA-event timings (ms) of launch() on the default stream, after `warmup` untimed
// calls (shared by run_check and run_quantize_check). With flush_l2 every timed call starts with a
// cold L2: a scratch buffer of twice the device's L2 is overwritten (on the same stream, outside the
// timed events) before it, so weights that fit in L2 are read from HBM as in a serving loop.
StatusOr<double> median_event_ms(const std::function<Status()>& launch, int warmup, int repeats,
                                 bool flush_l2 = true);
// Median milliseconds per call of `calls` (each one launch sequence on its own inputs, issued on the
// stream it is given): each call runs once on a private stream (loading kernels, growing workspaces),
// then all are captured into one CUDA graph, replayed `warmup` times, and `repeats` replays are timed
// with events; a replay's time divided by the number of calls is one sample. What bench/anchors.py's
// bench_graph measures for every peer.
StatusOr<double> median_graph_ms(const std::vector<std::function<Status(CUstream_st*)>>& calls, int warmup,
                                 int repeats);
// Tolerance on rel_fro_err for a spec (output rounding + accumulation order).
double check_tolerance(const KernelSpec& spec, int64_t k);

}  // namespace kiln

// `kiln run`: plan SPEC for M x N x K, run it on fresh random inputs, check it against the reference
// (--check) and time it. Without a GPU it still compiles the kernel and prints the compile report,
// then exits 3 (or 0 with --allow-no-gpu, for scripts that must pass on CPU-only machines).
#include <fmt/format.h>

#include <cstdio>

#include "verify/check.hpp"
#include "verify/quantize_check.hpp"
#include "tools/cli.hpp"

namespace kiln::cli {
namespace {

struct RunArgs {
  std::string spec;
  int64_t m = 0, n = 0, k = 0;
  bool check = false;
  bool json = false;
  uint64_t seed = 0;
  int repeats = 20;
  int warmup = 3;
  bool allow_no_gpu = false;
  std::string config;  // --config: one tile config for every M bucket ("" = the plan's own)
  bool mx_prepass = false;  // --mx-prepass: MXFP8 through the bf16 pre-pass (runtime/mx_prepass.hpp)
  std::string timing = "events";  // --timing events|graph (verify/check.hpp CheckOptions::Timing)
};

// Statuses that mean "no usable GPU here" rather than "kiln failed": no driver or no device
// (NO_DEVICE), or a driver that loads but cannot initialize one (DRIVER_ERROR from cuInit).
bool is_no_gpu(const Status& s) {
  return s.code() == StatusCode::kNoDevice || s.code() == StatusCode::kDriverError;
}

std::string check_line(const CheckReport& r) {
  if (!r.checked) return "not checked (pass --check to compare with the reference)";
  return fmt::format(
      "{}: rel_fro_err {:.3e} (tolerance {:.3e}), max_abs_err {:.3e}, unwritten {}, "
      "nonfinite {}",
      r.passed ? "PASSED" : "FAILED", r.rel_fro_err, r.tolerance, r.max_abs_err, r.unwritten, r.nonfinite);
}

int run_without_gpu(const RunArgs& args, Runtime& rt, const KernelSpec& spec, const ProblemSizes& sizes,
                    const Status& device) {
  constexpr const char* kCmd = "run";
  fmt::print(stderr, "kiln run: no GPU: {}\n", device.to_string());
  fmt::print(stderr, "kiln run: compiling the kernel only; the check and the timing need a GPU\n");
  std::string arch_source;
  StatusOr<Arch> arch = default_arch(rt, &arch_source);
  if (!arch.ok()) return report_error(kCmd, arch.status());
  StatusOr<Plan> plan = plan_with_config(rt, spec, sizes, *arch, args.config);
  if (!plan.ok()) return report_error(kCmd, plan.status());
  StatusOr<CompileReport> report = compile_plan(rt, *plan, sizes, arch_source, /*want_ptx=*/false);
  if (!report.ok()) return report_error(kCmd, report.status());
  if (args.json) {
    nlohmann::json j;
    j["gpu"] = false;
    j["device_status"] = device.to_string();
    j["plan"] = parse_json_or_string(plan->describe_json());
    j["compile"] = compile_report_json(*report);
    j["check"] = nullptr;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("kiln run (no GPU: compiled, not run)\n{}", format_compile_report(*report));
  }
  if (args.allow_no_gpu) {
    fmt::print(stderr, "kiln run: --allow-no-gpu: exiting 0 without running\n");
    return kExitOk;
  }
  return kExitNoGpu;
}

// What a run found, however it was checked: printed the same way for GEMMs and quantizers.
struct RunOutcome {
  uint64_t seed = 0;
  bool checked = false, passed = false;
  std::string check_line;  // the "check" row
  std::string check_json;  // the report's JSON
  std::string time_line;   // the "time" row
};

int finish_run(const RunArgs& args, const Plan& plan, const CompileReport& report, const RunOutcome& o) {
  if (args.json) {
    nlohmann::json j;
    j["gpu"] = true;
    j["plan"] = parse_json_or_string(plan.describe_json());
    j["compile"] = compile_report_json(report);
    j["check"] = parse_json_or_string(o.check_json);
    fmt::print("{}\n", j.dump(2));
  } else {
    std::string out = fmt::format("kiln run\n{}", format_compile_report(report));
    out += fmt::format("  {:<10} {}\n", "seed", o.seed);
    out += fmt::format("  {:<10} {}\n", "check", o.check_line);
    out += fmt::format("  {:<10} {}\n", "time", o.time_line);
    fmt::print("{}", out);
  }
  if (o.checked && !o.passed) {
    fmt::print(stderr, "kiln run: check FAILED (seed {}): {}\n", o.seed, o.check_line);
    return kExitError;
  }
  return kExitOk;
}

// Quantize specs: every code and scale compared bitwise with the CPU reference; GB/s moved.
int run_quantize(const RunArgs& args, Runtime& runtime, const Plan& plan, const CompileReport& report) {
  if (args.timing != "events")
    return report_error("run", InvalidArgument("--timing " + args.timing +
                                              ": quantize specs are timed with events only (--timing events)"));
  QuantizeCheckOptions opts;
  opts.m = args.m;
  opts.seed = args.seed;
  opts.check = args.check;
  opts.time = true;
  opts.warmup = args.warmup;
  opts.repeats = args.repeats;
  StatusOr<QuantizeCheckReport> result = run_quantize_check(runtime, plan, opts);
  if (!result.ok()) return report_error("run", result.status());
  const QuantizeCheckReport& r = *result;
  RunOutcome o;
  o.seed = r.seed;
  o.checked = r.checked;
  o.passed = r.passed;
  o.check_line =
      !r.checked ? std::string("not checked (pass --check to compare with the reference, bitwise)")
                 : fmt::format("{}: {} of {} code bytes and {} of {} scales differ from the reference{}{}",
                               r.passed ? "PASSED" : "FAILED", r.code_mismatches, r.codes, r.scale_mismatches,
                               r.scales, r.global_mismatch ? "; the global scale differs" : "",
                               r.first_mismatch.empty() ? "" : " (first: " + r.first_mismatch + ")");
  o.check_json = r.to_json();
  o.time_line = fmt::format("median {:.4f} ms over {} runs: {:.1f} GB/s (X read, codes and scales written)",
                            r.median_ms, args.repeats, r.gbps);
  return finish_run(args, plan, report, o);
}

int run_run(const RunArgs& args, const GlobalOptions& global) {
  constexpr const char* kCmd = "run";
  if (args.repeats < 1 || args.warmup < 0) {
    return report_error(kCmd, InvalidArgument(fmt::format("--repeats must be >= 1 and --warmup >= 0 "
                                                          "(got {} and {})",
                                                          args.repeats, args.warmup)));
  }
  StatusOr<SpecInput> in = read_spec_input(args.spec);
  if (!in.ok()) return report_error(kCmd, in.status());
  StatusOr<KernelSpec> spec = parse_spec_input(*in);
  if (!spec.ok()) return report_error(kCmd, spec.status());
  // Quantize specs read X [M, K] only: --n does not apply to them; every GEMM needs it.
  if (spec->op != Op::kQuantize && args.n == 0)
    return report_error(kCmd, InvalidArgument(fmt::format("--n is required for {} specs (columns of Y, rows of W)",
                                                          op_name(spec->op))));
  if (args.m < 1 || args.k < 1 || (spec->op != Op::kQuantize && args.n < 1)) {
    return report_error(kCmd, InvalidArgument(fmt::format("sizes must be positive (got --m {} --n {} --k {})",
                                                          args.m, args.n, args.k)));
  }
  StatusOr<std::shared_ptr<Runtime>> rt = make_runtime(global);
  if (!rt.ok()) return report_error(kCmd, rt.status());
  Runtime& runtime = **rt;

  ProblemSizes sizes;
  sizes.m = args.m;
  sizes.n = args.n;
  sizes.k = args.k;
  Status device = runtime.device_status();
  if (!device.ok()) {
    if (!is_no_gpu(device)) return report_error(kCmd, device);
    return run_without_gpu(args, runtime, *spec, sizes, device);
  }

  StatusOr<Plan> plan = plan_with_config(runtime, *spec, sizes, std::nullopt, args.config);
  if (!plan.ok()) return report_error(kCmd, plan.status());
  StatusOr<CompileReport> report = compile_plan(runtime, *plan, sizes, "device", /*want_ptx=*/false);
  if (!report.ok()) return report_error(kCmd, report.status());

  if (spec->op == Op::kQuantize) return run_quantize(args, runtime, *plan, *report);

  CheckOptions opts;
  opts.m = args.m;
  opts.seed = args.seed;
  opts.check = args.check;
  opts.time = true;
  opts.warmup = args.warmup;
  opts.repeats = args.repeats;
  opts.mx_prepass = args.mx_prepass;
  opts.timing = args.timing == "graph" ? CheckOptions::Timing::kGraph : CheckOptions::Timing::kEvents;
  StatusOr<CheckReport> result = run_check(runtime, *plan, opts);
  if (!result.ok()) return report_error(kCmd, result.status());
  const CheckReport& r = *result;
  RunOutcome o;
  o.seed = r.seed;
  o.checked = r.checked;
  o.passed = r.passed;
  o.check_line = check_line(r);
  o.check_json = r.to_json();
  o.time_line = fmt::format("median {:.4f} ms over {} runs: {:.1f} TFLOP/s, {:.1f} GB/s", r.median_ms, args.repeats,
                            r.tflops, r.gbps);
  if (r.timing == "graph")
    o.time_line += fmt::format(" (CUDA-graph replay over {} input copies)", r.copies);
  return finish_run(args, *plan, *report, o);
}

}  // namespace

Command register_run(CLI::App& app, const GlobalOptions& global) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run SPEC for M x N x K on fresh random inputs: check against the reference (--check) "
      "and time it. Without a GPU: compile only, print the report, exit 3 "
      "(0 with --allow-no-gpu).");
  cmd->fallthrough();
  cmd->add_option("spec", args->spec, "spec text, a file holding one (comments with #), or - for stdin")
      ->required();
  cmd->add_option("--m", args->m, "rows of X and Y")->required();
  cmd->add_option("--n", args->n, "columns of Y, rows of W (required except for quantize specs)");
  cmd->add_option("--k", args->k, "reduction length")->required();
  cmd->add_flag("--check", args->check, "compare the output with kiln's reference GEMM");
  cmd->add_flag("--json", args->json, "print the report as JSON");
  cmd->add_flag(
      "--mx-prepass", args->mx_prepass,
      "MXFP8 at M >= 512 on sm_90a: pass a workspace of 1 MiB + 2 (M + N) K bytes, so that the run converts "
      "X and W to bf16 first and runs the bf16 kernel (docs/formats.md)");
  cmd->add_option("--seed", args->seed, "seed of the random inputs (default: drawn and reported)");
  cmd->add_option("--repeats", args->repeats, "timed runs (median reported; default 20)");
  cmd->add_option("--warmup", args->warmup, "untimed runs first (default 3)");
  cmd->add_option("--timing", args->timing,
                  "events: each run between two CUDA events after an L2 flush (default); graph: a CUDA graph of "
                  "one run per copy of the inputs (copies over 3x the L2), replayed, as bench/ times every library")
      ->check(CLI::IsMember({"events", "graph"}));
  cmd->add_option("--config", args->config,
                  "run this tile config instead of the plan's own: a name as kiln prints it "
                  "(bm128_bn128_bk128_s5_w8x1_g8_t) or a JSON object; checked against the spec's family");
  cmd->add_flag("--allow-no-gpu", args->allow_no_gpu,
                "without a GPU, exit 0 after compiling and printing the report (instead of 3)");
  return {cmd, [args, &global]() { return run_run(*args, global); }};
}

}  // namespace kiln::cli

// `kiln compile`: plan a spec for a shape and compile its kernel (no GPU needed); report the
// resources, or write the generated source, PTX or cubin.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "tools/cli.hpp"

namespace kiln::cli {
namespace {

struct CompileArgs {
  std::string spec;
  std::string arch;
  bool json = false;
  std::string emit;  // "", "source", "ptx", "cubin"
  std::string out;
  int64_t m = 4096, n = 4096, k = 4096;
  std::string config;  // --config: one tile config for every M bucket ("" = the plan's own)
};

Status write_artifact(const std::string& what, const std::string& bytes, const std::string& path) {
  if (path == "-") {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
      return Internal("writing the " + what + " to stdout failed");
    }
    return Status::Ok();
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return InvalidArgument("cannot open --out '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return Internal("writing the " + what + " to '" + path + "' failed");
  return Status::Ok();
}

int run_compile(const CompileArgs& args, const GlobalOptions& global) {
  constexpr const char* kCmd = "compile";
  std::string out_path = args.out;
  if (!args.emit.empty() && out_path.empty()) out_path = args.emit == "cubin" ? "" : "-";
  if (args.emit.empty() && !args.out.empty()) {
    return report_error(kCmd, InvalidArgument("--out needs --emit source|ptx|cubin"));
  }
  if (args.emit == "cubin" && (out_path.empty() || out_path == "-")) {
    return report_error(kCmd, InvalidArgument("--emit cubin writes binary: give --out FILE"));
  }
  const bool artifact_to_stdout = !args.emit.empty() && out_path == "-";
  if (artifact_to_stdout && args.json) {
    return report_error(kCmd,
                        InvalidArgument("--json and --emit to stdout both write stdout; give --out FILE"));
  }
  if (args.m < 1 || args.n < 1 || args.k < 1) {
    return report_error(kCmd, InvalidArgument(fmt::format("sizes must be positive (got --m {} --n {} --k {})",
                                                          args.m, args.n, args.k)));
  }

  StatusOr<SpecInput> in = read_spec_input(args.spec);
  if (!in.ok()) return report_error(kCmd, in.status());
  StatusOr<KernelSpec> spec = parse_spec_input(*in);
  if (!spec.ok()) return report_error(kCmd, spec.status());

  StatusOr<std::shared_ptr<Runtime>> rt = make_runtime(global);
  if (!rt.ok()) return report_error(kCmd, rt.status());

  std::string arch_source = "--arch";
  StatusOr<Arch> arch = args.arch.empty() ? default_arch(**rt, &arch_source) : parse_arch(args.arch);
  if (!arch.ok()) return report_error(kCmd, arch.status());

  ProblemSizes sizes;
  sizes.m = args.m;
  sizes.n = args.n;
  sizes.k = args.k;
  StatusOr<Plan> plan = plan_with_config(**rt, *spec, sizes, *arch, args.config);
  if (!plan.ok()) return report_error(kCmd, plan.status());
  StatusOr<CompileReport> report =
      compile_plan(**rt, *plan, sizes, arch_source, /*want_ptx=*/args.emit == "ptx");
  if (!report.ok()) return report_error(kCmd, report.status());

  if (!args.emit.empty()) {
    const CompiledKernel& k = report->kernel;
    const std::string& bytes = args.emit == "source" ? k.source : args.emit == "ptx" ? k.ptx : k.cubin;
    if (bytes.empty()) {
      return report_error(kCmd, Internal("the runtime returned no " + args.emit + " for this kernel"));
    }
    Status w = write_artifact(args.emit, bytes, out_path);
    if (!w.ok()) return report_error(kCmd, w);
  }

  if (args.json) {
    nlohmann::json j = compile_report_json(*report);
    if (!args.emit.empty()) j["emitted"] = {{"what", args.emit}, {"path", out_path}};
    fmt::print("{}\n", j.dump(2));
  } else {
    std::FILE* to = artifact_to_stdout ? stderr : stdout;
    fmt::print(to, "kiln compile\n{}", format_compile_report(*report));
    if (!args.emit.empty() && !artifact_to_stdout) fmt::print(to, "  {:<10} {}\n", "wrote", out_path);
  }
  return kExitOk;
}

}  // namespace

Command register_compile(CLI::App& app, const GlobalOptions& global) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd =
      app.add_subcommand("compile",
                         "Plan SPEC for a shape and compile its kernel (no GPU needed); report registers, "
                         "shared memory, spills and compile time, or emit the source/PTX/cubin.");
  cmd->fallthrough();
  cmd->add_option("spec", args->spec, "spec text, a file holding one (comments with #), or - for stdin")
      ->required();
  cmd->add_option("--arch", args->arch,
                  "target arch: sm_90a, sm_90, sm_89, sm_86, sm_80 "
                  "(default: the GPU's, else sm_90a)");
  cmd->add_option("--m", args->m, "rows of X and Y (picks the config; default 4096)");
  cmd->add_option("--n", args->n, "columns of Y, rows of W (default 4096)");
  cmd->add_option("--k", args->k, "reduction length (default 4096)");
  cmd->add_flag("--json", args->json, "print the report as JSON");
  cmd->add_option("--config", args->config,
                  "compile this tile config instead of the plan's own: a name as kiln prints it "
                  "(bm128_bn128_bk128_s5_w8x1_g8_t) or a JSON object; checked against the spec's family");
  cmd->add_option("--emit", args->emit, "write the generated source, the PTX or the cubin")
      ->check(CLI::IsMember({"source", "ptx", "cubin"}));
  cmd->add_option("--out", args->out, "file for --emit; - for stdout (source and ptx; the default)");
  return {cmd, [args, &global]() { return run_compile(*args, global); }};
}

}  // namespace kiln::cli

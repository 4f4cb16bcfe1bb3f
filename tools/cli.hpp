// tools/cli.hpp — what the `kiln` CLI's subcommands share: exit codes, global options, spec input,
// the compile report, and error printing. One subcommand per file (cmd_*.cpp); main.cpp wires them.
//
// Exit codes (README.md, "CLI"): 0 ok; 1 error or failed check; 2 bad usage, bad spec or bad
// argument (INVALID_ARGUMENT); 3 no usable GPU for a command that needs one.
//
//   KILN_ASSIGN_OR_RETURN(SpecInput in, kiln::cli::read_spec_input(arg));   // text | file | "-"
//   KILN_ASSIGN_OR_RETURN(KernelSpec spec, kiln::cli::parse_spec_input(in));  // "file:3:9: ..." + caret
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kiln/kiln.hpp"

namespace kiln::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,  // any other failure, including a failed --check
  kExitUsage = 2,  // bad command line, spec text, arch name or sizes
  kExitNoGpu = 3,  // the command needs a GPU and none is usable (see `kiln run --allow-no-gpu`)
};

struct GlobalOptions {
  std::string cache_dir;  // empty: $KILN_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/kiln
  bool no_cache = false;  // compile in memory only
};

// Each subcommand registers its options on `app`; after a successful parse main calls run() of the
// command whose subcommand was parsed. global outlives the commands (it lives in main).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command register_compile(CLI::App& app, const GlobalOptions& global);
Command register_run(CLI::App& app, const GlobalOptions& global);
Command register_cache(CLI::App& app, const GlobalOptions& global);

// ---- spec input (spec_input.cpp) ----
struct SpecInput {
  std::string text;    // the spec, comments included
  std::string origin;  // file path, "<stdin>" or "<spec>" (inline text), for error messages
};
// arg is spec text, a path to a file holding one, or "-" for stdin.
StatusOr<SpecInput> read_spec_input(const std::string& arg);
// Parses; a positioned parse error comes back as "origin:line:col: message" followed by the
// offending line and a caret under the column.
StatusOr<KernelSpec> parse_spec_input(const SpecInput& in);

// ---- runtime and reports (report.cpp) ----
StatusOr<std::shared_ptr<Runtime>> make_runtime(const GlobalOptions& global);

// Everything `kiln compile` reports, and what `kiln run` reports about the kernel it compiles.
struct CompileReport {
  std::string spec;  // canonical text
  ProblemSizes sizes;
  std::string arch;         // "sm_90a"
  std::string arch_source;  // "--arch", "device" or "default: no GPU"
  std::string family;
  TileConfig config;
  CompiledKernel kernel;
  std::string cache_path;  // empty when the cache is disabled
};
// Compiles the kernel plan.run() would use for sizes.m (the plan's family, config and arch).
StatusOr<CompileReport> compile_plan(Runtime& rt, const Plan& plan, const ProblemSizes& sizes,
                                     std::string arch_source, bool want_ptx);
std::string format_compile_report(const CompileReport& r);
nlohmann::json compile_report_json(const CompileReport& r);
// The arch to compile for when none is given: the device's, else sm_90a. source says which.
StatusOr<Arch> default_arch(Runtime& rt, std::string* source);
// Plans spec for sizes (on arch when given). config: "" for the plan's own configs (tuned, pre-tuned
// or heuristic), else one config for every M bucket — a name as kiln prints it
// ("bm128_bn128_bk128_s5_w8x1_g8_t") or a JSON object ({"block_m": 128, ...}) — checked against the
// family the spec plans to (INVALID_ARGUMENT naming the rule it breaks).
StatusOr<Plan> plan_with_config(Runtime& rt, const KernelSpec& spec, const ProblemSizes& sizes,
                                std::optional<Arch> arch, const std::string& config);

// ---- errors (report.cpp) ----
int exit_code_for(const Status& s);
// Prints "kiln <command>: CODE: message" to stderr and returns exit_code_for(s).
int report_error(const char* command, const Status& s);
// Parses a JSON string produced by kiln (describe_json, to_json); a string value if it is not JSON.
nlohmann::json parse_json_or_string(const std::string& text);

}  // namespace kiln::cli

// The `kiln` command line: compile, run, tune and cache subcommands over the C++ API.
// Exit codes: 0 ok; 1 error or failed check; 2 bad usage or spec; 3 no GPU (see tools/cli.hpp).
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "tools/cli.hpp"
#include "tuner/online.hpp"

#ifndef KILN_VERSION_STRING
#error "tools/CMakeLists.txt defines KILN_VERSION_STRING from project(VERSION)"
#endif

namespace kiln::cli {
// tools/cmd_tune.cpp (declared here rather than in cli.hpp: the tuner's command is its own).
Command register_tune(CLI::App& app, const GlobalOptions& global);
}  // namespace kiln::cli

namespace {

int cli_main(int argc, char** argv) {
  using namespace kiln::cli;
  CLI::App app{"kiln: JIT kernel generator for quantized GEMMs (spec -> CUDA C++ -> NVRTC -> cubin)", "kiln"};
  app.set_version_flag("--version", KILN_VERSION_STRING);
  app.require_subcommand(1);
  app.footer(
      "SPEC is spec text (\"gemm a=e4m3:tensor b=e4m3:tensor out=bf16\"), a file holding one, or - for "
      "stdin; see docs/dsl.md.\nExit codes: 0 ok, 1 error or failed check, 2 bad usage or spec, 3 no GPU.");
  GlobalOptions global;
  app.add_option("--cache-dir", global.cache_dir,
                 "kernel cache directory (default: $KILN_CACHE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/kiln)");
  app.add_flag("--no-cache", global.no_cache, "compile in memory only; never open the cache");

  std::vector<Command> commands = {register_compile(app, global), register_run(app, global),
                                   register_tune(app, global), register_cache(app, global)};
  // Online tuning stays off unless KILN_AUTOTUNE=1 (tuner/online.hpp); installing only makes it possible.
  kiln::install_online_tuner();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every real parse error is bad usage (2), whatever CLI11's code.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  fmt::print(stderr, "kiln: no command given (see kiln --help)\n");
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // The library never throws across its boundary; this catches what the CLI's own code (CLI11,
  // fmt, iostreams, bad_alloc) might, so the user sees a message and a non-zero code, not abort().
  try {
    return cli_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "kiln: internal error (unknown exception)\n");
  }
  return kiln::cli::kExitError;
}

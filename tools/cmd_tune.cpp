// `kiln tune`: pre-tune shapes offline (a JSON list, a model preset, one --spec/--m/--n/--k shape,
// or the shapes recorded untuned), writing the winners into the user database; --dry-run lists the
// pruned candidates without a GPU, --compile-only fills the kernel cache without one, --devices
// spreads the shapes over several GPUs, one child process each (tuner/sharding.hpp).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cache/kernel_cache.hpp"
#include "runtime/tuned_configs.hpp"
#include "tools/cli.hpp"
#include "tools/tune_output.hpp"
#include "tuner/presets.hpp"
#include "tuner/sharding.hpp"
#include "tuner/tuner.hpp"

namespace kiln::cli {
namespace {

constexpr const char* kCmd = "tune";
// Tuned for the buckets a plan most often runs when a recorded shape had no M hint.
constexpr int64_t kUntunedDefaultMs[] = {1, 16, 128, 4096};

struct TuneArgs {
  std::string shapes_file;
  std::string preset;
  std::string spec;
  int64_t m = 0, n = 0, k = 0;
  bool untuned = false;
  bool dry_run = false;
  bool compile_only = false;
  double budget_s = 30;
  int jobs = 0;
  int max_candidates = 48;
  std::string gpu;
  std::string devices;
  std::string shard;
  bool json = false;
  bool no_record = false;
  std::string timing = "graph";  // --timing graph|events
  int recheck = 5;               // --recheck rounds
  std::string summary_json;     // children of --devices: where to leave their summary rows
  std::string progress_prefix;  // children of --devices: "gpu3"
};

StatusOr<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return InvalidArgument("cannot open '" + path + "' for reading");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string cache_dir_of(const GlobalOptions& global) {
  return global.cache_dir.empty() ? KernelCache::default_dir() : global.cache_dir;
}

// The identity to tune for. Timing needs the GPU itself (--gpu may only confirm it); a dry run or a
// compile-only run may name any GPU, and without one defaults to $KILN_TUNING_DEVICE, else h200.
StatusOr<TuningDevice> resolve_device(const TuneArgs& a, Runtime& rt, bool need_gpu, std::string* note) {
  const bool have_gpu = rt.device_status().ok();
  if (need_gpu) {
    if (!have_gpu) {
      return rt.device_status().with_context(
          "kiln tune times candidates on a GPU; --dry-run lists them and --compile-only fills the kernel "
          "cache "
          "without one");
    }
    KILN_ASSIGN_OR_RETURN(TuningDevice d, query_tuning_device(0));
    if (!a.gpu.empty()) {
      KILN_ASSIGN_OR_RETURN(TuningDevice want, parse_tuning_device(a.gpu, d.key.nvrtc_major));
      if (want.key.cc != d.key.cc || want.key.sm_count != d.key.sm_count)
        return InvalidArgument("--gpu " + a.gpu + " is " + want.key.to_string() + " but this GPU (" +
                               d.gpu_name + ") is " + d.key.to_string() +
                               "; timing happens on the GPU present");
    }
    return d;
  }
  if (!a.gpu.empty()) return parse_tuning_device(a.gpu);
  if (const char* env = std::getenv("KILN_TUNING_DEVICE"); env != nullptr && *env != '\0') {
    *note = std::string("planning for $KILN_TUNING_DEVICE=") + env;
    return parse_tuning_device(env);
  }
  if (have_gpu) return query_tuning_device(0);
  *note = "no GPU: planning for h200 (choose another with --gpu)";
  return parse_tuning_device("h200");
}

StatusOr<std::vector<TuneShape>> untuned_shapes(const GlobalOptions& global, const TuningDevice& device) {
  TuningStore::Options o;
  o.dir = cache_dir_of(global);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<TuningStore> store, TuningStore::open(o));
  KILN_ASSIGN_OR_RETURN(std::vector<UntunedShape> rows, store->untuned());
  std::vector<TuneShape> out;
  for (const UntunedShape& u : rows) {
    if (u.device.key != device.key) continue;
    KILN_ASSIGN_OR_RETURN(KernelSpec spec, tuning_problem_spec(u.problem));
    std::vector<int64_t> ms;
    if (u.m_bucket > 0) {
      ms.push_back(u.m_bucket);
    } else {
      ms.assign(std::begin(kUntunedDefaultMs), std::end(kUntunedDefaultMs));
    }
    for (int64_t m : ms) {
      TuneShape s;
      s.spec = spec;
      s.m = m;
      s.n = u.problem.n;
      s.k = u.problem.k;
      s.label = fmt::format("untuned (seen {}x)", u.seen);
      out.push_back(std::move(s));
    }
  }
  return out;
}

// Exactly one source of shapes; --spec alone with --m/--n/--k is the single-shape source.
StatusOr<std::vector<TuneShape>> load_shapes(const TuneArgs& a, const GlobalOptions& global,
                                             const TuningDevice& device) {
  const bool single = a.m > 0 || a.n > 0 || a.k > 0;
  const int sources = !a.shapes_file.empty() + !a.preset.empty() + a.untuned + single;
  if (sources != 1) {
    return InvalidArgument(
        "give exactly one source of shapes: a SHAPES.json file, --preset NAME, --untuned, or --spec with --m "
        "--n --k "
        "(got " +
        std::to_string(sources) + ")");
  }
  std::optional<KernelSpec> spec;
  if (!a.spec.empty()) {
    KILN_ASSIGN_OR_RETURN(SpecInput in, read_spec_input(a.spec));
    KILN_ASSIGN_OR_RETURN(spec, parse_spec_input(in));
  }
  if (single) {
    if (!spec) return InvalidArgument("--m/--n/--k tune one shape and need --spec");
    if (a.m < 1 || a.n < 1 || a.k < 1)
      return InvalidArgument(fmt::format("sizes must be positive (got --m {} --n {} --k {})", a.m, a.n, a.k));
    TuneShape s;
    s.spec = *spec;
    s.m = a.m;
    s.n = a.n;
    s.k = a.k;
    return std::vector<TuneShape>{s};
  }
  if (!a.preset.empty()) return preset_shapes(a.preset, spec);
  if (a.untuned) {
    if (spec) return InvalidArgument("--untuned tunes the recorded specs; --spec does not apply");
    return untuned_shapes(global, device);
  }
  KILN_ASSIGN_OR_RETURN(std::string text, read_file(a.shapes_file));
  return shapes_from_json_text(text, a.shapes_file, spec);
}

// ---- --devices: one child process per GPU ----

// This process's argv (the parent's command line, to hand to its children).
std::vector<std::string> own_argv() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\0') {
      out.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// CUDA_VISIBLE_DEVICES for ordinal d, relative to an existing CUDA_VISIBLE_DEVICES if there is one.
StatusOr<std::string> visible_device(int d) {
  const char* cur = std::getenv("CUDA_VISIBLE_DEVICES");
  if (cur == nullptr || *cur == '\0') return std::to_string(d);
  std::vector<std::string> list;
  std::stringstream ss(cur);
  for (std::string item; std::getline(ss, item, ',');) list.push_back(item);
  if (d >= static_cast<int>(list.size()))
    return InvalidArgument("--devices: device " + std::to_string(d) +
                           " is not among CUDA_VISIBLE_DEVICES=" + cur);
  return list[static_cast<size_t>(d)];
}

int run_sharded(const TuneArgs& a, const std::vector<int>& devices) {
  std::vector<std::string> argv = own_argv();
  if (argv.empty()) return report_error(kCmd, Internal("cannot read /proc/self/cmdline to start the shards"));
  // Drop --devices and its value; the children get --shard, --summary-json and --progress-prefix.
  std::vector<std::string> base;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--devices") {
      ++i;
      continue;
    }
    if (argv[i].rfind("--devices=", 0) == 0) continue;
    base.push_back(argv[i]);
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-tune-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return report_error(kCmd, Internal(std::string("mkdtemp failed: ") + std::strerror(errno)));
  const int n = static_cast<int>(devices.size());
  std::vector<pid_t> pids;
  std::vector<std::string> summaries;
  for (int i = 0; i < n; ++i) {
    StatusOr<std::string> visible = visible_device(devices[static_cast<size_t>(i)]);
    if (!visible.ok()) return report_error(kCmd, visible.status());
    std::vector<std::string> args = base;
    const std::string summary = tmpl + "/shard" + std::to_string(i) + ".json";
    for (const std::string& s :
         {std::string("--shard"), fmt::format("{}/{}", i, n), std::string("--summary-json"), summary,
          std::string("--progress-prefix"), "gpu" + *visible}) {
      args.push_back(s);
    }
    summaries.push_back(summary);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return report_error(kCmd, Internal(std::string("fork failed: ") + std::strerror(errno)));
    if (pid == 0) {
      ::setenv("CUDA_VISIBLE_DEVICES", visible->c_str(), 1);
      std::vector<char*> cargv;
      for (std::string& s : args) cargv.push_back(s.data());
      cargv.push_back(nullptr);
      ::execv("/proc/self/exe", cargv.data());
      std::fprintf(stderr, "kiln tune: exec of shard %d failed: %s\n", i, std::strerror(errno));
      ::_exit(kExitError);
    }
    pids.push_back(pid);
  }
  int worst = kExitOk;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    while (::waitpid(pids[static_cast<size_t>(i)], &status, 0) < 0 && errno == EINTR) {
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : kExitError;
    if (code != kExitOk) {
      fmt::print(stderr, "kiln tune: shard {} (device {}) exited with {}\n", i,
                 devices[static_cast<size_t>(i)], code);
      worst = std::max(worst, code);
    }
  }
  std::vector<SummaryRow> rows;
  for (const std::string& path : summaries) {
    StatusOr<std::string> text = read_file(path);
    if (!text.ok()) continue;  // that shard failed before writing; its exit code says so
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_array()) {
      for (const nlohmann::json& r : j) rows.push_back(row_from_json(r));
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const SummaryRow& r : rows) out.push_back(row_to_json(r));
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    print_summary(stdout, rows, !a.compile_only);
  }
  return worst;
}

// ---- one process ----

int run_tune(const TuneArgs& a, const GlobalOptions& global) {
  std::vector<int> devices;
  if (!a.devices.empty()) {
    StatusOr<std::vector<int>> d = parse_device_list(a.devices);
    if (!d.ok()) return report_error(kCmd, d.status());
    devices = *d;
    if (!a.shard.empty())
      return report_error(kCmd, InvalidArgument("--devices and --shard exclude each other"));
    if (devices.size() == 1 && !a.dry_run) {
      // One device: tune here, on that device.
      StatusOr<std::string> visible = visible_device(devices[0]);
      if (!visible.ok()) return report_error(kCmd, visible.status());
      ::setenv("CUDA_VISIBLE_DEVICES", visible->c_str(), 1);
    }
    if (devices.size() > 1 && !a.dry_run) return run_sharded(a, devices);
  }

  StatusOr<std::shared_ptr<Runtime>> rt = make_runtime(global);
  if (!rt.ok()) return report_error(kCmd, rt.status());
  std::string note;
  StatusOr<TuningDevice> device = resolve_device(a, **rt, !a.dry_run && !a.compile_only, &note);
  if (!device.ok()) return report_error(kCmd, device.status());
  StatusOr<std::vector<TuneShape>> shapes = load_shapes(a, global, *device);
  if (!shapes.ok()) return report_error(kCmd, shapes.status());

  // Which shapes are ours: a shard of a --devices run, or all of them.
  std::vector<size_t> mine(shapes->size());
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = i;
  if (!a.shard.empty()) {
    StatusOr<std::pair<int, int>> sh = parse_shard(a.shard);
    if (!sh.ok()) return report_error(kCmd, sh.status());
    mine = shard_shapes(*shapes, sh->second)[static_cast<size_t>(sh->first)];
  }

  const bool quiet_stdout = a.json || !a.summary_json.empty();  // children of --devices: the parent prints
  if (!quiet_stdout) {
    fmt::print("kiln tune: {} shape(s) for {} ({}){}\n", mine.size(),
               device->gpu_name.empty() ? "?" : device->gpu_name, device->key.to_string(),
               note.empty() ? "" : "; " + note);
  }

  TunerOptions opts;
  opts.budget_s = a.budget_s;
  opts.compile_threads = a.jobs;
  opts.prune.max_candidates = static_cast<size_t>(std::max(0, a.max_candidates));
  opts.time = !a.compile_only;
  opts.graph_timing = a.timing == "graph";
  opts.recheck_rounds = a.recheck;
  Tuner tuner(**rt, opts);
  const Arch arch = Tuner::arch_of(*device);

  if (a.dry_run) {
    if (devices.size() > 1 && !quiet_stdout) {
      const auto shards = shard_shapes(*shapes, static_cast<int>(devices.size()));
      for (size_t s = 0; s < shards.size(); ++s) {
        std::string list;
        double cost = 0;
        for (size_t i : shards[s]) {
          list += fmt::format("{}{}", list.empty() ? "" : " ", i + 1);
          cost += tuning_cost((*shapes)[i]);
        }
        fmt::print("  shard {} -> device {}: shapes {} (relative cost {:.1f})\n", s, devices[s],
                   list.empty() ? "none" : list, cost);
      }
    }
    nlohmann::json out = nlohmann::json::array();
    int failed = 0;
    for (size_t i : mine) {
      const TuneShape& shape = (*shapes)[i];
      const int64_t bucket = Tuner::bucket_of(shape);
      StatusOr<PrunedSpace> space = tuner.candidates(shape, *device);
      if (!space.ok()) {
        ++failed;
        if (quiet_stdout) {
          out.push_back(row_to_json(failed_row(shape, space.status())));
        } else {
          fmt::print("\n{}: {}  M={} N={} K={}\n  {}\n",
                     shape.label.empty() ? "shape " + std::to_string(i + 1) : shape.label,
                     print_spec(shape.spec), shape.m, shape.n, shape.k, space.status().to_string());
        }
        continue;
      }
      if (quiet_stdout) {
        out.push_back(candidates_json(shape, bucket, *space));
      } else {
        fmt::print("\n");
        print_candidates(stdout, shape, bucket, *space);
      }
    }
    if (quiet_stdout) fmt::print("{}\n", out.dump(2));
    if (failed > 0) {
      fmt::print(stderr, "kiln tune: {} of {} shape(s) have no kernel for {} ({})\n", failed, mine.size(),
                 arch.name(), device->key.to_string());
      return kExitError;
    }
    return kExitOk;
  }

  std::shared_ptr<TuningStore> store =
      a.no_record || global.no_cache ? nullptr : shared_tuning_store(cache_dir_of(global));
  ProgressBar bar(::isatty(STDERR_FILENO) == 1, a.progress_prefix);
  std::vector<SummaryRow> rows;
  int failures = 0;
  for (size_t pos = 0; pos < mine.size(); ++pos) {
    TuneShape shape = (*shapes)[mine[pos]];
    if (shape.label.empty()) shape.label = fmt::format("M={} N={} K={}", shape.m, shape.n, shape.k);
    opts.on_progress = [&](const TuneProgress& p) { bar.update(p, pos, mine.size(), !a.compile_only); };
    Tuner shape_tuner(**rt, opts);
    StatusOr<TuneResult> r = shape_tuner.tune(shape, *device);
    bar.finish();
    if (!r.ok()) {
      ++failures;
      rows.push_back(failed_row(shape, r.status()));
      continue;
    }
    SummaryRow row = summarize(*r);
    if (std::optional<TuningRecord> rec = r->record()) {
      if (store) {
        // Faster than the incumbent in this run's recheck: replaces it whatever median the row holds.
        StatusOr<bool> stored = r->replaces_incumbent() ? store->replace(*rec) : store->record(*rec);
        row.recorded = !stored.ok() ? "error: " + stored.status().message()
                       : *stored    ? "stored"
                                    : "kept existing";
      } else {
        row.recorded = "not recorded";
      }
    } else if (r->best && r->recheck.rounds > 0) {  // found, but not faster than what runs today
      row.recorded = fmt::format("no: {:.1f} us vs {} {:.1f} us", r->recheck.winner_us, row.recheck_reference,
                                 r->recheck.reference_us);
    } else if (!a.compile_only) {
      ++failures;
    }
    rows.push_back(std::move(row));
  }

  if (!a.summary_json.empty()) {
    nlohmann::json out = nlohmann::json::array();
    for (const SummaryRow& r : rows) out.push_back(row_to_json(r));
    std::ofstream f(a.summary_json, std::ios::trunc);
    f << out.dump(-1, ' ', false,
                  nlohmann::json::error_handler_t::replace);  // NVRTC logs: bad UTF-8 never throws
  } else if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const SummaryRow& r : rows) out.push_back(row_to_json(r));
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    print_summary(stdout, rows, !a.compile_only);
    if (store && !a.compile_only)
      fmt::print("winners recorded in {}\n", store->path().empty() ? "memory only" : store->path());
  }
  return failures > 0 ? kExitError : kExitOk;
}

}  // namespace

Command register_tune(CLI::App& app, const GlobalOptions& global) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Pre-tune shapes: compile the pruned candidates in parallel, verify each against the reference, time "
      "them "
      "(CUDA events, median) and record the fastest per (GPU, spec, N, K, M bucket) in the cache database. "
      "Shapes from SHAPES.json, --preset, --untuned, or --spec with --m --n --k.");
  cmd->fallthrough();
  cmd->add_option("shapes", args->shapes_file,
                  "JSON list of shapes: [{\"spec\": \"gemm a=bf16 b=bf16 out=bf16\", \"m\": [1, 16, 4096], "
                  "\"n\": 7168, \"k\": 7168}, ...]");
  std::string presets;
  for (const ModelPreset& p : model_presets()) presets += (presets.empty() ? "" : ", ") + std::string(p.name);
  cmd->add_option("--preset", args->preset, "a model's shapes: " + presets);
  cmd->add_flag("--untuned", args->untuned, "the shapes recorded with KILN_RECORD_UNTUNED=1 for this GPU");
  cmd->add_option("--spec", args->spec,
                  "the spec of a single shape (with --m --n --k), or one for every shape");
  cmd->add_option("--m", args->m,
                  "rows (tuned at its M bucket: 1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, ...)");
  cmd->add_option("--n", args->n, "columns of the output (rows of W)");
  cmd->add_option("--k", args->k, "reduction length");
  cmd->add_flag(
      "--dry-run", args->dry_run,
      "list each shape's candidates after static pruning, with the model's estimates; no GPU, no compile");
  cmd->add_flag("--compile-only", args->compile_only,
                "compile the candidates into the kernel cache and stop (no GPU needed; time them later)");
  cmd->add_option("--budget", args->budget_s,
                  "seconds per shape; no new compile or timing starts after it (default 30)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--jobs", args->jobs, "parallel compiles (default: one per CPU)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-candidates", args->max_candidates,
                  "keep at most this many candidates per shape, best estimates first (default 48; 0: no cap)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
      "--gpu", args->gpu,
      "the GPU to tune for: a name (h200, h100-sxm, a100, l40s, ...) or cc=90,sms=132; timing runs must "
      "match the GPU present, dry and compile-only runs may name any");
  cmd->add_option(
      "--devices", args->devices,
      "GPU ordinals to spread the shapes over, one process each (\"0,1,2,3\"); with --dry-run, shows "
      "the split");
  cmd->add_option("--timing", args->timing,
                  "graph: each candidate timed as bench/ times every library, a CUDA graph of one run per copy of "
                  "the inputs (copies over 3x the L2), replayed (default); events: each run between CUDA events "
                  "after an L2 flush")
      ->check(CLI::IsMember({"graph", "events"}));
  cmd->add_option("--recheck", args->recheck,
                  "rounds in which the winner and what plans run today (the incumbent record, else the "
                  "heuristic's config) are re-timed in turn; the winner is recorded only if its median is lower "
                  "(default 5; 0: record the winner of the search)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", args->json, "print the summary (or the dry run's candidates) as JSON");
  cmd->add_flag("--no-record", args->no_record, "do not write the winners to the cache database");
  // Internal: how a --devices parent talks to its children.
  cmd->add_option("--shard", args->shard, "tune only shard INDEX/COUNT of the shapes")->group("");
  cmd->add_option("--summary-json", args->summary_json, "write the summary rows to this file")->group("");
  cmd->add_option("--progress-prefix", args->progress_prefix, "prefix of the progress lines")->group("");
  return {cmd, [args, &global]() { return run_tune(*args, global); }};
}

}  // namespace kiln::cli

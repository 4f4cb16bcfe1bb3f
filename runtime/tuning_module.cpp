// runtime/tuning_module.cpp — loading libkiln_tune.so (tuning_module.hpp).
#include "runtime/tuning_module.hpp"

#include <dlfcn.h>

#include <mutex>

#include "cache/cache_key.hpp"
#include "common/env.hpp"
#include "runtime/tuned_configs.hpp"
#include "templates/templates.hpp"

namespace kiln {
namespace {

using EntryFn = int (*)(int, const char*, OnlineTuneFn*);

struct ModuleState {
  std::once_flag once;
  StatusOr<std::string> loaded = NotReady("libkiln_tune.so not loaded yet");
};
ModuleState& state() {
  static ModuleState s;
  return s;
}

// The directory of the shared object (or program) this function was linked into.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || info.dli_fname == nullptr) return ".";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

StatusOr<std::string> load_once() {
  const std::string path = env::get(env::kTuneModule).value_or(own_directory() + "/libkiln_tune.so");
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Unsupported("online tuning needs the tuner module " + path + ", which did not load (" +
                    (why ? why : "unknown") + "); set KILN_TUNE_MODULE to its path");
  }
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, "kiln_tune_module_entry"));
  OnlineTuneFn tune = nullptr;
  if (entry == nullptr || entry(kCodegenVersion, tuning_module_build_id().c_str(), &tune) != 0 || tune == nullptr) {
    dlclose(handle);
    return Unsupported("the tuner module " + path + " is of another kiln build (or lacks its entry point)");
  }
  // The module stays loaded for the process: the installed tuner points into it.
  set_online_tuner([tune](Runtime& rt, const OnlineTuneRequest& req) { return tune(rt, req); });
  return path;
}

}  // namespace

Status load_tuning_module() {
  ModuleState& s = state();
  std::call_once(s.once, [&s] { s.loaded = load_once(); });
  return s.loaded.status();
}

StatusOr<std::string> tuning_module_path() { return state().loaded; }

std::string tuning_module_build_id() {
  return template_tree_hash() + "/codegen" + std::to_string(kCodegenVersion) + "/" + __VERSION__;
}

}  // namespace kiln

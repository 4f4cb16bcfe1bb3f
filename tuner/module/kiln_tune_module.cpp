// tuner/module/kiln_tune_module.cpp — libkiln_tune.so: the tuner (and the verification it times with) as a module that
// libkiln.so loads on demand, the first time a plan wants online tuning (runtime/tuning_module.hpp).
// libkiln.so holds what an embedding framework needs to plan and launch; the tuner, the random
// operands and the references stay out of it until they are used.
//
// The module carries its own copy of the kiln code it calls (linked statically, nothing exported but
// the entry below), built from the same tree as the libkiln.so that loads it: the entry refuses a
// caller of another codegen version or build.
#include <string>

#include "cache/cache_key.hpp"
#include "runtime/tuned_configs.hpp"
#include "runtime/tuning_module.hpp"
#include "tuner/online.hpp"

namespace {

kiln::StatusOr<kiln::TuningRecord> tune(kiln::Runtime& rt, const kiln::OnlineTuneRequest& req) {
  return kiln::tune_online(rt, req, kiln::TunerOptions{});
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int kiln_tune_module_entry(int codegen_version, const char* build,
                                                                              kiln::OnlineTuneFn* out) {
  if (out == nullptr || codegen_version != kiln::kCodegenVersion || build == nullptr ||
      std::string(build) != kiln::tuning_module_build_id())
    return 1;
  *out = &tune;
  return 0;
}

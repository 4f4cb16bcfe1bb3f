// tuner/online.hpp — opt-in online tuning: Runtime::plan tunes an untuned shape before returning.
//
// The runtime sits below the tuner, so the tuner installs itself into the runtime's hook
// (runtime/tuned_configs.hpp: set_online_tuner). Installing does not turn tuning on: a plan tunes
// online only when KILN_AUTOTUNE=1 or set_online_tuning(true) (the API flag; it overrides the
// environment either way), only the bucket of the plan's M hint, only when no tuning layer has it,
// and only with a GPU (otherwise the heuristic, as without tuning). The winner is recorded in the
// user database, so the next process finds it without tuning. The `kiln` CLI installs it at start;
// libkiln.so, which does not link the tuner, loads it on first need from libkiln_tune.so
// (tuner/module/, runtime/tuning_module.hpp).
//
//   kiln::install_online_tuner();          // once, at start-up
//   kiln::set_online_tuning(true);         // or KILN_AUTOTUNE=1
//   KILN_ASSIGN_OR_RETURN(auto plan, rt->plan(spec, {.m = 16, .n = 5760, .k = 2880}));  // tunes M=16
#pragma once

#include "runtime/tuned_configs.hpp"  // OnlineTuneRequest
#include "tuner/tuner.hpp"

namespace kiln {

// Tunes req's M-hint bucket with a Tuner of these options: the winner, or NO_DEVICE without a GPU,
// NOT_READY when no candidate verified.
StatusOr<TuningRecord> tune_online(Runtime& rt, const OnlineTuneRequest& req, const TunerOptions& options);
// Installs a Tuner with these options (budget, threads) as the runtime's online tuner.
void install_online_tuner(TunerOptions options = {});

}  // namespace kiln

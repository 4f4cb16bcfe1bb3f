// runtime/tuning_module.hpp — libkiln_tune.so, the tuner as a module loaded on demand.
//
// libkiln.so does not link the tuner or the verification library (random operands, references,
// timing). When a plan wants online tuning (KILN_AUTOTUNE=1 or set_online_tuning(true)) and no tuner
// is installed (the `kiln` CLI installs one at start), the runtime loads the module once and installs
// its tuner: $KILN_TUNE_MODULE when set, else libkiln_tune.so in the directory of the library or
// program this code is in (the build puts it beside libkiln.so). A module of another build is refused.
// Nothing fails a plan: without the module the plan keeps its other layers, and tuning_module_path()
// says why.
//
//   KILN_RETURN_IF_ERROR(kiln::load_tuning_module());   // StoreTunings calls it when it needs a tuner
//   auto where = kiln::tuning_module_path();            // the path loaded, or why not
#pragma once

#include <string>

#include "kiln/status.hpp"

namespace kiln {

// Loads the module and installs its tuner (once per process; later calls return the first result).
Status load_tuning_module();
// The module's path once loaded; the error of the attempt (UNSUPPORTED); NOT_READY before any.
StatusOr<std::string> tuning_module_path();
// What module and library must agree on to share C++ types: the template tree, the codegen version
// and the compiler.
std::string tuning_module_build_id();

}  // namespace kiln

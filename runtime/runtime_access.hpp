// runtime/runtime_access.hpp — a Runtime's internals for kiln's own modules (verify/, tests).
//
// The public Runtime (include/kiln/kiln.hpp) exposes no internals; the verification library loads
// its reference kernels through the runtime's compile-and-load service and the gpu tests load
// pinned kernels the same way, so they reach RuntimeImpl through this one door.
//
//   KILN_ASSIGN_OR_RETURN(LoadedKernel * k, kiln::RuntimeAccess::impl(rt)->load(spec, family, cfg, arch));
#pragma once

#include "kiln/kiln.hpp"
#include "runtime/runtime_impl.hpp"

namespace kiln {

struct RuntimeAccess {
  static RuntimeImpl* impl(const Runtime& rt) { return rt.impl_.get(); }
};

}  // namespace kiln

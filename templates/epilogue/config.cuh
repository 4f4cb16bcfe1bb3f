// templates/epilogue/config.cuh — whether a kernel config names a generated epilogue functor.
//
// compiler/emit writes, for a spec with an epilogue, `using Epilogue = KilnEpilogue;` and `kGateUp`
// into KilnConfig (both or neither). ConfigEpilogue detects them, so configs without an epilogue keep
// compiling to exactly the code they did. Shared by the portable (kernels/sm80_epilogue.cuh) and the
// Hopper (kernels/sm90_gemm.cuh) families.
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

template <class Config, class = void>
struct ConfigEpilogue {
  static constexpr bool kHas = false;
  static constexpr GateUp kGateUp = GateUp::kNone;
  using Fn = void;
};
template <class Config>
struct ConfigEpilogue<Config, typename VoidOf<typename Config::Epilogue>::type> {
  static constexpr bool kHas = true;
  static constexpr GateUp kGateUp = Config::kGateUp;
  using Fn = typename Config::Epilogue;
};

}  // namespace kiln_dev

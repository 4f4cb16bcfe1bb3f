// templates/common/operand_major.cuh — what a backward config asks of a kernel: whether it reads an
// operand MN-major, and whether it adds the product to its output.
//
// The backward passes read some operands along their stored rows (compiler/plan/gemm_view.hpp): dgrad's
// W and wgrad's dY and X are MN-major, their rows running along the GEMM's reduction. compiler/emit writes
// `static constexpr bool kTransA` / `kTransB` into KilnConfig only when true, so forward configs compile
// to exactly the code they did; likewise `kAccumulate` for specs with accumulate=true (out += the
// product: each output element is read, added to in f32 and rounded once to the output format).
#pragma once

#include "common/types.cuh"

namespace kiln_dev {

template <class Config, class = void>
struct ConfigTransA {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigTransA<Config, typename VoidOf<decltype(Config::kTransA)>::type> {
  static constexpr bool kValue = Config::kTransA;
};
template <class Config, class = void>
struct ConfigTransB {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigTransB<Config, typename VoidOf<decltype(Config::kTransB)>::type> {
  static constexpr bool kValue = Config::kTransB;
};

template <class Config, class = void>
struct ConfigAccumulate {
  static constexpr bool kValue = false;
};
template <class Config>
struct ConfigAccumulate<Config, typename VoidOf<decltype(Config::kAccumulate)>::type> {
  static constexpr bool kValue = Config::kAccumulate;
};

}  // namespace kiln_dev

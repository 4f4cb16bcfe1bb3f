// cache/cache_key.hpp — content keys and hashing.
//
// A kernel's content key is sha256 over: kiln's codegen version, the template tree hash, the
// generated source, the NVRTC version, the sorted NVRTC options and the target arch, each
// length-prefixed so that no two different inputs concatenate to the same bytes. Any change to
// any of them yields a new key, so a stale cubin is never loaded for new code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Bumped when emitted code changes meaning without the template tree changing.
// 2: GemmParams grew the scale strides, NVFP4 global, grouped-GEMM fields.
// Not bumped for the epilogue vector operands appended to GemmParams: that header is
// in the template tree, so kernel cache keys changed with it, and tunings (keyed by this version) stay
// valid because the mainloops did not change.
// 3: a decode config's `stages` became the number of warp steps in flight (1 had meant the
// two-step kernel), so stored decode tunings from before it name different kernels. The shipped
// pre-tuned rows were all measured with code whose configs mean what they mean at 3 (the decode rows
// re-tuned after the change), so tuner/pretuned/h200.json moved to 3 unchanged otherwise.
inline constexpr int kCodegenVersion = 3;

std::string sha256_hex(std::string_view bytes);

struct KeyInputs {
  int codegen_version = kCodegenVersion;
  std::string template_hash;
  std::string source;
  std::string nvrtc_version;
  std::vector<std::string> options;  // sorted by the key function
  std::string arch;
};
std::string kernel_cache_key(const KeyInputs& in);

}  // namespace kiln

// templates/templates.hpp — the templates/ tree, embedded in the binary at build time.
//
// CMake (templates/embed.cmake) turns every .cuh under templates/ into a string in a generated .cpp.
// NVRTC receives them as in-memory headers under their relative names ("kernels/sm80_gemm.cuh"),
// so generated code sees nothing else. template_tree_hash() is part of every cache key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct EmbeddedTemplate {
  const char* name;      // path relative to templates/, e.g. "kernels/sm80_gemm.cuh"
  const char* contents;
};

const std::vector<EmbeddedTemplate>& embedded_templates();
// sha256 over all (name, contents) pairs in name order, hex.
const std::string& template_tree_hash();

}  // namespace kiln

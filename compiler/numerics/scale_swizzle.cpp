// Blackwell 128x4 scale-factor tiles (scale_swizzle.hpp, docs/numerics.md §5).
#include "compiler/numerics/scale_swizzle.hpp"

#include <string>

namespace kiln::numerics {
namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

Status check_shape(const char* fn, size_t have, int64_t need, int64_t rows, int64_t cols, const char* what) {
  if (rows < 0 || cols < 0)
    return InvalidArgument(std::string(fn) + ": scale shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
                           "] has a negative dimension");
  if (static_cast<int64_t>(have) != need)
    return InvalidArgument(std::string(fn) + ": " + what + " has " + std::to_string(have) + " bytes, scale shape [" +
                           std::to_string(rows) + ", " + std::to_string(cols) + "] needs " + std::to_string(need));
  return Status::Ok();
}

}  // namespace

int64_t swizzled_scale_bytes(int64_t rows, int64_t cols) { return round_up(rows, 128) * round_up(cols, 4); }

StatusOr<std::vector<uint8_t>> swizzle_scales(std::span<const uint8_t> sf, int64_t rows, int64_t cols) {
  KILN_RETURN_IF_ERROR(check_shape("swizzle_scales", sf.size(), rows * cols, rows, cols, "input"));
  const int64_t n_kt = round_up(cols, 4) / 4;
  std::vector<uint8_t> out(static_cast<size_t>(swizzled_scale_bytes(rows, cols)), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(scale_swizzle_offset(r, c, n_kt))] = sf[static_cast<size_t>(r * cols + c)];
  return out;
}

StatusOr<std::vector<uint8_t>> unswizzle_scales(std::span<const uint8_t> tiled, int64_t rows, int64_t cols) {
  KILN_RETURN_IF_ERROR(
      check_shape("unswizzle_scales", tiled.size(), swizzled_scale_bytes(rows, cols), rows, cols, "tiled buffer"));
  const int64_t n_kt = round_up(cols, 4) / 4;
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = tiled[static_cast<size_t>(scale_swizzle_offset(r, c, n_kt))];
  return out;
}

}  // namespace kiln::numerics

// validate_sizes (spec.hpp): which problem dimension breaks which block size. Sizes are the forward's
// M, N, K in every pass (compiler/plan/gemm_view.hpp); the block rules below are the forward pass's, except
// a quantized dgrad's (its dY is quantized along N).
// Memory alignment (16-byte rows, TMA boxes) is the planner's business, not this file's.
#include <string>

#include "compiler/spec/internal/rules.hpp"
#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using spec_internal::Role;
using std::string;

// Extent of one scale block along the dimension it runs on (K for a/b), 0 when unblocked.
int block_extent(const OperandSpec& o) {
  switch (o.scale) {
    case ScaleGranularity::kBlock1x128:
    case ScaleGranularity::kBlock128x128:
      return 128;
    case ScaleGranularity::kBlock1x32:
      return 32;
    case ScaleGranularity::kBlock1x16:
      return 16;
    default:
      return 0;
  }
}

string who(Role r) {
  return r == Role::kOut ? string("out's") : string("operand ") + spec_internal::role_key(r) + "'s";
}

// `dim` is the dimension the operand's blocks and 4-bit packing run along.
Status check_dim(Role r, const OperandSpec& o, char dim, int64_t value, const string& note) {
  const int extent = block_extent(o);
  const string d = string(1, dim) + "=" + std::to_string(value);
  if (extent > 0 && value % extent != 0) {
    const string g = scale_granularity_name(o.scale);
    const string blocks = format_is_fp8(o.format)
                              ? g + " scale blocks"
                              : string(format_name(o.format)) + " scale blocks (" + g + ")";
    return InvalidArgument(d + " is not a multiple of " + std::to_string(extent) + ", the " + string(1, dim) +
                           " extent of " + who(r) + " " + blocks + note);
  }
  if (format_bits(o.format) == 4 && value % 2 != 0) {
    return InvalidArgument(d + " is odd; " + who(r) + " " + format_name(o.format) +
                           " elements pack two per byte along " + string(1, dim) + note);
  }
  return Status::Ok();
}

}  // namespace

Status validate_sizes(const KernelSpec& spec, const ProblemSizes& sizes) {
  KILN_RETURN_IF_ERROR(validate_spec(spec));
  return validate_valid_spec_sizes(spec, sizes);
}

Status validate_valid_spec_sizes(const KernelSpec& spec, const ProblemSizes& sizes) {
  const bool quantize = spec.op == Op::kQuantize;
  if (sizes.m < 0)
    return InvalidArgument("M=" + std::to_string(sizes.m) + " is negative; use M >= 1, or 0 for any M");
  if (!quantize && sizes.n < 1)
    return InvalidArgument("N=" + std::to_string(sizes.n) + " is out of range; N must be >= 1");
  if (sizes.k < 1)
    return InvalidArgument("K=" + std::to_string(sizes.k) + " is out of range; K must be >= 1");

  if (quantize) {
    // The input is X[M,K]; blocks run along K, or along M with transpose=true (the 128x1 wgrad form).
    if (!spec.transpose) return check_dim(Role::kOut, spec.out, 'K', sizes.k, "");
    // Any M: checked per call. Grouped: each expert's rows are padded to whole blocks, so M is free.
    if (sizes.m == 0 || spec.experts > 0) return Status::Ok();
    return check_dim(Role::kOut, spec.out, 'M', sizes.m, " (transpose=true quantizes along M)");
  }
  // A quantized dgrad's dY [M, N] is quantized along N, its reduction; W keeps the forward's blocks along
  // K, and its 128 x 128 blocks also tile N (the GEMM promotes per 128 of N, one W block row each).
  // An MXFP8 dgrad's b is W's column-wise copy [K, N], its blocks along N only.
  if (spec.pass == Pass::kDgrad && !format_is_high_precision(spec.a.format)) {
    KILN_RETURN_IF_ERROR(check_dim(Role::kA, spec.a, 'N', sizes.n, " (dgrad reduces over N)"));
    if (spec.b.format != Format::kMxfp8) KILN_RETURN_IF_ERROR(check_dim(Role::kB, spec.b, 'K', sizes.k, ""));
    return check_dim(Role::kB, spec.b, 'N', sizes.n, " (dgrad reduces over N)");
  }
  // A quantized wgrad reads dY's and X's column-wise copies, whose blocks run along M (the tokens): checked
  // per run against the copies' columns; N and K are free.
  if (spec.pass == Pass::kWgrad && !format_is_high_precision(spec.a.format)) return Status::Ok();
  KILN_RETURN_IF_ERROR(check_dim(Role::kA, spec.a, 'K', sizes.k, ""));
  KILN_RETURN_IF_ERROR(check_dim(Role::kB, spec.b, 'K', sizes.k, ""));
  // A quantized output is the next layer's activation: its blocks run along N.
  KILN_RETURN_IF_ERROR(check_dim(Role::kOut, spec.out, 'N', sizes.n, ""));
  if (spec.gate_up != GateUp::kNone && sizes.n % 2 != 0)
    return InvalidArgument("N=" + std::to_string(sizes.n) + " is odd; gate_up=" + gate_up_name(spec.gate_up) +
                           " splits N into equal gate and up halves and needs an even N");
  return Status::Ok();
}

}  // namespace kiln

// derive_backward (spec.hpp): the dgrad and wgrad specs of a forward GEMM spec (docs/backward.md).
#include <string>

#include "compiler/spec/implied.hpp"
#include "compiler/spec/names.hpp"
#include "compiler/spec/spec.hpp"

namespace kiln {

StatusOr<BackwardSpecs> derive_backward(const KernelSpec& fprop, const BackwardOptions& o) {
  KILN_RETURN_IF_ERROR(validate_spec(fprop));
  const std::string head = "derive_backward(" + print_spec(fprop) + "): ";
  if (fprop.op == Op::kQuantize || fprop.pass != Pass::kFprop)
    return InvalidArgument(head + "takes a forward GEMM spec (gemm or grouped_gemm, pass=fprop)");
  if (!fprop.epilogue.empty() || fprop.gate_up != GateUp::kNone)
    return Unsupported(head + "the backward of an epilogue or a gate|up GLU (its GLU, bias and routing-weight "
                              "gradients) is not derived; derive from the spec without them");
  if (o.grad != Format::kBf16 && o.grad != Format::kF16)
    return InvalidArgument(head + "grad=" + format_name(o.grad) + "; gradients dY and dX are bf16 or f16");
  if (!format_is_high_precision(o.wgrad_out))
    return InvalidArgument(head + "wgrad_out=" + format_name(o.wgrad_out) + "; dW is written in bf16, f16 or f32");
  // Mode quantized (docs/backward.md): every FP8 forward. dY is quantized to e4m3 like the forward's X
  // (tensor, per token or 1x128 blocks, along N) for dgrad, and along M for wgrad. dgrad reads the forward's
  // W when its scales transpose exactly (tensor, 128x128 blocks); a per-channel W (n) is read through its
  // column-wise copy [K, N] (scales along N), in the same spec. wgrad reads the column-wise copies of dY and
  // X: 1x128 blocks along M for a 1x128 forward, otherwise one scale per row of each copy (a per-token X
  // gives Xᵀ per row, b=...:n) or the transposed per-tensor codes.
  const bool fp8_pair = format_is_fp8(fprop.a.format) && format_is_fp8(fprop.b.format);
  // MXFP8 forwards: dY in MXFP8 (blocks of 32 along N), dgrad on W's column-wise copy (quantize ...
  // transpose=true of the bf16 W: blocks along N), wgrad on the column-wise copies of dY and X (blocks
  // along M), all in the forward's MXFP8.
  const bool mx = fprop.a.format == Format::kMxfp8 && fprop.b.format == Format::kMxfp8;
  if (o.mode == BackwardMode::kQuantized && !fp8_pair && !mx)
    return Unsupported(head + "mode quantized is derived for FP8 forwards (a=e4m3|e5m2 b=e4m3|e5m2, any scales) "
                              "and for a=mxfp8 b=mxfp8; other formats (NVFP4, MXFP4, mixed 16-bit) have no "
                              "quantized backward: use high_precision or dequantized");
  const OperandSpec g = with_implied_scales(OperandSpec{o.grad, ScaleGranularity::kNone, ScaleType::kNone});
  const OperandSpec dw = with_implied_scales(OperandSpec{o.wgrad_out, ScaleGranularity::kNone, ScaleType::kNone});
  // Same problem structure.
  KernelSpec base;
  base.op = fprop.op;
  base.layout = fprop.layout;
  base.experts = fprop.experts;
  BackwardSpecs r;
  r.dgrad = base;
  r.dgrad.pass = Pass::kDgrad;
  r.dgrad.a = g;
  r.dgrad.out = g;
  r.wgrad = base;
  r.wgrad.pass = Pass::kWgrad;
  r.wgrad.a = g;
  r.wgrad.out = dw;
  if (o.mode == BackwardMode::kHighPrecision) {
    r.dgrad.b = g;
    r.wgrad.b = g;
  } else if (o.mode == BackwardMode::kQuantized) {
    const OperandSpec dy{mx ? Format::kMxfp8 : Format::kE4m3, fprop.a.scale, fprop.a.scale_type};
    r.dgrad.a = dy;
    r.dgrad.b = fprop.b;
    r.wgrad.a = dy;
    r.wgrad.b = fprop.a;
    // Xᵀ scaled per row of the copy: the kernel's n side (b=...:n).
    if (fprop.a.scale == ScaleGranularity::kM) r.wgrad.b.scale = ScaleGranularity::kN;
  } else {  // dequantized: the forward's stored operands
    r.dgrad.b = fprop.b;
    r.wgrad.b = fprop.a;
  }
  // The numerics attributes carry over to a derived spec that still has an operand they apply to.
  for (KernelSpec* s : {&r.dgrad, &r.wgrad}) {
    const auto any = [&](auto pred) { return pred(s->a) || pred(s->b); };
    if (any([](const OperandSpec& x) { return x.format == Format::kNvfp4; })) {
      s->four_over_six = fprop.four_over_six;
      s->e4m3_bound = fprop.e4m3_bound;
      s->nvfp4_global = fprop.nvfp4_global;
    }
    if (any([](const OperandSpec& x) { return x.scale_type == ScaleType::kUe8m0; })) s->mx_rounding = fprop.mx_rounding;
    if (any([](const OperandSpec& x) {
          return format_is_fp8(x.format) || x.format == Format::kMxfp8 || x.format == Format::kNvfp4;
        }))
      s->fp8_saturation = fprop.fp8_saturation;
    Status ok = validate_spec(*s);
    if (!ok.ok())
      return Unsupported(head + "the " + pass_name(s->pass) + " spec of mode " + backward_mode_name(o.mode) +
                         " is not a valid spec: " + ok.message());
  }
  return r;
}

}  // namespace kiln

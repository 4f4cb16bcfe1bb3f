// C API: runtimes and plans (kiln_runtime_*, kiln_plan_*) over kiln::Runtime and kiln::Plan.
//
// Operands are validated by Plan::run alone (dtype, shape, strides, device, alignment, naming the
// operand), so the C, C++ and Python entry points reject the same tensors with the same words; this
// layer checks only what C adds: NULL pointers and struct_size.
#include <string>

#include "capi/capi_internal.hpp"
#include "compiler/plan/gemm_view.hpp"  // quantized dgrad: W's transpose
#include "compiler/plan/sm90_plan.hpp"  // the MXFP8 pre-pass's bf16 spec

namespace {

using kiln::InvalidArgument;
using kiln::Status;
using kiln::capi::check_struct_size;
using kiln::capi::guard;
using kiln::capi::require;

// The sizes of the first released version of each options struct: callers built against it keep
// working when a later kiln appends fields (which they then leave at their defaults).
constexpr size_t kRuntimeOptionsV1 = sizeof(kiln_runtime_options);
constexpr size_t kPlanOptionsV1 = sizeof(kiln_plan_options);
// kiln_operands grew offsets, counts and b_global (grouped GEMMs, NVFP4): the first release's callers pass
// the size up to b_scale, and the fields past their struct_size read as NULL.
constexpr size_t kOperandsV1 = offsetof(kiln_operands, offsets);
constexpr size_t kOperandsV2 = offsetof(kiln_operands, out_scale);
// ... and out_scale, out_global (quantize specs, kiln 0.3).
constexpr size_t kOperandsV3 = offsetof(kiln_operands, bias);
// ... and the epilogue's vectors bias .. up_bias (epilogues, kiln 0.4).
constexpr size_t kOperandsV4 = sizeof(kiln_operands);

// The workspace-size queries: bytes = plan's `size` for m rows (0 on any error).
kiln_status workspace_query(const char* what, kiln_plan plan, int64_t m, size_t* bytes,
                            size_t (kiln::Plan::*size)(int64_t) const) {
  return guard(what, [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(bytes, "bytes"));
    *bytes = 0;
    KILN_RETURN_IF_ERROR(require(plan, "plan"));
    if (m < 0) return InvalidArgument("m is " + std::to_string(m) + "; it must be >= 0");
    *bytes = (plan->plan.*size)(m);
    return Status::Ok();
  });
}

}  // namespace

extern "C" {

kiln_status kiln_runtime_create(const kiln_runtime_options* options, kiln_runtime* out) {
  return guard("kiln_runtime_create", [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(out, "out"));
    *out = nullptr;
    KILN_RETURN_IF_ERROR(require(options, "options"));
    KILN_RETURN_IF_ERROR(
        check_struct_size(options->struct_size, kRuntimeOptionsV1, "kiln_runtime_options", "options"));
    kiln::RuntimeOptions ro;
    if (options->cache_dir != nullptr) ro.cache_dir = options->cache_dir;
    ro.disable_cache = options->disable_cache != 0;
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<kiln::Runtime> rt, kiln::Runtime::create(ro));
    *out = new kiln_runtime_s{std::move(rt)};
    return Status::Ok();
  });
}

void kiln_runtime_destroy(kiln_runtime rt) {
  // Destruction must not fail; a throwing destructor below would be a kiln bug, contained here.
  try {
    delete rt;
  } catch (...) {
  }
}

int kiln_runtime_has_device(kiln_runtime rt) {
  int has = 0;
  (void)guard("kiln_runtime_has_device", [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(rt, "rt"));
    Status s = rt->runtime->device_status();
    has = s.ok() ? 1 : 0;
    return s;
  });
  return has;
}

kiln_status kiln_plan_create(kiln_runtime rt, const char* spec, const kiln_plan_options* options,
                             kiln_plan* out) {
  return guard("kiln_plan_create", [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(out, "out"));
    *out = nullptr;
    KILN_RETURN_IF_ERROR(require(rt, "rt"));
    KILN_RETURN_IF_ERROR(require(spec, "spec"));
    KILN_RETURN_IF_ERROR(require(options, "options"));
    KILN_RETURN_IF_ERROR(
        check_struct_size(options->struct_size, kPlanOptionsV1, "kiln_plan_options", "options"));
    KILN_ASSIGN_OR_RETURN(kiln::KernelSpec parsed, kiln::parse_spec(spec));
    // A quantize spec has no W: its n is unused (0 is fine).
    const bool quantize = parsed.op == kiln::Op::kQuantize;
    if (options->n < 0 || (options->n == 0 && !quantize)) {
      return InvalidArgument("options->n is " + std::to_string(options->n) +
                             "; it must be the (positive) number of output columns, the rows of W" +
                             (quantize ? "" : " (0 only for quantize specs)"));
    }
    if (options->k <= 0) {
      return InvalidArgument("options->k is " + std::to_string(options->k) +
                             "; it must be the (positive) reduction length");
    }
    if (options->m_hint < 0) {
      return InvalidArgument("options->m_hint is " + std::to_string(options->m_hint) +
                             "; it must be 0 (no hint) or a typical row count M");
    }
    kiln::ProblemSizes sizes;
    sizes.m = options->m_hint;
    sizes.n = options->n;
    sizes.k = options->k;
    KILN_ASSIGN_OR_RETURN(kiln::Plan plan, rt->runtime->plan(parsed, sizes));
    *out = new kiln_plan_s{rt->runtime, std::move(plan)};
    return Status::Ok();
  });
}

void kiln_plan_destroy(kiln_plan plan) {
  try {
    delete plan;
  } catch (...) {
  }
}

kiln_status kiln_plan_prepare(kiln_plan plan) {
  return guard("kiln_plan_prepare", [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(plan, "plan"));
    return plan->plan.prepare();
  });
}

kiln_status kiln_plan_compile(kiln_plan plan, int64_t m) {
  return guard("kiln_plan_compile", [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(plan, "plan"));
    if (m < 1) return InvalidArgument("m is " + std::to_string(m) + "; it must be >= 1");
    const kiln::Plan& p = plan->plan;
    KILN_RETURN_IF_ERROR(
        plan->runtime->compile(p.spec(), p.family_for(m), p.config_for(m), p.arch()).status());
    // MXFP8 at large M: also what run() takes with the pre-pass workspace (runtime/mx_prepass.hpp).
    if (p.mx_prepass_workspace_bytes(m) > 0) {
      KILN_RETURN_IF_ERROR(plan->runtime
                               ->compile(kiln::sm90_mx_prepass_convert_spec(p.spec()),
                                         kiln::KernelFamily::kMxDequant, kiln::TileConfig{}, p.arch())
                               .status());
      KILN_RETURN_IF_ERROR(plan->runtime
                               ->compile(kiln::sm90_mx_prepass_gemm_spec(p.spec()),
                                         p.mx_prepass_family_for(m), p.mx_prepass_config_for(m), p.arch())
                               .status());
    }
    // Quantized dgrad: W's transpose, which every run launches first (runtime/dgrad_transpose.hpp).
    if (kiln::dgrad_reads_transposed_w(p.spec()))
      KILN_RETURN_IF_ERROR(
          plan->runtime->compile(p.spec(), kiln::KernelFamily::kFp8Transpose, kiln::TileConfig{}, p.arch()).status());
    return kiln::Status::Ok();
  });
}

kiln_status kiln_plan_workspace_size(kiln_plan plan, int64_t m, size_t* bytes) {
  return workspace_query("kiln_plan_workspace_size", plan, m, bytes, &kiln::Plan::workspace_bytes);
}

kiln_status kiln_plan_mx_prepass_workspace_size(kiln_plan plan, int64_t m, size_t* bytes) {
  return workspace_query("kiln_plan_mx_prepass_workspace_size", plan, m, bytes,
                         &kiln::Plan::mx_prepass_workspace_bytes);
}

kiln_status kiln_plan_describe(kiln_plan plan, char* buf, size_t buf_size, size_t* needed) {
  return guard("kiln_plan_describe", [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(plan, "plan"));
    return kiln::capi::copy_out(plan->plan.describe_json(), buf, buf_size, needed);
  });
}

kiln_status kiln_plan_run(kiln_plan plan, const kiln_operands* operands, void* workspace,
                          size_t workspace_bytes, struct CUstream_st* stream) {
  return guard("kiln_plan_run", [&]() -> Status {
    KILN_RETURN_IF_ERROR(require(plan, "plan"));
    KILN_RETURN_IF_ERROR(require(operands, "operands"));
    KILN_RETURN_IF_ERROR(check_struct_size(operands->struct_size, kOperandsV1, "kiln_operands", "operands"));
    kiln::Operands ops;
    ops.a = operands->a;
    ops.b = operands->b;
    ops.out = operands->out;
    ops.a_scale = operands->a_scale;
    ops.b_scale = operands->b_scale;
    if (operands->struct_size >= kOperandsV2) {
      ops.offsets = operands->offsets;
      ops.counts = operands->counts;
      ops.b_global = operands->b_global;
    }
    if (operands->struct_size >= kOperandsV3) {
      ops.out_scale = operands->out_scale;
      ops.out_global = operands->out_global;
    }
    if (operands->struct_size >= kOperandsV4) {
      ops.bias = operands->bias;
      ops.scale = operands->scale;
      ops.colscale = operands->colscale;
      ops.expert_scale = operands->expert_scale;
      ops.residual = operands->residual;
      ops.gate_bias = operands->gate_bias;
      ops.up_bias = operands->up_bias;
    }
    return plan->plan.run(ops, workspace, workspace_bytes, stream);
  });
}

}  // extern "C"

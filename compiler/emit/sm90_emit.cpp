// compiler/emit/sm90_emit.cpp — KernelSpec + TileConfig -> the sm90 family's translation unit.
//
// As in emit.cpp, everything written comes from this file's fixed strings, the shared format table (emit_util.hpp)
// and integers of the checked TileConfig: no spec text is pasted.
#include "compiler/emit/sm90_emit.hpp"

#include <optional>
#include <string>

#include "compiler/emit/emit_util.hpp"
#include "compiler/epilogue/epilogue.hpp"
#include "compiler/plan/sm90_plan.hpp"

namespace kiln {
namespace {

using emit_internal::constant;
using emit_internal::device_format;
using emit_internal::device_gate_up;

using std::string;
using std::to_string;

// The scale enumerators of templates/common/types.cuh the sm90 template takes (sm90_supports admits no
// others; a gap here is an internal error, never user text).
StatusOr<string> device_scale(const char* role, ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::kNone: return string("kiln_dev::Scale::kNone");
    case ScaleGranularity::kTensor: return string("kiln_dev::Scale::kTensor");
    case ScaleGranularity::kM:
    case ScaleGranularity::kN: return string("kiln_dev::Scale::kRow");
    case ScaleGranularity::kBlock1x128: return string("kiln_dev::Scale::kBlock1x128");
    case ScaleGranularity::kBlock128x128: return string("kiln_dev::Scale::kBlock128x128");
    case ScaleGranularity::kBlock1x32: return string("kiln_dev::Scale::kBlock1x32");  // MXFP8 (templates/kernels/sm90/mx.cuh)
    default: break;
  }
  return Unsupported(string("emit: ") + role + " scale " + scale_granularity_name(g) + " has no sm90 form");
}

StatusOr<string> device_scale_type(const char* role, ScaleType t) {
  switch (t) {
    case ScaleType::kNone: return string("kiln_dev::ScaleType::kNone");
    case ScaleType::kF32: return string("kiln_dev::ScaleType::kF32");
    case ScaleType::kUe8m0: return string("kiln_dev::ScaleType::kUe8m0");
    default: break;
  }
  return Unsupported(string("emit: ") + role + " scale type " + scale_type_name(t) + " has no sm90 form");
}

}  // namespace

StatusOr<EmittedKernel> emit_sm90_kernel(const KernelSpec& spec, const TileConfig& cfg, const Arch& arch,
                                         const EpilogueProgram* epilogue_program) {
  KILN_RETURN_IF_ERROR(sm90_check_config(spec, arch, cfg));
  string body;
  body += constant("int", "kBlockM", to_string(cfg.block_m));
  body += constant("int", "kBlockN", to_string(cfg.block_n));
  body += constant("int", "kBlockK", to_string(cfg.block_k));
  body += constant("int", "kStages", to_string(cfg.stages));
  body += constant("int", "kWarpsM", to_string(cfg.warps_m));
  body += constant("int", "kWarpsN", to_string(cfg.warps_n));
  body += constant("int", "kGroupM", to_string(cfg.group_m));
  body += constant("int", "kClusterM", to_string(cfg.cluster_m));
  const struct {
    const char* name;
    const char* role;
    Format f;
  } fields[] = {{"kA", "a", spec.a.format}, {"kB", "b", spec.b.format}, {"kOut", "out", spec.out.format}};
  for (const auto& fld : fields) {
    // The sm90 template has bf16/f16/f32, FP8 and MXFP8 elements only (sm90_plan rejects the rest first).
    if (!format_is_high_precision(fld.f) && !format_is_fp8(fld.f) && fld.f != Format::kMxfp8)
      return Unsupported(string("emit: ") + fld.role + "=" + format_name(fld.f) +
                         " has no sm90 element type yet");
    body += constant("kiln_dev::Format", fld.name, device_format(fld.f));
  }
  // Scales (templates/kernels/sm90/promotion.cuh): tensor / per-row factors in the epilogue, blocks per K tile.
  const struct {
    const char* role;
    const char* scale;
    const char* type;
    const OperandSpec& op;
  } scaled[] = {{"a", "kScaleA", "kScaleTypeA", spec.a}, {"b", "kScaleB", "kScaleTypeB", spec.b}};
  for (const auto& sc : scaled) {
    KILN_ASSIGN_OR_RETURN(string g, device_scale(sc.role, sc.op.scale));
    KILN_ASSIGN_OR_RETURN(string t, device_scale_type(sc.role, sc.op.scale_type));
    body += constant("kiln_dev::Scale", sc.scale, g);
    body += constant("kiln_dev::ScaleType", sc.type, t);
  }
  body += constant("bool", "kPromote", sm90_promotes(spec, cfg) ? "true" : "false");
  // Grouped GEMMs (templates/kernels/sm90/scheduler.cuh): the layout and the expert count size the per-CTA table.
  const char* grouping = spec.layout == GroupLayout::kOffsets  ? "kiln_dev::Grouping::kOffsets"
                         : spec.layout == GroupLayout::kMasked ? "kiln_dev::Grouping::kMasked"
                                                               : "kiln_dev::Grouping::kDense";
  body += constant("kiln_dev::Grouping", "kGrouping", grouping);
  body += constant("int", "kSplitK", to_string(cfg.split_k));  // templates/kernels/sm90/split_k.cuh
  body += constant("int", "kExperts", to_string(spec.layout == GroupLayout::kDense ? 0 : spec.experts));
  body += constant("int", "kArch", to_string(arch.sm()));
  body += emit_internal::backward_constants(spec);  // backward passes: MN-major operands
  if (cfg.tma_store) body += constant("bool", "kTmaStore", "true");  // templates/kernels/sm90/epilogue_tma_store.cuh
  // Section 12's slab in two (tma_store 2) or four (4) chunks.
  if (cfg.tma_store >= 2) body += constant("int", "kOutChunks", to_string(cfg.tma_store));
  if (cfg.pingpong) body += constant("bool", "kPingPong", "true");   // templates/kernels/sm90/pingpong.cuh
  // The launch's dynamic shared memory: the kernel asserts that its own layout has the same size.
  body += constant("int", "kHostSmemBytes", to_string(sm90_smem_bytes(spec, cfg)));
  // Block scales staged through shared memory (templates/kernels/sm90/producer.cuh, staged scales): the host alone decides.
  if (sm90_staged_scales(spec, cfg)) body += constant("bool", "kStagedScales", "true");
  // The generated epilogue functor and the gate|up layout (templates/kernels/sm90/epilogue_direct.cuh).
  KILN_ASSIGN_OR_RETURN(emit_internal::EpilogueParts epilogue, emit_internal::epilogue_parts(spec, epilogue_program));
  body += epilogue.config;
  const string& functor = epilogue.functor;

  EmittedKernel k;
  k.entry = "kiln_sm90_gemm";
  k.threads = sm90_threads(spec, cfg);
  k.smem_bytes = sm90_smem_bytes(spec, cfg);
  string& s = k.source;
  s += "// generated by kiln (compiler/emit); do not edit\n";
  s += string("// family sm90_gemm, config ") + cfg.to_string() + ", arch " + arch.name() + "\n";
  s += "#include \"kernels/sm90_gemm.cuh\"\n\n";
  if (!functor.empty()) s += functor + "\n";
  s += "struct KilnConfig {\n" + body + "};\n\n";
  // minBlocksPerMultiprocessor = 1: the register cap at entry that setmaxnreg needs (PTX ISA, setmaxnreg).
  // Clusters are compile-time (__cluster_dims__), so the launch needs no cluster attribute.
  const string cluster =
      cfg.cluster_m > 1 ? "__cluster_dims__(" + to_string(cfg.cluster_m) + ", 1, 1) " : string();
  s += "extern \"C\" __global__ void " + cluster + "__launch_bounds__(" + to_string(k.threads) + ", 1) " +
       k.entry +
       "(const __grid_constant__ kiln_dev::TmaDesc tma_a, const __grid_constant__ kiln_dev::TmaDesc tma_b,\n"
       "    kiln_dev::GemmParams p, void* workspace";
  if (cfg.tma_store) {
    // The TMA-store epilogue (templates/kernels/sm90/epilogue_tma_store.cuh): the output's map and whether it is usable.
    s += ", const __grid_constant__ kiln_dev::TmaDesc tma_out, int out_tma) {\n";
    s += "  kiln_dev::sm90_gemm_tma_store<KilnConfig>(tma_a, tma_b, p, workspace, tma_out, out_tma);\n}\n";
  } else {
    s += ") {\n";
    s += "  kiln_dev::sm90_gemm<KilnConfig>(tma_a, tma_b, p, workspace);\n}\n";
  }
  return k;
}

}  // namespace kiln

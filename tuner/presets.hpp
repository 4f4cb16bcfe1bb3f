// tuner/presets.hpp — what `kiln tune` tunes: a JSON list of shapes or a named model preset.
//
// Presets hold the GEMM shapes of public models, copied from bench/shapes.json (the
// benchmark's own list): MoE rows are tokens x topk (the host-known total of a grouped problem);
// each shape carries the spec the model runs (gpt-oss: bf16 tokens x MXFP4 experts; DeepSeek-V3:
// FP8 with 1x128 / 128x128 block scales). A spec the planner cannot run yet is reported per shape by
// `kiln tune`, never silently skipped; --spec substitutes one spec for every shape.
//
// Shapes file (JSON): a list, or {"shapes": [...]}, of
//   {"spec": "gemm a=bf16 b=bf16 out=bf16", "m": 4096 | [1, 16, 4096], "n": 7168, "k": 7168,
//    "label": "optional"}
//
//   KILN_ASSIGN_OR_RETURN(std::vector<TuneShape> shapes, kiln::preset_shapes("gpt-oss-20b"));
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/tuner.hpp"

namespace kiln {

struct PresetShape {
  const char* label;  // "gate_up"
  const char* spec;
  int experts;  // 0: dense (the spec says so too)
  int topk;     // MoE: rows = tokens x topk
  int64_t n, k;
  std::vector<int64_t> tokens;  // dense: M values
};
struct ModelPreset {
  const char* name;  // "gpt-oss-20b"
  const char* about;
  std::vector<PresetShape> shapes;
};
const std::vector<ModelPreset>& model_presets();

// The preset's shapes, one per (shape, token count). spec_override replaces every shape's spec
// (a dense spec drops the experts; M stays the row total).
StatusOr<std::vector<TuneShape>> preset_shapes(std::string_view name,
                                               const std::optional<KernelSpec>& spec_override = std::nullopt);
// Parses a shapes file (see above); origin names it in errors.
StatusOr<std::vector<TuneShape>> shapes_from_json_text(
    std::string_view text, const std::string& origin,
    const std::optional<KernelSpec>& spec_override = std::nullopt);

}  // namespace kiln

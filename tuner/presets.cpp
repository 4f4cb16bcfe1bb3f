#include "tuner/presets.hpp"

#include <nlohmann/json.hpp>

#include "compiler/spec/spec.hpp"

namespace kiln {
namespace {

using nlohmann::json;

TuneShape make_shape(const KernelSpec& spec, int64_t m, int64_t n, int64_t k, std::string label) {
  TuneShape s;
  s.spec = spec;
  s.m = m;
  s.n = n;
  s.k = k;
  s.label = std::move(label);
  return s;
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  // bench/shapes.json: the "moe" entries (experts, topk, n, k, tokens) and the DeepSeek-V3
  // dense set (M in 64, 128, 4096). One spec per model: what the model runs.
  constexpr const char* kOss20 = "grouped_gemm[experts=32,layout=offsets] a=bf16 b=mxfp4 out=bf16";
  constexpr const char* kOss120 = "grouped_gemm[experts=128,layout=offsets] a=bf16 b=mxfp4 out=bf16";
  constexpr const char* kDsDense = "gemm a=e4m3:block1x128 b=e4m3:block128x128 out=bf16";
  constexpr const char* kDsMoe =
      "grouped_gemm[experts=32,layout=offsets] a=e4m3:block1x128 b=e4m3:block128x128 out=bf16";
  const std::vector<int64_t> oss20_tokens = {1, 16, 64, 512, 4096}, oss120_tokens = {16, 512, 4096};
  const std::vector<int64_t> ds_dense_m = {64, 128, 4096}, ds_tokens = {16, 128, 512, 4096};
  static const std::vector<ModelPreset> kPresets = {
      {"gpt-oss-20b",
       "gpt-oss-20b expert GEMMs: 32 experts, top-4, MXFP4 weights, bf16 activations",
       {
           {"gate_up", kOss20, 32, 4, 5760, 2880, oss20_tokens},
           {"down", kOss20, 32, 4, 2880, 2880, oss20_tokens},
       }},
      {"gpt-oss-120b",
       "gpt-oss-120b expert GEMMs: 128 experts, top-4, MXFP4 weights, bf16 activations",
       {
           {"gate_up", kOss120, 128, 4, 5760, 2880, oss120_tokens},
       }},
      {"deepseek-v3",
       "DeepSeek-V3 dense projections and expert GEMMs (EP8: 32 local experts, top-8), FP8 with 1x128 "
       "activation and 128x128 weight block scales",
       {
           {"dense 2112x7168", kDsDense, 0, 1, 2112, 7168, ds_dense_m},
           {"dense 24576x1536", kDsDense, 0, 1, 24576, 1536, ds_dense_m},
           {"dense 32768x512", kDsDense, 0, 1, 32768, 512, ds_dense_m},
           {"dense 7168x16384", kDsDense, 0, 1, 7168, 16384, ds_dense_m},
           {"dense 4096x7168", kDsDense, 0, 1, 4096, 7168, ds_dense_m},
           {"dense 7168x2048", kDsDense, 0, 1, 7168, 2048, ds_dense_m},
           {"gate_up", kDsMoe, 32, 8, 4096, 7168, ds_tokens},
           {"down", kDsMoe, 32, 8, 7168, 2048, ds_tokens},
       }},
  };
  return kPresets;
}

StatusOr<std::vector<TuneShape>> preset_shapes(std::string_view name,
                                               const std::optional<KernelSpec>& spec_override) {
  const ModelPreset* preset = nullptr;
  std::string names;
  for (const ModelPreset& p : model_presets()) {
    if (name == p.name) preset = &p;
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  }
  if (preset == nullptr)
    return InvalidArgument("unknown model preset '" + std::string(name) + "'; expected one of " + names);
  std::vector<TuneShape> out;
  for (const PresetShape& ps : preset->shapes) {
    KernelSpec spec;
    if (spec_override) {
      spec = *spec_override;
    } else {
      StatusOr<KernelSpec> parsed = parse_spec(ps.spec);
      if (!parsed.ok())
        return parsed.status().with_context(std::string("preset ") + preset->name + " " + ps.label);
      spec = *parsed;
    }
    for (int64_t t : ps.tokens) {
      const int64_t rows = t * ps.topk;
      std::string label =
          std::string(preset->name) + " " + ps.label + ", " +
          (ps.experts > 0 ? std::to_string(t) + (t == 1 ? " token" : " tokens") : "M=" + std::to_string(t));
      out.push_back(make_shape(spec, rows, ps.n, ps.k, std::move(label)));
    }
  }
  return out;
}

StatusOr<std::vector<TuneShape>> shapes_from_json_text(std::string_view text, const std::string& origin,
                                                       const std::optional<KernelSpec>& spec_override) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(origin + ": not valid JSON");
  if (j.is_object()) {
    auto it = j.find("shapes");
    if (it == j.end()) return InvalidArgument(origin + ": expected a list of shapes or {\"shapes\": [...]}");
    j = *it;
  }
  if (!j.is_array())
    return InvalidArgument(origin + ": expected a list of shapes, got " + std::string(j.type_name()));
  std::vector<TuneShape> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    const std::string where = origin + ": shapes[" + std::to_string(i) + "]";
    if (!e.is_object()) return InvalidArgument(where + ": expected an object");
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (it.key() != "spec" && it.key() != "m" && it.key() != "n" && it.key() != "k" && it.key() != "label")
        return InvalidArgument(where + "." + it.key() + ": unknown field (expected spec, m, n, k, label)");
    }
    KernelSpec spec;
    if (spec_override) {
      spec = *spec_override;
    } else {
      auto s = e.find("spec");
      if (s == e.end() || !s->is_string())
        return InvalidArgument(where + ".spec: missing (a spec string), or give --spec");
      StatusOr<KernelSpec> parsed = parse_spec(s->get<std::string>());
      if (!parsed.ok()) return parsed.status().with_context(where + ".spec");
      spec = *parsed;
    }
    int64_t dims[2] = {0, 0};
    const char* names[2] = {"n", "k"};
    for (int d = 0; d < 2; ++d) {
      auto v = e.find(names[d]);
      if (v == e.end() || !v->is_number_integer() || v->get<int64_t>() < 1)
        return InvalidArgument(where + "." + names[d] + ": expected a positive integer");
      dims[d] = v->get<int64_t>();
    }
    std::vector<int64_t> ms;
    auto mv = e.find("m");
    if (mv == e.end()) return InvalidArgument(where + ".m: missing (an integer or a list of them)");
    for (const json& x : mv->is_array() ? *mv : json::array({*mv})) {
      if (!x.is_number_integer() || x.get<int64_t>() < 1)
        return InvalidArgument(where + ".m: expected positive integers, got " + x.dump());
      ms.push_back(x.get<int64_t>());
    }
    std::string label;
    if (auto l = e.find("label"); l != e.end() && l->is_string()) label = l->get<std::string>();
    for (int64_t m : ms) {
      out.push_back(
          make_shape(spec, m, dims[0], dims[1], label.empty() ? "" : label + ", M=" + std::to_string(m)));
    }
  }
  return out;
}

}  // namespace kiln

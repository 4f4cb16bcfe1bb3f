// compiler/epilogue/internal/names.hpp — private to compiler/epilogue: name lookups and the
// "did you mean" suggestions of parse errors. The tables themselves live in names.cpp, next to the
// public *_name functions, so a spelling can never print one way and parse another.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/epilogue/epilogue.hpp"

namespace kiln::epilogue_internal {

std::optional<EpFunction> function_from_name(std::string_view name);
std::optional<EpVector> vector_from_name(std::string_view name);
// "min(x, y)", "clamp(x, lo, hi)", "silu(x)": the call form for arity messages.
std::string function_signature(EpFunction f);
// The index forms v accepts in ctx, for messages: "bias[n]" or "bias[n] or bias[e,n]".
std::string vector_forms(EpVector v, const EpilogueContext& ctx);
// What v[i] needs that ctx lacks ("a grouped_gemm spec", "a spec with gate_up=..."); "" when v[i]
// is valid in ctx or is never valid.
std::string vector_requirement(EpVector v, EpIndex i, const EpilogueContext& ctx);
// Names a let may not take: acc, gate, up, out, the index letters, vector and function names.
bool is_reserved(std::string_view name);

// Close spellings among candidates (optimal string alignment distance <= 1 for short names, <= 2
// otherwise), best first, at most three: " did you mean 'sigmoid'?" or "" when none is close.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace kiln::epilogue_internal

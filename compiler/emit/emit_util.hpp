// compiler/emit/emit_util.hpp — pieces every family's emitter shares (private to compiler/emit).
// Everything here returns kiln's own strings, never spec text.
#pragma once

#include <string>

#include "compiler/spec/kernel_spec.hpp"

namespace kiln::emit_internal {

// Host format -> the device enumerator naming it (templates/common/types.cuh).
const char* device_format(Format f);
// Host scale type -> its device enumerator (kiln_dev::ScaleType).
const char* device_scale_type(ScaleType t);
// "  static constexpr TYPE NAME = VALUE;\n" for a generated config struct.
std::string constant(const char* type, const char* name, const std::string& value);

}  // namespace kiln::emit_internal

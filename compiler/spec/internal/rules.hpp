// compiler/spec/internal/rules.hpp — private to compiler/spec: validation that says *where*.
//
// validate_spec() only needs a message, but the DSL parser wants a line:column and the JSON reader
// a JSON path for the same failure. find_violation() therefore returns the rule's message together
// with the field it is about; each front end maps the field to its own notion of position.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/epilogue/epilogue.hpp"  // Epilogue
#include "kiln/spec.hpp"

namespace kiln::spec_internal {

enum class Role : uint8_t { kA, kB, kOut };
enum class Part : uint8_t { kWhole, kFormat, kScale, kScaleType };
enum class Field : uint8_t {
  kOp,
  kExperts,
  kLayout,
  kOperand,
  kPass,
  kGateUp,
  kTranspose,
  kAccumulate,
  kMxRound,
  kFp8Sat,
  kFourOverSix,
  kE4m3Bound,
  kNvfp4Global,
  kEpilogue,
  kMode,  // a stated mode= (not a KernelSpec field: the formats imply it; mode_mismatch)
};

struct FieldRef {
  Field field = Field::kOp;
  Role role = Role::kA;      // for kOperand
  Part part = Part::kWhole;  // for kOperand
};

struct Violation {
  FieldRef where;
  std::string message;  // without any position prefix
  // kEpilogue errors of the epilogue language: the 1-based line and column inside the epilogue text
  // (0 when the error is about the attribute as a whole). The DSL parser adds them to the position
  // of the quoted text; JSON and validate_spec keep them in the message as "line:col: ".
  int inner_line = 0, inner_col = 0;
};

// The first broken rule of spec, in a fixed order (op structure, operands, attributes). epilogue: where
// given and the spec is valid, receives the parsed epilogue (nullopt for a spec without one), so that a
// caller that needs it does not parse the text a second time.
std::optional<Violation> find_violation(const KernelSpec& spec, std::optional<Epilogue>* epilogue = nullptr);

const char* role_key(Role r);  // "a", "b", "out"
const OperandSpec& operand_of(const KernelSpec& s, Role r);
std::string json_path(const FieldRef& where);  // "$.a.scale", "$.e4m3_bound"
// Shortest text of an operand value ("e4m3:block1x128"); total, also for invalid operands.
std::string operand_text(const OperandSpec& op);

// A stated mode= against the one the spec's formats imply (backward_mode): the message for a mismatch,
// or for mode= on a spec that is not dgrad / wgrad; nullopt when it agrees. For a valid spec.
std::optional<std::string> mode_mismatch(const KernelSpec& spec, BackwardMode stated);

// Limits shared by the parser, JSON reader and validation.
inline constexpr int kMaxExperts = 1 << 16;

}  // namespace kiln::spec_internal

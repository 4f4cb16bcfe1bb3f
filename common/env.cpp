#include "common/env.hpp"

#include <cstdlib>
#include <cstring>

namespace kiln::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

bool flag(const char* name) {
  auto v = get(name);
  if (!v) return false;
  return *v == "1" || *v == "true" || *v == "yes" || *v == "on";
}

bool flag_off(const char* name) {
  auto v = get(name);
  if (!v) return false;
  return *v == "0" || *v == "false" || *v == "no" || *v == "off";
}

}  // namespace kiln::env

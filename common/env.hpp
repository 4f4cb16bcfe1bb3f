// common/env.hpp — every KILN_* environment variable kiln reads, declared in one place.
//
//   KILN_CACHE_DIR      directory of the kernel cache (default ${XDG_CACHE_HOME:-~/.cache}/kiln)
//   KILN_NVRTC_PATH     full path of libnvrtc to dlopen (default: libnvrtc.so.13, libnvrtc.so, CUDA paths)
//   KILN_CUDA_PATH      full path of libcuda to dlopen (default: libcuda.so.1)
//   KILN_DISABLE_CACHE  "1": compile in memory only, never open SQLite
#pragma once

#include <optional>
#include <string>

namespace kiln::env {

inline constexpr const char* kCacheDir = "KILN_CACHE_DIR";
inline constexpr const char* kNvrtcPath = "KILN_NVRTC_PATH";
inline constexpr const char* kCudaPath = "KILN_CUDA_PATH";
inline constexpr const char* kDisableCache = "KILN_DISABLE_CACHE";

// The variable's value, or nullopt when unset or empty.
std::optional<std::string> get(const char* name);
bool flag(const char* name);  // set to 1/true/yes/on

}  // namespace kiln::env

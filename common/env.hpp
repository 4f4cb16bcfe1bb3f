// common/env.hpp — every KILN_* environment variable kiln reads, declared in one place.
//
//   KILN_CACHE_DIR      directory of the kernel cache (default ${XDG_CACHE_HOME:-~/.cache}/kiln)
//   KILN_NVRTC_PATH     full path of libnvrtc to dlopen (default: libnvrtc.so.13, libnvrtc.so, CUDA paths)
//   KILN_CUDA_PATH      full path of libcuda to dlopen (default: libcuda.so.1)
//   KILN_DISABLE_CACHE  "1": compile in memory only, never open SQLite
//   KILN_CACHE_MAX_MB   cap on the cubins kept in the kernel cache, in MiB (default 1024; 0: no cap);
//                       least-recently-used kernels are evicted past it (cache/kernel_cache.hpp)
//   KILN_CACHE_JOURNAL  "delete": use SQLite's rollback journal instead of WAL for kiln.db (what
//                       kiln falls back to by itself where WAL is unavailable); unset or "wal": WAL
//   KILN_AUTOTUNE       "1": tune online a plan's M-hint bucket that no tuning layer has (needs a GPU
//                       and the tuner installed: tuner/online.hpp); the API flag overrides it
//   KILN_RECORD_UNTUNED "1": record shapes planned on the heuristic in kiln.db's `untuned` table,
//                       for `kiln tune --untuned` later
//   KILN_TUNING_DEVICE  the GPU tunings are looked up for when planning without one: "h200" or
//                       "cc=90,sms=132[,nvrtc=13]" (docs/tuning.md); overrides the detected GPU
//   KILN_NVRTC_FULL     "1": the nvrtc test tier compiles the full format x arch matrix, not CI's sample
//   KILN_FAMILY         "sm80": plan the portable sm80 family even where a faster one applies (sm_90a);
//                       unset or "auto": the fastest family for the arch
//   KILN_PDL            "0" (or false / no / off): launch sm_90+ kernels without programmatic dependent
//                       launch (no overlap with the previous kernel on the stream); unset or anything
//                       else: with it
#pragma once

#include <optional>
#include <string>

namespace kiln::env {

inline constexpr const char* kCacheDir = "KILN_CACHE_DIR";
inline constexpr const char* kNvrtcPath = "KILN_NVRTC_PATH";
inline constexpr const char* kCudaPath = "KILN_CUDA_PATH";
inline constexpr const char* kDisableCache = "KILN_DISABLE_CACHE";
inline constexpr const char* kCacheMaxMb = "KILN_CACHE_MAX_MB";
inline constexpr const char* kCacheJournal = "KILN_CACHE_JOURNAL";
inline constexpr const char* kAutotune = "KILN_AUTOTUNE";
inline constexpr const char* kTuneModule = "KILN_TUNE_MODULE";  // runtime/tuning_module.hpp
inline constexpr const char* kRecordUntuned = "KILN_RECORD_UNTUNED";
inline constexpr const char* kTuningDevice = "KILN_TUNING_DEVICE";
inline constexpr const char* kNvrtcFull = "KILN_NVRTC_FULL";
inline constexpr const char* kFamily = "KILN_FAMILY";
inline constexpr const char* kPdl = "KILN_PDL";

// The variable's value, or nullopt when unset or empty.
std::optional<std::string> get(const char* name);
bool flag(const char* name);      // set to 1/true/yes/on
bool flag_off(const char* name);  // set to 0/false/no/off (unset is neither on nor off)

}  // namespace kiln::env

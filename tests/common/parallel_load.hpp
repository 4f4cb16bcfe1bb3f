// tests/common/parallel_load.hpp — compile and load many kernels up front, on the host's cores, so that a
// gpu-tier test times or checks them without NVRTC in the way (RuntimeImpl::load keeps each in the
// runtime's kernel table; a later plan of the same spec / family / config finds it there).
#pragma once

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "compiler/plan/plan.hpp"
#include "compiler/spec/spec.hpp"
#include "kiln/kiln.hpp"
#include "runtime/runtime_access.hpp"

namespace kiln {

struct LoadJob {
  KernelSpec spec;
  KernelFamily family;
  TileConfig cfg;
};

struct LoadSummary {
  unsigned threads = 0;
  int failures = 0;  // each printed to stderr with its spec, config and status
};

// Loads every job for arch on up to 16 threads.
inline LoadSummary load_in_parallel(Runtime& rt, const std::vector<LoadJob>& jobs, const Arch& arch) {
  std::mutex mu;
  size_t next = 0;
  LoadSummary out;
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next == jobs.size()) return;
        i = next++;
      }
      auto k = RuntimeAccess::impl(rt)->load(jobs[i].spec, jobs[i].family, jobs[i].cfg, arch);
      if (!k.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        ++out.failures;
        std::fprintf(stderr, "precompile %s %s: %s\n", print_spec(jobs[i].spec).c_str(),
                     jobs[i].cfg.to_string().c_str(), k.status().to_string().c_str());
      }
    }
  };
  out.threads = std::max(2u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < out.threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace kiln

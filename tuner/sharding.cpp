#include "tuner/sharding.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>

namespace kiln {
namespace {

StatusOr<int> parse_ordinal(std::string_view what, std::string_view v) {
  if (v.empty() || v.size() > 6)
    return InvalidArgument(std::string(what) + ": '" + std::string(v) + "' is not a number");
  int out = 0;
  for (char c : v) {
    if (c < '0' || c > '9')
      return InvalidArgument(std::string(what) + ": '" + std::string(v) + "' is not a number");
    out = out * 10 + (c - '0');
  }
  return out;
}

}  // namespace

double tuning_cost(const TuneShape& shape) {
  // ~48 candidates compile in ~1 s each on a pool; timing one costs ~0.2 s of fixed overhead plus
  // the kernel itself (at ~400 TFLOP/s) times the repeats. Order of magnitude only.
  const double flops = 2.0 * static_cast<double>(Tuner::measured_sizes(shape).m) *
                       static_cast<double>(shape.n) * static_cast<double>(shape.k);
  return 1.0 + flops / 400e12 * 30.0 * 48.0 / 10.0;
}

std::vector<std::vector<size_t>> shard_shapes(const std::vector<TuneShape>& shapes, int shards) {
  const size_t n = static_cast<size_t>(std::max(1, shards));
  std::vector<std::vector<size_t>> out(n);
  std::vector<size_t> order(shapes.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> cost(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) cost[i] = tuning_cost(shapes[i]);
  // Longest first; equal costs keep input order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(n, 0.0);
  for (size_t i : order) {
    const size_t s = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[s].push_back(i);
    load[s] += cost[i];
  }
  for (auto& shard : out) std::sort(shard.begin(), shard.end());
  return out;
}

StatusOr<std::vector<int>> parse_device_list(std::string_view text) {
  std::vector<int> out;
  std::set<int> seen;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    KILN_ASSIGN_OR_RETURN(int d, parse_ordinal("--devices", rest.substr(0, comma)));
    if (!seen.insert(d).second)
      return InvalidArgument("--devices: device " + std::to_string(d) + " is listed twice in '" +
                             std::string(text) + "'");
    out.push_back(d);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

StatusOr<std::pair<int, int>> parse_shard(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    return InvalidArgument("--shard '" + std::string(text) + "': expected INDEX/COUNT, e.g. 0/4");
  KILN_ASSIGN_OR_RETURN(int index, parse_ordinal("--shard", text.substr(0, slash)));
  KILN_ASSIGN_OR_RETURN(int count, parse_ordinal("--shard", text.substr(slash + 1)));
  if (count < 1 || index >= count)
    return InvalidArgument("--shard '" + std::string(text) + "': need 0 <= INDEX < COUNT");
  return std::pair<int, int>{index, count};
}

}  // namespace kiln

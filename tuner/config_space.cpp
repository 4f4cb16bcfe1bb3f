#include "tuner/config_space.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "compiler/plan/sm90_plan.hpp"

namespace kiln {
namespace {

constexpr int kBlockSizes[] = {16, 32, 64, 128, 256};
constexpr int kBlockK[] = {16, 32, 64, 128};  // elements; check_config keeps what the loaders take
constexpr int kStages[] = {2, 3, 4, 5, 6};
constexpr int kWarps[] = {1, 2, 4};
constexpr double kVariantPenalty = 0.10;  // prune_space: each further variant of a tile shape

// The rule a check_config failure falls under, for the dry run's accounting.
std::string rule_of(const Status& s) {
  const std::string& m = s.message();
  if (s.code() == StatusCode::kResourceExhausted) return "shared memory";
  if (m.find("accumulators") != std::string::npos) return "accumulators per thread";
  if (m.find("registers") != std::string::npos) return "registers";
  if (s.code() == StatusCode::kUnsupported) return "no family";
  return "warp tiling";
}

int64_t round_up(int64_t v, int64_t to) { return (std::max<int64_t>(v, 1) + to - 1) / to * to; }

}  // namespace

std::vector<TileConfig> config_space(const KernelSpec& spec, const Arch& arch,
                                     std::map<std::string, int>* dropped_by_rule,
                                     std::optional<KernelFamily> family_override) {
  std::vector<TileConfig> out;
  StatusOr<KernelFamily> family = family_override ? StatusOr<KernelFamily>(*family_override) : select_family(spec, arch);
  if (!family.ok()) {
    if (dropped_by_rule) (*dropped_by_rule)["no family"] += 1;
    return out;
  }
  if (*family == KernelFamily::kSm90Gemm) return sm90_config_space(spec, arch);  // already checked
  for (int bm : kBlockSizes) {
    for (int bn : kBlockSizes) {
      for (int bk : kBlockK) {
        for (int stages : kStages) {
          for (int wm : kWarps) {
            for (int wn : kWarps) {
              TileConfig c;
              c.block_m = bm;
              c.block_n = bn;
              c.block_k = bk;
              c.stages = stages;
              c.warps_m = wm;
              c.warps_n = wn;
              c.group_m = 8;
              Status s = check_config(spec, arch, *family, c);
              if (s.ok()) {
                out.push_back(c);
              } else if (dropped_by_rule) {
                (*dropped_by_rule)[rule_of(s)] += 1;
              }
            }
          }
        }
      }
    }
  }
  return out;
}

namespace {

// Small M: a decode bucket's candidates are the decode kernel's grid (block_n 16 / 32 /
// 48 / 64 weight rows, 1 / 2 / 4 / 8 segments of 64 bytes per warp step, 2 / 4 / 8 warps, 2 or 1 steps in
// flight (stages; 8 segments fit the register budget with one only); 8 or 16
// tokens per CTA by M), every config check_config accepts. The static model describes tiled mainloops,
// so it does not rank them: the heuristic first, then narrower CTAs (more of them) and shorter steps
// first, the order an H200 sweep favoured (docs/performance.md).
PrunedSpace decode_space(const KernelSpec& spec, const GpuModel& gpu, const ProblemSizes& sizes,
                         const PruneOptions& options) {
  PrunedSpace out;
  out.family = KernelFamily::kSm80Gemm;
  const TileConfig heuristic = decode_default_config(spec, gpu.arch, sizes);
  std::vector<PrunedCandidate> c;
  // Token tiles: the heuristic's, and 8 for 9..16 rows too (two CTAs per weight-row group, each
  // converting half the tokens: FP8 at 16 rows is issue-bound, docs/performance.md).
  std::vector<int> token_tiles = {heuristic.block_m};
  if (heuristic.block_m > 8) token_tiles.push_back(8);
  for (int bn : {16, 32, 48, 64}) {
    for (int segs : {1, 2, 4, 8}) {
      for (int warps : {4, 2, 8}) {
        for (int stages : {2, 1}) {
          for (int bm : token_tiles) {
            TileConfig cfg = heuristic;
            cfg.block_m = bm;
            cfg.block_n = bn;
            cfg.block_k = segs * 64 / (format_bits(spec.a.format) / 8);
            cfg.warps_n = warps;
            cfg.stages = stages;
            ++out.enumerated;
            if (!check_config(spec, gpu.arch, KernelFamily::kSm80Gemm, cfg).ok()) {
              out.dropped_by_rule["decode rules"] += 1;
              continue;
            }
            c.push_back({cfg, estimate_config(spec, gpu, out.family, cfg, sizes), cfg == heuristic});
          }
        }
      }
    }
  }
  // (The warpgroup decode kernel, decode 2, is not in the grid: it measured level with these on the H200,
  // docs/performance.md; explicit configs only.)
  std::stable_partition(c.begin(), c.end(), [](const PrunedCandidate& p) { return p.is_default; });
  if (options.max_candidates > 0 && c.size() > options.max_candidates) {
    out.dropped_by_rule["rank"] += static_cast<int>(c.size() - options.max_candidates);
    c.resize(options.max_candidates);
  }
  out.kept = std::move(c);
  return out;
}

// 4-bit weights at small M (the decode dgrad kernel, templates/kernels/sm80_decode_dgrad.cuh, and the 4-bit
// forward decode kernel, sm80_decode_w4.cuh): the kernel's grid around the heuristic's token tile (and 8
// tokens), every config check_config accepts, the heuristic first. The static model describes tiled
// mainloops and does not rank these.
std::vector<PrunedCandidate> four_bit_decode_grid(const KernelSpec& spec, const GpuModel& gpu,
                                                  const ProblemSizes& sizes, const TileConfig& heuristic,
                                                  PrunedSpace& out) {
  const bool dgrad = spec.pass == Pass::kDgrad;
  std::vector<int> token_tiles = {heuristic.block_m};
  if (heuristic.block_m > 8) token_tiles.push_back(8);
  const std::vector<int> widths = dgrad ? std::vector<int>{128} : std::vector<int>{32, 16, 64, 48};
  const std::vector<int> steps = dgrad ? std::vector<int>{32, 16, 64} : std::vector<int>{128, 256};
  std::vector<PrunedCandidate> c;
  c.push_back({heuristic, estimate_config(spec, gpu, KernelFamily::kSm80Gemm, heuristic, sizes), true});
  for (int bn : widths)
    for (int bk : steps)
      for (int warps : {4, 2, 8})
        for (int stages : {2, 1})
          for (int bm : token_tiles) {
            TileConfig cfg = heuristic;
            cfg.block_m = bm;
            cfg.block_n = bn;
            cfg.block_k = bk;
            cfg.warps_n = warps;
            cfg.stages = stages;
            ++out.enumerated;
            if (cfg == heuristic) continue;
            if (!check_config(spec, gpu.arch, KernelFamily::kSm80Gemm, cfg).ok()) {
              out.dropped_by_rule["decode rules"] += 1;
              continue;
            }
            c.push_back({cfg, estimate_config(spec, gpu, KernelFamily::kSm80Gemm, cfg, sizes), false});
          }
  return c;
}

}  // namespace

PrunedSpace prune_space(const KernelSpec& spec, const GpuModel& gpu, const ProblemSizes& sizes,
                        const PruneOptions& options) {
  PrunedSpace out;
  StatusOr<KernelFamily> family = options.family ? StatusOr<KernelFamily>(*options.family) : select_family(spec, gpu.arch);
  if (family.ok()) out.family = *family;
  if (out.family == KernelFamily::kSm80Gemm && decode_bucket(spec, gpu.arch, sizes.m))
    return decode_space(spec, gpu, sizes, options);
  std::vector<TileConfig> space = config_space(spec, gpu.arch, &out.dropped_by_rule, options.family);
  for (const auto& [rule, count] : out.dropped_by_rule) out.enumerated += count;
  out.enumerated += space.size();
  if (space.empty()) return out;
  // The heuristic as a plan computes it for this bucket: from the bucket's rows, per expert when grouped
  // (compiler/plan/planner.cpp), not from all of the problem's rows.
  const TileConfig heuristic =
      default_config(spec, gpu.arch, out.family, {rows_per_expert(spec, sizes.m), sizes.n, sizes.k});

  std::vector<PrunedCandidate> c;
  for (const TileConfig& cfg : space) {
    PrunedCandidate pc{cfg, estimate_config(spec, gpu, out.family, cfg, sizes), cfg == heuristic};
    if (pc.estimate.blocks_per_sm == 0 && !pc.is_default) {
      out.dropped_by_rule["residency"] += 1;
      continue;
    }
    c.push_back(pc);
  }

  // Padding: tiles at least twice the (16-rounded) problem in M or N, when a smaller tile exists.
  const int64_t rows = rows_per_expert(spec, sizes.m);
  const int64_t m16 = round_up(rows, 16), n16 = round_up(sizes.n, 16);
  auto wasteful = [&](const PrunedCandidate& p) {
    return p.config.block_m >= 2 * m16 || p.config.block_n >= 2 * n16;
  };
  if (std::any_of(c.begin(), c.end(), [&](const PrunedCandidate& p) { return !wasteful(p); })) {
    auto keep_end = std::stable_partition(
        c.begin(), c.end(), [&](const PrunedCandidate& p) { return !wasteful(p) || p.is_default; });
    for (auto it = keep_end; it != c.end(); ++it) out.dropped_by_rule["padding"] += 1;
    c.erase(keep_end, c.end());
  }

  // Waves: a nearly empty last wave idles most SMs for a whole tile time.
  // The idle share of a partly filled last wave is (1 - fill) / ceil(waves): after many full waves a
  // thin last one costs little (4096 tiles of 128 x 128 at 8192^3: 31 waves and a 3% last wave idle
  // 3% of the run), so such a config stays unless its tail idles more than max_tail_idle of the run.
  auto fills = [&](const PrunedCandidate& p) {
    if (p.estimate.last_wave_fill >= options.min_last_wave_fill) return true;
    const double full = std::ceil(std::max(p.estimate.waves, 1e-9));
    return (1.0 - p.estimate.last_wave_fill) / full <= options.max_tail_idle;
  };
  if (std::any_of(c.begin(), c.end(), fills)) {
    auto keep_end = std::stable_partition(c.begin(), c.end(),
                                          [&](const PrunedCandidate& p) { return fills(p) || p.is_default; });
    for (auto it = keep_end; it != c.end(); ++it) out.dropped_by_rule["waves"] += 1;
    c.erase(keep_end, c.end());
  }

  // Rank by the model. The model cannot tell apart the variants of one tile shape (pipeline depth,
  // raster group, cluster): they tie, and a cap on the candidates would otherwise spend itself on the
  // alphabetically first of them (the shallowest rings). Within a tie (estimates in the same 1% bin), order by
  // how unusual a variant is: the deepest ring that fits the shape (measured on the H200: 7 vs 4
  // stages is worth ~10% at 128 x 128, docs/performance.md) first, then shallower rings, then other raster
  // groups and clusters (which moved times by a few percent at most); then the config
  // text, so the order is reproducible. The heuristic's own config always stays (below).
  std::map<std::string, int> deepest;  // tile shape (block and warps) -> most stages among the candidates
  auto shape_of = [](const TileConfig& t) {
    return std::to_string(t.block_m) + "x" + std::to_string(t.block_n) + "x" + std::to_string(t.block_k) +
           "w" + std::to_string(t.warps_m) + "x" + std::to_string(t.warps_n) + "s" +
           std::to_string(t.split_k) + (t.pingpong ? "p" : "");
  };
  // From 64 rows a TMA-store epilogue was worth 10-60% on the H200 (M >= 256 and M = 64-128,
  // docs/performance.md): where a shape offers it, its plain-store variants count one step
  // more unusual, so the store variant of the deepest ring that fits it leads (as in the heuristic).
  std::set<std::string> has_tma_store;
  // Ring depth is compared among the variants with the same store path (a TMA store's staging tile
  // takes a stage's shared memory).
  auto depth_key = [&](const TileConfig& t) { return shape_of(t) + "t" + std::to_string(t.tma_store); };
  for (const PrunedCandidate& p : c) {
    int& d = deepest[depth_key(p.config)];
    d = std::max(d, p.config.stages);
    if (p.config.tma_store) has_tma_store.insert(shape_of(p.config));
  }
  const bool prefer_tma_store = sizes.m >= kSm90TmaStoreMinRows;
  auto unusual = [&](const PrunedCandidate& p) {
    const std::string shape = shape_of(p.config);
    const int depth_gap = deepest[depth_key(p.config)] - p.config.stages;
    const int plain_store = prefer_tma_store && !p.config.tma_store && has_tma_store.count(shape) ? 1 : 0;
    return std::min(depth_gap, 3) + plain_store + (p.config.group_m != 8 ? 3 : 0) +
           (p.config.cluster_m != 1 ? 3 : 0);
  };
  // 1% bins of the estimate (a strict weak order, unlike "within 1% of each other").
  auto bin = [](double us) { return std::isfinite(us) && us > 0 ? std::floor(std::log(us) / std::log(1.01)) : 1e18; };
  std::sort(c.begin(), c.end(), [&](const PrunedCandidate& a, const PrunedCandidate& b) {
    const double ea = a.estimate.est_us, eb = b.estimate.est_us;
    if (bin(ea) != bin(eb)) return bin(ea) < bin(eb);
    const int ua = unusual(a), ub = unusual(b);
    if (ua != ub) return ua < ub;
    if (ea != eb) return ea < eb;
    return a.config.to_string() < b.config.to_string();
  });
  // Diversity: the variants of one tile shape tie in the model, so a cap taken in estimate order would
  // spend itself on one shape (24 variants of 128 x 192 at 4096 x 2112 x 7168) and never time the
  // runner-up shapes. Each further variant of a shape is ranked as if it were 10% slower than the one
  // before it: shapes within a few percent of each other interleave, a shape 30% worse comes after the
  // best shape's third variant. Stable, so ties keep the order above.
  {
    std::map<std::string, int> seen;
    std::vector<std::pair<double, size_t>> key(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      const int r = seen[shape_of(c[i].config)]++;
      const double e = std::isfinite(c[i].estimate.est_us) ? c[i].estimate.est_us : 1e30;
      key[i] = {e * (1.0 + kVariantPenalty * r), i};
    }
    std::stable_sort(key.begin(), key.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<PrunedCandidate> ordered;
    ordered.reserve(c.size());
    for (const auto& [k, i] : key) ordered.push_back(c[i]);
    c = std::move(ordered);
  }
  // 4-bit weights at small M: the decode kernel's grid (its heuristic first) alternating with the tiled
  // kernel's ranked candidates, so a cap keeps both kinds.
  if (heuristic.decode == 1 && out.family == KernelFamily::kSm80Gemm) {
    std::vector<PrunedCandidate> d = four_bit_decode_grid(spec, gpu, sizes, heuristic, out);
    std::vector<PrunedCandidate> merged;
    merged.reserve(d.size() + c.size());
    for (size_t i = 0; i < std::max(d.size(), c.size()); ++i) {
      if (i < d.size()) merged.push_back(d[i]);
      if (i < c.size()) merged.push_back(c[i]);
    }
    c = std::move(merged);
  }
  if (options.max_candidates > 0 && c.size() > options.max_candidates) {
    std::vector<PrunedCandidate> kept(c.begin(),
                                      c.begin() + static_cast<std::ptrdiff_t>(options.max_candidates));
    // Ping-pong consumers (templates/kernels/sm90/pingpong.cuh) overlap one tile's epilogue with the next tile's
    // mainloop, which the model does not see: it ranks them as plain tiles of their shape. Where K is
    // short and M large they measured 1-8% faster than every cooperative tile (H200, FP8 row / tensor and
    // bf16 at M = 4096, K = 512 .. 2048; slower at K = 7168 and 16384: docs/performance.md), so
    // there the best-ranked one takes the cap's last place if none made it.
    constexpr int64_t kPingPongMinM = 256, kPingPongMaxK = 2048;
    auto is_pp = [](const PrunedCandidate& p) { return p.config.pingpong != 0; };
    if (sizes.m >= kPingPongMinM && sizes.k <= kPingPongMaxK &&
        !std::any_of(kept.begin(), kept.end(), is_pp)) {
      auto pp = std::find_if(c.begin() + static_cast<std::ptrdiff_t>(options.max_candidates), c.end(), is_pp);
      auto last =
          std::find_if(kept.rbegin(), kept.rend(), [](const PrunedCandidate& p) { return !p.is_default; });
      if (pp != c.end() && last != kept.rend()) {
        std::iter_swap(last.base() - 1, pp);  // the displaced candidate is counted under "rank" below
      }
    }
    bool has_default =
        std::any_of(kept.begin(), kept.end(), [](const PrunedCandidate& p) { return p.is_default; });
    for (size_t i = options.max_candidates; i < c.size(); ++i) {
      if (c[i].is_default && !has_default) {
        kept.push_back(c[i]);
        has_default = true;
      } else {
        out.dropped_by_rule["rank"] += 1;
      }
    }
    c = std::move(kept);
  }
  out.kept = std::move(c);
  return out;
}

}  // namespace kiln

#include "compiler/service/compile_service.hpp"

#include <utility>

#include "cache/cache_key.hpp"
#include "compiler/emit/emit.hpp"
#include "compiler/nvrtc/nvrtc.hpp"
#include "templates/templates.hpp"

namespace kiln {
namespace {

// The fields compile_cuda fills (and a cache row returns), from one record into another.
void copy_compiled(const CompiledKernel& from, CompiledKernel& to) {
  to.cubin = from.cubin;
  to.ptx = from.ptx;
  to.log = from.log;
  to.registers = from.registers;
  to.smem_static = from.smem_static;
  to.stack_frame = from.stack_frame;
  to.spill_stores = from.spill_stores;
  to.spill_loads = from.spill_loads;
  to.compile_ms = from.compile_ms;
}

// The cache row's config text: families without a tile config are listed by name.
std::string config_text(KernelFamily family, const TileConfig& cfg) {
  const bool tiled = family != KernelFamily::kReferenceGemm && family != KernelFamily::kMxDequant &&
                     family != KernelFamily::kFp8Transpose;
  return tiled ? cfg.to_string() : family_name(family);
}

}  // namespace

StatusOr<CompiledKernel> CompileService::compile(const KernelSpec& spec, KernelFamily family,
                                                 const TileConfig& cfg, const Arch& arch,
                                                 const EpilogueProgram* epilogue, bool want_ptx) {
  KILN_ASSIGN_OR_RETURN(EmittedKernel em, emit_kernel(spec, family, cfg, arch, epilogue));
  CompileOptions copts;
  copts.want_ptx = want_ptx;
  KILN_ASSIGN_OR_RETURN(std::string nvrtc_ver, nvrtc_version());
  KeyInputs ki;
  ki.template_hash = template_tree_hash();
  ki.source = em.source;
  ki.nvrtc_version = nvrtc_ver;
  ki.options = nvrtc_options(arch, copts);
  ki.arch = arch.name();

  CompiledKernel out;
  out.key = kernel_cache_key(ki);
  out.entry = std::move(em.entry);
  out.source = std::move(em.source);
  out.threads = em.threads;
  out.smem_dynamic = em.smem_bytes;
  out.arch = arch.name();
  out.spec = print_spec(spec);
  out.config = config_text(family, cfg);

  // A hit fills the cubin and its resources from the cache row; the emitted fields above stay.
  auto from_cache = [&]() -> bool {
    if (cache_ == nullptr || want_ptx) return false;
    auto hit = cache_->get(out.key);  // a failing read is not fatal: the cache is an optimisation
    if (!hit.ok() || !hit->has_value()) return false;
    const CompiledKernel& c = **hit;
    copy_compiled(c, out);  // the row has no PTX, log or stack frame: those stay empty / -1
    out.created_unix = c.created_unix;
    out.last_used_unix = c.last_used_unix;
    out.from_cache = true;
    cache_hits_.fetch_add(1);
    return true;
  };
  if (from_cache()) return out;

  // Single flight: concurrent callers of the same key wait for the first one's compile. The owner
  // writes the cache before it leaves the flight table, and re-reads the cache after joining it, so
  // a key is compiled once per service (with the cache on) however the threads interleave.
  const std::string flight_key = out.key + (want_ptx ? "+ptx" : "");
  FlightTable<StatusOr<CompiledKernel>>::Flight flight = flights_.join(flight_key);
  if (flight.owner) {
    StatusOr<CompiledKernel> compiled = Internal("unset");
    if (from_cache()) {
      compiled = out;
    } else {
      compiled = compile_cuda(out.source, arch, copts);
      if (compiled.ok()) {
        compiles_.fetch_add(1);
        if (cache_ != nullptr && !want_ptx) {
          CompiledKernel row = out;
          copy_compiled(*compiled, row);
          (void)cache_->put(row);  // best effort: a full disk must not fail the launch
        }
      }
    }
    flight.owner->set_value(compiled);
    flights_.erase(flight_key);
  }
  const StatusOr<CompiledKernel>& shared = flight.result.get();  // result keeps the shared state alive
  if (!shared.ok()) return shared.status();
  if (out.from_cache) return out;
  copy_compiled(*shared, out);
  return out;
}

}  // namespace kiln

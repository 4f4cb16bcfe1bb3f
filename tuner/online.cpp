#include "tuner/online.hpp"

#include "runtime/tuned_configs.hpp"

namespace kiln {

StatusOr<TuningRecord> tune_online(Runtime& rt, const OnlineTuneRequest& req, const TunerOptions& options) {
  // Without a GPU there is nothing to time: the plan keeps its heuristic, and nothing is
  // compiled for a search that cannot finish.
  KILN_RETURN_IF_ERROR(rt.device_status());
  TuneShape shape;
  shape.spec = req.spec;
  shape.m = req.sizes.m;
  shape.n = req.sizes.n;
  shape.k = req.sizes.k;
  shape.label = "online";
  Tuner tuner(rt, options);
  KILN_ASSIGN_OR_RETURN(TuneResult r, tuner.tune(shape, req.device));
  std::optional<TuningRecord> rec = r.record();
  // The search's winner was no faster than the heuristic when re-timed: the heuristic is recorded, so the
  // bucket counts as tuned and later plans do not search again.
  if (!rec) rec = r.reference_record();
  if (!rec) {
    return NotReady("online tuning found no verified candidate" +
                    (r.timing_status.ok() ? std::string() : ": " + r.timing_status.message()));
  }
  return *rec;
}

void install_online_tuner(TunerOptions options) {
  set_online_tuner([options](Runtime& rt, const OnlineTuneRequest& req) { return tune_online(rt, req, options); });
}

}  // namespace kiln

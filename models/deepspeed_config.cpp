#include "models/deepspeed_config.hpp"
#include "models/zero3_buffers.hpp"

#include <algorithm>

#include "sim/core/error.hpp"

namespace trainsim::models {

namespace {
// Above this no GPU holds a parameter; it keeps the element counts exact in a double.
constexpr double MAX_ELEMENTS = 1e15;
}  // namespace

DeepSpeedZeroConfig DeepSpeedZeroConfig::from_json(core::ObjectReader& r) {
  DeepSpeedZeroConfig c;
  c.prefetch_bucket_elements = r.number("prefetch_bucket_elements", c.prefetch_bucket_elements, 0.0, MAX_ELEMENTS);
  c.max_live_parameters = r.number("max_live_parameters", c.max_live_parameters, 0.0, MAX_ELEMENTS);
  c.persistence_threshold = r.number("persistence_threshold", c.persistence_threshold, 0.0, MAX_ELEMENTS);
  r.finish();
  return c;
}

core::Json DeepSpeedZeroConfig::to_json() const {
  return {{"prefetch_bucket_elements", prefetch_bucket_elements},
          {"max_live_parameters", max_live_parameters},
          {"persistence_threshold", persistence_threshold}};
}

double zero3_peak_live_elements(const DeepSpeedZeroConfig& config, double largest_unit, double stage_parameters) {
  return std::min(stage_parameters, config.max_live_parameters + largest_unit);
}

Zero3Schedule zero3_fetch_schedule(const Zero3Trace& trace, const DeepSpeedZeroConfig& config) {
  const size_t n = trace.elements.size();
  std::vector<int> last_use(n, -1);
  for (size_t h = 0; h < trace.uses.size(); ++h) {
    for (int p : trace.uses[h]) last_use[static_cast<size_t>(p)] = static_cast<int>(h);
  }
  Zero3Schedule s;
  s.issued_at.assign(n, -1);
  size_t next = 0;  // head of the prefetch queue
  double live = 0;
  auto issue = [&](size_t p, size_t hook) {
    s.issued_at[p] = static_cast<int>(hook);
    live += trace.elements[p];
  };
  for (size_t h = 0; h < trace.uses.size(); ++h) {
    for (int p : trace.uses[h]) {
      if (s.issued_at[static_cast<size_t>(p)] >= 0) continue;
      TRAINSIM_CHECK(static_cast<size_t>(p) == next, "ZeRO-3 trace: parameters not listed in order of first use");
      issue(next++, h);
    }
    s.peak_live = std::max(s.peak_live, live);
    const double budget = std::min(config.prefetch_bucket_elements, config.max_live_parameters - live);
    double prefetched = 0;
    while (next < n && prefetched < budget) {
      prefetched += trace.elements[next];
      issue(next++, h);
    }
    s.peak_live = std::max(s.peak_live, live);
    for (int p : trace.uses[h]) {
      if (last_use[static_cast<size_t>(p)] == static_cast<int>(h)) live -= trace.elements[static_cast<size_t>(p)];
    }
  }
  for (size_t p = 0; p < n; ++p) TRAINSIM_CHECK(s.issued_at[p] >= 0, "ZeRO-3 trace: a parameter no hook uses");
  return s;
}

}  // namespace trainsim::models

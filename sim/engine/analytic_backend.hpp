#pragma once
// The analytic backend: the workload's execution semantics (sim/engine/executor.hpp) with every
// collective and send/recv priced in closed form by network/collective_cost.hpp. No contention
// between concurrent transfers beyond what the closed forms assume (each GPU gets its NIC share), so
// it is fast (tens of millions of tasks per second) and is the reference the flow-level backend is
// checked against.
//
// Example:
//   auto backend = trainsim::engine::make_analytic_backend();
//   SimulationResult r = backend->run(workload, cluster, profile, SimulationOptions{});
//   // r.iteration_time, r.breakdown, r.peak_memory_by_program, ...

#include <string_view>

#include "sim/engine/backend.hpp"

namespace trainsim::engine {

class AnalyticBackend final : public Backend {
 public:
  std::string_view name() const override { return "analytic"; }
  SimulationResult run(const core::Workload& workload, const network::ClusterConfig& cluster,
                       const core::Profile& profile, const SimulationOptions& options) override;
};

}  // namespace trainsim::engine

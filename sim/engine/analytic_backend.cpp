#include "sim/engine/analytic_backend.hpp"

#include "sim/engine/communication_model.hpp"
#include "sim/engine/executor.hpp"

namespace trainsim::engine {

SimulationResult AnalyticBackend::run(const core::Workload& workload, const network::ClusterConfig& cluster,
                                      const core::Profile& profile, const SimulationOptions& options) {
  AnalyticCommunicationModel model(cluster, profile.network, options.algorithm);
  return execute(workload, cluster, profile, options, model);
}

std::unique_ptr<Backend> make_analytic_backend() { return std::make_unique<AnalyticBackend>(); }

}  // namespace trainsim::engine

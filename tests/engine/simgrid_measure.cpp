// Not a test: `simgrid_measure SCENARIO [step|flow|analytic]` runs one iteration of a scenario on
// the analytic and the SimGrid backends (every rank simulated on both) and prints, per backend, the
// wall time, the events (tasks executed), the flows SimGrid simulated and the predicted iteration
// time. One run each, plain wall clock.

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "models/workload_builder.hpp"
#include "network/topology.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/engine/backend.hpp"
#include "sim/engine/simgrid_platform.hpp"

namespace {

using trainsim::engine::Backend;
using trainsim::engine::SimulationOptions;
using trainsim::engine::SimulationResult;

SimulationResult timed(Backend& backend, const trainsim::plan::Scenario& s, const trainsim::core::Workload& w,
                       const SimulationOptions& options, double& wall_s) {
  const auto start = std::chrono::steady_clock::now();
  SimulationResult r = backend.run(w, s.cluster, s.profile, options);
  wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: simgrid_measure SCENARIO [step|flow|analytic]\n");
    return 2;
  }
  try {
    const trainsim::plan::Scenario s = trainsim::plan::load_scenario(argv[1]);
    const trainsim::models::BuiltWorkload built =
        trainsim::models::build_workload(s.model, s.training, s.parallelism);
    SimulationOptions options;
    options.use_symmetry = false;
    options.algorithm = s.simulation.algorithm;
    if (argc > 2 && !trainsim::engine::parse_fidelity(argv[2], options.fidelity)) {
      std::fprintf(stderr, "unknown fidelity %s\n", argv[2]);
      return 2;
    }
    double analytic_wall = 0;
    double simgrid_wall = 0;
    const SimulationResult a = timed(*trainsim::engine::make_analytic_backend(), s, built.workload, options, analytic_wall);
    const SimulationResult g = timed(*trainsim::engine::make_simgrid_backend(), s, built.workload, options, simgrid_wall);
    const trainsim::network::Topology topology = trainsim::network::Topology::build(s.cluster);
    const uint64_t flows = trainsim::engine::SimgridPlatform::bind(topology, s.profile.network).flows_simulated();
    std::printf("scenario %s, %d ranks, fidelity %s\n", s.name.c_str(), built.workload.layout.world_size(),
                std::string(trainsim::engine::to_string(options.fidelity)).c_str());
    std::printf("backend   wall_s     events     flows      iteration_time_s  critical_rank\n");
    std::printf("analytic  %-10.3f %-10llu %-10d %-17.9f %d\n", analytic_wall,
                static_cast<unsigned long long>(a.events), 0, a.iteration_time.value(), a.critical_rank);
    std::printf("simgrid   %-10.3f %-10llu %-10llu %-17.9f %d\n", simgrid_wall,
                static_cast<unsigned long long>(g.events), static_cast<unsigned long long>(flows),
                g.iteration_time.value(), g.critical_rank);
    std::printf("simgrid / analytic: %.6f\n", g.iteration_time.value() / a.iteration_time.value());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simgrid_measure: %s\n", e.what());
    return 1;
  }
  return 0;
}

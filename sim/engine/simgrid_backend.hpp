#pragma once
// The SimGrid backend: the workload's execution semantics (sim/engine/executor.hpp, the same state
// machine as the analytic backend) with every communication call run as flows on a SimGrid platform
// built from network::Topology (sim/engine/simgrid_platform.hpp), so that concurrent collectives
// and sends contend for the links they share.
//
// How it runs. Compute, copy and memory tasks take the durations the analytic backend gives them
// (sim/engine/program_plan.hpp); they need no simulated activity, since their ends follow from their
// start. A communication call starts when its last member is ready (workload.hpp); the backend
// launches it at that instant of the simulated clock, in start order:
//   SEND/RECV     one flow from the sender's GPU to the receiver's, on the topology's route, whose
//                 latency includes the per-step software latency of its scope (intra- or inter-node)
//   COLLECTIVE    the flows of network::make_schedule for the group, at options.fidelity:
//                   step      every transfer, with the schedule's dependencies
//                   flow      one flow per algorithm edge (network::flow_edges), plus the closed form's
//                             latency along the algorithm's phases (sim/engine/schedule_flows.hpp)
//                   analytic  no flows: the closed form of network/collective_cost.hpp as a timed wait
//                 The algorithm is chosen as the analytic backend does: options.algorithm, AUTO
//                 resolved by network::choose_algorithm, and one that does not apply to the op and
//                 group replaced by the tuner's choice. A group of one rank costs nothing.
// The call ends for every member when its flows (plus their trailing latency at `flow` fidelity)
// end. Every call in flight shares the platform, so the contention between them is simulated.
// Results are filled exactly as the analytic backend fills them (iteration time, critical rank,
// breakdown from per-stream busy intervals, communication time per axis, peak memory per program,
// events, timeline).
//
// Symmetry. With options.use_symmetry the executor simulates one representative per class of
// mirrored ranks (sim/engine/executor.hpp), and the network still carries the mirrored ranks'
// traffic: each call of a representative starts, at the same instant, the flows of its mirror images
// (RankTable::images: the call translated along the symmetric axes it does not span), and ends when
// the last of them ends. Images of a call inside one node are kept only in that node: elsewhere
// they run on other nodes' own links, which carry nothing simulated. On a rail-optimized fabric with
// one NIC per GPU, where every simulated rank sits on one rail, images along a symmetric axis that
// stays inside the node (tensor parallelism filling the node) run on other rails, independent
// copies of the representatives' rail: they are left out too. So on a fat-tree a data-parallel
// all-reduce of tensor rank 0 runs with those of the other tensor ranks, and a pipeline send with
// those of every mirrored stage pair; on rails only those of rail 0 run; a tensor-parallel
// all-reduce runs alone in its node. (Llama 3 405B on 16,384 H100: 223,872 flows, ~3 s.) The representative's mirrors may finish at different times when the fabric
// is not symmetric (static routing collides on some uplinks): the call then ends with the slowest,
// which holds the mirrored ranks back as the slowest data-parallel replica would.
// Cost: the flows of every image, about 3 engine events each (../shared/SIMGRID-NOTES.md), plus one
// empty control message per host and instant at which the host starts flows. Without symmetry every
// rank is simulated and no image is added.
//
// SimGrid 3.32 builds one platform per process: every run in a process must use clusters of the
// same structure (same GPUs and links; bandwidths and latencies may differ), else InternalError.
// Deterministic: the same inputs give the same result. A workload that deadlocks throws
// core::InternalError naming the stuck tasks, as the analytic backend does.
//
// Example:
//   auto backend = trainsim::engine::make_simgrid_backend();
//   SimulationOptions options;
//   options.fidelity = Fidelity::FLOW;
//   SimulationResult r = backend->run(workload, cluster, profile, options);

#include <string_view>

#include "sim/engine/backend.hpp"

namespace trainsim::engine {

class SimgridBackend final : public Backend {
 public:
  std::string_view name() const override { return "simgrid"; }
  SimulationResult run(const core::Workload& workload, const network::ClusterConfig& cluster,
                       const core::Profile& profile, const SimulationOptions& options) override;
};

// Whether this process has built SimGrid's platform (any SimGrid run or `collective` simulation).
// SimGrid frees it in an exit handler, link by link: about as long as building it (0.2 CPU-s of
// a folded Llama 3 405B run on 16,384 GPUs, a fifth of it). A command-line process that is done
// may leave with std::_Exit once its output is flushed instead.
bool simgrid_platform_built();

// For a process that runs one SimGrid simulation: its platform creates only the SimGrid links that
// the simulation's routes cross, where the backend declares them all before it starts (half the CPU
// time of a folded Llama 3 405B run on 16,384 GPUs went to creating the 200,000 links of its
// platform). A second simulation in the process that needs other links is refused
// (core::InternalError). No effect once the process has run SimGrid.
void simgrid_links_on_demand();

}  // namespace trainsim::engine

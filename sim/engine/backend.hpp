#pragma once
// Backends execute a Workload IR on a cluster and measure one iteration. Every backend implements the
// execution semantics documented in sim/core/workload.hpp; they differ in how communication is
// costed (AnalyticBackend: closed-form alpha-beta; SimGridBackend, later: flow-level with contention).

#include <array>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "network/cluster.hpp"
#include "network/collective_cost.hpp"
#include "sim/core/device.hpp"
#include "sim/core/error.hpp"
#include "sim/core/units.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::engine {

// How collectives are simulated (DESIGN.md "Fidelity and scale"): `step` runs every transfer of the
// algorithm's schedule as a flow (exact, small scale); `flow` one long-lived flow per algorithm edge
// carrying its total bytes plus per-step latency terms (contention-aware at O(ranks) flows);
// `analytic` the closed form of network/collective_cost.hpp. The analytic backend always uses
// `analytic`.
enum class Fidelity { STEP, FLOW, ANALYTIC };

// SimGrid backend: whether the flows of mirror images across nodes fold onto the representatives'
// nodes (SimulationOptions::node_symmetry).
enum class NodeSymmetry { OFF, EXACT, APPROXIMATE };
std::string_view to_string(NodeSymmetry n);  // "off", "exact", "approximate"
bool parse_node_symmetry(std::string_view text, NodeSymmetry& out);
std::string_view to_string(Fidelity f);             // "step", "flow", "analytic"
bool parse_fidelity(std::string_view text, Fidelity& out);

// Where a SimGrid run is: its simulated clock, the simulated ranks' tasks run and in all, the flows
// simulated so far, and the wall time since it started.
struct SimulationProgress {
  double simulated_s = 0;
  uint64_t tasks_done = 0;
  uint64_t tasks_total = 0;
  uint64_t flows = 0;
  uint64_t replayed_calls = 0;
  double wall_s = 0;
};

// A run stopped by SimulationOptions::stop_requested (Ctrl-C), with what it knew then.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(const SimulationProgress& p) : std::runtime_error("simulation interrupted"), progress(p) {}
  SimulationProgress progress;
};

struct SimulationOptions {
  // Simulate one representative rank per class of symmetric ranks (Workload::symmetric_axes).
  // Turning it off simulates every rank; results must be identical. Default on. Cost: the engine
  // keeps one end time (8 bytes) per task of every simulated rank, so without symmetry a job of R
  // ranks running programs of T tasks needs about 8*R*T bytes.
  bool use_symmetry = true;
  network::Algorithm algorithm = network::Algorithm::AUTO;  // collective algorithm (AUTO: tuner)
  Fidelity fidelity = Fidelity::FLOW;                        // SimGrid backend only
  // Ranks whose task intervals are recorded (default: none). A rank that symmetry does not simulate
  // gets its representative's intervals, which are its own by the symmetry contract, under its own
  // rank number. REQUIRES: each is in [0, world size).
  std::vector<int> timeline_ranks;
  // SimGrid backend: whether the network flows the timeline ranks send or receive are recorded too
  // (SimulationResult::flows: `run --timeline`). False: their task intervals only (the energy
  // model's activity), which node folding keeps exact, so that folding stays on.
  bool timeline_flows = true;
  // SimGrid backend: a call whose flows already ran alone on the idle network, and that starts alone
  // again and ends before anything else can start, takes the time of that run without simulating its
  // flows again (the FSDP gathers of a forward pass, repeated iterations). And, whatever else is in
  // flight, a call of a class whose links no other call can cross while it runs (sim/engine/
  // isolated_calls.hpp: tensor-parallel rings inside NVSwitch nodes) takes its class's first run's
  // time. Exact by construction; off only to check that (the same results).
  bool replay_calls_alone = true;
  // SimGrid backend, with use_symmetry at flow fidelity: a flow between GPUs is simulated once per
  // orbit of the node permutations that symmetry mirrors ranks along (shifts by multiples of
  // RankTable::period), as the flow of that orbit leaving a representative's node, with every link
  // of its route replaced by its orbit's representative: a node's own links (NVLink, PCIe, NIC,
  // host) by the same links of its representative node, a fat-tree's or rail-optimized fabric's
  // switch-to-switch links by the link the shifts map them to (sim/engine/node_folding.hpp). Each
  // representative link then carries exactly its full load: a 1,024-rank ring's 2,048 flows become
  // those of one leaf's nodes. EXACT folds by the shifts that are automorphisms of the tree's static
  // routes (whole leaves, or places inside a leaf: the least multiple of the period that is), so the
  // times are the full simulation's; APPROXIMATE by the period itself, mapping the links as if
  // those shifts were automorphisms where they are not (fewer flows, not the full times there).
  // Torus and dragonfly fabrics do not fold. Not with a timeline that records flows (its ranks would
  // lose the flows they receive from other nodes; timeline_flows false keeps it on), in-network
  // aggregation, NVLS or checkpoint storage (flows to hosts that are not GPUs). Default EXACT.
  NodeSymmetry node_symmetry = NodeSymmetry::EXACT;
  // SimGrid backend, for long runs: called about once a second of wall time with where the run is
  // (the CLI prints it at a low rate); and asked at the same rate whether to stop, in which case the
  // run throws Interrupted with that progress. Either may be empty.
  std::function<void(const SimulationProgress&)> on_progress;
  std::function<bool()> stop_requested;
  // SimGrid backend: per group kind of the workload (core::Workload::groups, by index), whether its
  // collectives run as closed-form timed waits (network/collective_cost.hpp, as at the `analytic`
  // fidelity) instead of flows, whatever the fidelity: the approximation a caller chooses for the
  // call classes that would not fit a flow budget (estimate_flows). Those calls then neither feel nor
  // cause contention. Empty (the default), or shorter than the group list: none.
  std::vector<bool> closed_form_groups;

  bool closed_form(size_t group) const { return group < closed_form_groups.size() && closed_form_groups[group]; }
};

// One network flow of the SimGrid backend (a send/recv, or one transfer or edge of a collective's
// schedule), recorded when a timeline rank sends or receives it.
struct FlowEvent {
  static constexpr int SWITCH = -1;       // the in-network switch (SHARP, NVLS)
  static constexpr int HOST_MEMORY = -2;  // the host memory of the node of the flow's GPU (offload copies)
  static constexpr int NVME = -3;         // the NVMe drives of that node
  static constexpr int STORAGE = -4;      // the parallel file system (checkpoint writes)
  int src = 0;          // GPU index, or SWITCH, HOST_MEMORY, NVME
  int dst = 0;
  double start_s = 0;   // when its dependencies allowed it to start
  double end_s = 0;     // when its last byte arrived
  double bytes = 0;
};

// Traffic of one directed link of the simulated network over a run.
struct LinkLoad {
  std::string link;          // network::Link::name
  double bytes = 0;          // carried during the run
  double utilization = 0;    // bytes / (bandwidth x run time)
};

struct TimelineEvent {
  int rank = 0;
  core::Stream stream = core::Stream::COMPUTE;
  double start_s = 0;
  double end_s = 0;
  uint32_t task = 0;  // index in the rank's program
};

// Where the time of the critical rank (the last one to finish) went. The four parts add up to the
// iteration time:
//   compute           compute-stream busy time (forward, backward, recompute, optimizer)
//   exposed_comm      compute stream idle while some communication stream is busy, per axis
//                     (several at once: attributed to the first of tensor, context, expert, pipeline, data)
//   pipeline_bubble   compute stream idle with no communication in flight (waiting for other stages)
//   other             compute stream idle while only offloading is busy: the copy engines (other_copy)
//                     or the host's CPUs (other_host, a CPU optimizer step), copies first
// A communication task is busy from the moment it actually starts (every member ready) to its end;
// time spent waiting for a peer to arrive is not communication but bubble. Collectives count for
// their group's axis, sends and receives for their peer axis (the axis of their stream in generated
// workloads).
struct Breakdown {
  core::Seconds compute;
  std::array<core::Seconds, core::PHASE_COUNT> compute_by_phase{};  // by core::Phase
  std::array<core::Seconds, core::AXIS_COUNT> exposed_comm{};       // by core::Axis
  core::Seconds pipeline_bubble;
  core::Seconds other;       // other_copy + other_host
  core::Seconds other_copy;
  core::Seconds other_host;
  core::Seconds exposed_comm_total() const;
};

struct SimulationResult {
  core::Seconds iteration_time;
  int critical_rank = 0;
  Breakdown breakdown;                                         // of the critical rank
  std::array<core::Seconds, core::AXIS_COUNT> comm_time{};     // busy time per axis stream, critical rank
                                                               // (pipeline: union of both directions)
  std::vector<core::Bytes> peak_memory_by_program;             // static + peak dynamic, per program
  std::vector<core::Bytes> peak_dynamic_by_program;            // peak of MEMORY allocations alone
  std::vector<core::Bytes> peak_host_dynamic_by_program;       // peak of host-memory MEMORY tasks (offloaded
                                                               // activations), per simulated rank of the program
  core::Seconds copy_time;  // critical rank: busy time of its copy streams (union)
  core::Seconds host_time;  // critical rank: busy time of its HOST stream
  uint64_t events = 0;                                         // tasks executed (over simulated ranks)
  int simulated_ranks = 0;
  uint64_t network_flows = 0;                                  // SimGrid backend: flows simulated (images included)
  uint64_t replayed_calls = 0;                                 // SimGrid backend: calls replayed from a run alone (SimulationOptions::replay_calls_alone)
  uint64_t closed_form_calls = 0;                              // SimGrid backend: calls priced in closed form
                                                               // (SimulationOptions::closed_form_groups), one per call
  std::vector<TimelineEvent> timeline;
  // SimGrid backend: the most utilized network links over the iteration (utilization = bytes /
  // (simulated capacity x iteration time)), at most 5, most utilized first; empty for the analytic
  // backend, which has no links.
  std::vector<LinkLoad> top_links;
  // SimGrid backend: the network flows that the timeline ranks send or receive, in completion order;
  // empty for the analytic backend.
  std::vector<FlowEvent> flows;
};

// Thrown by Backend::run when the workload cannot run to its end: a deadlock (no task can run while
// some remain) or the members of one call disagreeing on what it is. For a workload built from a
// scenario this is a bug in trainsim (an InternalError, exit 1); for one built from measured
// traces (`trainsim replay`) the likely cause is the input (ranks whose traces disagree on their
// collective sequence, a truncated trace), and the caller turns it into an InputError.
class WorkloadStuck : public core::InternalError {
 public:
  using core::InternalError::InternalError;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // REQUIRES: workload.validate() passes and workload.layout.world_size() == cluster.world_size().
  virtual SimulationResult run(const core::Workload& workload, const network::ClusterConfig& cluster,
                               const core::Profile& profile, const SimulationOptions& options) = 0;
};

// The AnalyticBackend (sim/engine/analytic_backend.hpp): closed-form NCCL costs, no contention.
std::unique_ptr<Backend> make_analytic_backend();
// The SimGrid flow-level backend (sim/engine/simgrid_backend.hpp): contention on a simulated platform
// built from network::Topology. Only one per process at a time (SimGrid has one Engine per process).
std::unique_ptr<Backend> make_simgrid_backend();

}  // namespace trainsim::engine

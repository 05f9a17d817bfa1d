#pragma once
// The SimGrid platform of a network::Topology and the executor that runs batches of flows on it.
// Internal to sim/engine; no SimGrid type crosses this header.
//
// Platform. One host per GPU plus one for the in-network endpoint (the switch that reduces SHARP /
// SwitchML traffic, or NVLS multicast objects), then per node one for its host memory and one for
// its NVMe drives (offload copies), then one for the parallel file system (checkpoints), and one SimGrid link per directed topology link: its bandwidth
// times the profile efficiency of its class, and its latency. Efficiency per class:
//   NVLINK          intra-node profile
//   NIC, FABRIC     inter-node profile
//   PCIE            intra-node profile on PCIe-only nodes (PCIe is the node's fabric there), else
//                   inter-node (it then carries GPU <-> NIC traffic)
//   HOST            the cluster's host.link_efficiency (pinned host <-> device copies)
// Routing is one flat zone whose routes are explicit link lists, like SimGrid's full zone, but
// holding only the routes that a batch uses: a full zone allocates an all-pairs table (2 GiB of
// pointers at 16,384 GPUs). One level of zones, so 3.32's routing bug with three or more nested
// levels cannot arise.
//
// Network model: exact alpha-beta before calibration (../shared/SIMGRID-NOTES.md): CM02 with
// cross-traffic off, and TCP gamma raised so that no flow is capped by its window (the 4 MiB
// default caps a flow at ~419 GB/s on a 5 us route, below NVLink). A flow of S bytes alone on a
// route of latency L and bottleneck B ends after L + S/B; flows sharing a link share it max-min
// fairly. Deterministic; SimGrid's logging is set to critical only (library code never prints).
//
// Flows use SimGrid's mailboxes with one actor per host (the fastest style in 3.32; Comm::sendto
// scans every live comm on each completion there). A flow starts as soon as its dependencies have
// completed, as a host-to-host transfer would: the receiver's actor posts its receive when the
// batch starts, so no flow waits for the receiver's rendezvous. Batches start while a simulation
// runs (simulate()): a driver actor on a control host of its own, linked to every host by a
// zero-latency, zero-cost route that no flow uses, hands each host actor its new flows with one
// empty message per host and instant, and waits on a condition variable for completions and its
// own timers. So several batches share the network, and contend, whenever they overlap in time.
//
// One platform per process. SimGrid 3.32 has one Engine per process, and once it has run no host,
// link or zone can be added to it. The platform is built by the first bind(); later binds with the
// same structure (GPU count and link names) reuse it with their own bandwidths and latencies, which
// is what varying a bandwidth, a latency, an efficiency or a fidelity needs. A different structure
// in the same process is refused (InternalError): run such cases in separate processes (the tests
// do, through gtest_discover_tests).

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "network/topology.hpp"
#include "sim/core/device.hpp"
#include "sim/core/units.hpp"

namespace trainsim::engine {

// A flow between two hosts of the platform: a GPU index, or SimgridPlatform::switch_host().
struct FlowSpec {
  int32_t src = 0;
  int32_t dst = 0;
  double bytes = 0;          // rounded to whole bytes
  uint32_t dep_begin = 0;    // flows that must complete first: FlowBatch::deps[dep_begin, +dep_count)
  uint32_t dep_count = 0;
};

// REQUIRES: every dependency of a flow is an earlier or later flow that starts or ends at the flow's
// source host (the data it forwards arrived there, or it follows that host's earlier send); this is
// what lets the source's actor start it without waiting for anybody else.
struct FlowBatch {
  std::vector<FlowSpec> flows;
  std::vector<uint32_t> deps;
};

// What runs a simulation on the platform (SimgridPlatform::simulate): told the current simulated
// instant whenever it asked to be, and whenever batches it started completed. Instants are seconds
// since the start of the simulation.
class FlowDriver {
 public:
  virtual ~FlowDriver() = default;
  // Called at the start of the simulation, at the instant it last returned (unless later ones
  // came first), and after batch_done() calls. May start batches. Returns the next instant it wants
  // to be called at (>= now; NEVER: only when a batch completes), or FINISHED to end the simulation.
  virtual double advance(double now) = 0;
  // Batch `id` (SimgridPlatform::start) completed; done[f] is the completion of flow f, measured
  // from the start of the batch. Batches completing at one instant are reported in start order.
  virtual void batch_done(uint32_t id, const std::vector<core::Seconds>& done) = 0;

  static constexpr double NEVER = std::numeric_limits<double>::infinity();
  static constexpr double FINISHED = -1;
};

class SimgridPlatform {
 public:
  // The process's platform, bound to `topology` and `profile` (built on the first call). Clears the
  // routes of the previous binding. Throws core::InternalError for a topology whose structure
  // differs from the one the platform was built for (see above).
  static SimgridPlatform& bind(const network::Topology& topology, const core::NetworkProfile& profile);
  // Whether bind() has built the process's platform.
  static bool built();
  // For a process that runs one simulation (the CLI's `run`, a child of plan::predict_report): the
  // platform creates a SimGrid link when a route first crosses it, and the first simulation seals
  // the zone with only those when its driver has declared every route before it started
  // (declare_routes_complete); otherwise that simulation creates the rest first. Creating the
  // 200,000 links of a 16,384-GPU platform took half the CPU time of a folded run that crosses a
  // few hundred of them. A later simulation in the process whose routes cross a link that was not
  // created is refused (core::InternalError): SimGrid 3.32 adds nothing once it has run.
  // No effect once the platform is built.
  static void create_links_on_demand();
  // The driver of the next simulate() has declared every route it will use.
  void declare_routes_complete();

  SimgridPlatform(const SimgridPlatform&) = delete;
  SimgridPlatform& operator=(const SimgridPlatform&) = delete;

  int gpu_count() const;
  // The host of the in-network endpoint (network::IN_NETWORK in schedules).
  int switch_host() const { return gpu_count(); }
  // The hosts of a node's host memory and of its NVMe drives (offload copies).
  int memory_host(int node) const { return gpu_count() + 1 + node; }
  int nvme_host(int node) const { return gpu_count() + 1 + node_count() + node; }
  // The host of the parallel file system (checkpoint writes), one for the cluster.
  int storage_host() const { return gpu_count() + 1 + 2 * node_count(); }
  int node_count() const;
  // Simulated capacity of a topology link: its bandwidth times its class's efficiency.
  core::BytesPerSecond capacity(uint32_t link) const;

  // Declares (or replaces) the route from host `from` to host `to`: the topology links it crosses, in
  // order, and a latency added to the sum of theirs (per-step software latency). Every (src, dst) of
  // a batch needs one. REQUIRES: from != to, both hosts of the platform.
  void set_route(int from, int to, const std::vector<uint32_t>& links, core::Seconds extra_latency);
  bool has_route(int from, int to) const;
  // The topology links of a declared route, in order. REQUIRES: has_route(from, to).
  const std::vector<uint32_t>& route_links(int from, int to) const;
  // Latency of a declared route: its links' latencies plus its extra latency.
  core::Seconds route_latency(int from, int to) const;

  // Runs `driver` until it returns FlowDriver::FINISHED, or until nothing can happen any more (no
  // batch in flight and no instant asked for). The simulated clock continues from the previous
  // simulation. REQUIRES: not called from inside a simulation.
  void simulate(FlowDriver& driver);
  // Starts a batch at the current simulated instant and returns its id, which identifies it until
  // the driver's batch_done(). Throws core::InternalError when a flow has no route, when a
  // dependency breaks the FlowBatch contract, or when flows never start (a dependency cycle).
  // REQUIRES: called by the driver of a running simulate().
  uint32_t start(FlowBatch batch);

  // Runs one batch from the current simulated instant until its last flow completes, and returns
  // the completion time of each flow, from the start of the batch: simulate() with a driver that
  // starts the batch and waits for it. Throws as start() does.
  std::vector<core::Seconds> run(const FlowBatch& batch);

  // Flows simulated by this process so far, over every run.
  uint64_t flows_simulated() const;

 private:
  struct Impl;
  explicit SimgridPlatform(std::unique_ptr<Impl> impl);
  ~SimgridPlatform();  // never runs: the platform lives until the process exits, like SimGrid's Engine

  std::unique_ptr<Impl> impl_;
};

}  // namespace trainsim::engine

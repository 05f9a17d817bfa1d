#include "sim/engine/simgrid_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <queue>
#include <cstdio>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "network/schedule.hpp"
#include "network/topology.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/executor.hpp"
#include "sim/engine/isolated_calls.hpp"
#include "sim/engine/node_folding.hpp"
#include "sim/engine/schedule_flows.hpp"
#include "sim/engine/simgrid_platform.hpp"

namespace trainsim::engine {
namespace {

using core::Task;
using core::TaskKind;

constexpr size_t TOP_LINKS = 5;  // links listed in SimulationResult::top_links

// A call waiting for its start instant on the simulated clock.
struct Launch {
  double start = 0;
  uint64_t order = 0;  // launch order: ties at one instant start in the order the executor handed them
  uint32_t call = 0;
  uint32_t meeting = 0;
  const Task* task = nullptr;
  int copy_rank = -1;  // a COPY task of this rank (meeting unused), or -1
};

struct LaterFirst {
  bool operator()(const Launch& a, const Launch& b) const {
    return a.start != b.start ? a.start > b.start : a.order > b.order;
  }
};

// A call whose flows are in flight, by platform batch id.
struct InFlight {
  uint32_t call = 0;
  double start = 0;
  const ScheduleFlows* flows = nullptr;
  bool alone = false;  // started on an idle network, and nothing else started before it ended (so far)
  bool isolated = false;  // a call of an isolated class (SimgridRun::choose_isolated_calls)
};

// A call replayed from an earlier run of its flows alone (SimgridRun::replay_if_alone): it ends at
// start + the earlier run's duration, without flows.
struct Replayed {
  double end = 0;
  uint32_t call = 0;
  double start = 0;
  const ScheduleFlows* flows = nullptr;
  bool isolated = false;  // a call of an isolated class
  bool operator>(const Replayed& o) const { return end > o.end; }
};

// One run: the executor's state machine driven by the platform's simulated clock.
class SimgridRun final : public FlowDriver, public CommunicationLauncher {
 public:
  SimgridRun(const core::Workload& workload, const network::ClusterConfig& cluster, const core::Profile& profile,
             const SimulationOptions& options)
      : w_(workload),
        cluster_(cluster),
        net_(profile.network),
        options_(options),
        topology_(network::Topology::build(cluster)),
        platform_(SimgridPlatform::bind(topology_, net_)),
        planner_(topology_, net_, platform_),
        executor_(workload, cluster, profile, options_, *this),
        members_(executor_.table().meetings().size()),
        loads_(topology_.links().size()) {
    if (!options_.timeline_ranks.empty() && options_.timeline_flows) {
      traced_.assign(static_cast<size_t>(w_.layout.world_size()), 0);
      for (int r : options_.timeline_ranks) traced_[static_cast<size_t>(r)] = 1;
    }
    choose_rail_axes();
    // Symmetric axes of period 1 whose shifts move a rank to another node (data parallelism across
    // nodes): a call inside one node has its mirrors along them in nodes of their own.
    const RankTable& table = executor_.table();
    const int first = table.ranks().front().rank;
    for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
      const core::Axis axis = static_cast<core::Axis>(a);
      if (table.symmetric(axis) && table.period(axis) == 1 &&
          topology_.node_of(w_.layout.peer(first, axis, 1)) != topology_.node_of(first)) {
        node_leaving_axes_.push_back(axis);
      }
    }
    choose_folding();
    check_folding();
    choose_isolated_calls();
  }

  SimulationResult run() {
    const uint64_t flows_before = platform_.flows_simulated();
    flows_before_ = flows_before;
    started_ = last_report_ = std::chrono::steady_clock::now();
    platform_.simulate(*this);
    if (!executor_.finished()) executor_.report_deadlock();
    SimulationResult result = executor_.result();
    result.top_links = loads_.top(TOP_LINKS, result.iteration_time, topology_, platform_);
    result.flows = std::move(flows_);
    result.network_flows = platform_.flows_simulated() - flows_before;
    result.replayed_calls = replayed_calls_;
    result.closed_form_calls = closed_form_calls_;
    return result;
  }

  void launch(uint32_t call, uint32_t meeting, const Task& task, double start) override {
    launches_.push({start, next_order_++, call, meeting, &task, -1});
  }

  void launch_copy(uint32_t call, int rank, const Task& task, double start) override {
    launches_.push({start, next_order_++, call, 0, &task, rank});
  }

  double advance(double now) override {
    report_progress(now);
    while (!replayed_.empty() && replayed_.top().end <= now) {
      const Replayed r = replayed_.top();
      replayed_.pop();
      if (!r.isolated) --shared_replays_;
      const std::vector<core::Seconds>& done = alone_done_.at(r.flows);
      if (!traced_.empty()) record_flows({r.call, r.start, r.flows, false}, done);
      executor_.complete(r.call, r.end);
    }
    bool progressed = true;
    while (progressed) {
      executor_.advance(now);
      progressed = false;
      while (!launches_.empty() && launches_.top().start <= now) {
        const Launch l = launches_.top();
        launches_.pop();
        progressed |= start(l, now);
      }
    }
    replay_if_alone();
    if (executor_.finished()) return FINISHED;
    // A deferred pool decision is due when the clock reaches it, whether or not a call completes.
    return std::min({next_event(), replayed_.empty() ? NEVER : replayed_.top().end});
  }

  void batch_done(uint32_t id, const std::vector<core::Seconds>& done) override {
    const InFlight& f = in_flight_.at(id);
    --(f.isolated ? isolated_active_ : active_);
    if (!traced_.empty()) record_flows(f, done);
    // Its flows ran alone from start to end (an isolated call's always do, on its links): any later
    // run of them alone takes the same time.
    if ((f.alone || f.isolated) && options_.replay_calls_alone) alone_done_.try_emplace(f.flows, done);
    executor_.complete(f.call, f.start + schedule_time(*f.flows, done).value());
  }

 private:
  // Starts a call's flows, or completes it at once when it has none; true in the latter case.
  bool start(const Launch& l, double now) {
    const Task& t = *l.task;
    const ScheduleFlows* flows = call_flows(t, l.meeting, l.copy_rank);
    if (flows == nullptr) {
      const Meeting& m = executor_.table().meetings()[l.meeting];
      const bool one = members_of(l.meeting, t).size() <= 1;
      if (options_.closed_form(t.group) && !one) ++closed_form_calls_;
      const core::Seconds cost =
          one ? core::Seconds(0)
              : network::collective_cost(t.collective, core::Bytes(t.bytes), executor_.table().placements()[m.placement],
                                         cluster_, net_, options_.algorithm)
                    .time;
      executor_.complete(l.call, l.start + cost.value());
      return true;
    }
    loads_.add(*flows);
    // Flows start now; the call's start may be a rounding error earlier.
    const InFlight call{l.call, std::max(now, l.start), flows, false};
    if (isolated_.count(flows) != 0) {
      start_isolated(call);
    } else if (options_.replay_calls_alone) {
      held_.push_back(call);  // replay_if_alone decides once every call of this instant is known
    } else {
      start_flows(call);
    }
    return false;
  }

  // The flows a call runs (a copy's when copy_rank >= 0), or nullptr when it runs none: a collective
  // of one member, at the analytic fidelity, or of a group priced in closed form.
  const ScheduleFlows* call_flows(const Task& t, uint32_t meeting, int copy_rank) {
    if (copy_rank >= 0) return &copy_flows(copy_rank, t);
    if (t.kind != TaskKind::COLLECTIVE) {
      const Meeting& m = executor_.table().meetings()[meeting];
      return &p2p_flows(m.first_rank, m.second_rank, t.bytes);
    }
    const std::vector<int>& members = members_of(meeting, t);
    if (members.size() <= 1 || options_.fidelity == Fidelity::ANALYTIC || options_.closed_form(t.group)) return nullptr;
    return &collective_flows(meeting, t, members);
  }

  // A call of an isolated class: replayed from its class's first run, or that first run. Either way
  // it leaves the other calls' bookkeeping of runs alone untouched: it shares no link with them.
  void start_isolated(InFlight call) {
    const auto memo = alone_done_.find(call.flows);
    if (memo != alone_done_.end()) {
      replayed_.push({call.start + schedule_time(*call.flows, memo->second).value(), call.call, call.start, call.flows,
                      true});
      ++replayed_calls_;
      return;
    }
    call.isolated = true;
    const uint32_t id = platform_.start(call.flows->batch);
    ++isolated_active_;
    if (in_flight_.size() <= id) in_flight_.resize(id + 1);
    in_flight_[id] = call;
  }

  // Every 64 calls: a stop request turned into Interrupted; and about once a second of wall time
  // the progress to the options' callback.
  void report_progress(double now) {
    if (!options_.on_progress && !options_.stop_requested) return;
    if (++advances_ % 64 != 0) return;
    const bool stop = options_.stop_requested && options_.stop_requested();
    const auto wall = std::chrono::steady_clock::now();
    if (!stop && wall - last_report_ < std::chrono::seconds(1)) return;
    last_report_ = wall;
    SimulationProgress p;
    p.simulated_s = now;
    p.tasks_total = executor_.total_tasks();
    p.tasks_done = p.tasks_total - executor_.unfinished();
    p.flows = platform_.flows_simulated() - flows_before_;
    p.replayed_calls = replayed_calls_;
    p.wall_s = std::chrono::duration<double>(wall - started_).count();
    if (stop) throw Interrupted(p);
    if (options_.on_progress) options_.on_progress(p);
  }

  // Starts a call's flows on the platform. A call that finds the network idle may be running alone;
  // one that does not ends that for every call in flight.
  void start_flows(InFlight call) {
    call.alone = active_ == 0 && shared_replays_ == 0;
    if (!call.alone) {
      for (InFlight& f : in_flight_) f.alone = false;
    }
    const uint32_t id = platform_.start(call.flows->batch);
    ++active_;
    if (in_flight_.size() <= id) in_flight_.resize(id + 1);
    in_flight_[id] = call;
  }

  // The next instant the executor or a launch needs the clock, replays aside.
  double next_event() { return std::min(launches_.empty() ? NEVER : launches_.top().start, executor_.next_decision()); }

  // Replays the call that starts now when it is the only one, the network is idle, its flows
  // already ran alone once (alone_done_), and it ends before anything else can start: nothing but a
  // completion of its own moves the executor before next_event(), so its flows would run alone
  // again, and the same flows on the same idle platform take the same time. Exact by construction
  // (tests/engine/simgrid_backend_test.cpp: the same iterations with replays turned off). Otherwise
  // the calls of this instant start their flows, in the order they were launched.
  void replay_if_alone() {
    if (held_.empty()) return;
    // Isolated calls share no link with it, but their ends may start calls that do: it must end
    // before the first of them that is known, and none may be in flight (its end is not known).
    if (held_.size() == 1 && active_ == 0 && shared_replays_ == 0 && isolated_active_ == 0) {
      const InFlight& c = held_.front();
      const auto memo = alone_done_.find(c.flows);
      if (memo != alone_done_.end()) {
        const double end = c.start + schedule_time(*c.flows, memo->second).value();
        if (end <= next_event() && (replayed_.empty() || end <= replayed_.top().end)) {
          replayed_.push({end, c.call, c.start, c.flows, false});
          ++shared_replays_;
          ++replayed_calls_;
          held_.clear();
          return;
        }
      }
    }
    for (const InFlight& c : held_) start_flows(c);
    held_.clear();
  }

  // Adds the flows of a completed batch that a timeline rank sends or receives. A flow starts when
  // the last of its dependencies completed (the batch's start when it has none).
  void record_flows(const InFlight& f, const std::vector<core::Seconds>& done) {
    const FlowBatch& batch = f.flows->batch;
    auto gpu = [&](int32_t host) {
      if (host < platform_.gpu_count()) return static_cast<int>(host);
      if (host == platform_.switch_host()) return FlowEvent::SWITCH;
      if (host == platform_.storage_host()) return FlowEvent::STORAGE;
      return host < platform_.nvme_host(0) ? FlowEvent::HOST_MEMORY : FlowEvent::NVME;
    };
    auto traced = [&](int host) { return host >= 0 && traced_[static_cast<size_t>(host)] != 0; };
    for (size_t i = 0; i < batch.flows.size(); ++i) {
      const FlowSpec& flow = batch.flows[i];
      const int src = gpu(flow.src);
      const int dst = gpu(flow.dst);
      if (!traced(src) && !traced(dst)) continue;
      double ready = 0;
      for (uint32_t d = 0; d < flow.dep_count; ++d) ready = std::max(ready, done[batch.deps[flow.dep_begin + d]].value());
      flows_.push_back({src, dst, f.start + ready, f.start + done[i].value(), flow.bytes});
    }
  }

  const std::vector<int>& members_of(uint32_t meeting, const Task& t) {
    std::vector<int>& members = members_[meeting];
    if (members.empty()) members = w_.groups[t.group].ranks_of(w_.layout, executor_.table().meetings()[meeting].first_rank);
    return members;
  }

  // Symmetric axes whose mirror images run on rails of their own. On a fabric with separate rails
  // (one NIC per GPU), inter-node traffic toward a node's k-th GPU crosses only rail k's switches
  // and links. Take the symmetric axes along which every shift of a simulated rank stays in its node
  // and every communicator spanning them too (tensor parallelism inside the node): a rank's
  // coordinates on them are a function of its GPU's place in the node, hence of its rail. A call
  // whose communicator does not span them joins ranks of equal coordinates, so it runs on the rails
  // of one class; only the calls spanning them (inside the node, over NVLink) join two classes. The
  // translates of a call across nodes along these axes then run on other classes' rails, shared with
  // nothing simulated: simulating the simulated ranks' class gives every class's times, and those
  // images are left out (the Llama 3 405B scenario: 8x fewer pipeline and data-parallel images; TP4
  // CP8 on nodes of 8: 4x fewer; GPT-3 175B with TP2 CP2 and ZeRO-3 over DP256 x CP2, whose sharded
  // group also spans the context shifts that change rails: 2x fewer flows, 5x less CPU). What this
  // leaves out is the other classes' share of the NVLink ports that the in-node calls spanning
  // these axes cross: such a call ends with its slowest flow, through the ports of the simulated
  // class, which carry the full load (tests/engine/simgrid_backend_test.cpp holds the results to the
  // full simulation's). The other symmetric axes keep the class: their images stay in it.
  void choose_rail_axes() {
    if (!options_.use_symmetry || !topology_.separate_rails()) return;
    const RankTable& table = executor_.table();
    const int g = cluster_.gpus_per_node;
    std::vector<char> simulated_rail(static_cast<size_t>(g), 0);
    for (const SimulatedRank& sr : table.ranks()) simulated_rail[static_cast<size_t>(topology_.rail_of(sr.rank))] = 1;
    std::vector<core::Axis> candidates;
    for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
      const core::Axis axis = static_cast<core::Axis>(a);
      if (!table.symmetric(axis)) continue;
      bool inside = true;
      for (const SimulatedRank& sr : table.ranks()) {
        for (int c = table.period(axis); c < w_.layout.size(axis); c += table.period(axis)) {
          const int peer = w_.layout.peer(sr.rank, axis, c);
          inside = inside && cluster_.node_of(peer) == cluster_.node_of(sr.rank);
        }
        for (const core::GroupKind& kind : w_.groups) {
          const bool spans = kind.axis == axis || std::find(kind.extra_axes.begin(), kind.extra_axes.end(), axis) !=
                                                      kind.extra_axes.end();
          if (!inside || !spans || !kind.contains(w_.layout, sr.rank)) continue;
          for (int member : kind.ranks_of(w_.layout, sr.rank)) {
            inside = inside && cluster_.node_of(member) == cluster_.node_of(sr.rank);
          }
        }
      }
      if (inside) candidates.push_back(axis);
    }
    if (candidates.empty()) return;
    for (const SimulatedRank& sr : table.ranks()) {
      const std::vector<std::vector<int>> moved = table.images({sr.rank}, other_axes(candidates));
      for (size_t i = 1; i < moved.size(); ++i) {
        if (simulated_rail[static_cast<size_t>(topology_.rail_of(moved[i].front()))] != 0) return;
      }
    }
    rail_axes_ = std::move(candidates);
  }

  // The axes not in `axes`.
  static std::vector<core::Axis> other_axes(const std::vector<core::Axis>& axes) {
    std::vector<core::Axis> out;
    for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
      const core::Axis axis = static_cast<core::Axis>(a);
      if (std::find(axes.begin(), axes.end(), axis) == axes.end()) out.push_back(axis);
    }
    return out;
  }

  // The calls that mirrored ranks make with the representative's call among `ranks` (RankTable::images),
  // less those that cannot share a link with anything simulated: for a call across nodes, its images
  // along rail axes (above); for a call inside one node, its mirrors along the node-leaving axes
  // (node_leaving_axes_), which run on other nodes' own links. Its same-node mirrors are kept.
  // Its mirrors along periodic axes (RankTable::period > 1) do share links with simulated calls: the
  // calls along such an axis cross other nodes' NVLink (a data-parallel ring from GPU 0 to GPU 4 of
  // node 1). At step fidelity they are kept, so that the result is the full simulation's; at flow
  // fidelity they are left out too: a call's edges are one flow each and it ends with its slowest,
  // the edge in the representatives' node, which carries the same contention as every mirrored
  // node's (GPT-3 175B with TP2 CP2 over DP256: the same iteration time to 15 digits, 4x fewer CPU
  // seconds). What symmetry leaves out either way: the mirrors of a cross-node call along a
  // node-leaving axis run in other nodes too, without those nodes' local calls.
  // With node folding, a call inside one node keeps its mirrors on every representative node of the
  // folding (NodeFolding::representative_node): those nodes' links stand for their orbits', which
  // carry their local calls in the full run (where a fold must keep several nodes of a tree, the
  // others are not simulated ranks' nodes).
  std::vector<std::vector<int>> mirrored_calls(const std::vector<int>& ranks, std::vector<core::Axis> own_axes) const {
    const int node = topology_.node_of(ranks.front());
    auto in_node = [&](const std::vector<int>& call) {
      return std::all_of(call.begin(), call.end(), [&](int r) { return topology_.node_of(r) == node; });
    };
    const bool local = in_node(ranks);
    if (local && folding_) {
      std::vector<std::vector<int>> images = executor_.table().images(ranks, own_axes);
      images.erase(std::remove_if(images.begin() + 1, images.end(),
                                  [&](const std::vector<int>& c) {
                                    const int n = topology_.node_of(c.front());
                                    return folding_->representative_node(n) != n ||
                                           std::any_of(c.begin(), c.end(), [&](int r) { return topology_.node_of(r) != n; });
                                  }),
                   images.end());
      return images;
    }
    // Rails only separate inter-node traffic: a call inside the node keeps its same-node mirrors,
    // which may share NVLink ports with it.
    const std::vector<core::Axis>& skipped = local ? node_leaving_axes_ : rail_axes_;
    own_axes.insert(own_axes.end(), skipped.begin(), skipped.end());
    std::vector<std::vector<int>> images = executor_.table().images(ranks, own_axes);
    if (local && options_.fidelity != Fidelity::STEP) {
      images.erase(std::remove_if(images.begin() + 1, images.end(), [&](const auto& c) { return !in_node(c); }),
                   images.end());
    }
    return images;
  }

  // Node folding (SimulationOptions::node_symmetry, sim/engine/node_folding.hpp), where
  // folding_allowed says it may.
  // On a non-blocking tree whose exact folding keeps more nodes than an ideal switch's would (a
  // shift that carries across leaves is no automorphism of the static routes), the fabric may be
  // dominated (node_folding.hpp, FabricUse): every call's flows are built unfolded once to check it,
  // and where it holds the run folds as on an ideal switch with the fabric left out of the routes.
  void choose_folding() {
    const bool fabric = topology_.count(network::LinkClass::FABRIC) > 0;
    if (!folding_allowed(options_, cluster_, fabric)) return;
    const RankTable& table = executor_.table();
    const NodeFolding by_tree(w_, table, topology_, options_.node_symmetry);  // the mode's fold of the tree
    if (options_.node_symmetry == NodeSymmetry::EXACT && fabric && cluster_.network.oversubscription == 1.0) {
      const NodeFolding ideal(w_, table, topology_, options_.node_symmetry, true);
      if (ideal.active() && !same_folding(ideal, by_tree) && fabric_dominated()) {
        folding_.emplace(ideal);
        fabric_dropped_ = true;
      }
    }
    if (!folding_) folding_.emplace(by_tree);
    if (!folding_->active()) {
      folding_.reset();
      fabric_dropped_ = false;
    }
  }

  static bool same_folding(const NodeFolding& a, const NodeFolding& b) {
    if (!a.active() || !b.active() || a.axes().size() != b.axes().size()) return false;
    for (size_t i = 0; i < a.axes().size(); ++i) {
      if (a.axes()[i].axis != b.axes()[i].axis || a.axes()[i].period != b.axes()[i].period) return false;
    }
    return true;
  }

  // Builds every call's flows unfolded (with their mirror images) and notes their routes' fabric
  // links; then forgets the flows, which the folding builds again.
  bool fabric_dominated() {
    fabric_use_.emplace(topology_);
    executor_.for_each_call_site([&](const CallSite& site) {
      if (site.task->kind != TaskKind::COPY && fabric_use_->dominated()) call_flows(*site.task, site.meeting, -1);
    });
    const bool dominated = fabric_use_->dominated();
    fabric_use_.reset();
    collectives_.clear();
    p2p_.clear();
    return dominated;
  }

  void note_fabric_use(const ScheduleFlows& flows) {
    if (!fabric_use_) return;
    for (const FlowSpec& f : flows.batch.flows) {
      if (f.src < topology_.gpu_count() && f.dst < topology_.gpu_count()) fabric_use_->note(planner_.links(f.src, f.dst, false));
    }
  }

  // The classes of calls that run alone on their links whenever they run (sim/engine/
  // isolated_calls.hpp), which start_isolated replays from their first run. Every call's flows are
  // built here, before the run (they would be on its first call), so that every class and the links
  // of its (folded) routes are known. Not with in-network aggregation, NVLS or checkpoint storage:
  // their routes to the switch or the file system are declared again per group or GPU, so a class
  // does not keep its links.
  void choose_isolated_calls() {
    if (!options_.replay_calls_alone || options_.fidelity == Fidelity::ANALYTIC) return;
    if (cluster_.intra_node.nvls || cluster_.network.in_network_reduction || cluster_.storage.has_value()) return;
    const RankTable& table = executor_.table();
    std::unordered_map<const ScheduleFlows*, uint32_t> index;
    std::vector<const ScheduleFlows*> classes;
    std::vector<ClassSite> sites;
    executor_.for_each_call_site([&](const CallSite& site) {
      const bool copy = site.task->kind == TaskKind::COPY;
      const ScheduleFlows* flows = call_flows(*site.task, site.meeting, copy ? table.ranks()[site.slot].rank : -1);
      if (flows == nullptr) return;
      const auto [it, added] = index.try_emplace(flows, static_cast<uint32_t>(classes.size()));
      if (added) classes.push_back(flows);
      // A copy is a call of its rank alone: a meeting of its own per rank, after the table's.
      const uint64_t meeting = copy ? table.meetings().size() + site.slot : site.meeting;
      sites.push_back({it->second, site.slot, site.lane, meeting});
    });
    std::vector<std::vector<uint32_t>> links(classes.size());
    for (size_t c = 0; c < classes.size(); ++c) {
      for (const FlowSpec& f : classes[c]->batch.flows) {
        const std::vector<uint32_t>& route = platform_.route_links(f.src, f.dst);
        links[c].insert(links[c].end(), route.begin(), route.end());
      }
      std::sort(links[c].begin(), links[c].end());
      links[c].erase(std::unique(links[c].begin(), links[c].end()), links[c].end());
    }
    const std::vector<bool> isolated = isolated_classes(links, sites, topology_.links().size());
    for (size_t c = 0; c < classes.size(); ++c) {
      if (isolated[c]) isolated_.insert(classes[c]);
    }
    // Every call's flows are built, so every route this run crosses is declared.
    platform_.declare_routes_complete();
  }

  // One flow per orbit: the flows that leave a representative's node, each on its folded route. The
  // call's flows with their mirror images are invariant under the folding shifts (a ring along the
  // axis maps onto itself, a send onto its image), so each orbit has as many flows leaving the
  // representatives' nodes as it has in the full run from any node: parallel flows between two GPUs
  // (NCCL's ring channels crossing one NVLink port) stay apart. A call whose flows are not
  // invariant (a schedule rooted at one node) cannot fold: it is kept whole and the run unfolds
  // (check_folding).
  ScheduleFlows fold(const ScheduleFlows& flows) {
    if (!closed_under_folding(flows)) {
      fold_broken_ = true;
      return flows;
    }
    ScheduleFlows out;
    out.link_bytes = flows.link_bytes;
    for (size_t i = 0; i < flows.batch.flows.size(); ++i) {
      const FlowSpec& f = flows.batch.flows[i];
      TRAINSIM_CHECK(f.dep_count == 0 && f.src < topology_.gpu_count() && f.dst < topology_.gpu_count(),
                     "only flows between GPUs without dependencies fold");
      const int node = topology_.node_of(f.src);
      if (folding_->representative_node(node) != node) continue;
      declare_folded_route(f.src, f.dst);
      out.batch.flows.push_back(f);
      out.tail_s.push_back(flows.tail_s[i]);
    }
    return out;
  }

  // Builds every call's flows before the run, folded; when one call's cannot fold, the run does not
  // fold: the folded routes get their real links back and the calls' flows are built again.
  void check_folding() {
    if (!folding_) return;
    executor_.for_each_call_site([&](const CallSite& site) {
      if (site.task->kind != TaskKind::COPY) call_flows(*site.task, site.meeting, -1);
    });
    if (!fold_broken_) return;
    folding_.reset();
    fabric_dropped_ = false;
    collectives_.clear();
    p2p_.clear();
    for (const auto& [pair, software] : folded_pairs_) {
      const int src = static_cast<int>(pair / static_cast<uint64_t>(topology_.gpu_count()));
      const int dst = static_cast<int>(pair % static_cast<uint64_t>(topology_.gpu_count()));
      platform_.set_route(src, dst, planner_.links(src, dst, false), software);
    }
    folded_pairs_.clear();
  }

  // Whether the multiset of a call's flows (with their mirror images) is mapped onto itself by every
  // generator of the folding, or leaves no representative's node (nothing to fold).
  bool closed_under_folding(const ScheduleFlows& flows) const {
    // Tails are sums of latencies, which images may add in another order: compared to 1e-15 s.
    using Key = std::tuple<int, int, double, int64_t>;
    std::map<Key, int> count;
    bool leaves = false;
    for (size_t i = 0; i < flows.batch.flows.size(); ++i) {
      const FlowSpec& f = flows.batch.flows[i];
      ++count[Key{f.src, f.dst, f.bytes, std::llround(flows.tail_s[i] * 1e15)}];
      const int node = topology_.node_of(f.src);
      leaves |= folding_->representative_node(node) != node;
    }
    if (!leaves) return true;
    for (const NodeFolding::Axis& a : folding_->axes()) {
      for (const auto& [key, n] : count) {
        const Key image{w_.layout.peer(std::get<0>(key), a.axis, a.period), w_.layout.peer(std::get<1>(key), a.axis, a.period),
                        std::get<2>(key), std::get<3>(key)};
        const auto it = count.find(image);
        if (it == count.end() || it->second != n) return false;
      }
    }
    return true;
  }

  // The route from a representative's GPU `src` to `dst`: the real one with every link replaced by
  // its orbit's representative (NodeFolding::link). The same software latency.
  void declare_folded_route(int src, int dst) {
    const uint64_t pair = static_cast<uint64_t>(src) * static_cast<uint64_t>(topology_.gpu_count()) +
                          static_cast<uint64_t>(dst);
    if (folded_pairs_.count(pair) != 0) return;
    const std::vector<uint32_t>& real = planner_.links(src, dst, false);  // declares it, once
    double link_latency = 0;
    for (uint32_t l : real) link_latency += topology_.links()[l].latency.value();
    const core::Seconds software = platform_.route_latency(src, dst) - core::Seconds(link_latency);
    folded_pairs_.emplace(pair, software);
    std::vector<uint32_t> route;
    route.reserve(real.size());
    for (uint32_t l : real) {
      if (fabric_dropped_ && topology_.links()[l].link_class == network::LinkClass::FABRIC) continue;
      route.push_back(folding_->link(l));
    }
    std::vector<uint32_t> sorted = route;
    std::sort(sorted.begin(), sorted.end());
    TRAINSIM_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
                   fmt::format("the folded route from GPU {} to GPU {} crosses a link twice", src, dst));
    platform_.set_route(src, dst, route, software);
  }

  network::Algorithm algorithm_for(const Task& t, const network::GroupView& group) const {
    if (options_.algorithm != network::Algorithm::AUTO) {
      const std::vector<network::Algorithm> usable = network::algorithms_for(t.collective, group);
      if (std::find(usable.begin(), usable.end(), options_.algorithm) != usable.end()) return options_.algorithm;
    }
    return network::choose_algorithm(t.collective, core::Bytes(t.bytes), group, cluster_, net_);
  }

  // The flows of a collective and of its mirror images, built once per (meeting, op, size).
  const ScheduleFlows& collective_flows(uint32_t meeting, const Task& t, const std::vector<int>& members) {
    const auto key = std::make_tuple(meeting, t.collective, t.bytes);
    auto it = collectives_.find(key);
    if (it != collectives_.end()) return it->second;
    const core::GroupKind& kind = w_.groups[t.group];
    std::vector<core::Axis> own_axes = kind.extra_axes;
    own_axes.push_back(kind.axis);
    const network::GroupView group{members, &topology_};
    const network::Algorithm algorithm = algorithm_for(t, group);
    std::vector<double> link_bytes(topology_.links().size(), 0.0);
    ScheduleFlows flows;
    for (const std::vector<int>& image : mirrored_calls(members, own_axes)) {
      append(flows, schedule_flows(t.collective, algorithm, core::Bytes(t.bytes), options_.fidelity, image, planner_,
                                   platform_, &link_bytes));
    }
    flows.link_bytes = nonzero_links(link_bytes);
    note_fabric_use(flows);
    if (folding_) flows = fold(flows);
    return collectives_.emplace(key, std::move(flows)).first->second;
  }

  // One flow between the rank's GPU and its node's host memory or NVMe drives (a COPY task), and one
  // per mirror image of the rank in its node: the copies of the node's other GPUs that symmetry does
  // not simulate run at the same instants and share the node's host links (images in other nodes
  // use other nodes' links and are left out, but for the periodic axes' at step fidelity: mirrored_calls).
  const ScheduleFlows& copy_flows(int rank, const Task& t) {
    const auto key = std::make_tuple(rank, static_cast<int>(t.copy), t.bytes);
    auto it = copies_.find(key);
    if (it != copies_.end()) return it->second;
    std::vector<double> link_bytes(topology_.links().size(), 0.0);
    ScheduleFlows flows;
    std::vector<uint32_t> route;
    for (const std::vector<int>& image : mirrored_calls({rank}, {})) {
      const int gpu = image.front();
      const int node = topology_.node_of(gpu);
      const int memory = platform_.memory_host(node);
      const int nvme = platform_.nvme_host(node);
      int src = gpu, dst = memory;
      switch (t.copy) {
        case core::CopyDirection::DEVICE_TO_HOST: break;
        case core::CopyDirection::HOST_TO_DEVICE: src = memory; dst = gpu; break;
        case core::CopyDirection::DEVICE_TO_NVME: dst = nvme; break;
        case core::CopyDirection::NVME_TO_DEVICE: src = nvme; dst = gpu; break;
        case core::CopyDirection::HOST_TO_NVME: src = memory; dst = nvme; break;
        case core::CopyDirection::NVME_TO_HOST: src = nvme; dst = memory; break;
        // The flush leaves host memory through the GPU's rail NIC: the GPU's host stands for its
        // share of host memory, so that each GPU of a node keeps a route of its own.
        case core::CopyDirection::HOST_TO_STORAGE: dst = platform_.storage_host(); break;
        case core::CopyDirection::DEVICE_TO_STORAGE: dst = platform_.storage_host(); break;
      }
      route.clear();
      topology_.copy_route(gpu, t.copy, route);
      if (!platform_.has_route(src, dst) || core::to_storage(t.copy)) platform_.set_route(src, dst, route, core::Seconds(0));
      for (uint32_t link : route) link_bytes[link] += t.bytes;
      flows.batch.flows.push_back({src, dst, t.bytes, 0, 0});
      flows.tail_s.push_back(0.0);
    }
    flows.link_bytes = nonzero_links(link_bytes);
    return copies_.emplace(key, std::move(flows)).first->second;
  }

  // One flow from the sender's GPU to the receiver's, and one per mirror image of the pair.
  const ScheduleFlows& p2p_flows(int sender, int receiver, double bytes) {
    const auto key = std::make_tuple(sender, receiver, bytes);
    auto it = p2p_.find(key);
    if (it != p2p_.end()) return it->second;
    std::vector<double> link_bytes(topology_.links().size(), 0.0);
    ScheduleFlows flows;
    for (const std::vector<int>& pair : mirrored_calls({sender, receiver}, {})) {
      for (uint32_t link : planner_.links(pair[0], pair[1], false)) link_bytes[link] += bytes;
      flows.batch.flows.push_back({pair[0], pair[1], bytes, 0, 0});
      flows.tail_s.push_back(0.0);
    }
    flows.link_bytes = nonzero_links(link_bytes);
    note_fabric_use(flows);
    if (folding_) flows = fold(flows);
    return p2p_.emplace(key, std::move(flows)).first->second;
  }

  const core::Workload& w_;
  const network::ClusterConfig& cluster_;
  const core::NetworkProfile& net_;
  const SimulationOptions options_;
  const network::Topology topology_;
  SimgridPlatform& platform_;
  RoutePlanner planner_;
  Executor executor_;
  std::vector<std::vector<int>> members_;  // by meeting: the group's ranks (collectives)
  std::vector<core::Axis> rail_axes_;      // symmetric axes whose images run on rails of their own
  std::vector<core::Axis> node_leaving_axes_;  // symmetric, period 1, shifts leave the node
  std::optional<NodeFolding> folding_;  // node folding (choose_folding), when it folds
  bool fabric_dropped_ = false;          // folded routes leave the dominated fabric out (choose_folding)
  std::optional<FabricUse> fabric_use_;  // while fabric_dominated() checks the unfolded flows
  bool fold_broken_ = false;            // a call's flows could not fold (fold, check_folding)
  std::unordered_map<uint64_t, core::Seconds> folded_pairs_;  // (src, dst) with a folded route: its software latency
  std::priority_queue<Launch, std::vector<Launch>, LaterFirst> launches_;
  uint64_t next_order_ = 0;
  std::vector<InFlight> in_flight_;  // by platform batch id
  size_t active_ = 0;                 // batches in flight on the platform
  std::vector<InFlight> held_;        // calls of this instant that may be replayed (replay_if_alone)
  std::priority_queue<Replayed, std::vector<Replayed>, std::greater<>> replayed_;  // by end
  size_t shared_replays_ = 0;   // replayed_ entries that are not of isolated classes
  size_t isolated_active_ = 0;  // batches of isolated classes in flight
  std::unordered_set<const ScheduleFlows*> isolated_;  // the classes choose_isolated_calls found
  std::unordered_map<const ScheduleFlows*, std::vector<core::Seconds>> alone_done_;  // a run alone: done per flow
  uint64_t replayed_calls_ = 0;
  uint64_t closed_form_calls_ = 0;
  uint64_t flows_before_ = 0;  // the platform's flow count when the run started
  uint64_t advances_ = 0;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_report_;
  std::map<std::tuple<uint32_t, core::CollectiveOp, double>, ScheduleFlows> collectives_;
  std::map<std::tuple<int, int, double>, ScheduleFlows> p2p_;
  std::map<std::tuple<int, int, double>, ScheduleFlows> copies_;  // by (rank, direction, bytes)
  LinkLoads loads_;  // bytes per topology link over the run
  std::vector<char> traced_;  // by rank: its flows on the timeline (empty: no flows recorded)
  std::vector<FlowEvent> flows_;
};

}  // namespace

SimulationResult SimgridBackend::run(const core::Workload& workload, const network::ClusterConfig& cluster,
                                     const core::Profile& profile, const SimulationOptions& options) {
  TRAINSIM_CHECK(workload.layout.world_size() == cluster.world_size(),
                 fmt::format("the workload has {} ranks, the cluster {} GPUs", workload.layout.world_size(),
                             cluster.world_size()));
  SimgridRun run(workload, cluster, profile, options);
  return run.run();
}

std::unique_ptr<Backend> make_simgrid_backend() { return std::make_unique<SimgridBackend>(); }

bool simgrid_platform_built() { return SimgridPlatform::built(); }

void simgrid_links_on_demand() { SimgridPlatform::create_links_on_demand(); }

}  // namespace trainsim::engine

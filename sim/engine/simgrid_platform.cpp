#include "sim/engine/simgrid_platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <cmath>
#include <fmt/format.h>
#include <string>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace trainsim::engine {
namespace {

namespace sg4 = simgrid::s4u;
namespace sgr = simgrid::kernel::routing;
using core::Seconds;

// Explicit link-list routes, declared on demand (see the header). Hosts are the zone's only
// vertices, created in host order, so a host's netpoint id is its host index.
class RouteTableZone final : public sgr::NetZoneImpl {
 public:
  struct Route {
    std::vector<simgrid::kernel::resource::StandardLinkImpl*> links;
    double latency = 0;
  };

  explicit RouteTableZone(const std::string& name) : NetZoneImpl(name) {}

  void set_host_count(uint64_t hosts) { hosts_ = hosts; }
  void clear() { routes_.clear(); }
  void set(uint64_t from, uint64_t to, Route route) { routes_[from * hosts_ + to] = std::move(route); }
  const Route* find(uint64_t from, uint64_t to) const {
    auto it = routes_.find(from * hosts_ + to);
    return it == routes_.end() ? nullptr : &it->second;
  }

  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into, double* latency) override {
    const Route* route = find(src->id(), dst->id());
    TRAINSIM_CHECK(route != nullptr, fmt::format("no route declared from {} to {}", src->get_name(), dst->get_name()));
    into->link_list_.insert(into->link_list_.end(), route->links.begin(), route->links.end());
    if (latency != nullptr) *latency += route->latency;
  }

 private:
  uint64_t hosts_ = 0;
  std::unordered_map<uint64_t, Route> routes_;
};

double efficiency_of(const network::Link& link, const core::NetworkProfile& profile, bool pcie_fabric) {
  switch (link.link_class) {
    case network::LinkClass::NVLINK: return profile.intra_node.bandwidth_efficiency;
    case network::LinkClass::PCIE:
      return pcie_fabric ? profile.intra_node.bandwidth_efficiency : profile.inter_node.bandwidth_efficiency;
    case network::LinkClass::NIC:
    case network::LinkClass::FABRIC: return profile.inter_node.bandwidth_efficiency;
  }
  return 1.0;
}

// The state one run() shares between its actors. SimGrid runs actors one at a time, so plain
// fields are safe.
struct RunState {
  const FlowBatch* batch = nullptr;
  double start = 0;
  std::vector<uint32_t> remaining;       // unfinished dependencies per flow
  std::vector<uint32_t> succ_begin;      // successors of flow f: succ[succ_begin[f], succ_begin[f + 1])
  std::vector<uint32_t> succ;
  std::vector<uint32_t> ids;             // ids[f] == f: the payload a flow carries to its receiver
  std::vector<Seconds> done;
};

// A cycle would leave actors blocked forever, which SimGrid reports as a deadlock of the whole
// engine: refuse it before running (Kahn's algorithm).
void check_acyclic(const RunState& state) {
  std::vector<uint32_t> remaining = state.remaining;
  std::vector<uint32_t> ready;
  for (uint32_t f = 0; f < remaining.size(); ++f) {
    if (remaining[f] == 0) ready.push_back(f);
  }
  size_t seen = 0;
  while (!ready.empty()) {
    const uint32_t f = ready.back();
    ready.pop_back();
    ++seen;
    for (uint32_t s = state.succ_begin[f]; s < state.succ_begin[f + 1]; ++s) {
      if (--remaining[state.succ[s]] == 0) ready.push_back(state.succ[s]);
    }
  }
  TRAINSIM_CHECK(seen == remaining.size(),
                 fmt::format("{} of {} flows can never start: their dependencies form a cycle", remaining.size() - seen,
                             remaining.size()));
}

}  // namespace

struct SimgridPlatform::Impl {
  RouteTableZone* zone = nullptr;
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Link*> links;
  std::vector<std::string> link_names;   // the structure later binds must match
  std::vector<double> capacity;
  std::vector<double> latency;
  std::vector<sg4::Mailbox*> mailboxes;
  uint64_t flows_run = 0;
  int gpus = 0;

  void configure(const network::Topology& topology, const core::NetworkProfile& profile, bool build);
  void run_host(RunState& state, int host, const std::vector<uint32_t>& outgoing, size_t incoming) const;
};

namespace {

// The process's Engine and platform: SimGrid 3.32 allows one Engine per process and cannot
// re-create it, so both live until the process exits.
SimgridPlatform* process_platform = nullptr;

void start_engine() {
  static sg4::Engine engine("trainsim");
  xbt_log_control_set("root.thres:critical");
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:1e18");
  sg4::Engine::set_config("contexts/stack-size:256");
}

}  // namespace

void SimgridPlatform::Impl::configure(const network::Topology& topology, const core::NetworkProfile& profile,
                                      bool build) {
  const std::vector<network::Link>& topo_links = topology.links();
  const bool pcie_fabric = topology.count(network::LinkClass::NVLINK) == 0;
  capacity.resize(topo_links.size());
  latency.resize(topo_links.size());
  for (size_t i = 0; i < topo_links.size(); ++i) {
    const network::Link& l = topo_links[i];
    capacity[i] = l.bandwidth.value() * efficiency_of(l, profile, pcie_fabric);
    latency[i] = l.latency.value();
  }
  if (build) {
    gpus = topology.gpu_count();
    zone = new RouteTableZone("trainsim");  // the root zone; SimGrid's engine owns it
    zone->set_host_count(static_cast<uint64_t>(gpus) + 1);
    for (int h = 0; h <= gpus; ++h) {
      const std::string name = h < gpus ? fmt::format("gpu{}", h) : std::string("in_network");
      sg4::Host* host = zone->get_iface()->create_host(name, 1.0);
      TRAINSIM_CHECK(host->get_netpoint()->id() == static_cast<unsigned long>(h), "hosts are the zone's vertices in order");
      hosts.push_back(host);
      mailboxes.push_back(sg4::Mailbox::by_name(name));
    }
    for (size_t i = 0; i < topo_links.size(); ++i) {
      sg4::Link* link = zone->get_iface()->create_link(topo_links[i].name, capacity[i]);
      link->set_latency(latency[i]);
      link->seal();
      links.push_back(link);
      link_names.push_back(topo_links[i].name);
    }
    zone->get_iface()->seal();
    return;
  }
  for (size_t i = 0; i < links.size(); ++i) {
    links[i]->set_bandwidth(capacity[i]);
    links[i]->set_latency(latency[i]);
  }
  zone->clear();
}

SimgridPlatform& SimgridPlatform::bind(const network::Topology& topology, const core::NetworkProfile& profile) {
  if (process_platform == nullptr) {
    start_engine();
    auto impl = std::make_unique<Impl>();
    impl->configure(topology, profile, true);
    process_platform = new SimgridPlatform(std::move(impl));
    return *process_platform;
  }
  Impl& impl = *process_platform->impl_;
  bool same = impl.gpus == topology.gpu_count() && impl.link_names.size() == topology.links().size();
  for (size_t i = 0; same && i < impl.link_names.size(); ++i) same = impl.link_names[i] == topology.links()[i].name;
  TRAINSIM_CHECK(same, fmt::format("SimGrid 3.32 builds one platform per process: this one has {} GPUs and {} links, "
                                   "the new topology {} GPUs and {} links (run it in another process)",
                                   impl.gpus, impl.link_names.size(), topology.gpu_count(), topology.links().size()));
  impl.configure(topology, profile, false);
  return *process_platform;
}

SimgridPlatform::SimgridPlatform(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimgridPlatform::~SimgridPlatform() = default;

int SimgridPlatform::gpu_count() const { return impl_->gpus; }

core::BytesPerSecond SimgridPlatform::capacity(uint32_t link) const {
  return core::BytesPerSecond(impl_->capacity.at(link));
}

uint64_t SimgridPlatform::flows_simulated() const { return impl_->flows_run; }

void SimgridPlatform::set_route(int from, int to, const std::vector<uint32_t>& links, Seconds extra_latency) {
  const int hosts = impl_->gpus + 1;
  TRAINSIM_CHECK(from != to && from >= 0 && to >= 0 && from < hosts && to < hosts,
                 fmt::format("route {} -> {} on a platform of {} hosts", from, to, hosts));
  RouteTableZone::Route route;
  route.latency = extra_latency.value();
  route.links.reserve(links.size());
  for (uint32_t l : links) {
    route.links.push_back(impl_->links.at(l)->get_impl());
    route.latency += impl_->latency[l];
  }
  impl_->zone->set(static_cast<uint64_t>(from), static_cast<uint64_t>(to), std::move(route));
}

bool SimgridPlatform::has_route(int from, int to) const {
  return impl_->zone->find(static_cast<uint64_t>(from), static_cast<uint64_t>(to)) != nullptr;
}

Seconds SimgridPlatform::route_latency(int from, int to) const {
  const RouteTableZone::Route* route = impl_->zone->find(static_cast<uint64_t>(from), static_cast<uint64_t>(to));
  TRAINSIM_CHECK(route != nullptr, fmt::format("no route declared from host {} to host {}", from, to));
  return Seconds(route->latency);
}

// One host's actor: posts a receive for every flow into the host, starts its flows as their
// dependencies complete, and records completions (a flow's completion is seen by both ends; the
// source's actor starts the successors whose source is its host).
void SimgridPlatform::Impl::run_host(RunState& state, int host, const std::vector<uint32_t>& outgoing,
                                     size_t incoming) const {
  const std::vector<FlowSpec>& flows = state.batch->flows;
  std::vector<sg4::CommPtr> comms;
  std::vector<int64_t> what;  // flow index of a send; -1 - slot of a receive
  std::vector<uint32_t*> slots(incoming, nullptr);
  comms.reserve(incoming + outgoing.size());
  what.reserve(incoming + outgoing.size());
  for (size_t k = 0; k < incoming; ++k) {
    comms.push_back(mailboxes[static_cast<size_t>(host)]->get_async<uint32_t>(&slots[k]));
    what.push_back(-1 - static_cast<int64_t>(k));
  }
  auto start = [&](uint32_t f) {
    const FlowSpec& flow = flows[f];
    const auto bytes = static_cast<uint64_t>(std::llround(std::max(flow.bytes, 0.0)));
    comms.push_back(mailboxes[static_cast<size_t>(flow.dst)]->put_async(&state.ids[f], bytes));
    what.push_back(f);
  };
  for (uint32_t f : outgoing) {
    if (state.remaining[f] == 0) start(f);
  }
  while (!comms.empty()) {
    const auto i = static_cast<size_t>(sg4::Comm::wait_any(comms));
    const uint32_t f = what[i] >= 0 ? static_cast<uint32_t>(what[i]) : *slots[static_cast<size_t>(-1 - what[i])];
    comms[i] = std::move(comms.back());
    comms.pop_back();
    what[i] = what.back();
    what.pop_back();
    state.done[f] = Seconds(sg4::Engine::get_clock() - state.start);
    for (uint32_t s = state.succ_begin[f]; s < state.succ_begin[f + 1]; ++s) {
      const uint32_t u = state.succ[s];
      if (flows[u].src == host && --state.remaining[u] == 0) start(u);
    }
  }
}

std::vector<Seconds> SimgridPlatform::run(const FlowBatch& batch) {
  const size_t n = batch.flows.size();
  const int hosts = impl_->gpus + 1;
  RunState state;
  state.batch = &batch;
  state.start = sg4::Engine::get_clock();
  state.remaining.assign(n, 0);
  state.succ_begin.assign(n + 1, 0);
  state.ids.resize(n);
  state.done.assign(n, Seconds(0));
  std::vector<std::vector<uint32_t>> outgoing(static_cast<size_t>(hosts));
  std::vector<size_t> incoming(static_cast<size_t>(hosts), 0);
  for (uint32_t f = 0; f < n; ++f) {
    const FlowSpec& flow = batch.flows[f];
    TRAINSIM_CHECK(has_route(flow.src, flow.dst), fmt::format("flow {} has no route from {} to {}", f, flow.src, flow.dst));
    state.ids[f] = f;
    state.remaining[f] = flow.dep_count;
    outgoing[static_cast<size_t>(flow.src)].push_back(f);
    ++incoming[static_cast<size_t>(flow.dst)];
    for (uint32_t d = flow.dep_begin; d < flow.dep_begin + flow.dep_count; ++d) {
      const uint32_t dep = batch.deps.at(d);
      TRAINSIM_CHECK(dep < n && dep != f, fmt::format("flow {} depends on flow {} of {}", f, dep, n));
      const FlowSpec& before = batch.flows[dep];
      TRAINSIM_CHECK(before.src == flow.src || before.dst == flow.src,
                     fmt::format("flow {} ({} -> {}) depends on flow {} ({} -> {}), which does not touch its source",
                                 f, flow.src, flow.dst, dep, before.src, before.dst));
      ++state.succ_begin[dep + 1];
    }
  }
  for (size_t f = 0; f < n; ++f) state.succ_begin[f + 1] += state.succ_begin[f];
  state.succ.resize(state.succ_begin[n]);
  std::vector<uint32_t> fill(state.succ_begin.begin(), state.succ_begin.end() - 1);
  for (uint32_t f = 0; f < n; ++f) {
    const FlowSpec& flow = batch.flows[f];
    for (uint32_t d = flow.dep_begin; d < flow.dep_begin + flow.dep_count; ++d) state.succ[fill[batch.deps[d]]++] = f;
  }
  check_acyclic(state);

  for (int h = 0; h < hosts; ++h) {
    const auto hi = static_cast<size_t>(h);
    if (outgoing[hi].empty() && incoming[hi] == 0) continue;
    sg4::Actor::create(fmt::format("host{}", h), impl_->hosts[hi],
                       [this, &state, h, &out = outgoing[hi], in = incoming[hi]] { impl_->run_host(state, h, out, in); });
  }
  sg4::Engine::get_instance()->run();
  impl_->flows_run += n;
  return std::move(state.done);
}

}  // namespace trainsim::engine

#include "sim/engine/simgrid_platform.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/Exception.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <deque>
#include <exception>
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
    std::vector<uint32_t> ids;  // the same links as topology link ids
    double latency = 0;
  };

  explicit RouteTableZone(const std::string& name) : NetZoneImpl(name) {}

  // Hosts [0, hosts) carry flows; host `hosts` is the control host, reached from everywhere over
  // `control_link` alone.
  void set_host_count(uint64_t hosts) { hosts_ = hosts; }
  void set_control_link(simgrid::kernel::resource::StandardLinkImpl* link) { control_link_ = link; }
  void clear() { routes_.clear(); }
  void set(uint64_t from, uint64_t to, Route route) { routes_[from * hosts_ + to] = std::move(route); }
  const Route* find(uint64_t from, uint64_t to) const {
    auto it = routes_.find(from * hosts_ + to);
    return it == routes_.end() ? nullptr : &it->second;
  }

  void get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into, double* latency) override {
    if (src->id() == hosts_ || dst->id() == hosts_) {
      into->link_list_.push_back(control_link_);
      return;
    }
    const Route* route = find(src->id(), dst->id());
    TRAINSIM_CHECK(route != nullptr, fmt::format("no route declared from {} to {}", src->get_name(), dst->get_name()));
    into->link_list_.insert(into->link_list_.end(), route->links.begin(), route->links.end());
    if (latency != nullptr) *latency += route->latency;
  }

 private:
  uint64_t hosts_ = 0;
  simgrid::kernel::resource::StandardLinkImpl* control_link_ = nullptr;
  std::unordered_map<uint64_t, Route> routes_;
};

double efficiency_of(const network::Link& link, const core::NetworkProfile& profile, bool pcie_fabric,
                     double host_efficiency) {
  switch (link.link_class) {
    case network::LinkClass::HOST: return host_efficiency;
    case network::LinkClass::STORAGE: return 1.0;  // the scenario gives what the file system delivers
    case network::LinkClass::NVLINK: return profile.intra_node.bandwidth_efficiency;
    case network::LinkClass::PCIE:
      return pcie_fabric ? profile.intra_node.bandwidth_efficiency : profile.inter_node.bandwidth_efficiency;
    case network::LinkClass::NIC:
    case network::LinkClass::FABRIC: return profile.inter_node.bandwidth_efficiency;
  }
  return 1.0;
}

// A batch in flight. A flow is done once both of its ends have seen it complete: the receiver's
// actor may see it after the sender's, and starts the successors that leave its host.
struct Batch {
  FlowBatch spec;
  double start = 0;
  std::vector<uint32_t> remaining;   // unfinished dependencies per flow
  std::vector<uint32_t> succ_begin;  // successors of flow f: succ[succ_begin[f], succ_begin[f + 1])
  std::vector<uint32_t> succ;
  std::vector<uint64_t> tokens;      // the payload of flow f: (batch id << 32) | f
  std::vector<Seconds> done;
  size_t unseen = 0;                 // flow ends (two per flow) not yet seen
};

// What a host's actor has been handed since it last woke.
struct HostWork {
  std::vector<uint64_t> to_start;  // tokens of flows whose dependencies are done
  uint32_t to_receive = 0;         // receives to post
  bool woken = false;              // a wake-up message is on its way
  bool running = false;            // its actor exists
  bool stop = false;
};

// An actor on the control host that relays the driver's wake-ups to a block of hosts. In 3.32,
// finishing a detached message scans activity lists of the actors at its ends (CommImpl::finish),
// and with every wake-up sent by the driver that scan was the largest cost after the solver. Sent by
// sqrt(N) relays of sqrt(N) hosts each, a 1 GiB all-reduce over 16,384 GPUs took 28.3 s instead of
// 36.6 s (same result).
struct Dispatcher {
  std::vector<int> hosts;  // to wake at its next turn
  bool woken = false;      // a wake-up message is on its way
  bool running = false;    // its actor exists
  bool stop = false;
};

// The state of one simulate(). SimGrid runs actors one at a time, so plain fields are safe.
struct Simulation {
  std::vector<Dispatcher> dispatchers;
  int block = 1;  // hosts per dispatcher
  FlowDriver* driver = nullptr;
  std::vector<std::unique_ptr<Batch>> batches;  // by id; null: free
  std::vector<uint32_t> free_ids;
  std::vector<uint32_t> completed;              // ids, in completion order
  size_t in_flight = 0;
  std::vector<HostWork> hosts;
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr wake = sg4::ConditionVariable::create();
  std::exception_ptr error;
};

constexpr uint64_t FLOW_BITS = 32;
constexpr uint64_t FLOW_MASK = (uint64_t{1} << FLOW_BITS) - 1;

// A cycle would leave actors blocked forever: refuse it before running (Kahn's algorithm).
void check_acyclic(const Batch& batch) {
  std::vector<uint32_t> remaining = batch.remaining;
  std::vector<uint32_t> ready;
  for (uint32_t f = 0; f < remaining.size(); ++f) {
    if (remaining[f] == 0) ready.push_back(f);
  }
  size_t seen = 0;
  while (!ready.empty()) {
    const uint32_t f = ready.back();
    ready.pop_back();
    ++seen;
    for (uint32_t s = batch.succ_begin[f]; s < batch.succ_begin[f + 1]; ++s) {
      if (--remaining[batch.succ[s]] == 0) ready.push_back(batch.succ[s]);
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
  std::vector<sg4::Mailbox*> mailboxes;  // data, by host
  std::vector<sg4::Mailbox*> controls;   // wake-up messages, by host
  std::vector<sg4::Mailbox*> relays;     // wake-up messages, by dispatcher
  sg4::Host* control_host = nullptr;
  Simulation* simulation = nullptr;      // while simulate() runs
  uint64_t flows_run = 0;
  int gpus = 0;
  int nodes = 0;
  bool sealed = false;           // the zone is sealed: no link can be added any more
  bool routes_complete = false;  // the next simulation declared every route it uses (declare_routes_complete)
  int hosts_total() const { return gpus + 2 + 2 * nodes; }  // GPUs, the switch, host memories, NVMe, storage

  void configure(const network::Topology& topology, const core::NetworkProfile& profile, bool build);
  // The SimGrid link of topology link `l`, created now when links are created on demand.
  simgrid::kernel::resource::StandardLinkImpl* link(uint32_t l);
  // Before the first simulation: creates the links not created yet unless the routes are complete,
  // and seals the zone.
  void seal();
  void drive(Simulation& sim);
  void serve_host(Simulation& sim, int host);
  void hand(Simulation& sim, int host);
  void wake_dispatcher(Simulation& sim, size_t index);
  void dispatch(Simulation& sim, size_t index);
  void flow_seen(Simulation& sim, int host, uint64_t token, bool sender, std::vector<uint32_t>& ready);
};

namespace {

// The process's Engine and platform: SimGrid 3.32 allows one Engine per process and cannot
// re-create it, so both live until the process exits.
SimgridPlatform* process_platform = nullptr;
bool links_on_demand = false;  // SimgridPlatform::create_links_on_demand

void start_engine() {
  // Constructing the Engine installs SimGrid's SIGINT handler; the process keeps its own (simulate()).
  struct sigaction before {};
  sigaction(SIGINT, nullptr, &before);
  static sg4::Engine engine("trainsim");
  sigaction(SIGINT, &before, nullptr);
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
    capacity[i] = l.bandwidth.value() *
                  efficiency_of(l, profile, pcie_fabric, topology.cluster().host.link_efficiency);
    latency[i] = l.latency.value();
  }
  if (build) {
    gpus = topology.gpu_count();
    nodes = gpus / topology.gpus_per_node();
    zone = new RouteTableZone("trainsim");  // the root zone; SimGrid's engine owns it
    zone->set_host_count(static_cast<uint64_t>(hosts_total()));
    for (int h = 0; h < hosts_total(); ++h) {
      const std::string name = h < gpus    ? fmt::format("gpu{}", h)
                               : h == gpus ? std::string("in_network")
                               : h <= gpus + nodes ? fmt::format("node{}.memory", h - gpus - 1)
                               : h <= gpus + 2 * nodes ? fmt::format("node{}.nvme", h - gpus - 1 - nodes)
                                                       : std::string("storage");
      sg4::Host* host = zone->get_iface()->create_host(name, 1.0);
      TRAINSIM_CHECK(host->get_netpoint()->id() == static_cast<unsigned long>(h), "hosts are the zone's vertices in order");
      hosts.push_back(host);
      mailboxes.push_back(sg4::Mailbox::by_name(name));
      controls.push_back(sg4::Mailbox::by_name(name + ".control"));
    }
    control_host = zone->get_iface()->create_host("control", 1.0);
    sg4::Link* control_link = zone->get_iface()->create_link("control", 1e30);
    control_link->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
    control_link->seal();
    zone->set_control_link(control_link->get_impl());
    links.assign(topo_links.size(), nullptr);
    for (const network::Link& l : topo_links) link_names.push_back(l.name);
    if (links_on_demand) return;
    for (uint32_t i = 0; i < topo_links.size(); ++i) link(i);
    seal();
    return;
  }
  for (size_t i = 0; i < links.size(); ++i) {
    if (links[i] == nullptr) continue;  // created on demand, with the capacity of its time
    links[i]->set_bandwidth(capacity[i]);
    links[i]->set_latency(latency[i]);
  }
  zone->clear();
}

simgrid::kernel::resource::StandardLinkImpl* SimgridPlatform::Impl::link(uint32_t l) {
  if (links.at(l) == nullptr) {
    TRAINSIM_CHECK(!sealed, fmt::format("SimGrid 3.32 adds no link once it has run, and link {} was not created for the "
                                        "first simulation of this process (links on demand: run one simulation per "
                                        "process)",
                                        link_names[l]));
    sg4::Link* created = zone->get_iface()->create_link(link_names[l], capacity[l]);
    created->set_latency(latency[l]);
    created->seal();
    links[l] = created;
  }
  return links[l]->get_impl();
}

void SimgridPlatform::Impl::seal() {
  if (sealed) return;
  if (!routes_complete) {
    for (uint32_t i = 0; i < links.size(); ++i) link(i);
  }
  zone->get_iface()->seal();
  sealed = true;
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

bool SimgridPlatform::built() { return process_platform != nullptr; }

void SimgridPlatform::create_links_on_demand() {
  if (process_platform == nullptr) links_on_demand = true;
}

void SimgridPlatform::declare_routes_complete() { impl_->routes_complete = true; }

SimgridPlatform::SimgridPlatform(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SimgridPlatform::~SimgridPlatform() = default;

int SimgridPlatform::gpu_count() const { return impl_->gpus; }

int SimgridPlatform::node_count() const { return impl_->nodes; }

core::BytesPerSecond SimgridPlatform::capacity(uint32_t link) const {
  return core::BytesPerSecond(impl_->capacity.at(link));
}

uint64_t SimgridPlatform::flows_simulated() const { return impl_->flows_run; }

void SimgridPlatform::set_route(int from, int to, const std::vector<uint32_t>& links, Seconds extra_latency) {
  const int hosts = impl_->hosts_total();
  TRAINSIM_CHECK(from != to && from >= 0 && to >= 0 && from < hosts && to < hosts,
                 fmt::format("route {} -> {} on a platform of {} hosts", from, to, hosts));
  RouteTableZone::Route route;
  route.latency = extra_latency.value();
  route.links.reserve(links.size());
  route.ids = links;
  for (uint32_t l : links) {
    route.links.push_back(impl_->link(l));
    route.latency += impl_->latency[l];
  }
  impl_->zone->set(static_cast<uint64_t>(from), static_cast<uint64_t>(to), std::move(route));
}

bool SimgridPlatform::has_route(int from, int to) const {
  return impl_->zone->find(static_cast<uint64_t>(from), static_cast<uint64_t>(to)) != nullptr;
}

const std::vector<uint32_t>& SimgridPlatform::route_links(int from, int to) const {
  const RouteTableZone::Route* route = impl_->zone->find(static_cast<uint64_t>(from), static_cast<uint64_t>(to));
  TRAINSIM_CHECK(route != nullptr, fmt::format("no route declared from host {} to host {}", from, to));
  return route->ids;
}

Seconds SimgridPlatform::route_latency(int from, int to) const {
  const RouteTableZone::Route* route = impl_->zone->find(static_cast<uint64_t>(from), static_cast<uint64_t>(to));
  TRAINSIM_CHECK(route != nullptr, fmt::format("no route declared from host {} to host {}", from, to));
  return Seconds(route->latency);
}

// The driver's actor: calls the driver back at the instants it asks for and after completions,
// then lets every host actor go.
void SimgridPlatform::Impl::drive(Simulation& sim) {
  std::unique_lock<sg4::Mutex> lock(*sim.mutex);
  const double origin = sg4::Engine::get_clock();
  auto now = [origin] { return sg4::Engine::get_clock() - origin; };
  try {
    double next = sim.driver->advance(now());
    while (next != FlowDriver::FINISHED) {
      double at = now();
      if (sim.completed.empty() && next > at) {
        if (next == FlowDriver::NEVER && sim.in_flight == 0) break;
        if (next == FlowDriver::NEVER) {
          sim.wake->wait(lock);
        } else {
          sim.wake->wait_until(lock, origin + next);
        }
        // Only completions notify: woken without one, the timer fired. (origin + next) - origin may
        // fall an ulp short of next; the driver must see the instant it asked for.
        at = sim.completed.empty() ? std::max(now(), next) : now();
      }
      for (size_t i = 0; i < sim.completed.size(); ++i) {
        const uint32_t id = sim.completed[i];
        std::unique_ptr<Batch> batch = std::move(sim.batches[id]);
        sim.free_ids.push_back(id);
        --sim.in_flight;
        sim.driver->batch_done(id, batch->done);
      }
      sim.completed.clear();
      next = sim.driver->advance(at);
    }
  } catch (...) {
    sim.error = std::current_exception();
  }
  for (int h = 0; h < static_cast<int>(sim.hosts.size()); ++h) {
    if (!sim.hosts[static_cast<size_t>(h)].running) continue;
    sim.hosts[static_cast<size_t>(h)].stop = true;
    hand(sim, h);
  }
  // Each dispatcher relays its hosts' last wake-ups before it reads its own stop.
  for (size_t d = 0; d < sim.dispatchers.size(); ++d) {
    if (!sim.dispatchers[d].running) continue;
    sim.dispatchers[d].stop = true;
    wake_dispatcher(sim, d);
  }
}

// Wakes the host's actor (creating it on first use) with an empty message over the control route,
// unless one is already on its way; the message leaves from the host's dispatcher.
void SimgridPlatform::Impl::hand(Simulation& sim, int host) {
  HostWork& work = sim.hosts[static_cast<size_t>(host)];
  if (!work.running) {
    work.running = true;
    sg4::Actor::create(fmt::format("host{}", host), hosts[static_cast<size_t>(host)],
                       [this, &sim, host] { serve_host(sim, host); });
  }
  if (work.woken) return;
  work.woken = true;
  const size_t d = static_cast<size_t>(host / sim.block);
  sim.dispatchers[d].hosts.push_back(host);
  wake_dispatcher(sim, d);
}

void SimgridPlatform::Impl::wake_dispatcher(Simulation& sim, size_t index) {
  Dispatcher& d = sim.dispatchers[index];
  if (!d.running) {
    d.running = true;
    sg4::Actor::create(fmt::format("dispatcher{}", index), control_host, [this, &sim, index] { dispatch(sim, index); });
  }
  if (d.woken) return;
  d.woken = true;
  relays[index]->put_init(&d, 0)->detach();
}

// A dispatcher's actor: at each wake-up, wakes the hosts handed to it since the last one.
void SimgridPlatform::Impl::dispatch(Simulation& sim, size_t index) {
  Dispatcher& d = sim.dispatchers[index];
  std::vector<int> wake;
  try {
    while (true) {
      relays[index]->get<Dispatcher>();
      d.woken = false;
      wake.swap(d.hosts);
      for (int host : wake) controls[static_cast<size_t>(host)]->put_init(&sim.hosts[static_cast<size_t>(host)], 0)->detach();
      wake.clear();
      if (d.stop) return;
    }
  } catch (const simgrid::Exception&) {
    // A comm cancelled because the simulation is being torn down after a driver error.
  }
}

// One end of a flow saw it complete. The sender's end records its time; each end collects the
// successors that leave its host and have no unfinished dependency left.
void SimgridPlatform::Impl::flow_seen(Simulation& sim, int host, uint64_t token, bool sender,
                                      std::vector<uint32_t>& ready) {
  const auto id = static_cast<uint32_t>(token >> FLOW_BITS);
  const auto f = static_cast<uint32_t>(token & FLOW_MASK);
  Batch& batch = *sim.batches[id];
  if (sender) {
    batch.done[f] = Seconds(sg4::Engine::get_clock() - batch.start);
    ++flows_run;
  }
  for (uint32_t s = batch.succ_begin[f]; s < batch.succ_begin[f + 1]; ++s) {
    const uint32_t u = batch.succ[s];
    if (batch.spec.flows[u].src == host && --batch.remaining[u] == 0) ready.push_back(u);
  }
  if (--batch.unseen == 0) {
    sim.completed.push_back(id);
    sim.wake->notify_one();
  }
}

// One host's actor: posts the receives and starts the flows it is handed, starts the successors of
// the flows it sees complete, and leaves when told to stop.
void SimgridPlatform::Impl::serve_host(Simulation& sim, int host) {
  struct Pending {
    bool sender;
    uint64_t token;  // sender: the flow; receiver: unused (the payload names the flow)
  };
  HostWork& work = sim.hosts[static_cast<size_t>(host)];
  std::vector<sg4::CommPtr> comms;
  std::vector<Pending> pending;  // parallel to comms; comms[0] is the wake-up receive
  std::deque<uint64_t*> payloads;  // of posted receives, stable addresses
  std::vector<size_t> free_payloads;
  std::vector<size_t> payload_of;  // parallel to comms: receives only
  void* control_payload = nullptr;
  std::vector<uint32_t> ready;
  auto start = [&](uint64_t token) {
    const auto id = static_cast<uint32_t>(token >> FLOW_BITS);
    const Batch& batch = *sim.batches[id];
    const uint64_t* payload = &batch.tokens[token & FLOW_MASK];
    const FlowSpec& flow = batch.spec.flows[token & FLOW_MASK];
    const auto bytes = static_cast<uint64_t>(std::llround(std::max(flow.bytes, 0.0)));
    comms.push_back(mailboxes[static_cast<size_t>(flow.dst)]->put_async(const_cast<uint64_t*>(payload), bytes));
    pending.push_back({true, token});
    payload_of.push_back(0);
  };
  try {
    comms.push_back(controls[static_cast<size_t>(host)]->get_async<void>(&control_payload));
    pending.push_back({false, 0});
    payload_of.push_back(0);
    while (true) {
      const auto i = static_cast<size_t>(sg4::Comm::wait_any(comms));
      const Pending done = pending[i];
      const size_t slot = payload_of[i];
      const bool control = i == 0;
      if (!control) {
        comms[i] = std::move(comms.back());
        comms.pop_back();
        pending[i] = pending.back();
        pending.pop_back();
        payload_of[i] = payload_of.back();
        payload_of.pop_back();
      }
      if (control) {
        work.woken = false;
        if (work.stop) return;
        comms[0] = controls[static_cast<size_t>(host)]->get_async<void>(&control_payload);
        for (; work.to_receive > 0; --work.to_receive) {
          size_t k = payloads.size();
          if (free_payloads.empty()) {
            payloads.push_back(nullptr);
          } else {
            k = free_payloads.back();
            free_payloads.pop_back();
          }
          comms.push_back(mailboxes[static_cast<size_t>(host)]->get_async<uint64_t>(&payloads[k]));
          pending.push_back({false, 0});
          payload_of.push_back(k);
        }
        for (uint64_t token : work.to_start) start(token);
        work.to_start.clear();
        continue;
      }
      const uint64_t token = done.sender ? done.token : *payloads[slot];
      if (!done.sender) free_payloads.push_back(slot);
      ready.clear();
      flow_seen(sim, host, token, done.sender, ready);
      for (uint32_t u : ready) start((token & ~FLOW_MASK) | u);
    }
  } catch (const simgrid::Exception&) {
    // A comm cancelled because the simulation is being torn down after a driver error.
  }
}

void SimgridPlatform::simulate(FlowDriver& driver) {
  TRAINSIM_CHECK(impl_->simulation == nullptr, "simulate() called from inside a simulation");
  Simulation sim;
  sim.driver = &driver;
  const size_t hosts = static_cast<size_t>(impl_->hosts_total());
  sim.hosts.resize(hosts);
  sim.block = std::max(1, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(hosts)))));
  sim.dispatchers.resize((hosts + static_cast<size_t>(sim.block) - 1) / static_cast<size_t>(sim.block));
  while (impl_->relays.size() < sim.dispatchers.size()) {
    impl_->relays.push_back(sg4::Mailbox::by_name(fmt::format("dispatcher{}", impl_->relays.size())));
  }
  impl_->seal();
  impl_->simulation = &sim;
  // SimGrid installs its own SIGINT handler (print the actors' status, exit 1) when the Engine is
  // built and may again when it runs: the driver puts the process's back once the engine runs, so
  // that Ctrl-C does what the command set up (the default: end the process; `run`: stop with what
  // is known, SimulationOptions::stop_requested).
  struct sigaction before {};
  sigaction(SIGINT, nullptr, &before);
  sg4::Actor::create("driver", impl_->control_host, [this, &sim, before] {
    sigaction(SIGINT, &before, nullptr);
    impl_->drive(sim);
  });
  sg4::Engine::get_instance()->run();
  impl_->simulation = nullptr;
  if (sim.error) std::rethrow_exception(sim.error);
}

uint32_t SimgridPlatform::start(FlowBatch spec) {
  TRAINSIM_CHECK(impl_->simulation != nullptr, "start() called outside a simulation");
  Simulation& sim = *impl_->simulation;
  const size_t n = spec.flows.size();
  TRAINSIM_CHECK(n <= FLOW_MASK, fmt::format("a batch of {} flows", n));
  auto batch = std::make_unique<Batch>();
  Batch& b = *batch;
  b.start = sg4::Engine::get_clock();
  b.remaining.assign(n, 0);
  b.succ_begin.assign(n + 1, 0);
  b.done.assign(n, Seconds(0));
  b.unseen = 2 * n;
  for (uint32_t f = 0; f < n; ++f) {
    const FlowSpec& flow = spec.flows[f];
    TRAINSIM_CHECK(has_route(flow.src, flow.dst), fmt::format("flow {} has no route from {} to {}", f, flow.src, flow.dst));
    b.remaining[f] = flow.dep_count;
    for (uint32_t d = flow.dep_begin; d < flow.dep_begin + flow.dep_count; ++d) {
      const uint32_t dep = spec.deps.at(d);
      TRAINSIM_CHECK(dep < n && dep != f, fmt::format("flow {} depends on flow {} of {}", f, dep, n));
      const FlowSpec& before = spec.flows[dep];
      TRAINSIM_CHECK(before.src == flow.src || before.dst == flow.src,
                     fmt::format("flow {} ({} -> {}) depends on flow {} ({} -> {}), which does not touch its source",
                                 f, flow.src, flow.dst, dep, before.src, before.dst));
      ++b.succ_begin[dep + 1];
    }
  }
  for (size_t f = 0; f < n; ++f) b.succ_begin[f + 1] += b.succ_begin[f];
  b.succ.resize(b.succ_begin[n]);
  std::vector<uint32_t> fill(b.succ_begin.begin(), b.succ_begin.end() - 1);
  for (uint32_t f = 0; f < n; ++f) {
    const FlowSpec& flow = spec.flows[f];
    for (uint32_t d = flow.dep_begin; d < flow.dep_begin + flow.dep_count; ++d) b.succ[fill[spec.deps[d]]++] = f;
  }
  check_acyclic(b);

  uint32_t id = 0;
  if (sim.free_ids.empty()) {
    id = static_cast<uint32_t>(sim.batches.size());
    sim.batches.emplace_back();
  } else {
    id = sim.free_ids.back();
    sim.free_ids.pop_back();
  }
  b.tokens.resize(n);
  for (uint32_t f = 0; f < n; ++f) {
    b.tokens[f] = (uint64_t{id} << FLOW_BITS) | f;
    const FlowSpec& flow = spec.flows[f];
    ++sim.hosts[static_cast<size_t>(flow.dst)].to_receive;
    if (b.remaining[f] == 0) sim.hosts[static_cast<size_t>(flow.src)].to_start.push_back(b.tokens[f]);
  }
  for (const FlowSpec& flow : spec.flows) {
    impl_->hand(sim, flow.src);
    impl_->hand(sim, flow.dst);
  }
  b.spec = std::move(spec);
  sim.batches[id] = std::move(batch);
  ++sim.in_flight;
  if (n == 0) sim.completed.push_back(id);
  return id;
}

namespace {

// Starts one batch and waits for it.
class SingleBatch final : public FlowDriver {
 public:
  SingleBatch(SimgridPlatform& platform, const FlowBatch& batch) : platform_(platform), batch_(batch) {}

  double advance(double) override {
    if (finished_) return FINISHED;
    if (!started_) platform_.start(batch_);
    started_ = true;
    return NEVER;
  }
  void batch_done(uint32_t, const std::vector<Seconds>& done) override {
    done_ = done;
    finished_ = true;
  }
  std::vector<Seconds> take() { return std::move(done_); }

 private:
  SimgridPlatform& platform_;
  const FlowBatch& batch_;
  bool started_ = false;
  bool finished_ = false;
  std::vector<Seconds> done_;
};

}  // namespace

std::vector<Seconds> SimgridPlatform::run(const FlowBatch& batch) {
  SingleBatch driver(*this, batch);
  simulate(driver);
  return driver.take();
}

}  // namespace trainsim::engine

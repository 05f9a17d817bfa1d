#include "sim/engine/node_folding.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace trainsim::engine {

bool folding_allowed(const SimulationOptions& options, const network::ClusterConfig& cluster, bool has_fabric) {
  if (options.node_symmetry == NodeSymmetry::OFF || !options.use_symmetry || options.fidelity != Fidelity::FLOW) {
    return false;
  }
  if ((!options.timeline_ranks.empty() && options.timeline_flows) || cluster.intra_node.nvls ||
      cluster.network.in_network_reduction || cluster.storage.has_value()) {
    return false;
  }
  return !(options.node_symmetry == NodeSymmetry::APPROXIMATE && has_fabric && cluster.network.oversubscription > 1.0);
}

FabricUse::FabricUse(const network::Topology& topology)
    : topology_(topology), owner_(topology.links().size(), -1) {}

void FabricUse::note(const std::vector<uint32_t>& route) {
  const std::vector<network::Link>& links = topology_.links();
  // The route's NIC links: the first is the source's up link, the last the destination's down link.
  int64_t up = -1, down = -1;
  for (uint32_t l : route) {
    if (links[l].link_class != network::LinkClass::NIC) continue;
    if (up < 0) {
      up = l;
    } else {
      down = l;
    }
  }
  for (uint32_t l : route) {
    if (links[l].link_class != network::LinkClass::FABRIC) continue;
    network::Topology::TreeLink t;
    const int64_t nic = topology_.tree_link(l, t) && !t.up ? down : up;
    if (nic < 0) {
      dominated_ = false;
      continue;
    }
    if (owner_[l] < 0) owner_[l] = nic;
    if (owner_[l] != nic) dominated_ = false;
  }
}

NodeFolding::NodeFolding(const core::Workload& workload, const RankTable& table, const network::Topology& topology,
                         NodeSymmetry mode, bool fabric_dominated)
    : w_(workload), topology_(topology) {
  const network::TopologyKind kind = topology.cluster().network.topology;
  const bool fabric = topology.count(network::LinkClass::FABRIC) > 0;
  if (fabric && kind != network::TopologyKind::FAT_TREE && kind != network::TopologyKind::RAIL_OPTIMIZED) return;
  trees_ = fabric && !fabric_dominated;
  endpoint_nodes_ = kind == network::TopologyKind::RAIL_OPTIMIZED ? 1 : topology.cluster().network.nics_per_node;
  const int g = topology.gpus_per_node();
  for (size_t i = 0; i < core::AXIS_COUNT; ++i) {
    const core::Axis axis = static_cast<core::Axis>(i);
    if (!table.symmetric(axis) || table.period(axis) >= workload.layout.size(axis)) continue;
    const int step = workload.layout.peer(0, axis, table.period(axis));  // the period's shift, in ranks
    if (step % g != 0) continue;
    Axis a{axis, table.period(axis), step / g, workload.layout.size(axis) / table.period(axis)};
    const int64_t m = trees_ && mode == NodeSymmetry::EXACT
                          ? tree_preserving_multiple(a.unit * endpoint_nodes_, a.radix, topology.tree_arity(),
                                                     topology.tree_levels())
                          : 1;
    if (m == a.radix) continue;
    a.period *= static_cast<int>(m);
    a.unit *= m;
    a.radix /= m;
    axes_.push_back(a);
  }
  if (axes_.empty()) return;
  // Every GPU of a node goes where the node's representative is, at its own place, and the field
  // arithmetic names that node.
  for (int node = 0; node * g < topology.gpu_count(); ++node) {
    const int home = topology.node_of(shifted(node * g, node * g));
    for (int r = node * g; r < (node + 1) * g; ++r) {
      const int image = shifted(r, r);
      if (topology.node_of(image) != home || image % g != r % g || representative_node(node) != home) {
        axes_.clear();
        return;
      }
    }
  }
  if (!index_node_links()) axes_.clear();
}

int64_t NodeFolding::tree_preserving_multiple(int64_t unit, int64_t radix, int64_t arity, int levels) {
  for (int64_t m = 1; m < radix; ++m) {
    if (radix % m != 0) continue;
    const int64_t step = unit * m;     // what one shift adds to an endpoint number
    const int64_t span = unit * radix;  // the field's end: shifts wrap there
    // The digit of step's place: arity^i <= step < arity^(i+1), the top digit taking the rest.
    int i = 0;
    int64_t place = 1;
    while (i < levels - 1 && place * arity <= step) {
      place *= arity;
      ++i;
    }
    // The shifted field lies inside digit i: it starts on a multiple of the digit's place and ends
    // on a divisor of the next (or digit i is the top one, which holds everything above).
    if (step % place == 0 && (i == levels - 1 || (place * arity) % span == 0)) return m;
  }
  return radix;
}

int NodeFolding::shifted(int rank, int by) const {
  for (const Axis& a : axes_) {
    const int coord = w_.layout.coord(by, a.axis);
    rank = w_.layout.peer(rank, a.axis, coord % a.period - coord);
  }
  return rank;
}

int64_t NodeFolding::representative_node(int64_t node) const {
  for (const Axis& a : axes_) node -= (node / a.unit) % a.radix * a.unit;
  return node;
}

int64_t NodeFolding::representative_endpoint(int64_t endpoint) const {
  return representative_node(endpoint / endpoint_nodes_) * endpoint_nodes_ + endpoint % endpoint_nodes_;
}

uint32_t NodeFolding::link(uint32_t link) const {
  const int32_t node = link_node_[link];
  if (node >= 0) {
    return node_links_[static_cast<size_t>(representative_node(node)) * links_per_node_ + link_slot_[link]];
  }
  network::Topology::TreeLink t;
  if (trees_ && topology_.tree_link(link, t)) {
    t.digits = representative_endpoint(t.digits);
    return topology_.tree_link_id(t);
  }
  return link;
}

// Numbers every node's own links (NVLink, PCIe, NIC, host) in link order, so that the k-th link of
// one node is the k-th of any other; false when nodes differ in them.
bool NodeFolding::index_node_links() {
  const std::vector<network::Link>& links = topology_.links();
  const int nodes = topology_.gpu_count() / topology_.gpus_per_node();
  link_node_.assign(links.size(), -1);
  link_slot_.assign(links.size(), 0);
  std::vector<uint32_t> count(static_cast<size_t>(nodes), 0);
  for (size_t l = 0; l < links.size(); ++l) {
    const network::LinkClass c = links[l].link_class;
    if (c == network::LinkClass::FABRIC || c == network::LinkClass::STORAGE) continue;
    int node = -1;
    if (std::sscanf(links[l].name.c_str(), "node%d.", &node) != 1 || node < 0 || node >= nodes) return false;
    link_node_[l] = node;
    link_slot_[l] = count[static_cast<size_t>(node)]++;
  }
  links_per_node_ = count.front();
  if (std::any_of(count.begin(), count.end(), [&](uint32_t c) { return c != links_per_node_; })) return false;
  node_links_.assign(static_cast<size_t>(nodes) * links_per_node_, 0);
  for (size_t l = 0; l < links.size(); ++l) {
    if (link_node_[l] < 0) continue;
    node_links_[static_cast<size_t>(link_node_[l]) * links_per_node_ + link_slot_[l]] = static_cast<uint32_t>(l);
  }
  return true;
}

}  // namespace trainsim::engine

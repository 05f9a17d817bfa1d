// The switch-to-switch links of the inter-node topologies (topology.hpp describes their shapes).
//
// Fat-tree link ids: index_[tree * (levels - 1) + (j - 1)] is the first link between levels j and
// j + 1 of a tree; then per level-j switch s (s = subtree * p^(j-1) + u, the subtree being
// endpoint / p^j) and per up port q: the up link at 2 * (s * p + q), its down link right after.
// Up port q of (subtree w, u) leads to level j + 1 switch (w / p, u + q * p^(j-1)).
// With adaptive routing the links between levels j and j + 1 are pooled per level-j subtree w
// (endpoints w * p^j ..): its up link at 2 * w, its down link right after, each of the bandwidth of
// the p^j links it stands for.
// Dragonfly: local links per group g (all groups but the last have leaves_per_group leaves) at
// g * a * (a - 1) + i * (size - 1) + slot(j); global links at global_first + x * (groups - 1) + slot(y),
// slot(k) = k minus one when k is above the own index.
// Torus: per node and per dimension of size > 1, the + link then the - link.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "network/topology.hpp"
#include "sim/core/error.hpp"

namespace trainsim::network {
namespace {

int64_t power(int64_t base, int exponent) {
  int64_t r = 1;
  for (int i = 0; i < exponent; ++i) r *= base;
  return r;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Index of `k` among 0..n-1 without `self`.
int64_t slot(int64_t k, int64_t self) { return k < self ? k : k - 1; }

}  // namespace

void Topology::build_fat_trees() {
  const InterNode& net = cluster_.network;
  const bool per_rail = net.topology == TopologyKind::RAIL_OPTIMIZED;
  const int trees = per_rail ? shape_.nics_per_node : 1;
  shape_.arity = net.radix / 2;
  shape_.endpoints = per_rail ? cluster_.nodes : int64_t{cluster_.nodes} * shape_.nics_per_node;
  shape_.levels = net.levels > 0 ? net.levels : fat_tree_levels(shape_.endpoints, net.radix);
  const int64_t p = shape_.arity;
  const core::BytesPerSecond bandwidth = cluster_.fabric_link_bandwidth() / net.oversubscription;
  const bool pooled = net.routing == Routing::ADAPTIVE;
  for (int tree = 0; tree < trees; ++tree) {
    const std::string prefix = per_rail ? fmt::format("rail{}.", tree) : std::string();
    for (int j = 1; j < shape_.levels; ++j) {
      index_.push_back(static_cast<uint32_t>(links_.size()));
      if (pooled) {
        // Perfect spreading: a subtree's traffic up (or down) shares all its p^j links evenly.
        const int64_t links = power(p, j);
        for (int64_t w = 0; w < ceil_div(shape_.endpoints, links); ++w) {
          for (const char* dir : {"up", "down"}) {
            add_link(fmt::format("{}l{}w{}.{}", prefix, j, w, dir), LinkClass::FABRIC,
                     core::BytesPerSecond(bandwidth.value() * static_cast<double>(links)), core::Seconds(0));
          }
        }
        continue;
      }
      const int64_t below = power(p, j - 1);
      const int64_t switches = ceil_div(shape_.endpoints, power(p, j)) * below;
      for (int64_t s = 0; s < switches; ++s) {
        const int64_t w = s / below;
        const int64_t u = s % below;
        for (int64_t q = 0; q < p; ++q) {
          const int64_t upper = (w / p) * below * p + u + q * below;
          for (const char* dir : {"up", "down"}) {
            add_link(fmt::format("{}l{}s{}.l{}s{}.{}", prefix, j, s, j + 1, upper, dir), LinkClass::FABRIC, bandwidth,
                     core::Seconds(0));
          }
        }
      }
    }
  }
}

void Topology::fat_tree_route(int64_t from, int64_t to, int tree, std::vector<uint32_t>& out) const {
  const int64_t p = shape_.arity;
  const size_t level_index = static_cast<size_t>(tree) * static_cast<size_t>(shape_.levels - 1);
  // Lowest level whose subtree holds both endpoints.
  int top = 1;
  for (int64_t span = p; from / span != to / span; span *= p) ++top;
  if (cluster_.network.routing == Routing::ADAPTIVE) {
    int64_t span = p;  // p^j
    for (int j = 1; j < top; ++j, span *= p) {
      out.push_back(index_[level_index + static_cast<size_t>(j - 1)] + static_cast<uint32_t>(2 * (from / span)));
    }
    for (int j = top - 1; j >= 1; --j) {
      span /= p;
      out.push_back(index_[level_index + static_cast<size_t>(j - 1)] + static_cast<uint32_t>(2 * (to / span)) + 1);
    }
    return;
  }
  int64_t below = 1;  // p^(j-1)
  for (int j = 1; j < top; ++j, below *= p) {
    const int64_t q = (to / below) % p;
    const int64_t s = (from / (below * p)) * below + to % below;
    out.push_back(index_[level_index + static_cast<size_t>(j - 1)] + static_cast<uint32_t>(2 * (s * p + q)));
  }
  for (int j = top - 1; j >= 1; --j) {
    below /= p;
    const int64_t q = (to / below) % p;
    const int64_t s = (to / (below * p)) * below + to % below;
    out.push_back(index_[level_index + static_cast<size_t>(j - 1)] + static_cast<uint32_t>(2 * (s * p + q)) + 1);
  }
}

bool Topology::tree_link(uint32_t link, TreeLink& out) const {
  if (index_.empty() || link < index_.front() || link >= shape_.gpu_host_first) return false;
  const size_t block = static_cast<size_t>(std::upper_bound(index_.begin(), index_.end(), link) - index_.begin()) - 1;
  const int per_tree = shape_.levels - 1;
  out.tree = static_cast<int>(block / static_cast<size_t>(per_tree));
  out.level = static_cast<int>(block % static_cast<size_t>(per_tree)) + 1;
  const int64_t offset = link - index_[block];
  out.up = offset % 2 == 0;
  const int64_t p = shape_.arity;
  if (cluster_.network.routing == Routing::ADAPTIVE) {
    out.digits = offset / 2 * power(p, out.level);  // the subtree's first endpoint
    return true;
  }
  const int64_t below = power(p, out.level - 1);
  const int64_t s = offset / 2 / p;
  const int64_t q = offset / 2 % p;
  out.digits = (s / below) * below * p + q * below + s % below;
  return true;
}

uint32_t Topology::tree_link_id(const TreeLink& l) const {
  const int64_t p = shape_.arity;
  if (cluster_.network.routing == Routing::ADAPTIVE) {
    const size_t block = static_cast<size_t>(l.tree) * static_cast<size_t>(shape_.levels - 1) + static_cast<size_t>(l.level - 1);
    TRAINSIM_CHECK(block < index_.size(), fmt::format("no tree link at level {} of tree {}", l.level, l.tree));
    return index_[block] + static_cast<uint32_t>(2 * (l.digits / power(p, l.level))) + (l.up ? 0 : 1);
  }
  const int64_t below = power(p, l.level - 1);
  const int64_t s = (l.digits / (below * p)) * below + l.digits % below;
  const int64_t q = (l.digits / below) % p;
  const size_t block = static_cast<size_t>(l.tree) * static_cast<size_t>(shape_.levels - 1) + static_cast<size_t>(l.level - 1);
  TRAINSIM_CHECK(block < index_.size(), fmt::format("no tree link at level {} of tree {}", l.level, l.tree));
  return index_[block] + static_cast<uint32_t>(2 * (s * p + q)) + (l.up ? 0 : 1);
}

void Topology::build_dragonfly() {
  const InterNode& net = cluster_.network;
  shape_.arity = net.radix / 2;
  shape_.endpoints = int64_t{cluster_.nodes} * shape_.nics_per_node;
  const int64_t leaves = ceil_div(shape_.endpoints, shape_.arity);
  const int64_t wanted = net.dragonfly_groups > 0
                             ? std::min<int64_t>(net.dragonfly_groups, leaves)
                             : std::max<int64_t>(1, std::llround(std::sqrt(static_cast<double>(leaves))));
  const int64_t a = ceil_div(leaves, wanted);
  shape_.leaves_per_group = a;
  shape_.groups = ceil_div(leaves, a);
  const core::BytesPerSecond bandwidth = cluster_.fabric_link_bandwidth() / net.oversubscription;
  for (int64_t g = 0; g < shape_.groups; ++g) {
    const int64_t size = std::min(a, leaves - g * a);
    for (int64_t i = 0; i < size; ++i) {
      for (int64_t j = 0; j < size; ++j) {
        if (i != j) {
          add_link(fmt::format("group{}.leaf{}.leaf{}", g, i, j), LinkClass::FABRIC, bandwidth, core::Seconds(0));
        }
      }
    }
  }
  shape_.global_first = static_cast<uint32_t>(links_.size());
  for (int64_t x = 0; x < shape_.groups; ++x) {
    for (int64_t y = 0; y < shape_.groups; ++y) {
      if (x != y) add_link(fmt::format("group{}.group{}", x, y), LinkClass::FABRIC, bandwidth, core::Seconds(0));
    }
  }
}

void Topology::dragonfly_route(int64_t from, int64_t to, std::vector<uint32_t>& out) const {
  const int64_t a = shape_.leaves_per_group;
  const int64_t leaves = ceil_div(shape_.endpoints, shape_.arity);
  const auto group_size = [&](int64_t g) { return std::min(a, leaves - g * a); };
  const auto local = [&](int64_t g, int64_t i, int64_t j) {
    out.push_back(shape_.fabric_first + static_cast<uint32_t>(g * a * (a - 1) + i * (group_size(g) - 1) + slot(j, i)));
  };
  // The leaf of group x that holds its global link to group y.
  const auto gateway = [&](int64_t x, int64_t y) { return slot(y, x) % group_size(x); };
  const int64_t s = from / shape_.arity;
  const int64_t d = to / shape_.arity;
  const int64_t x = s / a;
  const int64_t y = d / a;
  if (s == d) return;
  if (x == y) {
    local(x, s % a, d % a);
    return;
  }
  const int64_t out_leaf = gateway(x, y);
  const int64_t in_leaf = gateway(y, x);
  if (s % a != out_leaf) local(x, s % a, out_leaf);
  out.push_back(shape_.global_first + static_cast<uint32_t>(x * (shape_.groups - 1) + slot(y, x)));
  if (in_leaf != d % a) local(y, in_leaf, d % a);
}

void Topology::build_torus() {
  const std::vector<int> dims =
      cluster_.network.torus_dims.empty() ? torus_dimensions(cluster_.nodes) : cluster_.network.torus_dims;
  for (int d : dims) {
    if (d > 1) shape_.torus_dims.push_back(d);
  }
  static constexpr char AXIS_NAMES[] = "xyz";
  for (int node = 0; node < cluster_.nodes; ++node) {
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] <= 1) continue;
      for (const char* dir : {"+", "-"}) {
        add_link(fmt::format("node{}.torus.{}{}", node, AXIS_NAMES[k], dir), LinkClass::FABRIC,
                 cluster_.fabric_link_bandwidth(), core::Seconds(0));
      }
    }
  }
}

void Topology::torus_route(int from_node, int to_node, std::vector<uint32_t>& out) const {
  const std::vector<int>& dims = shape_.torus_dims;
  const uint32_t per_node = 2 * static_cast<uint32_t>(dims.size());
  int node = from_node;
  int stride = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    const int size = dims[k];
    const int here = (node / stride) % size;
    const int there = (to_node / stride) % size;
    const int ahead = ((there - here) % size + size) % size;
    const bool positive = 2 * ahead <= size;
    const int hops = positive ? ahead : size - ahead;
    int coord = here;
    for (int h = 0; h < hops; ++h) {
      out.push_back(shape_.fabric_first + static_cast<uint32_t>(node) * per_node + 2 * static_cast<uint32_t>(k) +
                    (positive ? 0 : 1));
      const int next = positive ? (coord + 1) % size : (coord + size - 1) % size;
      node += (next - coord) * stride;
      coord = next;
    }
    stride *= size;
  }
}

}  // namespace trainsim::network

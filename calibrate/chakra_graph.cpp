#include "calibrate/chakra_graph.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

using core::InputError;

std::string where(const core::chakra::Node& n) { return fmt::format("node {} ({})", n.id(), n.name()); }

[[noreturn]] void report_cycle(const core::ChakraTrace& t, const Graph& g, const std::vector<uint32_t>& waiting) {
  // Every node left waits for some other node left: walk back through them until one repeats.
  uint32_t v = 0;
  while (waiting[v] == 0) ++v;
  std::vector<uint32_t> path;
  std::vector<int> seen(t.nodes.size(), -1);
  while (seen[v] < 0) {
    seen[v] = static_cast<int>(path.size());
    path.push_back(v);
    v = *std::find_if(g.deps[v].begin(), g.deps[v].end(), [&](uint32_t d) { return waiting[d] > 0; });
  }
  std::vector<std::string> ids;
  for (size_t i = static_cast<size_t>(seen[v]); i < path.size(); ++i) ids.push_back(fmt::format("node {}", t.nodes[path[i]].id()));
  ids.push_back(fmt::format("node {}", t.nodes[v].id()));
  throw InputError(t.path, where(t.nodes[v]),
                   fmt::format("the data dependencies form a cycle ({}: each depends on the next); a trace must be "
                               "a directed acyclic graph",
                               fmt::join(ids, " -> ")));
}

}  // namespace

Graph dependency_order(const core::ChakraTrace& t) {
  const size_t n = t.nodes.size();
  std::unordered_map<uint64_t, uint32_t> position;
  position.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const auto [it, inserted] = position.try_emplace(t.nodes[i].id(), i);
    if (!inserted) {
      throw InputError(t.path, where(t.nodes[i]),
                       fmt::format("the id is used twice (nodes {} and {} of the file): node ids must be unique", it->second + 1, i + 1));
    }
  }
  Graph g;
  g.deps.resize(n);
  std::vector<uint32_t> waiting(n, 0);
  std::vector<std::vector<uint32_t>> dependents(n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint64_t d : t.nodes[i].data_deps()) {
      const auto it = position.find(d);
      if (it == position.end()) {
        throw InputError(t.path, where(t.nodes[i]), fmt::format("depends on node {} (data_deps), which the file does not hold", d));
      }
      g.deps[i].push_back(it->second);
    }
    std::sort(g.deps[i].begin(), g.deps[i].end());
    g.deps[i].erase(std::unique(g.deps[i].begin(), g.deps[i].end()), g.deps[i].end());
    waiting[i] = static_cast<uint32_t>(g.deps[i].size());
    for (uint32_t d : g.deps[i]) dependents[d].push_back(i);
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push(i);
  }
  g.order.reserve(n);
  while (!ready.empty()) {
    const uint32_t v = ready.top();
    ready.pop();
    g.order.push_back(v);
    for (uint32_t c : dependents[v]) {
      if (--waiting[c] == 0) ready.push(c);
    }
  }
  if (g.order.size() < n) report_cycle(t, g, waiting);
  return g;
}

}  // namespace trainsim::calibrate

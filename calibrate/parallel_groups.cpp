#include "calibrate/parallel_groups.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

using core::Axis;

// Stride and size of a sorted rank set that is an arithmetic progression; false otherwise.
bool progression(const std::vector<int>& g, int& stride) {
  stride = g.size() > 1 ? g[1] - g[0] : 1;
  for (size_t i = 1; i < g.size(); ++i) {
    if (g[i] - g[i - 1] != stride) return false;
  }
  return stride > 0;
}

}  // namespace

InferredLayout infer_layout(const std::vector<CommunicatorRanks>& communicators, int world, const std::string& world_file) {
  std::set<std::pair<int, int>> shapes;  // (stride, size)
  for (const CommunicatorRanks& c : communicators) {
    int stride = 1;
    if (c.ranks.size() < 2) continue;
    if (!progression(c.ranks, stride)) {
      throw core::InputError(c.file, "",
                             fmt::format("communicator of ranks {} is not a parallel group (its ranks are not "
                                         "evenly spaced)", fmt::join(c.ranks, ",")));
    }
    shapes.emplace(stride, static_cast<int>(c.ranks.size()));
  }
  InferredLayout out;
  int expected = 1;
  for (auto [stride, size] : shapes) {
    if (stride != expected || world % (expected * size) != 0) continue;
    out.axes.push_back({stride, size, true});
    expected *= size;
  }
  if (world % expected != 0 || out.axes.size() > 4) {
    throw core::InputError(world_file, "",
                           fmt::format("the communicators do not factor the world of {} ranks into parallel axes", world));
  }
  if (expected < world) out.axes.push_back({expected, world / expected, false});
  std::array<int, core::AXIS_COUNT> sizes{1, 1, 1, 1, 1};
  const std::array<Axis, 3> faster{Axis::TENSOR, Axis::CONTEXT, Axis::EXPERT};
  const size_t with_collectives = static_cast<size_t>(std::count_if(out.axes.begin(), out.axes.end(), [](const FoundAxis& a) { return a.has_collectives; }));
  for (size_t i = 0; i < out.axes.size(); ++i) {
    Axis name = Axis::PIPELINE;
    if (i + 1 == with_collectives) {
      name = Axis::DATA;
    } else if (i + 1 < with_collectives) {
      name = faster[i];
    }
    out.names.push_back(name);
    sizes[static_cast<size_t>(name)] = out.axes[i].size;
  }
  out.layout = core::ParallelLayout(sizes);
  return out;
}

// The group kind of a communicator: the consecutive found axes it spans.
core::GroupKind group_kind_of(const InferredLayout& l, const std::vector<int>& group, const std::string& file) {
  int stride = 1;
  progression(group, stride);
  size_t first = 0;
  while (first < l.axes.size() && l.axes[first].stride != stride) ++first;
  int product = 1;
  core::GroupKind kind;
  for (size_t i = first; i < l.axes.size() && product < static_cast<int>(group.size()); ++i) {
    product *= l.axes[i].size;
    if (kind.name.empty()) {
      kind.axis = l.names[i];
    } else {
      kind.extra_axes.push_back(kind.axis);
      kind.axis = l.names[i];
    }
    kind.name = kind.name.empty() ? std::string(core::to_string(l.names[i]))
                                  : fmt::format("{}+{}", kind.name, core::to_string(l.names[i]));
  }
  // The report attributes a group's traffic to its axis: DATA when the group spans it.
  auto data = std::find(kind.extra_axes.begin(), kind.extra_axes.end(), Axis::DATA);
  if (data != kind.extra_axes.end()) std::swap(*data, kind.axis);
  if (product != static_cast<int>(group.size()) || kind.ranks_of(l.layout, group.front()) != group) {
    throw core::InputError(file, "", fmt::format("communicator of ranks {} is not a group of the parallel layout "
                                                 "the communicators imply", fmt::join(group, ",")));
  }
  return kind;
}


}  // namespace trainsim::calibrate

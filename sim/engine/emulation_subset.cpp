#include "sim/engine/emulation_subset.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::engine {
namespace {

constexpr const char* FORMS = "\"all\", \"node:N\" or \"stage:S\"";

// The integer after `prefix` in `spec`, or -1 when `spec` is not prefix + digits.
int number_after(const std::string& spec, const std::string& prefix) {
  if (spec.rfind(prefix, 0) != 0 || spec.size() == prefix.size()) return -1;
  int n = -1;
  const char* first = spec.data() + prefix.size();
  const char* last = spec.data() + spec.size();
  const auto [end, ec] = std::from_chars(first, last, n);
  return ec == std::errc() && end == last ? n : -1;
}

}  // namespace

EmulationSubset::EmulationSubset(const core::ParallelLayout& layout)
    : EmulationSubset(layout, {}, layout.sizes(), "all") {}

EmulationSubset::EmulationSubset(const core::ParallelLayout& layout, std::array<int, core::AXIS_COUNT> lo,
                                 std::array<int, core::AXIS_COUNT> span, std::string spec)
    : layout_(layout), lo_(lo), span_(span), spec_(std::move(spec)) {
  for (int r = 0; r < layout_.world_size(); ++r) {
    if (present(r)) ranks_.push_back(r);
  }
}

EmulationSubset EmulationSubset::parse(const std::string& spec, const core::ParallelLayout& layout,
                                       const network::ClusterConfig& cluster) {
  TRAINSIM_CHECK(layout.world_size() == cluster.world_size(), "the layout fills the cluster");
  if (spec == "all") return EmulationSubset(layout);
  const int stages = layout.size(core::Axis::PIPELINE);
  if (const int s = number_after(spec, "stage:"); spec.rfind("stage:", 0) == 0) {
    if (s < 0 || s >= stages) {
      throw core::InputError("--ranks", "",
                             fmt::format("expected a pipeline stage 0..{} after \"stage:\", found \"{}\"", stages - 1, spec));
    }
    std::array<int, core::AXIS_COUNT> lo{}, span = layout.sizes();
    lo[static_cast<size_t>(core::Axis::PIPELINE)] = s;
    span[static_cast<size_t>(core::Axis::PIPELINE)] = 1;
    return EmulationSubset(layout, lo, span, spec);
  }
  if (const int n = number_after(spec, "node:"); spec.rfind("node:", 0) == 0) {
    if (n < 0 || n >= cluster.nodes) {
      throw core::InputError("--ranks", "",
                             fmt::format("expected a node 0..{} after \"node:\", found \"{}\"", cluster.nodes - 1, spec));
    }
    // The node's ranks are a contiguous range; it is a box when its coordinates are.
    const int first = n * cluster.gpus_per_node;
    std::array<int, core::AXIS_COUNT> lo = layout.coords(first), hi = lo;
    for (int r = first; r < first + cluster.gpus_per_node; ++r) {
      const std::array<int, core::AXIS_COUNT> c = layout.coords(r);
      for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
        lo[a] = std::min(lo[a], c[a]);
        hi[a] = std::max(hi[a], c[a]);
      }
    }
    std::array<int, core::AXIS_COUNT> span{};
    int volume = 1;
    for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
      span[a] = hi[a] - lo[a] + 1;
      volume *= span[a];
    }
    if (volume != cluster.gpus_per_node) {
      throw core::InputError(
          "--ranks", "",
          fmt::format("the {} ranks of node {} do not form a box of the parallel layout (tensor {} x context {} x "
                      "expert {} x data {} x pipeline {}, filled fastest first): a node boundary splits an axis; "
                      "use stage:S or all",
                      cluster.gpus_per_node, n, layout.size(core::Axis::TENSOR), layout.size(core::Axis::CONTEXT),
                      layout.size(core::Axis::EXPERT), layout.size(core::Axis::DATA),
                      layout.size(core::Axis::PIPELINE)));
    }
    return EmulationSubset(layout, lo, span, spec);
  }
  throw core::InputError("--ranks", "", fmt::format("expected {}, found \"{}\"", FORMS, spec));
}

bool EmulationSubset::present(int rank) const {
  for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
    const int c = layout_.coord(rank, static_cast<core::Axis>(a));
    if (c < lo_[a] || c >= lo_[a] + span_[a]) return false;
  }
  return true;
}

int EmulationSubset::mpi_rank_of(int rank) const {
  const auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank);
  return it != ranks_.end() && *it == rank ? static_cast<int>(it - ranks_.begin()) : -1;
}

int EmulationSubset::stand_in(const core::Workload& workload, int rank) const {
  int out = rank;
  for (size_t a = 0; a < core::AXIS_COUNT; ++a) {
    const auto axis = static_cast<core::Axis>(a);
    const int c = layout_.coord(rank, axis);
    if (c >= lo_[a] && c < lo_[a] + span_[a]) continue;
    if (!workload.symmetric_axes[a] || layout_.size(axis) % span_[a] != 0) return -1;
    // lo + ((c - lo) mod span): a translate by a multiple of span.
    const int inside = lo_[a] + ((c - lo_[a]) % span_[a] + span_[a]) % span_[a];
    out = layout_.peer(out, axis, inside - c);
  }
  if (workload.program_of_rank[static_cast<size_t>(out)] != workload.program_of_rank[static_cast<size_t>(rank)]) {
    return -1;  // declared symmetric, yet another program: no stand-in rather than a wrong one
  }
  return out;
}

}  // namespace trainsim::engine

#include "calibrate/iteration_marks.hpp"

#include <algorithm>
#include <iterator>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {

std::vector<std::map<int64_t, MarkWindow>> iteration_marks(const TraceSet& traces) {
  std::vector<std::map<int64_t, MarkWindow>> per_rank;
  for (const TracedRank& rank : traces.ranks()) {
    std::map<int64_t, MarkWindow> marks;
    for (const trace::Record& r : traces.files()[rank.file].records) {
      if (!r.has_marker() || r.marker().iteration() < 0) continue;
      const trace::Marker& m = r.marker();
      auto [it, inserted] = marks.try_emplace(m.iteration(), MarkWindow{m.start_ns(), m.end_ns()});
      if (inserted) continue;
      it->second.start = std::min(it->second.start, m.start_ns());
      it->second.end = std::max(it->second.end, m.end_ns());
    }
    per_rank.push_back(std::move(marks));
  }
  return per_rank;
}

std::set<int64_t> common_iterations(const std::vector<std::map<int64_t, MarkWindow>>& marks) {
  std::set<int64_t> common;
  for (size_t i = 0; i < marks.size(); ++i) {
    std::set<int64_t> numbers;
    for (const auto& [n, w] : marks[i]) numbers.insert(n);
    if (i == 0) {
      common = std::move(numbers);
      continue;
    }
    std::set<int64_t> both;
    std::set_intersection(common.begin(), common.end(), numbers.begin(), numbers.end(), std::inserter(both, both.end()));
    common = std::move(both);
  }
  return common;
}

std::vector<MeasuredIteration> measured_iterations(const TraceSet& traces) {
  const std::vector<std::map<int64_t, MarkWindow>> marks = iteration_marks(traces);
  const bool any = std::any_of(marks.begin(), marks.end(), [](const auto& m) { return !m.empty(); });
  if (!any) return {};
  const std::set<int64_t> common = common_iterations(marks);
  if (common.empty()) {
    throw core::InputError(traces.files().front().path, "",
                           "the ranks' traces have no iteration marker (ProfilerStep#N) number in common");
  }
  std::vector<MeasuredIteration> out;
  for (int64_t n : common) {
    uint64_t longest = 0;
    for (const auto& rank : marks) {
      const MarkWindow& w = rank.at(n);
      longest = std::max<uint64_t>(longest, w.end > w.start ? w.end - w.start : 0);
    }
    out.push_back({n, core::Seconds(static_cast<double>(longest) * 1e-9)});
  }
  return out;
}

}  // namespace trainsim::calibrate

#include "calibrate/replay_workload.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>

#include "calibrate/iteration_marks.hpp"
#include "calibrate/parallel_groups.hpp"
#include "calibrate/trace_summary.hpp"
#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

using core::Axis;
using core::Stream;
using core::Task;
using core::TaskKind;

constexpr double NS = 1e-9;

// The windows of the replayed iteration, one per traced rank (in TraceSet::ranks() order).
std::vector<MarkWindow> iteration_windows(const TraceSet& traces, int64_t& iteration) {
  const std::vector<std::map<int64_t, MarkWindow>> per_rank = iteration_marks(traces);
  std::vector<MarkWindow> windows(traces.ranks().size(), MarkWindow{0, UINT64_MAX});
  const bool any_markers = std::any_of(per_rank.begin(), per_rank.end(), [](const auto& m) { return !m.empty(); });
  if (!any_markers) {
    iteration = -1;
    return windows;
  }
  const std::set<int64_t> common = common_iterations(per_rank);
  if (common.empty()) {
    throw core::InputError(traces.files().front().path, "",
                           "the ranks' traces have no iteration marker (ProfilerStep#N) number in common");
  }
  iteration = *std::next(common.begin(), static_cast<std::ptrdiff_t>((common.size() - 1) / 2));
  for (size_t i = 0; i < windows.size(); ++i) windows[i] = per_rank[i].at(iteration);
  return windows;
}

// The layout the traced communicators imply (calibrate/parallel_groups.hpp).
InferredLayout infer_layout(const TraceSet& traces) {
  std::vector<CommunicatorRanks> communicators;
  for (const TracedRank& r : traces.ranks()) {
    for (const TracedCollective& c : r.collectives) communicators.push_back({c.group, traces.files()[r.file].path});
  }
  return calibrate::infer_layout(communicators, traces.world_size(), traces.files().front().path);
}

struct Event {
  uint64_t start = 0;
  uint64_t end = 0;
  Task task;
  uint32_t name = 0;
};

// The tasks of one rank's window, in start order.
std::vector<Event> events_of(const TraceSet& traces, const TracedRank& rank, const MarkWindow& w, const InferredLayout& layout,
                             core::Workload& wl, std::map<std::vector<int>, uint16_t>& group_index, ReplayWorkload& out) {
  const core::TraceFile& f = traces.files()[rank.file];
  std::vector<Event> events;
  auto inside = [&](uint64_t start) { return start >= w.start && start < w.end; };
  auto compute = [&](uint64_t start, uint64_t end, core::OpClass c, const std::string& name) {
    Event e{start, end, {}, wl.intern(name)};
    e.task.kind = TaskKind::COMPUTE;
    e.task.op_class = c;
    e.task.seconds = static_cast<double>(end - start) * NS;
    events.push_back(e);
  };
  for (const trace::Record& r : f.records) {
    if (r.has_kernel() && inside(r.kernel().start_ns()) && r.kernel().end_ns() > r.kernel().start_ns()) {
      const TimeCategory cat = categorize_kernel(r.kernel().name());
      if (cat == TimeCategory::COMMUNICATION) continue;
      const core::OpClass c = cat == TimeCategory::GEMM        ? core::OpClass::GEMM
                              : cat == TimeCategory::ATTENTION ? core::OpClass::ATTENTION
                                                               : core::OpClass::ELEMENTWISE;
      compute(r.kernel().start_ns(), r.kernel().end_ns(), c, r.kernel().name());
    } else if (r.has_memcpy() && inside(r.memcpy().start_ns()) && r.memcpy().end_ns() > r.memcpy().start_ns()) {
      const trace::Memcpy& m = r.memcpy();
      const bool h2d = m.kind() == trace::MEMCPY_KIND_HTOD;
      if (h2d || m.kind() == trace::MEMCPY_KIND_DTOH) {
        Event e{m.start_ns(), m.end_ns(), {}, wl.intern(h2d ? "memcpy HtoD" : "memcpy DtoH")};
        e.task.kind = TaskKind::COPY;
        e.task.stream = Stream::COPY;
        e.task.copy = h2d ? core::CopyDirection::HOST_TO_DEVICE : core::CopyDirection::DEVICE_TO_HOST;
        e.task.bytes = static_cast<double>(m.bytes());
        e.task.seconds = static_cast<double>(m.end_ns() - m.start_ns()) * NS;  // measured, contention included
        events.push_back(e);
      } else {
        compute(m.start_ns(), m.end_ns(), core::OpClass::ELEMENTWISE, "memcpy");
      }
    } else if (r.has_memset() && inside(r.memset().start_ns()) && r.memset().end_ns() > r.memset().start_ns()) {
      compute(r.memset().start_ns(), r.memset().end_ns(), core::OpClass::ELEMENTWISE, "memset");
    } else if (r.has_p2p() && inside(r.p2p().start_ns())) {
      ++out.skipped_p2p;
    }
  }
  for (const TracedCollective& c : rank.collectives) {
    if (!inside(c.start_ns) || c.group.size() < 2) continue;
    auto [it, inserted] = group_index.try_emplace(c.group, static_cast<uint16_t>(wl.groups.size()));
    if (inserted) {
      core::GroupKind kind = group_kind_of(layout, c.group, f.path);
      auto same = std::find_if(wl.groups.begin(), wl.groups.end(), [&](const core::GroupKind& g) {
        return g.name == kind.name;
      });
      if (same == wl.groups.end()) {
        wl.groups.push_back(std::move(kind));
      } else {
        it->second = static_cast<uint16_t>(same - wl.groups.begin());
      }
    }
    const core::GroupKind& kind = wl.groups[it->second];
    Event e{c.start_ns, std::max(c.end_ns, c.start_ns), {}, wl.intern(core::to_string(c.op))};
    e.task.kind = TaskKind::COLLECTIVE;
    e.task.stream = core::comm_stream(kind.axis);
    e.task.collective = c.op;
    e.task.group = it->second;
    e.task.bytes = c.bytes;
    events.push_back(e);
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.start < b.start; });
  return events;
}

// Builds one rank's program from its events: stream order, cross-stream order by timestamps, and
// unexplained compute-stream idle time folded into the compute task that follows it. Each task keeps
// the last task of every stream it already waits for (directly or through others), so that only
// dependencies that add something are recorded.
core::Program build_program(const std::vector<Event>& events, const MarkWindow& w, int rank, ReplayWorkload& out) {
  using Frontier = std::array<int64_t, core::STREAM_COUNT>;
  core::Program p;
  p.name = fmt::format("rank {}", rank);
  std::array<std::vector<uint32_t>, core::STREAM_COUNT> on_stream;  // task indices per stream
  std::vector<uint64_t> end_of;                                     // traced end per task
  std::vector<Frontier> frontier_of;                                // per task
  double gaps = 0;
  for (const Event& e : events) {
    const size_t s = static_cast<size_t>(e.task.stream);
    Frontier frontier;
    frontier.fill(-1);
    uint64_t ready = w.start;
    if (!on_stream[s].empty()) {
      frontier = frontier_of[on_stream[s].back()];
      ready = end_of[on_stream[s].back()];
    }
    std::vector<uint32_t> candidates;
    for (size_t o = 0; o < core::STREAM_COUNT; ++o) {
      const auto& tasks = on_stream[o];
      auto it = std::find_if(tasks.rbegin(), tasks.rend(), [&](uint32_t t) { return end_of[t] <= e.start; });
      if (o != s && it != tasks.rend()) candidates.push_back(*it);
    }
    std::sort(candidates.begin(), candidates.end(), [&](uint32_t a, uint32_t b) { return end_of[a] > end_of[b]; });
    std::vector<uint32_t> deps;
    for (uint32_t c : candidates) {
      const size_t o = static_cast<size_t>(p.tasks[c].stream);
      ready = std::max(ready, end_of[c]);
      if (static_cast<int64_t>(c) <= frontier[o]) continue;
      deps.push_back(c);
      for (size_t k = 0; k < core::STREAM_COUNT; ++k) frontier[k] = std::max(frontier[k], frontier_of[c][k]);
      frontier[o] = c;
    }
    Task t = e.task;
    t.name = e.name;
    if (t.kind == TaskKind::COMPUTE && e.start > ready) {
      const double gap = static_cast<double>(e.start - ready) * NS;
      t.seconds += gap;
      gaps += gap;
    }
    const uint32_t index = p.add(t, deps);
    frontier[s] = index;
    on_stream[s].push_back(index);
    end_of.push_back(e.end);
    frontier_of.push_back(frontier);
    out.compute_tasks += t.kind == TaskKind::COMPUTE;
    out.collective_tasks += t.kind == TaskKind::COLLECTIVE;
    out.copy_tasks += t.kind == TaskKind::COPY;
  }
  out.host_gaps = std::max(out.host_gaps, core::Seconds(gaps));
  return p;
}

// Every member of a communicator must make the same calls on it, in the same order, within the
// replayed window (the simulated call matches by position, op and size): otherwise the traces are
// not of one run (or one was truncated), and that is an input error naming the rank and the call,
// found here rather than as a deadlock of the simulation.
void check_collective_sequences(const TraceSet& traces, const std::vector<MarkWindow>& windows) {
  struct Calls {
    int rank = 0;
    std::vector<const TracedCollective*> list;
  };
  std::map<std::vector<int>, std::vector<Calls>> by_group;  // members -> per rank, ascending rank
  for (size_t i = 0; i < traces.ranks().size(); ++i) {
    const TracedRank& r = traces.ranks()[i];
    for (const TracedCollective& c : r.collectives) {
      if (c.start_ns < windows[i].start || c.start_ns >= windows[i].end || c.group.size() < 2) continue;
      std::vector<Calls>& ranks = by_group[c.group];
      if (ranks.empty() || ranks.back().rank != r.rank) ranks.push_back({r.rank, {}});
      ranks.back().list.push_back(&c);
    }
  }
  const auto file_of = [&](int rank) { return traces.files()[traces.find(rank)->file].path; };
  const auto call = [](const TracedCollective& c) { return fmt::format("{} of {} bytes", core::to_string(c.op), c.bytes); };
  for (const auto& [group, ranks] : by_group) {
    const std::string members = fmt::format("{}", fmt::join(group, ","));
    const Calls& ref = ranks.front();
    for (const int member : group) {
      if (traces.find(member) == nullptr) continue;  // a member outside the traced world: named later
      const auto it = std::find_if(ranks.begin(), ranks.end(), [&](const Calls& c) { return c.rank == member; });
      const std::vector<const TracedCollective*> none;
      const std::vector<const TracedCollective*>& list = it == ranks.end() ? none : it->list;
      const size_t n = std::min(list.size(), ref.list.size());
      for (size_t k = 0; k < n; ++k) {
        const TracedCollective& a = *list[k];
        const TracedCollective& b = *ref.list[k];
        if (a.op != b.op || a.bytes != b.bytes) {
          throw core::InputError(file_of(member), "",
                                 fmt::format("rank {} disagrees with rank {} ({}) on call {} of the communicator of "
                                             "ranks {}: {} here, {} there; the traces must come from one run",
                                             member, ref.rank, file_of(ref.rank), k + 1, members, call(a), call(b)));
        }
      }
      if (list.size() != ref.list.size()) {
        const bool short_here = list.size() < ref.list.size();
        const int shorter = short_here ? member : ref.rank;
        const int longer = short_here ? ref.rank : member;
        const TracedCollective& missing = *(short_here ? ref.list : list)[n];
        throw core::InputError(file_of(shorter), "",
                               fmt::format("rank {} makes {} calls on the communicator of ranks {} in the replayed "
                                           "window, rank {} ({}) makes {}: call {} ({}) is missing here; a truncated "
                                           "trace, or traces of different runs",
                                           shorter, std::min(list.size(), ref.list.size()), members, longer,
                                           file_of(longer), std::max(list.size(), ref.list.size()), n + 1,
                                           call(missing)));
      }
    }
  }
}

}  // namespace


ReplayWorkload build_replay_workload(const TraceSet& traces, const ReplayOptions& options) {
  TRAINSIM_CHECK(options.scale_data >= 1, "scale_data >= 1");
  if (traces.files().empty()) throw core::InputError("", "", "no trace files given");
  if (!traces.complete()) {
    int missing = 0;
    while (traces.find(missing) != nullptr) ++missing;
    throw core::InputError(traces.files().front().path, "",
                           fmt::format("replay needs one trace per rank: the world has {} ranks, rank {} has no trace",
                                       traces.world_size(), missing));
  }
  ReplayWorkload out;
  out.traced_ranks = traces.world_size();
  std::map<std::string, int> per_host;
  for (const TracedRank& r : traces.ranks()) {
    ++per_host[r.host];
    out.unresolved_collectives += r.unresolved_collectives;
  }
  for (const auto& [host, n] : per_host) out.gpus_per_node = std::max(out.gpus_per_node, n);
  if (out.traced_ranks % out.gpus_per_node != 0) {
    throw core::InputError(traces.files().front().path, "",
                           fmt::format("{} ranks do not fill hosts of {} GPUs evenly", out.traced_ranks, out.gpus_per_node));
  }

  const std::vector<MarkWindow> windows = iteration_windows(traces, out.iteration);
  check_collective_sequences(traces, windows);
  const InferredLayout layout = infer_layout(traces);
  core::Workload& wl = out.workload;
  wl.layout = layout.layout;
  std::map<std::vector<int>, uint16_t> group_index;
  for (size_t i = 0; i < traces.ranks().size(); ++i) {
    const TracedRank& r = traces.ranks()[i];
    MarkWindow w = windows[i];
    std::vector<Event> events = events_of(traces, r, w, layout, wl, group_index, out);
    if (out.iteration < 0 && !events.empty()) {
      w.start = events.front().start;
      w.end = 0;
      for (const Event& e : events) w.end = std::max(w.end, e.end);
    }
    // A rank with no timed event and no marker keeps the open window; a reversed marker span (end
    // before start) measures nothing: neither is a duration (replay refuses what has none).
    if (w.end != UINT64_MAX && w.end > w.start) {
      out.measured = std::max(out.measured, core::Seconds(static_cast<double>(w.end - w.start) * NS));
    }
    wl.programs.push_back(build_program(events, w, r.rank, out));
  }

  // Scale along the data axis: rank R runs the program of the traced rank with R's coordinates,
  // the data coordinate taken modulo the traced data size.
  const core::ParallelLayout traced = wl.layout;
  std::array<int, core::AXIS_COUNT> sizes = traced.sizes();
  sizes[static_cast<size_t>(Axis::DATA)] *= options.scale_data;
  wl.layout = core::ParallelLayout(sizes);
  wl.program_of_rank.resize(static_cast<size_t>(wl.layout.world_size()));
  for (int rank = 0; rank < wl.layout.world_size(); ++rank) {
    std::array<int, core::AXIS_COUNT> c = wl.layout.coords(rank);
    c[static_cast<size_t>(Axis::DATA)] %= traced.size(Axis::DATA);
    wl.program_of_rank[static_cast<size_t>(rank)] = static_cast<uint32_t>(traced.rank_of(c));
  }
  out.nodes = wl.layout.world_size() / out.gpus_per_node;
  wl.validate();
  return out;
}

}  // namespace trainsim::calibrate

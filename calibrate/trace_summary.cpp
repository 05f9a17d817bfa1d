#include "calibrate/trace_summary.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace trainsim::calibrate {

uint64_t union_length(std::vector<Interval> intervals, uint64_t lo, uint64_t hi) {
  for (Interval& i : intervals) {
    i.start = std::max(i.start, lo);
    i.end = std::min(i.end, hi);
  }
  std::erase_if(intervals, [](const Interval& i) { return i.end <= i.start; });
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  uint64_t total = 0, cur_start = 0, cur_end = 0;
  bool open = false;
  for (const Interval& i : intervals) {
    if (open && i.start <= cur_end) {
      cur_end = std::max(cur_end, i.end);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = i.start;
    cur_end = i.end;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

namespace {

core::Seconds seconds(uint64_t ns) { return core::Seconds(static_cast<double>(ns) * 1e-9); }

std::string lowercase(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return n;
}

bool contains_any(const std::string& haystack, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return haystack.find(n) != std::string::npos; });
}

// The source whose collective times are used: the most exact one present.
trace::Source preferred_source(const std::vector<const trace::Collective*>& collectives) {
  std::set<int> present;
  for (const trace::Collective* c : collectives) present.insert(c->source());
  for (trace::Source s : {trace::SOURCE_NCCL_PROFILER, trace::SOURCE_KINETO, trace::SOURCE_NCCL_WRAPPER}) {
    if (present.count(s) != 0) return s;
  }
  return present.empty() ? trace::SOURCE_UNKNOWN : static_cast<trace::Source>(*present.begin());
}

std::string_view timing_name(trace::Timing t) {
  switch (t) {
    case trace::TIMING_ENQUEUE: return "enqueue";
    case trace::TIMING_PROXY: return "proxy";
    case trace::TIMING_KERNEL_CHANNEL: return "kernel_channel";
    case trace::TIMING_GPU_KERNEL: return "gpu_kernel";
    case trace::TIMING_HOST_COMPLETION: return "host_completion";
    default: return "unknown";
  }
}

std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

}  // namespace

std::string_view to_string(TimeCategory c) {
  static constexpr std::string_view NAMES[] = {"gemm", "attention", "elementwise", "communication", "memcpy", "idle"};
  return NAMES[static_cast<size_t>(c)];
}

namespace {

bool fused_attention_lowercase(const std::string& n) { return contains_any(n, {"flash", "fmha", "attention", "attn"}); }

}  // namespace

bool fused_attention_kernel(std::string_view name) { return fused_attention_lowercase(lowercase(name)); }

bool kernel_name_has(std::string_view name, std::initializer_list<std::string_view> needles) {
  return contains_any(lowercase(name), needles);
}

TimeCategory categorize_kernel(std::string_view name) {
  const std::string n = lowercase(name);
  if (contains_any(n, {"nccl"})) return TimeCategory::COMMUNICATION;
  if (fused_attention_lowercase(n) || contains_any(n, {"softmax"})) return TimeCategory::ATTENTION;
  if (contains_any(n, {"gemm", "cutlass", "xmma", "cublas", "nvjet", "matmul"})) return TimeCategory::GEMM;
  return TimeCategory::ELEMENTWISE;
}

double bus_factor(trace::CollectiveOp op, int n) {
  core::CollectiveOp known;
  return n >= 1 && core::to_collective_op(op, known) ? core::bus_bandwidth_factor(known, n) : 1.0;
}

std::string_view collective_name(trace::CollectiveOp op) {
  core::CollectiveOp known;
  return core::to_collective_op(op, known) ? core::to_string(known) : "unknown";
}

RankSummary summarize_trace(const core::TraceFile& t, size_t top_kernels) {
  RankSummary s;
  s.path = t.path;
  s.rank = t.header.rank();
  s.world_size = t.header.world_size();
  s.lost_bytes = t.lost_bytes;
  if (t.header.devices_size() > 0) s.device = t.header.devices(0).name();

  std::array<std::vector<Interval>, TIME_CATEGORY_COUNT> by_category;
  std::vector<Interval> everything;
  std::vector<std::pair<const trace::Kernel*, TimeCategory>> kernels;
  std::vector<const trace::Marker*> iteration_markers;
  std::vector<const trace::Collective*> collectives;
  std::vector<const trace::P2p*> p2ps;
  std::unordered_map<uint64_t, std::vector<uint32_t>> correlations_of;  // external id -> CUPTI ids
  std::unordered_map<uint32_t, Interval> kernel_by_correlation;
  for (const trace::Record& r : t.records) {
    Interval i;
    TimeCategory category = TimeCategory::ELEMENTWISE;
    if (r.has_kernel()) {
      i = {r.kernel().start_ns(), r.kernel().end_ns()};
      category = categorize_kernel(r.kernel().name());
      kernels.emplace_back(&r.kernel(), category);
      if (r.kernel().correlation_id() != 0) kernel_by_correlation[r.kernel().correlation_id()] = i;
    } else if (r.has_memcpy()) {
      i = {r.memcpy().start_ns(), r.memcpy().end_ns()};
      category = TimeCategory::MEMCPY;
    } else if (r.has_memset()) {
      i = {r.memset().start_ns(), r.memset().end_ns()};
      category = TimeCategory::MEMCPY;
    } else {
      if (r.has_marker() && r.marker().iteration() >= 0) iteration_markers.push_back(&r.marker());
      if (r.has_collective()) collectives.push_back(&r.collective());
      if (r.has_p2p()) p2ps.push_back(&r.p2p());
      if (r.has_external_correlation()) {
        correlations_of[r.external_correlation().external_id()].push_back(r.external_correlation().correlation_id());
      }
      if (r.has_device() && s.device.empty()) s.device = r.device().name();
      if (r.has_status()) {
        s.dropped_records = std::max<uint64_t>(s.dropped_records, r.status().dropped_records());
        for (const std::string& e : r.status().errors()) s.tracer_errors.push_back(e);
      }
      continue;
    }
    if (i.end < i.start) continue;
    by_category[static_cast<size_t>(category)].push_back(i);
    everything.push_back(i);
  }

  // Without communication kernels (the emulator's traces, a tracer run whose CUPTI did not start),
  // communication is what the collective and point-to-point records span, unless they time only the
  // host call that enqueued the operation.
  std::vector<Interval>& communication = by_category[static_cast<size_t>(TimeCategory::COMMUNICATION)];
  if (communication.empty()) {
    auto add = [&](uint64_t start, uint64_t end, trace::Timing timing) {
      if (timing == trace::TIMING_ENQUEUE || end < start) return;
      communication.push_back({start, end});
      everything.push_back({start, end});
    };
    for (const trace::Collective* c : collectives) add(c->start_ns(), c->end_ns(), c->timing());
    for (const trace::P2p* p : p2ps) add(p->start_ns(), p->end_ns(), p->timing());
  }

  // The window: the iterations when marked (GPU-side annotations preferred), else the whole trace.
  uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  const bool gpu_markers = std::any_of(iteration_markers.begin(), iteration_markers.end(),
                                       [](const trace::Marker* m) { return m->domain() == "gpu_user_annotation"; });
  std::set<int64_t> iterations;
  for (const trace::Marker* m : iteration_markers) {
    if (gpu_markers && m->domain() != "gpu_user_annotation") continue;
    iterations.insert(m->iteration());
    lo = std::min(lo, m->start_ns());
    hi = std::max(hi, m->end_ns());
  }
  if (iterations.empty()) {
    for (const Interval& i : everything) {
      lo = std::min(lo, i.start);
      hi = std::max(hi, i.end);
    }
  }
  if (hi <= lo) return s;
  s.iterations = iterations.size();
  s.window = seconds(hi - lo);
  uint64_t busy_any = union_length(everything, lo, hi);
  for (int c = 0; c < TIME_CATEGORY_COUNT; ++c) {
    if (c == static_cast<int>(TimeCategory::IDLE)) continue;
    s.busy[static_cast<size_t>(c)] = seconds(union_length(by_category[static_cast<size_t>(c)], lo, hi));
  }
  s.busy[static_cast<size_t>(TimeCategory::IDLE)] = seconds(hi - lo - busy_any);

  // Top kernels, by total time of the kernels that start inside the window.
  std::map<std::string, std::pair<uint64_t, uint64_t>> per_name;  // name -> (count, total ns)
  for (const auto& [k, category] : kernels) {
    if (k->start_ns() < lo || k->start_ns() >= hi) continue;
    auto& [count, total] = per_name[k->name()];
    ++count;
    total += k->end_ns() - k->start_ns();
  }
  for (const auto& [name, stat] : per_name) {
    s.top_kernels.push_back({name, stat.first, seconds(stat.second), seconds(stat.second / stat.first)});
  }
  std::sort(s.top_kernels.begin(), s.top_kernels.end(), [](const KernelStat& a, const KernelStat& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  if (s.top_kernels.size() > top_kernels) s.top_kernels.resize(top_kernels);

  // Collectives of the preferred source, grouped by (op, size, communicator size).
  const trace::Source source = preferred_source(collectives);
  std::map<std::tuple<int, uint64_t, int>, std::tuple<uint64_t, uint64_t, trace::Timing>> groups;
  for (const trace::Collective* c : collectives) {
    if (c->source() != source) continue;
    Interval i{c->start_ns(), c->end_ns()};
    trace::Timing timing = c->timing();
    if (source == trace::SOURCE_NCCL_WRAPPER) {
      Interval joined{std::numeric_limits<uint64_t>::max(), 0};
      for (uint32_t id : correlations_of[c->correlation_id()]) {
        const auto k = kernel_by_correlation.find(id);
        if (k == kernel_by_correlation.end()) continue;
        joined.start = std::min(joined.start, k->second.start);
        joined.end = std::max(joined.end, k->second.end);
      }
      if (joined.end >= joined.start && joined.end != 0) {
        i = joined;
        timing = trace::TIMING_GPU_KERNEL;
      }
    }
    if (i.start < lo || i.start >= hi || i.end < i.start) continue;
    auto& [count, total, group_timing] = groups[{c->op(), c->bytes(), c->comm_size()}];
    ++count;
    total += i.end - i.start;
    group_timing = timing;
  }
  for (const auto& [key, value] : groups) {
    const auto& [op, bytes, comm_size] = key;
    const auto& [count, total, timing] = value;
    CollectiveStat c;
    c.op = static_cast<trace::CollectiveOp>(op);
    c.size = core::Bytes(static_cast<double>(bytes));
    c.comm_size = comm_size;
    c.count = count;
    c.mean = seconds(total / count);
    c.algbw = c.mean.value() > 0 ? c.size / c.mean : core::BytesPerSecond(0);
    c.busbw = c.algbw * bus_factor(c.op, comm_size);
    c.timing = timing;
    s.collectives.push_back(c);
  }
  return s;
}

std::string format_summary_table(const std::vector<RankSummary>& ranks) {
  std::string out;
  for (const RankSummary& s : ranks) {
    const std::string rank = s.rank >= 0 ? fmt::format("rank {}", s.rank) : std::string("rank ?");
    out += fmt::format("{} ({}){}{}\n", rank, s.path, s.device.empty() ? "" : ": ", s.device);
    out += fmt::format("  window_ms {:.3f}{}\n", s.window.value() * 1e3,
                       s.iterations > 0 ? fmt::format(" over {} iterations (iteration_ms {:.3f})", s.iterations,
                                                      s.window.value() * 1e3 / static_cast<double>(s.iterations))
                                        : std::string(" (no iteration markers: the whole trace)"));
    if (s.lost_bytes > 0) {
      out += fmt::format("  warning: truncated file, the last {} bytes (an incomplete record) were not read\n",
                         s.lost_bytes);
    }
    if (s.dropped_records > 0) out += fmt::format("  warning: the tracer lost {} CUPTI records\n", s.dropped_records);
    for (const std::string& e : s.tracer_errors) out += fmt::format("  tracer error: {}\n", e);
    out += fmt::format("  {:<15} {:>12} {:>8}\n", "category", "time_ms", "share_%");
    for (int c = 0; c < TIME_CATEGORY_COUNT; ++c) {
      const core::Seconds busy = s.busy[static_cast<size_t>(c)];
      out += fmt::format("  {:<15} {:>12.3f} {:>8.1f}\n", to_string(static_cast<TimeCategory>(c)), busy.value() * 1e3,
                         s.window.value() > 0 ? 100.0 * (busy / s.window) : 0.0);
    }
    if (!s.top_kernels.empty()) {
      out += fmt::format("  {:<60} {:>7} {:>10} {:>10}\n", "top kernels", "count", "total_ms", "mean_us");
      for (const KernelStat& k : s.top_kernels) {
        out += fmt::format("  {:<60} {:>7} {:>10.3f} {:>10.1f}\n", shorten(k.name, 60), k.count, k.total.value() * 1e3,
                           k.mean.value() * 1e6);
      }
    }
    if (!s.collectives.empty()) {
      out += fmt::format("  {:<15} {:>12} {:>6} {:>6} {:>10} {:>11} {:>11}  {}\n", "collective", "size_bytes", "ranks",
                         "count", "mean_us", "algbw_GB/s", "busbw_GB/s", "timing");
      for (const CollectiveStat& c : s.collectives) {
        out += fmt::format("  {:<15} {:>12.0f} {:>6} {:>6} {:>10.1f} {:>11.2f} {:>11.2f}  {}\n", collective_name(c.op),
                           c.size.value(), c.comm_size, c.count, c.mean.value() * 1e6, c.algbw.value() / 1e9,
                           c.busbw.value() / 1e9, timing_name(c.timing));
      }
    }
    out += "\n";
  }
  return out;
}

core::Json summary_to_json(const std::vector<RankSummary>& ranks) {
  core::Json out = core::Json::object();
  out["schema"] = "trainsim.trace-summary/1";
  core::Json list = core::Json::array();
  for (const RankSummary& s : ranks) {
    core::Json r = core::Json::object();
    r["path"] = s.path;
    r["rank"] = s.rank;
    r["world_size"] = s.world_size;
    r["device"] = s.device;
    r["window_s"] = s.window.value();
    r["iterations"] = s.iterations;
    r["lost_bytes"] = s.lost_bytes;
    r["dropped_records"] = s.dropped_records;
    r["tracer_errors"] = s.tracer_errors;
    core::Json busy = core::Json::object();
    core::Json share = core::Json::object();
    for (int c = 0; c < TIME_CATEGORY_COUNT; ++c) {
      const std::string name(to_string(static_cast<TimeCategory>(c)));
      busy[name] = s.busy[static_cast<size_t>(c)].value();
      share[name] = s.window.value() > 0 ? s.busy[static_cast<size_t>(c)] / s.window : 0.0;
    }
    r["time_s"] = std::move(busy);
    r["share"] = std::move(share);
    core::Json kernels = core::Json::array();
    for (const KernelStat& k : s.top_kernels) {
      kernels.push_back({{"name", k.name}, {"count", k.count}, {"total_s", k.total.value()}, {"mean_s", k.mean.value()}});
    }
    r["top_kernels"] = std::move(kernels);
    core::Json colls = core::Json::array();
    for (const CollectiveStat& c : s.collectives) {
      colls.push_back({{"op", collective_name(c.op)},
                       {"size_bytes", c.size.value()},
                       {"ranks", c.comm_size},
                       {"count", c.count},
                       {"mean_s", c.mean.value()},
                       {"algbw_bytes_per_s", c.algbw.value()},
                       {"busbw_bytes_per_s", c.busbw.value()},
                       {"timing", timing_name(c.timing)}});
    }
    r["collectives"] = std::move(colls);
    list.push_back(std::move(r));
  }
  out["ranks"] = std::move(list);
  return out;
}

}  // namespace trainsim::calibrate

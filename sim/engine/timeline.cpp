#include "sim/engine/timeline.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <iterator>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/engine/task_kind_name.hpp"

namespace trainsim::engine {
namespace {

using core::Task;
using core::TaskKind;

std::string json_string(std::string_view s) { return core::Json(std::string(s)).dump(); }

constexpr double MICROSECONDS = 1e6;
constexpr size_t FLUSH_BYTES = 1 << 20;

class TraceWriter {
 public:
  TraceWriter(const core::Workload& w, std::ostream& out, const TimelineFilter& filter)
      : w_(w), out_(out), filter_(filter) {
    names_.reserve(w.names.size());
    for (const std::string& n : w.names) names_.push_back(json_string(n));
  }

  void write(const SimulationResult& result) {
    buf_ += R"({"displayTimeUnit":"ms","traceEvents":[)";
    std::vector<int> ranks;
    std::vector<unsigned> streams;  // per entry of `ranks`: bit s = stream s has events
    std::vector<const TimelineEvent*> kept;
    for (const TimelineEvent& e : result.timeline) {
      if (keeps(e)) kept.push_back(&e);
    }
    for (const TimelineEvent* k : kept) {
      const TimelineEvent& e = *k;
      size_t i = 0;
      while (i < ranks.size() && ranks[i] != e.rank) ++i;
      if (i == ranks.size()) {
        ranks.push_back(e.rank);
        streams.push_back(0);
      }
      streams[i] |= 1u << static_cast<unsigned>(e.stream);
    }
    for (size_t i = 0; i < ranks.size(); ++i) write_metadata(ranks[i], streams[i]);
    for (const TimelineEvent* e : kept) write_event(*e);
    const std::vector<std::vector<std::pair<double, double>>> comm = communication_spans(ranks, kept);
    for (size_t i = 0; i < result.flows.size(); ++i) {
      const FlowEvent& f = result.flows[i];
      if (f.end_s < filter_.start_s || f.start_s > filter_.end_s) continue;
      for (int rank : {f.src, f.dst}) {
        const size_t r = static_cast<size_t>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
        if (r == ranks.size()) continue;
        if (!filter_.micro_batches.empty() && !overlaps(comm[r], f.start_s, f.end_s)) continue;
        write_flow(f, i, rank);
      }
    }
    buf_ += "]}\n";
    flush();
  }

 private:
  bool keeps(const TimelineEvent& e) const {
    if (e.end_s < filter_.start_s || e.start_s > filter_.end_s) return false;
    if (filter_.micro_batches.empty()) return true;
    const Task& t = w_.program_of(e.rank).tasks[e.task];
    if (t.phase == core::Phase::OPTIMIZER || t.stream == core::Stream::DATA_COMM) return true;
    return std::find(filter_.micro_batches.begin(), filter_.micro_batches.end(), t.micro_batch) !=
           filter_.micro_batches.end();
  }

  // Per entry of `ranks`: the union of the intervals of its kept communication tasks, sorted.
  static std::vector<std::vector<std::pair<double, double>>> communication_spans(
      const std::vector<int>& ranks, const std::vector<const TimelineEvent*>& kept) {
    std::vector<std::vector<std::pair<double, double>>> spans(ranks.size());
    for (const TimelineEvent* e : kept) {
      if (e->stream == core::Stream::COMPUTE) continue;
      const size_t r = static_cast<size_t>(std::find(ranks.begin(), ranks.end(), e->rank) - ranks.begin());
      spans[r].emplace_back(e->start_s, e->end_s);
    }
    for (auto& s : spans) {
      std::sort(s.begin(), s.end());
      std::vector<std::pair<double, double>> merged;
      for (const auto& iv : s) {
        if (!merged.empty() && iv.first <= merged.back().second) {
          merged.back().second = std::max(merged.back().second, iv.second);
        } else {
          merged.push_back(iv);
        }
      }
      s = std::move(merged);
    }
    return spans;
  }

  static bool overlaps(const std::vector<std::pair<double, double>>& spans, double start, double end) {
    auto it = std::lower_bound(spans.begin(), spans.end(), start,
                               [](const std::pair<double, double>& iv, double t) { return iv.second < t; });
    return it != spans.end() && it->first <= end;
  }

  void separator() {
    if (!first_) buf_ += ",\n";
    first_ = false;
  }

  void write_metadata(int rank, unsigned streams) {
    const core::Program& prog = w_.program_of(rank);
    separator();
    fmt::format_to(std::back_inserter(buf_), R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":{}}}}})",
                   rank, json_string(fmt::format("rank {} ({})", rank, prog.name)));
    separator();
    fmt::format_to(std::back_inserter(buf_),
                   R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", rank, rank);
    for (int s = 0; s < core::STREAM_COUNT; ++s) {
      if ((streams & (1u << s)) == 0) continue;
      separator();
      fmt::format_to(std::back_inserter(buf_),
                     R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}})", rank, s,
                     core::to_string(static_cast<core::Stream>(s)));
      separator();
      fmt::format_to(std::back_inserter(buf_),
                     R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", rank,
                     s, s);
    }
  }

  void write_event(const TimelineEvent& e) {
    const Task& t = w_.program_of(e.rank).tasks[e.task];
    separator();
    auto it = std::back_inserter(buf_);
    const std::string fallback = t.name < names_.size() ? std::string() : json_string(kind_name(t.kind));
    fmt::format_to(it, R"({{"name":{},"cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{)",
                   fallback.empty() ? names_[t.name] : fallback, kind_name(t.kind), e.rank,
                   static_cast<int>(e.stream), e.start_s * MICROSECONDS, (e.end_s - e.start_s) * MICROSECONDS);
    fmt::format_to(it, R"("task":{},"phase":"{}","layer":{},"micro_batch":{})", e.task, core::to_string(t.phase),
                   t.layer, t.micro_batch);
    switch (t.kind) {
      case TaskKind::COMPUTE:
        fmt::format_to(it, R"(,"op_class":"{}","flops":{})", core::to_string(t.op_class), t.flops);
        break;
      case TaskKind::COLLECTIVE:
        fmt::format_to(it, R"(,"op":"{}","group":{})", core::to_string(t.collective), json_string(w_.groups[t.group].name));
        break;
      case TaskKind::SEND:
      case TaskKind::RECV:
        fmt::format_to(it, R"(,"peer":{})", w_.layout.peer(e.rank, t.peer_axis, t.peer_offset));
        break;
      case TaskKind::COPY:
        fmt::format_to(it, R"(,"direction":"{}")", core::to_string(t.copy));
        break;
      case TaskKind::MEMORY: break;
    }
    fmt::format_to(it, R"(,"bytes":{}}}}})", t.bytes);
    if (buf_.size() >= FLUSH_BYTES) flush();
  }

  // A network flow as an async slice ("b"/"e", id = its index) in the rank's "network" category, so
  // that concurrent flows stack instead of overlapping on one track.
  void write_flow(const FlowEvent& f, size_t index, int rank) {
    const std::string name = json_string(fmt::format("{} -> {}", endpoint(f.src), endpoint(f.dst)));
    for (const bool begin : {true, false}) {
      separator();
      fmt::format_to(std::back_inserter(buf_),
                     R"({{"name":{},"cat":"network","ph":"{}","id":{},"pid":{},"tid":{},"ts":{})", name,
                     begin ? "b" : "e", index, rank, core::STREAM_COUNT, (begin ? f.start_s : f.end_s) * MICROSECONDS);
      if (begin) fmt::format_to(std::back_inserter(buf_), R"(,"args":{{"bytes":{}}})", f.bytes);
      buf_ += '}';
    }
    if (buf_.size() >= FLUSH_BYTES) flush();
  }

  static std::string endpoint(int gpu) {
    if (gpu == FlowEvent::HOST_MEMORY) return "host memory";
    if (gpu == FlowEvent::NVME) return "nvme";
    if (gpu == FlowEvent::STORAGE) return "storage";
    return gpu < 0 ? "switch" : fmt::format("gpu {}", gpu);
  }

  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

  const core::Workload& w_;
  std::ostream& out_;
  const TimelineFilter& filter_;
  std::vector<std::string> names_;  // Workload::names as JSON strings
  std::string buf_;
  bool first_ = true;
};

}  // namespace

void write_chrome_trace(const SimulationResult& result, const core::Workload& workload, std::ostream& out,
                        const TimelineFilter& filter) {
  TraceWriter(workload, out, filter).write(result);
}

}  // namespace trainsim::engine

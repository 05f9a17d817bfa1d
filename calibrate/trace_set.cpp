#include "calibrate/trace_set.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

trace::Source preferred_source(const core::TraceFile& t) {
  std::set<int> present;
  for (const trace::Record& r : t.records) {
    if (r.has_collective()) present.insert(r.collective().source());
  }
  for (trace::Source s : {trace::SOURCE_NCCL_PROFILER, trace::SOURCE_KINETO, trace::SOURCE_NCCL_WRAPPER}) {
    if (present.count(s) != 0) return s;
  }
  return present.empty() ? trace::SOURCE_UNKNOWN : static_cast<trace::Source>(*present.begin());
}

struct Span {
  uint64_t start = UINT64_MAX;
  uint64_t end = 0;
};

// Kernel spans by external correlation id, for wrapper records timed by the kernels they launched.
std::unordered_map<uint64_t, Span> kernel_spans_by_external_id(const core::TraceFile& t) {
  std::unordered_map<uint32_t, Span> by_correlation;
  for (const trace::Record& r : t.records) {
    if (!r.has_kernel()) continue;
    Span& s = by_correlation[r.kernel().correlation_id()];
    s.start = std::min(s.start, r.kernel().start_ns());
    s.end = std::max(s.end, r.kernel().end_ns());
  }
  std::unordered_map<uint64_t, Span> by_external;
  for (const trace::Record& r : t.records) {
    if (!r.has_external_correlation()) continue;
    auto k = by_correlation.find(r.external_correlation().correlation_id());
    if (k == by_correlation.end()) continue;
    Span& s = by_external[r.external_correlation().external_id()];
    s.start = std::min(s.start, k->second.start);
    s.end = std::max(s.end, k->second.end);
  }
  return by_external;
}

}  // namespace

TraceSet TraceSet::load(const std::vector<std::string>& paths) {
  std::vector<core::TraceFile> files;
  for (const std::string& p : core::expand_trace_paths(paths)) files.push_back(core::read_trace_file(p));
  return TraceSet(std::move(files));
}

TraceSet::TraceSet(std::vector<core::TraceFile> files) : files_(std::move(files)) {
  const bool any_rank = std::any_of(files_.begin(), files_.end(), [](const core::TraceFile& f) { return f.header.rank() >= 0; });
  std::map<int, size_t> file_of_rank;
  for (size_t i = 0; i < files_.size(); ++i) {
    const core::TraceFile& f = files_[i];
    const int rank = any_rank ? f.header.rank() : static_cast<int>(i);
    // TraceReader bounds headers; traces built in memory are held to the same limit.
    if (f.header.world_size() > core::TRACE_MAX_WORLD_SIZE || rank >= core::TRACE_MAX_WORLD_SIZE) {
      throw core::InputError(f.path, "", fmt::format("corrupt header: world size {} or rank {} is above the limit of {} "
                                                     "ranks (TRACE_MAX_WORLD_SIZE)",
                                                     f.header.world_size(), rank, core::TRACE_MAX_WORLD_SIZE));
    }
    if (const std::string w = core::truncation_warning(f); !w.empty()) warnings_.push_back(w);
    if (rank < 0) throw core::InputError(f.path, "", "the header names no rank, but other traces of the run do");
    if (auto [it, inserted] = file_of_rank.emplace(rank, i); !inserted) {
      throw core::InputError(f.path, "", fmt::format("rank {} is also the rank of {}", rank, files_[it->second].path));
    }
    world_size_ = std::max({world_size_, f.header.world_size(), rank + 1});
  }
  for (const auto& [rank, index] : file_of_rank) {
    const core::TraceFile& f = files_[index];
    if (f.header.world_size() > 0 && rank >= f.header.world_size()) {
      throw core::InputError(f.path, "", fmt::format("rank {} is outside the world size {}", rank, f.header.world_size()));
    }
    ranks_.push_back({rank, f.header.hostname(), index, {}, 0});
  }

  // Communicator members by comm_hash, for records without group_ranks.
  std::map<uint64_t, std::set<int>> ranks_of_hash;
  for (const TracedRank& r : ranks_) {
    for (const trace::Record& rec : files_[r.file].records) {
      if (rec.has_collective() && rec.collective().comm_hash() != 0) ranks_of_hash[rec.collective().comm_hash()].insert(r.rank);
    }
  }
  std::vector<int> world(static_cast<size_t>(world_size_));
  for (int i = 0; i < world_size_; ++i) world[static_cast<size_t>(i)] = i;

  for (TracedRank& r : ranks_) {
    const core::TraceFile& f = files_[r.file];
    const trace::Source source = preferred_source(f);
    const auto spans = source == trace::SOURCE_NCCL_WRAPPER ? kernel_spans_by_external_id(f)
                                                            : std::unordered_map<uint64_t, Span>{};
    for (const trace::Record& rec : f.records) {
      if (!rec.has_collective() || rec.collective().source() != source) continue;
      const trace::Collective& c = rec.collective();
      TracedCollective out;
      std::vector<int> group(c.group_ranks().begin(), c.group_ranks().end());
      const auto hash = ranks_of_hash.find(c.comm_hash());
      if (group.empty() && c.comm_hash() != 0 && hash != ranks_of_hash.end() &&
          static_cast<int>(hash->second.size()) == c.comm_size()) {
        group.assign(hash->second.begin(), hash->second.end());
      } else if (group.empty() && c.comm_size() == world_size_) {
        group = world;
      } else if (group.empty() && c.comm_size() == 1) {
        group = {r.rank};
      }
      std::sort(group.begin(), group.end());
      const bool member = std::binary_search(group.begin(), group.end(), r.rank);
      if (!core::to_collective_op(c.op(), out.op) || group.empty() || !member) {
        ++r.unresolved_collectives;
        continue;
      }
      out.bytes = static_cast<double>(c.bytes());
      out.group = std::move(group);
      out.stream = c.stream();
      out.start_ns = c.start_ns();
      out.end_ns = c.end_ns();
      if (auto s = spans.find(c.correlation_id()); s != spans.end() && c.correlation_id() != 0) {
        out.start_ns = s->second.start;
        out.end_ns = s->second.end;
      }
      r.collectives.push_back(std::move(out));
    }
    std::stable_sort(r.collectives.begin(), r.collectives.end(),
                     [](const TracedCollective& a, const TracedCollective& b) { return a.start_ns < b.start_ns; });
  }
}

const TracedRank* TraceSet::find(int rank) const {
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), rank, [](const TracedRank& r, int v) { return r.rank < v; });
  return it != ranks_.end() && it->rank == rank ? &*it : nullptr;
}

std::string TraceSet::host_of(int rank) const {
  const TracedRank* r = find(rank);
  return r == nullptr ? std::string() : r->host;
}

std::string TraceSet::device_name() const {
  for (const core::TraceFile& f : files_) {
    if (f.header.devices_size() > 0 && !f.header.devices(0).name().empty()) return f.header.devices(0).name();
  }
  for (const core::TraceFile& f : files_) {
    for (const trace::Record& r : f.records) {
      if (r.has_device() && !r.device().name().empty()) return r.device().name();
    }
  }
  return "";
}

}  // namespace trainsim::calibrate

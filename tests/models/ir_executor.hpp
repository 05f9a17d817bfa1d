#pragma once
// A test-only executor of the Workload IR's ordering semantics (sim/core/workload.hpp), with every
// task taking zero time: per-stream FIFO issue, explicit dependencies, collectives that start when
// every member of the group has reached them, and rendezvous SEND/RECV where the k-th SEND from A
// to B with tag T meets B's k-th RECV from A with tag T. Timing cannot create or remove a deadlock under these rules
// (readiness is monotone), so a program set that completes here completes on any backend. A ready
// pool runs in its default (program) order here, which its builder must keep a valid fixed order.

#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/workload.hpp"

namespace trainsim::models::test_support {

struct ExecutionResult {
  size_t completed = 0;
  size_t total = 0;
  size_t mismatched_transfers = 0;  // matched SEND/RECV pairs whose micro-batch, layer or bytes differ
  size_t mismatched_collectives = 0;  // members of one collective calling different ops or sizes
};

inline ExecutionResult execute(const core::Workload& w) {
  using core::Task;
  using core::TaskKind;
  const int world = w.layout.world_size();
  struct Rank {
    const core::Program* program = nullptr;
    std::vector<char> done;
    std::array<std::vector<uint32_t>, core::STREAM_COUNT> streams;
    std::array<size_t, core::STREAM_COUNT> head{};
  };
  std::vector<Rank> ranks(static_cast<size_t>(world));
  // recvs[{from, to, tag}]: RECV task indices of `to` from `from` with that tag, in program order;
  // sent[{from, to, tag}]: how many transfers of the channel completed.
  using Channel = std::tuple<int, int, int>;
  std::map<Channel, std::vector<uint32_t>> recvs;
  std::map<Channel, size_t> sent;
  ExecutionResult result;
  for (int r = 0; r < world; ++r) {
    Rank& rank = ranks[static_cast<size_t>(r)];
    rank.program = &w.program_of(r);
    rank.done.assign(rank.program->tasks.size(), 0);
    result.total += rank.program->tasks.size();
    for (uint32_t i = 0; i < rank.program->tasks.size(); ++i) {
      const Task& t = rank.program->tasks[i];
      rank.streams[static_cast<size_t>(t.stream)].push_back(i);
      if (t.kind == TaskKind::RECV) {
        recvs[{w.layout.peer(r, t.peer_axis, t.peer_offset), r, static_cast<int>(t.tag)}].push_back(i);
      }
    }
  }
  auto ready = [&](int r, uint32_t i) {
    const Rank& rank = ranks[static_cast<size_t>(r)];
    const Task& t = rank.program->tasks[i];
    const size_t s = static_cast<size_t>(t.stream);
    if (rank.done[i] || rank.head[s] >= rank.streams[s].size() || rank.streams[s][rank.head[s]] != i) return false;
    const uint32_t* deps = rank.program->deps_of(t);
    for (uint32_t d = 0; d < t.dep_count; ++d) {
      if (!rank.done[deps[d]]) return false;
    }
    return true;
  };
  auto complete = [&](int r, uint32_t i) {
    Rank& rank = ranks[static_cast<size_t>(r)];
    rank.done[i] = 1;
    ++rank.head[static_cast<size_t>(rank.program->tasks[i].stream)];
    ++result.completed;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < world; ++r) {
      for (size_t s = 0; s < core::STREAM_COUNT; ++s) {
        Rank& rank = ranks[static_cast<size_t>(r)];
        while (rank.head[s] < rank.streams[s].size()) {
          const uint32_t i = rank.streams[s][rank.head[s]];
          if (!ready(r, i)) break;
          const Task& t = rank.program->tasks[i];
          if (t.kind == TaskKind::RECV) break;  // completed by its SEND
          if (t.kind == TaskKind::SEND) {
            const int to = w.layout.peer(r, t.peer_axis, t.peer_offset);
            const Channel channel{r, to, static_cast<int>(t.tag)};
            size_t& k = sent[channel];
            const std::vector<uint32_t>& link = recvs[channel];
            if (k >= link.size() || !ready(to, link[k])) break;
            const Task& other = ranks[static_cast<size_t>(to)].program->tasks[link[k]];
            if (other.micro_batch != t.micro_batch || other.layer != t.layer || other.bytes != t.bytes) {
              ++result.mismatched_transfers;
            }
            complete(to, link[k]);
            ++k;
          } else if (t.kind == TaskKind::COLLECTIVE) {
            const std::vector<int> members = w.groups[t.group].ranks_of(w.layout, r);
            bool all = true;
            for (int m : members) {
              const Rank& mr = ranks[static_cast<size_t>(m)];
              const uint32_t mi = mr.head[s] < mr.streams[s].size() ? mr.streams[s][mr.head[s]] : UINT32_MAX;
              if (mi == UINT32_MAX || !ready(m, mi) || mr.program->tasks[mi].kind != TaskKind::COLLECTIVE ||
                  mr.program->tasks[mi].group != t.group) {
                all = false;
                break;
              }
            }
            if (!all) break;
            for (int m : members) {
              if (m == r) continue;
              const Rank& mr = ranks[static_cast<size_t>(m)];
              const Task& mt = mr.program->tasks[mr.streams[s][mr.head[s]]];
              if (mt.collective != t.collective || mt.bytes != t.bytes) ++result.mismatched_collectives;
              complete(m, mr.streams[s][mr.head[s]]);
            }
          }
          complete(r, i);
          progress = true;
        }
      }
    }
  }
  return result;
}

}  // namespace trainsim::models::test_support

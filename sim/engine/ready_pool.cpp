#include "sim/engine/ready_pool.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "sim/core/error.hpp"

namespace trainsim::engine {

namespace {
constexpr size_t STREAMS = core::STREAM_COUNT;
}  // namespace

PoolChoice choose_block(const std::vector<PoolCandidate>& candidates, double free) {
  PoolChoice choice;
  const PoolCandidate* pick = nullptr;
  bool unknown = false;
  for (const PoolCandidate& c : candidates) {
    if (!c.arrived) {
      unknown = true;
      continue;
    }
    // Arrived by max(free, this arrival) and earlier than the best so far, or tied and preferred:
    // the earliest arrival always qualifies, so the minimum by (arrival, queue, block) is the pick.
    if (pick == nullptr || std::tie(c.arrival, c.queue, c.block) < std::tie(pick->arrival, pick->queue, pick->block)) {
      pick = &c;
    }
  }
  if (pick == nullptr) return choice;
  choice.kind = unknown ? PoolChoice::DEFER : PoolChoice::ISSUE;
  choice.block = pick->block;
  choice.time = std::max(free, pick->arrival);
  return choice;
}

ReadyPools::ReadyPools(const core::Workload& workload, const RankTable& table, const std::vector<ProgramPlan>& plans,
                       Host& host)
    : w_(workload), table_(table), plans_(plans), host_(host), pools_(table.ranks().size()) {
  // Teams by union-find over the meetings of shared groups.
  std::vector<uint32_t> parent(pools_.size());
  for (uint32_t s = 0; s < parent.size(); ++s) parent[s] = s;
  auto root = [&](uint32_t s) {
    while (parent[s] != s) s = parent[s] = parent[parent[s]];
    return s;
  };
  std::unordered_map<uint32_t, uint32_t> first_at_meeting;
  for (uint32_t s = 0; s < pools_.size(); ++s) {
    const PoolPlan& pp = plan_of(s);
    if (pp.empty()) continue;
    Pool& pool = pools_[s];
    pool.issue_time.assign(pp.blocks, 0.0);
    pool.next.assign(pp.queues.size(), 0);
    pool.call_count.assign(pp.shared_groups.size(), 0);
    pool.call_base.assign(pp.blocks * pp.shared_groups.size(), 0);
    for (uint16_t g : pp.shared_groups) {
      const auto [it, added] = first_at_meeting.try_emplace(table_.group_meeting(table_.ranks()[s].group_base + g), s);
      if (!added) parent[root(s)] = root(it->second);
    }
  }
  std::unordered_map<uint32_t, uint32_t> team_of_root;
  for (uint32_t s = 0; s < pools_.size(); ++s) {
    if (plan_of(s).empty()) continue;
    const auto [it, added] = team_of_root.try_emplace(root(s), static_cast<uint32_t>(teams_.size()));
    if (added) teams_.emplace_back();
    Team& team = teams_[it->second];
    TRAINSIM_CHECK(team.members.empty() ||
                       table_.ranks()[team.members.front()].program == table_.ranks()[s].program,
                   fmt::format("ranks {} and {} share a communicator from ready pools of different programs",
                               table_.ranks()[team.members.front()].rank, table_.ranks()[s].rank));
    team.members.push_back(s);
    pools_[s].team = it->second;
  }
}

const core::ReadyPool& ReadyPools::pool_of(uint32_t slot) const {
  return w_.programs[table_.ranks()[slot].program].pool;
}

const PoolPlan& ReadyPools::plan_of(uint32_t slot) const { return plans_[table_.ranks()[slot].program].pool; }

uint32_t ReadyPools::head(uint32_t slot, size_t stream, uint32_t& block) {
  Pool& pool = pools_[slot];
  const PoolPlan& pp = plan_of(slot);
  while (pool.block_pos[stream] < pool.issued.size()) {
    const uint32_t b = pool.issued[pool.block_pos[stream]];
    const size_t k = b * STREAMS + stream;
    if (pool.task_pos[stream] < pp.at[k + 1] - pp.at[k]) {
      block = b;
      return pp.tasks[pp.at[k] + pool.task_pos[stream]];
    }
    ++pool.block_pos[stream];
    pool.task_pos[stream] = 0;
  }
  return NO_INDEX;
}

bool ReadyPools::all_issued(uint32_t slot) const { return pools_[slot].issued.size() == plan_of(slot).blocks; }

bool ReadyPools::decide(uint32_t slot) {
  const uint32_t team_index = pools_[slot].team;
  Team& team = teams_[team_index];
  double free = 0;
  double opened = 0;
  for (uint32_t m : team.members) {
    double member_free = 0;
    if (!host_.waits_for_block(m, member_free)) return false;
    Pool& pool = pools_[m];
    if (pool.opened_at < 0) pool.opened_at = member_free;  // it first waits when it reaches the pool
    free = std::max(free, member_free);
    opened = std::max(opened, pool.opened_at);
  }
  const uint32_t lead = team.members.front();
  const core::ReadyPool& rp = pool_of(lead);
  const PoolPlan& pp = plan_of(lead);
  const Pool& pool = pools_[lead];
  candidates_.clear();
  for (uint32_t q = 0; q < pp.queues.size(); ++q) {
    if (pool.next[q] == pp.queues[q].size()) continue;
    const uint32_t b = pp.queues[q][pool.next[q]];
    const core::PoolBlock& block = rp.blocks[b];
    if (block.in_flight > 0 && pool.open >= rp.in_flight_limit) continue;
    PoolCandidate c{b, q, true, opened};
    if (block.trigger != core::NO_TASK) {
      c.arrival = 0;
      for (uint32_t m : team.members) {
        const double end = host_.end_of(m, block.trigger);
        c.arrived = c.arrived && end >= 0;
        c.arrival = std::max(c.arrival, end);
      }
    }
    candidates_.push_back(c);
  }
  const PoolChoice choice = choose_block(candidates_, free);
  if (choice.kind == PoolChoice::ISSUE) {
    issue(team_index, choice.block, choice.time);
    return true;
  }
  const bool same = team.pending && choice.kind == PoolChoice::DEFER && team.pending_block == choice.block &&
                    team.pending_time == choice.time;
  if (same || (!team.pending && choice.kind == PoolChoice::WAIT)) return false;
  ++team.version;
  team.pending = choice.kind == PoolChoice::DEFER;
  if (team.pending) {
    team.pending_block = choice.block;
    team.pending_time = choice.time;
    decisions_.push({choice.time, team_index, team.version, choice.block});
  }
  return false;
}

double ReadyPools::next_decision() {
  while (!decisions_.empty() && decisions_.top().version != teams_[decisions_.top().team].version) decisions_.pop();
  return decisions_.empty() ? std::numeric_limits<double>::infinity() : decisions_.top().time;
}

void ReadyPools::issue_next_decision() {
  TRAINSIM_CHECK(next_decision() < std::numeric_limits<double>::infinity(), "no deferred pool decision to issue");
  const Decision d = decisions_.top();
  decisions_.pop();
  issue(d.team, d.block, d.time);
}

void ReadyPools::issue(uint32_t team_index, uint32_t block, double time) {
  Team& team = teams_[team_index];
  ++team.version;
  team.pending = false;
  for (uint32_t m : team.members) {
    Pool& pool = pools_[m];
    const core::PoolBlock& b = pool_of(m).blocks[block];
    const PoolPlan& pp = plan_of(m);
    TRAINSIM_CHECK(pp.queues[b.queue][pool.next[b.queue]] == block, "a pool block issued out of its queue's order");
    ++pool.next[b.queue];
    pool.issued.push_back(block);
    pool.issue_time[block] = time;
    pool.open = static_cast<uint32_t>(static_cast<int>(pool.open) + b.in_flight);
    const size_t shared = pp.shared_groups.size();
    for (size_t k = 0; k < shared; ++k) {
      pool.call_base[block * shared + k] = pool.call_count[k];
      pool.call_count[k] += pp.calls[block * shared + k];
    }
    host_.wake(m);
  }
}

uint32_t ReadyPools::call_number(uint32_t slot, uint32_t task, uint32_t number) const {
  const PoolPlan& pp = plan_of(slot);
  const core::ReadyPool& rp = pool_of(slot);
  if (pp.shared_groups.empty() || task < rp.begin || task >= rp.end) return number;
  const uint32_t k = pp.shared_of[task - rp.begin];
  if (k == NO_INDEX) return number;
  const uint32_t b = rp.block(task);
  return pp.calls_before[k] + pools_[slot].call_base[b * pp.shared_groups.size() + k] + pp.seq_in_block[task - rp.begin];
}

std::vector<uint64_t> ReadyPools::issue_offsets(uint32_t slot) const {
  const PoolPlan& pp = plan_of(slot);
  std::vector<uint64_t> offsets(pp.blocks, 0);
  uint64_t before = 0;
  for (uint32_t b : pools_[slot].issued) {
    offsets[b] = before;
    before += pp.block_size[b];
  }
  return offsets;
}

uint64_t ReadyPools::issue_position(uint32_t slot, uint32_t task, const std::vector<uint64_t>& offsets) const {
  const core::ReadyPool& rp = pool_of(slot);
  const uint32_t b = rp.block(task);
  if (b == core::LOOSE_TASK) return uint64_t{task} << 32;
  return (uint64_t{rp.begin} + offsets[b] + plan_of(slot).index_in_block[task - rp.begin]) << 32 | task;
}

std::string ReadyPools::describe(uint32_t slot) const {
  return fmt::format("{} of {} blocks issued, {} in flight", pools_[slot].issued.size(), plan_of(slot).blocks,
                     pools_[slot].open);
}

}  // namespace trainsim::engine

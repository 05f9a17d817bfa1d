#pragma once
// Ready pools (sim/core/workload.hpp, READY POOL: AxoNN's message-driven execution) as the executor
// runs them: the choice rule on its own, and the pools of the simulated ranks (which blocks each
// has issued, their teams, the decisions deferred until the clock reaches them). Internal to
// sim/engine (executor.hpp says when decisions are made).

#include <array>
#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "sim/core/workload.hpp"
#include "sim/engine/program_plan.hpp"
#include "sim/engine/rank_table.hpp"

namespace trainsim::engine {

// The first unissued block of one queue, allowed by the in-flight limit.
struct PoolCandidate {
  uint32_t block = 0;
  uint32_t queue = 0;
  bool arrived = false;  // its input's arrival is known (its trigger has ended)
  double arrival = 0;    // when it arrived, if known
};

struct PoolChoice {
  // WAIT: no candidate's input has arrived yet.
  // ISSUE: `block` runs at `time`, final: every candidate's arrival is known.
  // DEFER: `block` runs at `time` unless an input not known yet arrives by then; the executor
  //   issues it when no input can arrive before `time` any more (the simulated clock reached it),
  //   ties with an input still unknown at that instant going to `block`.
  enum Kind { WAIT, DEFER, ISSUE } kind = WAIT;
  uint32_t block = 0;
  double time = 0;
};

// With the COMPUTE stream free at `free`: at t = max(free, earliest known arrival), the candidate
// arrived first among those arrived by t, the lower queue on ties (then the lower block).
PoolChoice choose_block(const std::vector<PoolCandidate>& candidates, double free);

// The ready pools of the simulated ranks of a RankTable.
class ReadyPools {
 public:
  // What the pools need to know about the ranks from the executor.
  class Host {
   public:
    virtual ~Host() = default;
    // Whether the rank's COMPUTE stream has reached the pool and run the COMPUTE-stream tasks of
    // every block issued so far, and waits for the next block; `free` is then the end of its last
    // COMPUTE-stream task.
    virtual bool waits_for_block(uint32_t slot, double& free) = 0;
    // The end of the rank's task `task`, or a negative value while it has not ended.
    virtual double end_of(uint32_t slot, uint32_t task) const = 0;
    // A block was issued on the rank: it can run more tasks.
    virtual void wake(uint32_t slot) = 0;
  };

  // Teams: the simulated ranks that call one communicator from blocks of two queues
  // (PoolPlan::shared_groups), transitively. REQUIRES: `table` was made from `plans`.
  ReadyPools(const core::Workload& workload, const RankTable& table, const std::vector<ProgramPlan>& plans, Host& host);

  // The next task on stream `stream` among the blocks the rank has issued, or NO_INDEX when the
  // stream has run all of theirs; `block` is set to its block. REQUIRES: the rank has a pool.
  uint32_t head(uint32_t slot, size_t stream, uint32_t& block);
  // The head task of `stream` among the issued blocks has ended.
  void ran(uint32_t slot, size_t stream) { ++pools_[slot].task_pos[stream]; }
  double issue_time(uint32_t slot, uint32_t block) const { return pools_[slot].issue_time[block]; }
  // Whether the rank has issued every block of its pool.
  bool all_issued(uint32_t slot) const;

  // The rank waits for a block: decides with its team when every member does. Issues at once when
  // the choice is final (returns true), else defers it (next_decision) or waits for an input.
  bool decide(uint32_t slot);
  // The time of the earliest deferred decision, or infinity.
  double next_decision();
  // Issues the earliest deferred decision. REQUIRES: next_decision() is finite.
  void issue_next_decision();

  // The call number of collective `task` of the rank, whose program-order number is `number`: in
  // issue order for a shared group's calls inside blocks.
  uint32_t call_number(uint32_t slot, uint32_t task, uint32_t number) const;
  // The position of the rank's task `task` in its issue order (program order, but a block's tasks
  // where it was issued), for ordering events at one instant. `offsets` from issue_offsets().
  uint64_t issue_position(uint32_t slot, uint32_t task, const std::vector<uint64_t>& offsets) const;
  std::vector<uint64_t> issue_offsets(uint32_t slot) const;
  // "k of n issued, j in flight", for deadlock reports.
  std::string describe(uint32_t slot) const;

 private:
  // One rank's pool.
  struct Pool {
    std::vector<uint32_t> issued;      // blocks, in issue order
    std::vector<double> issue_time;    // per block
    std::vector<uint32_t> next;        // per queue: its blocks issued so far
    // Per stream: the entry of `issued` whose tasks the stream runs, and how many of them have run.
    std::array<uint32_t, core::STREAM_COUNT> block_pos{};
    std::array<uint32_t, core::STREAM_COUNT> task_pos{};
    uint32_t open = 0;                 // blocks opened and not closed (in-flight limit)
    double opened_at = -1;             // when the COMPUTE stream reached the pool (< 0: not yet)
    std::vector<uint32_t> call_count;  // per shared group (PoolPlan::shared_groups): calls in issued blocks
    std::vector<uint32_t> call_base;   // per block and shared group: call_count when it was issued
    uint32_t team = NO_INDEX;          // index into teams_
  };
  struct Team {
    std::vector<uint32_t> members;  // slots, ascending
    uint64_t version = 0;           // bumped whenever its pending decision changes or a block is issued
    bool pending = false;           // a deferred decision is queued
    uint32_t pending_block = 0;
    double pending_time = 0;
  };
  struct Decision {
    double time = 0;
    uint32_t team = 0;
    uint64_t version = 0;
    uint32_t block = 0;
  };
  struct LaterDecision {
    bool operator()(const Decision& a, const Decision& b) const {
      return a.time != b.time ? a.time > b.time : a.team > b.team;
    }
  };

  void issue(uint32_t team, uint32_t block, double time);
  const core::ReadyPool& pool_of(uint32_t slot) const;
  const PoolPlan& plan_of(uint32_t slot) const;

  const core::Workload& w_;
  const RankTable& table_;
  const std::vector<ProgramPlan>& plans_;
  Host& host_;
  std::vector<Pool> pools_;  // by slot
  std::vector<Team> teams_;
  std::priority_queue<Decision, std::vector<Decision>, LaterDecision> decisions_;
  std::vector<PoolCandidate> candidates_;  // scratch of decide()
};

}  // namespace trainsim::engine

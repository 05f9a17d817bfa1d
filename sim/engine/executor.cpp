#include "sim/engine/executor.hpp"

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

#include "sim/core/error.hpp"
#include "sim/engine/breakdown.hpp"
#include "sim/engine/program_plan.hpp"
#include "sim/engine/rank_table.hpp"
#include "sim/engine/ready_pool.hpp"
#include "sim/engine/task_kind_name.hpp"

namespace trainsim::engine {
namespace {

using core::Task;
using core::TaskKind;

constexpr size_t STREAMS = core::STREAM_COUNT;
constexpr size_t COMPUTE_LANE = static_cast<size_t>(core::Stream::COMPUTE);
constexpr double NOT_ENDED = -1;  // end_ of a task that has not ended (times are >= 0)

// The progress of one simulated rank (same slot as in RankTable::ranks()).
struct RankState {
  std::array<uint32_t, LANE_COUNT> cursor{};     // tasks of each lane that have run
  std::array<double, LANE_COUNT> lane_free{};    // end of each lane's last task
  uint32_t waiting = 0;  // bit l: lane l's head has joined a call and waits for the others
  size_t remaining = 0;
  double finished_at = 0;
  bool queued = false;
};

struct Waiter {
  uint32_t slot;
  uint32_t task;
};

// One call in progress. Pooled: completed calls are reused, so their waiter lists keep capacity.
struct Call {
  uint32_t arrivals = 0;
  double ready = 0;
  const Task* first = nullptr;
  std::vector<Waiter> waiters;
};

// The calls of one meeting that have arrivals but are not complete, by call number.
struct OpenCalls {
  uint32_t base_seq = 0;       // call number of calls.front()
  std::deque<uint32_t> calls;  // indices into Executor::calls_; NO_INDEX: completed, or nobody arrived yet
};

struct CostKey {
  uint32_t placement;
  core::CollectiveOp op;
  double bytes;
  friend bool operator==(const CostKey&, const CostKey&) = default;
};

struct CostKeyHash {
  size_t operator()(const CostKey& k) const {
    return std::hash<double>()(k.bytes) ^ (static_cast<size_t>(k.placement) * 0x9E3779B97F4A7C15ull) ^
           static_cast<size_t>(k.op);
  }
};

std::vector<ProgramPlan> plan_programs(const core::Workload& w, const network::ClusterConfig& cluster,
                                       const core::DeviceProfile& device) {
  std::vector<ProgramPlan> plans;
  plans.reserve(w.programs.size());
  for (const core::Program& p : w.programs) plans.push_back(plan_program(p, w, cluster, device));
  return plans;
}

}  // namespace

class Executor::Impl final : public ReadyPools::Host {
 public:
  Impl(const core::Workload& w, const network::ClusterConfig& cluster, const core::Profile& profile,
       const SimulationOptions& options, CommunicationModel* model, CommunicationLauncher* launcher)
      : w_(w),
        options_(options),
        model_(model),
        launcher_(launcher),
        plans_(plan_programs(w, cluster, profile.device)),
        table_(w, cluster, plans_, options.use_symmetry),
        ranks_(table_.ranks().size()),
        end_(table_.end_slots(), NOT_ENDED),
        open_(table_.meetings().size()) {
    for (size_t s = 0; s < ranks_.size(); ++s) {
      ranks_[s].remaining = program_of(static_cast<uint32_t>(s)).tasks.size();
      unfinished_ += ranks_[s].remaining;
    }
    total_tasks_ = unfinished_;
    if (launcher_ != nullptr) start_.assign(end_.size(), 0.0);
    pools_.emplace(w_, table_, plans_, *this);
    for (size_t s = ranks_.size(); s-- > 0;) enqueue(static_cast<uint32_t>(s));
  }

  const RankTable& table() const { return table_; }

  void for_each_call_site(const std::function<void(const CallSite&)>& visit) const {
    for (uint32_t slot = 0; slot < ranks_.size(); ++slot) {
      const SimulatedRank& sr = info(slot);
      const ProgramPlan& plan = plans_[sr.program];
      const std::vector<Task>& tasks = w_.programs[sr.program].tasks;
      for (uint32_t ti = 0; ti < tasks.size(); ++ti) {
        const Task& t = tasks[ti];
        uint32_t meeting = NO_INDEX;
        switch (t.kind) {
          case TaskKind::COLLECTIVE: meeting = table_.group_meeting(sr.group_base + t.group); break;
          case TaskKind::SEND:
          case TaskKind::RECV: meeting = table_.port_meeting(sr.port_base + plan.port[ti]); break;
          case TaskKind::COPY:
            if (t.seconds > 0) continue;  // a measured duration: not launched
            break;
          case TaskKind::COMPUTE:
          case TaskKind::MEMORY: continue;
        }
        visit({slot, plan.lane[ti], meeting, &t});
      }
    }
  }

  bool finished() const { return unfinished_ == 0; }
  size_t unfinished() const { return unfinished_; }
  size_t total_tasks() const { return total_tasks_; }

  // Runs every task that can run, rank by rank, until none can; then issues the earliest deferred
  // pool decision whose time is at most `horizon`, and again, until none is left.
  void advance(double horizon) {
    for (;;) {
      while (!worklist_.empty()) {
        current_ = worklist_.back();
        worklist_.pop_back();
        ranks_[current_].queued = false;
        advance(current_);
      }
      current_ = NO_INDEX;
      const double next = pools_->next_decision();
      if (next > horizon || next == std::numeric_limits<double>::infinity()) return;
      pools_->issue_next_decision();
    }
  }

  // The time of the earliest deferred pool decision, or infinity.
  double next_decision() { return pools_->next_decision(); }

  // ReadyPools::Host.
  bool waits_for_block(uint32_t slot, double& free) override {
    const RankState& st = ranks_[slot];
    const ProgramPlan& plan = plan_of(slot);
    if (st.cursor[COMPUTE_LANE] < plan.pool_at[COMPUTE_LANE] || pools_->all_issued(slot)) return false;
    if ((st.waiting & (1u << COMPUTE_LANE)) != 0) return false;
    uint32_t block = NO_INDEX;
    if (head(slot, st, plan, COMPUTE_LANE, block) != NO_INDEX) return false;
    free = st.lane_free[COMPUTE_LANE];
    return true;
  }
  double end_of(uint32_t slot, uint32_t task) const override { return end_[info(slot).end_base + task]; }
  void wake(uint32_t slot) override { enqueue(slot); }

  void complete(uint32_t call_index, double end) {
    Call& call = calls_.at(call_index);
    TRAINSIM_CHECK(call.first != nullptr && end >= call.ready, "a call completed twice, or before it started");
    for (const Waiter& waiter : call.waiters) finish(waiter.slot, waiter.task, call.ready, end);
    release(call_index);
  }

  // Names the head task of every unfinished stream of the lowest stuck rank, and why it cannot run.
  [[noreturn]] void report_deadlock() {
    for (uint32_t s = 0; s < ranks_.size(); ++s) {
      if (ranks_[s].remaining > 0) report_deadlock(s);
    }
    throw core::InternalError("deadlock reported on a finished workload");
  }

  SimulationResult result() {
    SimulationResult result;
    result.simulated_ranks = static_cast<int>(ranks_.size());
    result.events = events_;
    if (!ranks_.empty()) result.critical_rank = table_.ranks().front().rank;
    for (size_t s = 0; s < ranks_.size(); ++s) {
      const double span = period_end(static_cast<uint32_t>(s)) - period_start(static_cast<uint32_t>(s));
      if (span > result.iteration_time.value()) {
        result.iteration_time = core::Seconds(span);
        result.critical_rank = table_.ranks()[s].rank;
      }
    }
    fill_breakdown(result);
    fill_memory(result);
    fill_timeline(result);
    return result;
  }

 private:
  const SimulatedRank& info(uint32_t slot) const { return table_.ranks()[slot]; }
  const core::Program& program_of(uint32_t slot) const { return w_.programs[info(slot).program]; }
  const ProgramPlan& plan_of(uint32_t slot) const { return plans_[info(slot).program]; }

  void enqueue(uint32_t slot) {
    RankState& st = ranks_[slot];
    if (st.queued || slot == current_) return;
    st.queued = true;
    worklist_.push_back(slot);
  }

  // Runs every task of the rank that can run, lane by lane, until none can; at a pool decision,
  // decides with the rank's team and goes on if that issued a block.
  void advance(uint32_t slot) {
    RankState& st = ranks_[slot];
    const SimulatedRank& sr = info(slot);
    const ProgramPlan& plan = plans_[sr.program];
    const core::Program& prog = w_.programs[sr.program];
    const bool pool = !plan.pool.empty();
    for (;;) {
      size_t before = st.remaining + 1;
      while (st.remaining != before && st.remaining > 0) {
        before = st.remaining;
        for (const uint8_t l : plan.lanes) {
          while ((st.waiting & (1u << l)) == 0) {
            uint32_t block = NO_INDEX;
            const uint32_t ti = head(slot, st, plan, l, block);
            if (ti == NO_INDEX) break;
            const Task& t = prog.tasks[ti];
            double ready = st.lane_free[l];
            if (block != NO_INDEX) ready = std::max(ready, pools_->issue_time(slot, block));
            if (!dependencies_done(sr, prog, t, ready)) break;
            run(slot, sr, plan, ti, t, ready);
          }
        }
      }
      if (!pool || !pools_->decide(slot)) return;
    }
  }

  // Starts task `ti`, ready at `ready`.
  void run(uint32_t slot, const SimulatedRank& sr, const ProgramPlan& plan, uint32_t ti, const Task& t, double ready) {
    switch (t.kind) {
      case TaskKind::COLLECTIVE: arrive(slot, ti, t, ready, table_.group_meeting(sr.group_base + t.group)); break;
      case TaskKind::SEND:
      case TaskKind::RECV: arrive(slot, ti, t, ready, table_.port_meeting(sr.port_base + plan.port[ti])); break;
      case TaskKind::COPY:
        if (launcher_ != nullptr && t.seconds <= 0) {
          launch_copy(slot, ti, t, ready);
          break;
        }
        finish(slot, ti, ready, ready + plan.duration[ti]);
        break;
      case TaskKind::COMPUTE:
      case TaskKind::MEMORY: finish(slot, ti, ready, ready + plan.duration[ti]); break;
    }
  }

  // The task at the head of lane `l`, or NO_INDEX when the lane is done or waits for a pool block
  // to be issued; `block` is set to the head's pool block, if any. A stream lane runs its tasks
  // before the pool, the issued blocks' tasks on its stream, then its tasks after the pool.
  uint32_t head(uint32_t slot, const RankState& st, const ProgramPlan& plan, size_t l, uint32_t& block) {
    const uint32_t begin = plan.lane_begin[l];
    const uint32_t length = plan.lane_begin[l + 1] - begin;
    uint32_t c = st.cursor[l];
    if (l < STREAMS && c >= plan.pool_at[l]) {
      if (c < plan.pool_at[l] + plan.pool_tasks[l]) return pools_->head(slot, l, block);
      c -= plan.pool_tasks[l];
    }
    return c < length ? plan.order[begin + c] : NO_INDEX;
  }

  // Whether every dependency of `t` has ended; raises `ready` to their latest end.
  bool dependencies_done(const SimulatedRank& sr, const core::Program& prog, const Task& t, double& ready) const {
    const uint32_t* deps = prog.deps_of(t);
    for (uint32_t i = 0; i < t.dep_count; ++i) {
      const double end = end_[sr.end_base + deps[i]];
      if (end == NOT_ENDED) return false;
      ready = std::max(ready, end);
    }
    return true;
  }

  // The call number of a collective or send/recv (ReadyPools::call_number).
  uint32_t call_number(uint32_t slot, uint32_t task, const Task& t) const {
    const uint32_t number = plan_of(slot).seq[task];
    return t.kind == TaskKind::COLLECTIVE && !plan_of(slot).pool.empty() ? pools_->call_number(slot, task, number) : number;
  }

  void finish(uint32_t slot, uint32_t task, double start, double end) {
    RankState& st = ranks_[slot];
    const ProgramPlan& plan = plan_of(slot);
    const size_t l = plan.lane[task];
    const size_t s = static_cast<size_t>(program_of(slot).tasks[task].stream);
    end_[info(slot).end_base + task] = end;
    if (!start_.empty()) start_[info(slot).end_base + task] = start;
    --unfinished_;
    st.lane_free[l] = end;
    ++st.cursor[l];
    if (!plan.pool.empty() && program_of(slot).pool.block(task) != core::LOOSE_TASK) pools_->ran(slot, l);
    st.waiting &= ~(1u << l);
    --st.remaining;
    // The STORAGE stream is background work (a checkpoint flush): it shares links, but the
    // iteration ends with the rest of the rank's tasks.
    if (s != static_cast<size_t>(core::Stream::STORAGE)) st.finished_at = std::max(st.finished_at, end);
    ++events_;
    enqueue(slot);
  }

  double communication_time(const Meeting& m, const Task& t) {
    if (t.kind != TaskKind::COLLECTIVE) {
      return model_->p2p_time_between(core::Bytes(t.bytes), m.same_node, m.first_rank, m.second_rank).value();
    }
    const CostKey key{m.placement, t.collective, t.bytes};
    const auto it = cost_cache_.find(key);
    if (it != cost_cache_.end()) return it->second;
    const double time = model_->collective_time(t.collective, core::Bytes(t.bytes), table_.placements()[m.placement]).value();
    cost_cache_.emplace(key, time);
    return time;
  }

  // The task joins its call; the last arrival completes the call for every member.
  void arrive(uint32_t slot, uint32_t task, const Task& t, double ready, uint32_t meeting) {
    const Meeting& m = table_.meetings()[meeting];
    if (m.expected == 1 && launcher_ == nullptr) {
      finish(slot, task, ready, ready + communication_time(m, t));
      return;
    }
    OpenCalls& open = open_[meeting];
    const uint32_t seq = call_number(slot, task, t);
    TRAINSIM_CHECK(seq >= open.base_seq, "a call was matched twice");
    const size_t index = seq - open.base_seq;
    if (index >= open.calls.size()) open.calls.resize(index + 1, NO_INDEX);
    if (open.calls[index] == NO_INDEX) open.calls[index] = open_call();
    const uint32_t call_index = open.calls[index];
    Call& call = calls_[call_index];
    if (call.first == nullptr) {
      call.first = &t;
    } else {
      check_agreement(*call.first, t, m);
    }
    ++call.arrivals;
    call.ready = std::max(call.ready, ready);
    call.waiters.push_back({slot, task});
    ranks_[slot].waiting |= 1u << plan_of(slot).lane[task];
    if (call.arrivals < m.expected) return;

    open.calls[index] = NO_INDEX;
    while (!open.calls.empty() && open.calls.front() == NO_INDEX) {
      open.calls.pop_front();
      ++open.base_seq;
    }
    if (launcher_ != nullptr) {
      launcher_->launch(call_index, meeting, t, call.ready);
      return;
    }
    const double end = call.ready + communication_time(m, t);
    for (const Waiter& waiter : call.waiters) finish(waiter.slot, waiter.task, call.ready, end);
    release(call_index);
  }

  // A copy as a call of one member, handed to the launcher.
  void launch_copy(uint32_t slot, uint32_t task, const Task& t, double ready) {
    const uint32_t call_index = open_call();
    Call& call = calls_[call_index];
    call.first = &t;
    call.arrivals = 1;
    call.ready = ready;
    call.waiters.push_back({slot, task});
    ranks_[slot].waiting |= 1u << plan_of(slot).lane[task];
    launcher_->launch_copy(call_index, info(slot).rank, t, ready);
  }

  void release(uint32_t call_index) {
    Call& call = calls_[call_index];
    call.arrivals = 0;
    call.ready = 0;
    call.first = nullptr;
    call.waiters.clear();
    free_calls_.push_back(call_index);
  }

  uint32_t open_call() {
    if (!free_calls_.empty()) {
      const uint32_t i = free_calls_.back();
      free_calls_.pop_back();
      return i;
    }
    calls_.emplace_back();
    return static_cast<uint32_t>(calls_.size() - 1);
  }

  void check_agreement(const Task& a, const Task& b, const Meeting& m) const {
    const bool same = a.kind == TaskKind::COLLECTIVE ? a.collective == b.collective && a.bytes == b.bytes
                                                     : a.kind != b.kind && a.bytes == b.bytes;
    if (!same) throw WorkloadStuck(fmt::format("the members of one call disagree: {} {} of {} bytes vs {} {} of {} bytes "
                                     "(communication of rank {})",
                                     kind_name(a.kind), core::to_string(a.collective), a.bytes, kind_name(b.kind),
                                     core::to_string(b.collective), b.bytes, m.first_rank));
  }

  std::string task_label(const core::Program& prog, uint32_t ti) const {
    const Task& t = prog.tasks[ti];
    const std::string name = t.name < w_.names.size() ? w_.names[t.name] : std::string(kind_name(t.kind));
    return fmt::format("task {} ({} \"{}\")", ti, kind_name(t.kind), name);
  }

  // Names the head task of every unfinished stream of the lowest stuck rank, and why it cannot run.
  [[noreturn]] void report_deadlock(uint32_t slot) {
    size_t stuck_ranks = 0;
    size_t stuck_tasks = 0;
    for (const RankState& other : ranks_) {
      stuck_ranks += other.remaining > 0 ? 1 : 0;
      stuck_tasks += other.remaining;
    }
    const RankState& st = ranks_[slot];
    const ProgramPlan& plan = plan_of(slot);
    const core::Program& prog = program_of(slot);
    const int rank = info(slot).rank;
    std::string heads;
    const bool pool = !plan.pool.empty();
    for (const uint8_t l : plan.lanes) {
      const auto stream = static_cast<core::Stream>(l % STREAMS);
      const std::string lane =
          fmt::format("stream {}{}", core::to_string(stream), l >= STREAMS ? " (posted receives)" : "");
      uint32_t block = NO_INDEX;
      const uint32_t ti = head(slot, st, plan, l, block);
      if (ti == NO_INDEX) {
        if (l == COMPUTE_LANE && pool && !pools_->all_issued(slot)) {
          heads += fmt::format("; {}: waits for its ready pool to issue a block ({}; no next block's input has arrived)",
                               lane, pools_->describe(slot));
        }
        continue;
      }
      const Task& t = prog.tasks[ti];
      std::string reason;
      if ((st.waiting & (1u << l)) != 0 && t.kind == TaskKind::COLLECTIVE) {
        reason = fmt::format("waits for the other members of its \"{}\" communicator (call {})",
                             w_.groups[t.group].name, call_number(slot, ti, t));
      } else if ((st.waiting & (1u << l)) != 0) {
        reason = fmt::format("waits for rank {} to post the matching {}",
                             w_.layout.peer(rank, t.peer_axis, t.peer_offset), t.kind == TaskKind::SEND ? "recv" : "send");
      } else {
        const uint32_t* deps = prog.deps_of(t);
        for (uint32_t i = 0; i < t.dep_count && reason.empty(); ++i) {
          const core::Stream ds = prog.tasks[deps[i]].stream;
          if (end_[info(slot).end_base + deps[i]] == NOT_ENDED) {
            reason = fmt::format("waits for {} on stream {}", task_label(prog, deps[i]), core::to_string(ds));
          }
        }
      }
      heads += fmt::format("; {}: {} {}", lane, task_label(prog, ti), reason);
    }
    throw WorkloadStuck(fmt::format(
        "deadlock: no task can run while {} remain on {} simulated ranks; rank {} (program \"{}\"){}", stuck_tasks,
        stuck_ranks, rank, prog.name, heads));
  }

  double task_start(uint32_t slot, uint32_t ti) {
    const double end = end_[info(slot).end_base + ti];
    return start_.empty() ? end - task_duration(slot, ti) : start_[info(slot).end_base + ti];
  }

  double task_duration(uint32_t slot, uint32_t ti) {
    const SimulatedRank& sr = info(slot);
    const Task& t = program_of(slot).tasks[ti];
    switch (t.kind) {
      case TaskKind::COLLECTIVE: return communication_time(table_.meetings()[table_.group_meeting(sr.group_base + t.group)], t);
      case TaskKind::SEND:
      case TaskKind::RECV:
        return communication_time(table_.meetings()[table_.port_meeting(sr.port_base + plan_of(slot).port[ti])], t);
      case TaskKind::COMPUTE:
      case TaskKind::COPY:
      case TaskKind::MEMORY: break;
    }
    return plan_of(slot).duration[ti];
  }

  // Where a rank's iteration starts: 0, or in a steady state (Workload::steady_state) the start of
  // its first compute task on the COMPUTE stream.
  double period_start(uint32_t slot) {
    if (!w_.steady_state) return 0.0;
    const core::Program& prog = program_of(slot);
    double first = -1;
    for (uint32_t ti = 0; ti < prog.tasks.size(); ++ti) {
      const Task& t = prog.tasks[ti];
      if (t.kind != TaskKind::COMPUTE || t.stream != core::Stream::COMPUTE) continue;
      const double start = task_start(slot, ti);
      first = first < 0 ? start : std::min(first, start);
    }
    return std::max(first, 0.0);
  }

  // Where it ends: its last task, or in a steady state its last compute-stream task (communication
  // still running then, such as the tied embedding's all-reduce, overlaps the next period).
  double period_end(uint32_t slot) {
    if (!w_.steady_state) return ranks_[slot].finished_at;
    const core::Program& prog = program_of(slot);
    double last = 0;
    for (uint32_t ti = 0; ti < prog.tasks.size(); ++ti) {
      if (prog.tasks[ti].stream == core::Stream::COMPUTE) last = std::max(last, end_[info(slot).end_base + ti]);
    }
    return last;
  }

  void fill_breakdown(SimulationResult& result) {
    if (ranks_.empty()) return;
    const uint32_t slot = table_.slot_of(result.critical_rank);
    const core::Program& prog = program_of(slot);
    const double offset = period_start(slot);
    std::vector<ActivityInterval> intervals;
    intervals.reserve(prog.tasks.size());
    for (uint32_t ti = 0; ti < prog.tasks.size(); ++ti) {
      const Task& t = prog.tasks[ti];
      if (t.stream == core::Stream::STORAGE) continue;  // background: not part of the iteration
      ActivityInterval i;
      i.end_s = end_[info(slot).end_base + ti] - offset;
      i.start_s = std::max(0.0, task_start(slot, ti) - offset);
      if (w_.steady_state) {
        // The period's window: what ran before it or after it belongs to the neighbouring periods.
        i.end_s = std::min(i.end_s, result.iteration_time.value());
        if (i.end_s <= 0 || i.start_s >= result.iteration_time.value()) continue;
      }
      switch (t.kind) {
        case TaskKind::MEMORY: continue;
        case TaskKind::COMPUTE:
          i.activity = t.stream == core::Stream::HOST ? Activity::HOST : Activity::COMPUTE;
          i.phase = t.phase;
          break;
        case TaskKind::COPY: i.activity = Activity::COPY; break;
        case TaskKind::COLLECTIVE: i.activity = Activity::COMMUNICATION; i.axis = w_.groups[t.group].axis; break;
        case TaskKind::SEND:
        case TaskKind::RECV: i.activity = Activity::COMMUNICATION; i.axis = t.peer_axis; break;
      }
      intervals.push_back(i);
    }
    const RankBreakdown b = break_down(intervals, result.iteration_time);
    result.breakdown = b.breakdown;
    result.comm_time = b.comm_time;
    result.copy_time = b.copy_time;
    result.host_time = b.host_time;
  }

  void fill_memory(SimulationResult& result) const {
    struct Change {
      double time;
      uint64_t order;  // issue order: program order, but a pool block's tasks where it was issued
      double bytes;
    };
    std::vector<double> peak(w_.programs.size(), 0.0);
    std::vector<double> host_peak(w_.programs.size(), 0.0);
    std::vector<Change> changes;
    for (const core::MemorySpace space : {core::MemorySpace::DEVICE, core::MemorySpace::HOST}) {
      std::vector<double>& peaks = space == core::MemorySpace::DEVICE ? peak : host_peak;
      for (uint32_t slot = 0; slot < ranks_.size(); ++slot) {
        const core::Program& prog = program_of(slot);
        const bool pool = !plan_of(slot).pool.empty();
        const std::vector<uint64_t> offsets = pool ? pools_->issue_offsets(slot) : std::vector<uint64_t>{};
        changes.clear();
        for (uint32_t ti : plan_of(slot).memory_tasks) {
          if (prog.tasks[ti].memory_space != space) continue;
          const uint64_t order = pool ? pools_->issue_position(slot, ti, offsets) : uint64_t{ti} << 32;
          changes.push_back({end_[info(slot).end_base + ti], order, prog.tasks[ti].bytes});
        }
        std::sort(changes.begin(), changes.end(),
                  [](const Change& a, const Change& b) { return a.time != b.time ? a.time < b.time : a.order < b.order; });
        double running = 0;
        double& best = peaks[info(slot).program];
        for (const Change& c : changes) {
          running += c.bytes;
          best = std::max(best, running);
        }
      }
    }
    for (size_t p = 0; p < w_.programs.size(); ++p) {
      result.peak_dynamic_by_program.push_back(core::Bytes(peak[p]));
      result.peak_memory_by_program.push_back(w_.programs[p].static_memory + core::Bytes(peak[p]));
      result.peak_host_dynamic_by_program.push_back(core::Bytes(host_peak[p]));
    }
  }

  void fill_timeline(SimulationResult& result) {
    std::vector<int> done;
    for (int rank : options_.timeline_ranks) {
      TRAINSIM_CHECK(rank >= 0 && rank < w_.layout.world_size(),
                     fmt::format("timeline rank {} is outside the {} ranks", rank, w_.layout.world_size()));
      if (std::find(done.begin(), done.end(), rank) != done.end()) continue;
      done.push_back(rank);
      const uint32_t slot = table_.slot_of(table_.representative(rank));
      const core::Program& prog = program_of(slot);
      for (uint32_t ti = 0; ti < prog.tasks.size(); ++ti) {
        result.timeline.push_back({rank, prog.tasks[ti].stream, task_start(slot, ti), end_[info(slot).end_base + ti], ti});
      }
    }
  }

  const core::Workload& w_;
  const SimulationOptions& options_;
  CommunicationModel* model_;          // synchronous pricing, or
  CommunicationLauncher* launcher_;    // asynchronous
  std::vector<ProgramPlan> plans_;
  RankTable table_;
  std::vector<RankState> ranks_;  // by slot of table_.ranks()
  std::vector<double> end_;       // end time of every task of every simulated rank
  std::vector<double> start_;     // start times likewise, kept only with a launcher
  size_t unfinished_ = 0;
  size_t total_tasks_ = 0;
  std::vector<OpenCalls> open_;   // by meeting of table_.meetings()
  std::vector<Call> calls_;
  std::vector<uint32_t> free_calls_;
  std::unordered_map<CostKey, double, CostKeyHash> cost_cache_;
  std::vector<uint32_t> worklist_;
  uint32_t current_ = NO_INDEX;
  uint64_t events_ = 0;
  std::optional<ReadyPools> pools_;  // built once table_ is
};

Executor::Executor(const core::Workload& workload, const network::ClusterConfig& cluster,
                   const core::Profile& profile, const SimulationOptions& options, CommunicationModel& model)
    : impl_(std::make_unique<Impl>(workload, cluster, profile, options, &model, nullptr)) {}

Executor::Executor(const core::Workload& workload, const network::ClusterConfig& cluster,
                   const core::Profile& profile, const SimulationOptions& options, CommunicationLauncher& launcher)
    : impl_(std::make_unique<Impl>(workload, cluster, profile, options, nullptr, &launcher)) {}

Executor::~Executor() = default;

void Executor::advance(double horizon) { impl_->advance(horizon); }
double Executor::next_decision() { return impl_->next_decision(); }
void Executor::complete(uint32_t call, double end) { impl_->complete(call, end); }
bool Executor::finished() const { return impl_->finished(); }
size_t Executor::unfinished() const { return impl_->unfinished(); }
size_t Executor::total_tasks() const { return impl_->total_tasks(); }
void Executor::report_deadlock() const { impl_->report_deadlock(); }
SimulationResult Executor::result() { return impl_->result(); }
const RankTable& Executor::table() const { return impl_->table(); }
void Executor::for_each_call_site(const std::function<void(const CallSite&)>& visit) const {
  impl_->for_each_call_site(visit);
}

SimulationResult execute(const core::Workload& workload, const network::ClusterConfig& cluster,
                         const core::Profile& profile, const SimulationOptions& options, CommunicationModel& model) {
  TRAINSIM_CHECK(workload.layout.world_size() == cluster.world_size(),
                 fmt::format("the workload has {} ranks, the cluster {} GPUs", workload.layout.world_size(),
                             cluster.world_size()));
  Executor executor(workload, cluster, profile, options, model);
  executor.advance(std::numeric_limits<double>::infinity());
  if (!executor.finished()) executor.report_deadlock();
  return executor.result();
}

}  // namespace trainsim::engine

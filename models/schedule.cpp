#include "models/schedule.hpp"

#include <algorithm>
#include <tuple>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

std::vector<PassSlot> gpipe(int micro_batches) {
  std::vector<PassSlot> order;
  for (int mb = 0; mb < micro_batches; ++mb) order.push_back({Pass::FORWARD, mb, 0});
  for (int mb = 0; mb < micro_batches; ++mb) order.push_back({Pass::BACKWARD, mb, 0});
  return order;
}

// Warm-up forwards, steady 1F1B, cool-down backwards over `total` (virtual) micro-batches; `at`
// maps a virtual micro-batch index and a pass to the slot.
template <class At>
std::vector<PassSlot> warmup_steady_cooldown(int total, int warmup, At at) {
  std::vector<PassSlot> order;
  for (int k = 0; k < warmup; ++k) order.push_back(at(k, Pass::FORWARD));
  const int steady = total - warmup;
  for (int i = 0; i < steady; ++i) {
    order.push_back(at(warmup + i, Pass::FORWARD));
    order.push_back(at(i, Pass::BACKWARD));
  }
  for (int k = steady; k < total; ++k) order.push_back(at(k, Pass::BACKWARD));
  return order;
}

std::vector<PassSlot> one_f_one_b(int stages, int stage, int micro_batches) {
  const int warmup = std::min(stages - stage - 1, micro_batches);
  return warmup_steady_cooldown(micro_batches, warmup, [](int k, Pass pass) { return PassSlot{pass, k, 0}; });
}

std::vector<PassSlot> interleaved(int stages, int stage, int chunks, int micro_batches) {
  const int total = micro_batches * chunks;
  const int group = stages * chunks;
  const int warmup = std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
  return warmup_steady_cooldown(total, warmup, [&](int k, Pass pass) {
    const int forward_chunk = (k % group) / stages;
    const int chunk = pass == Pass::FORWARD ? forward_chunk : chunks - 1 - forward_chunk;
    return PassSlot{pass, (k / group) * stages + k % stages, chunk};
  });
}

// PipeDream's steady-state window: forward i, then backward i - w (a carried one of the previous
// iteration while negative).
std::vector<PassSlot> pipedream_window(int stages, int stage, int micro_batches) {
  const int warmup = stages - stage - 1;
  std::vector<PassSlot> order;
  for (int i = 0; i < micro_batches; ++i) {
    order.push_back({Pass::FORWARD, i, 0, false});
    const int mb = i - warmup;
    order.push_back(mb >= 0 ? PassSlot{Pass::BACKWARD, mb, 0, false} : PassSlot{Pass::BACKWARD, mb + micro_batches, 0, true});
  }
  return order;
}

// ZB-H1: 1F1B's warm-up, then F, B and (lagging `stage` passes behind B) W; the lagging W last.
std::vector<PassSlot> zero_bubble_h1(int stages, int stage, int micro_batches) {
  std::vector<PassSlot> order;
  int f = 0, b = 0, w = 0;
  for (; f < std::min(stages - stage - 1, micro_batches); ++f) order.push_back({Pass::FORWARD, f, 0});
  while (b < micro_batches) {
    if (f < micro_batches) order.push_back({Pass::FORWARD, f++, 0});
    order.push_back({Pass::BACKWARD, b++, 0});
    if (b - w > stage) order.push_back({Pass::BACKWARD_WEIGHT, w++, 0});
  }
  for (; w < micro_batches; ++w) order.push_back({Pass::BACKWARD_WEIGHT, w, 0});
  return order;
}

// List scheduling of forward, backward and (split) weight passes: `limit` micro-batches in flight per
// stage; `by_arrival` picks the pass whose input came first (AxoNN), else B before F before W (ZB-H2).
std::vector<std::vector<PassSlot>> list_schedule(int stages, int micro_batches, const std::vector<int>& limit, bool split,
                                                 bool by_arrival, const std::vector<double>& forward_cost,
                                                 const std::vector<double>& backward_cost,
                                                 const std::vector<double>& weight_cost) {
  const size_t p = static_cast<size_t>(stages);
  const size_t m = static_cast<size_t>(micro_batches);
  std::vector<std::vector<double>> forward_end(p, std::vector<double>(m, -1.0)), backward_end = forward_end;
  std::vector<double> free_at(p, 0.0);
  std::vector<int> next_forward(p, 0), next_backward(p, 0), in_flight(p, 0), next_weight(p, 0);
  std::vector<std::vector<PassSlot>> order(p);
  // ZB-H2's preference: B, then F, then W (W only fills what would be idle).
  auto priority = [](Pass pass) { return pass == Pass::BACKWARD ? 0 : pass == Pass::FORWARD ? 1 : 2; };
  const size_t passes = m * (split ? 3 : 2);
  for (size_t done = 0; done < passes * p; ++done) {
    // The stage that can start a pass earliest, and the pass.
    double best_time = 0;
    int best_stage = -1;
    PassSlot best_slot;
    for (size_t s = 0; s < p; ++s) {
      struct Candidate {
        Pass pass;
        int mb;
        double ready;
        int rank;  // tie order of arrival-driven execution: B, W, F
      };
      std::vector<Candidate> candidates;
      const int f = next_forward[s];
      if (f < micro_batches && in_flight[s] < limit[s]) {
        const double ready = s == 0 ? 0.0 : forward_end[s - 1][static_cast<size_t>(f)];
        if (ready >= 0) candidates.push_back({Pass::FORWARD, f, ready, 2});
      }
      const int b = next_backward[s];
      if (b < micro_batches) {
        const double ready = s + 1 == p ? forward_end[s][static_cast<size_t>(b)] : backward_end[s + 1][static_cast<size_t>(b)];
        if (ready >= 0) candidates.push_back({Pass::BACKWARD, b, ready, 0});
      }
      if (split && next_weight[s] < next_backward[s]) {
        candidates.push_back({Pass::BACKWARD_WEIGHT, next_weight[s], backward_end[s][static_cast<size_t>(next_weight[s])], 1});
      }
      if (candidates.empty()) continue;
      double earliest = candidates.front().ready;
      for (const Candidate& c : candidates) earliest = std::min(earliest, c.ready);
      const double start = std::max(free_at[s], earliest);
      const Candidate* pick = nullptr;
      for (const Candidate& c : candidates) {
        if (c.ready > start) continue;
        if (pick == nullptr) {
          pick = &c;
        } else if (by_arrival ? std::tie(c.ready, c.rank) < std::tie(pick->ready, pick->rank) : priority(c.pass) < priority(pick->pass)) {
          pick = &c;
        }
      }
      if (best_stage < 0 || start < best_time) {
        best_time = start;
        best_stage = static_cast<int>(s);
        best_slot = {pick->pass, pick->mb, 0};
      }
    }
    TRAINSIM_CHECK(best_stage >= 0, "list scheduling of the pipeline found no pass to run");
    const size_t s = static_cast<size_t>(best_stage);
    const size_t mb = static_cast<size_t>(best_slot.micro_batch);
    switch (best_slot.pass) {
      case Pass::FORWARD:
        free_at[s] = best_time + forward_cost[s];
        forward_end[s][mb] = free_at[s];
        ++next_forward[s];
        ++in_flight[s];
        break;
      case Pass::BACKWARD:
        free_at[s] = best_time + backward_cost[s];
        backward_end[s][mb] = free_at[s];
        ++next_backward[s];
        if (!split) --in_flight[s];
        break;
      case Pass::BACKWARD_WEIGHT:
        free_at[s] = best_time + weight_cost[s];
        ++next_weight[s];
        --in_flight[s];
        break;
    }
    order[s].push_back(best_slot);
  }
  return order;
}

}  // namespace

int in_flight_limit(PipelineSchedule schedule, int stages, int stage, int micro_batches) {
  int limit = micro_batches;
  switch (schedule) {
    case PipelineSchedule::GPIPE: break;
    case PipelineSchedule::ONE_F_ONE_B:
    case PipelineSchedule::INTERLEAVED_1F1B:
    case PipelineSchedule::PIPEDREAM:
    case PipelineSchedule::PIPEDREAM_2BW: limit = stages - stage; break;
    case PipelineSchedule::ZERO_BUBBLE_H1: limit = stages; break;
    case PipelineSchedule::ZERO_BUBBLE_H2: limit = 2 * stages - 1; break;
  }
  return std::min(limit, micro_batches);
}

int weight_versions(PipelineSchedule schedule, int stages, int stage, int micro_batches) {
  const int in_flight = in_flight_limit(schedule, stages, stage, micro_batches);
  if (schedule == PipelineSchedule::PIPEDREAM) return in_flight;
  if (schedule == PipelineSchedule::PIPEDREAM_2BW) return std::min(2, in_flight);
  return 1;
}

std::vector<std::vector<PassSlot>> async_pipeline_order(PipelineSchedule schedule, int stages, int micro_batches,
                                                        const std::vector<double>& forward_cost,
                                                        const std::vector<double>& backward_cost,
                                                        const std::vector<double>& weight_cost) {
  TRAINSIM_CHECK(schedule != PipelineSchedule::PIPEDREAM && schedule != PipelineSchedule::PIPEDREAM_2BW,
                 "asynchronous execution of a PipeDream window");
  TRAINSIM_CHECK(static_cast<int>(forward_cost.size()) == stages && static_cast<int>(backward_cost.size()) == stages,
                 "asynchronous pipeline order needs one cost per stage");
  const bool split = splits_backward(schedule);
  TRAINSIM_CHECK(!split || static_cast<int>(weight_cost.size()) == stages, "a split backward needs W costs");
  std::vector<int> limit;
  for (int s = 0; s < stages; ++s) limit.push_back(in_flight_limit(schedule, stages, s, micro_batches));
  return list_schedule(stages, micro_batches, limit, split, true, forward_cost, backward_cost, weight_cost);
}

std::vector<std::vector<PassSlot>> pipeline_order(PipelineSchedule schedule, int stages, int chunks, int micro_batches) {
  TRAINSIM_CHECK(stages >= 1 && chunks >= 1 && micro_batches >= 1, "pipeline sizes must be positive");
  TRAINSIM_CHECK(chunks == 1 || (schedule == PipelineSchedule::INTERLEAVED_1F1B && micro_batches % stages == 0),
                 "model chunks need the interleaved schedule and micro-batches divisible by stages");
  if (schedule == PipelineSchedule::ZERO_BUBBLE_H2) {
    const std::vector<double> unit(static_cast<size_t>(stages), 1.0);
    std::vector<int> limit;
    for (int s = 0; s < stages; ++s) limit.push_back(in_flight_limit(schedule, stages, s, micro_batches));
    return list_schedule(stages, micro_batches, limit, true, false, unit, unit, unit);
  }
  const bool pipedream = schedule == PipelineSchedule::PIPEDREAM || schedule == PipelineSchedule::PIPEDREAM_2BW;
  TRAINSIM_CHECK(!pipedream || micro_batches >= stages, "PipeDream's window needs at least as many micro-batches as stages");
  std::vector<std::vector<PassSlot>> order;
  for (int stage = 0; stage < stages; ++stage) {
    if (pipedream) {
      order.push_back(pipedream_window(stages, stage, micro_batches));
    } else if (schedule == PipelineSchedule::ZERO_BUBBLE_H1) {
      order.push_back(zero_bubble_h1(stages, stage, micro_batches));
    } else if (schedule == PipelineSchedule::GPIPE) {
      order.push_back(gpipe(micro_batches));
    } else if (chunks == 1) {
      order.push_back(one_f_one_b(stages, stage, micro_batches));
    } else {
      order.push_back(interleaved(stages, stage, chunks, micro_batches));
    }
  }
  return order;
}

std::vector<std::vector<TimedSlot>> time_pipeline(const std::vector<std::vector<PassSlot>>& order, int stages,
                                                  const std::vector<double>& forward_cost,
                                                  const std::vector<double>& backward_cost,
                                                  const std::vector<double>& weight_cost) {
  const int positions = static_cast<int>(forward_cost.size());
  int micro_batches = 0;
  for (const auto& rank : order) {
    for (const PassSlot& s : rank) micro_batches = std::max(micro_batches, s.micro_batch + 1);
  }
  // End times by (micro-batch, carried, position); negative: not run yet. `runs` marks the carried
  // backwards some rank runs in this window.
  const size_t cells = 2 * static_cast<size_t>(micro_batches) * static_cast<size_t>(positions);
  std::vector<double> forward_end(cells, -1.0), backward_end(cells, -1.0);
  std::vector<bool> runs(cells, false);
  auto cell = [&](const PassSlot& s, int position) {
    const size_t mb = static_cast<size_t>(s.micro_batch) + (s.carried ? static_cast<size_t>(micro_batches) : 0);
    return mb * static_cast<size_t>(positions) + static_cast<size_t>(position);
  };
  for (size_t r = 0; r < order.size(); ++r) {
    for (const PassSlot& s : order[r]) {
      if (s.pass == Pass::BACKWARD) runs[cell(s, s.chunk * stages + static_cast<int>(r))] = true;
    }
  }

  std::vector<std::vector<TimedSlot>> timed(order.size());
  std::vector<size_t> next(order.size(), 0);
  std::vector<double> free_at(order.size(), 0.0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < order.size(); ++r) {
      while (next[r] < order[r].size()) {
        const PassSlot& s = order[r][next[r]];
        const int position = s.chunk * stages + static_cast<int>(r);
        const size_t pos = static_cast<size_t>(position);
        double ready = 0;
        double cost = 0;
        switch (s.pass) {
          case Pass::FORWARD:
            if (position > 0) ready = forward_end[cell(s, position - 1)];
            cost = forward_cost[pos];
            break;
          case Pass::BACKWARD:
            if (position + 1 < positions) {
              // A carried backward whose input the next position produced in the previous window.
              ready = s.carried && !runs[cell(s, position + 1)] ? 0.0 : backward_end[cell(s, position + 1)];
            } else {
              ready = s.carried ? 0.0 : forward_end[cell(s, position)];
            }
            cost = backward_cost[pos];
            break;
          case Pass::BACKWARD_WEIGHT:
            TRAINSIM_CHECK(pos < weight_cost.size(), "a W pass without a W cost");
            ready = backward_end[cell(s, position)];
            cost = weight_cost[pos];
            break;
        }
        if (ready < 0) break;
        const double start = std::max(free_at[r], ready);
        const double end = start + cost;
        if (s.pass == Pass::FORWARD) forward_end[cell(s, position)] = end;
        if (s.pass == Pass::BACKWARD) backward_end[cell(s, position)] = end;
        free_at[r] = end;
        timed[r].push_back({s, start, end});
        ++next[r];
        progress = true;
      }
    }
  }
  for (size_t r = 0; r < order.size(); ++r) {
    TRAINSIM_CHECK(next[r] == order[r].size(),
                   fmt::format("pipeline rank {} cannot run pass {} of its schedule", r, next[r]));
  }
  return timed;
}

ScheduleStats schedule_stats(const std::vector<std::vector<TimedSlot>>& timed, bool steady_state) {
  ScheduleStats stats;
  double least_busy = -1;
  double makespan = 0;
  double longest_span = 0;
  bool split = false;
  for (const auto& rank : timed) {
    for (const TimedSlot& t : rank) split = split || t.slot.pass == Pass::BACKWARD_WEIGHT;
  }
  for (const auto& rank : timed) {
    double busy = 0;
    int live = 0;
    int peak = 0;
    for (const TimedSlot& t : rank) live += t.slot.carried ? 1 : 0;  // held when the window opens
    peak = live;
    for (const TimedSlot& t : rank) {
      busy += t.end - t.start;
      if (t.slot.pass == Pass::FORWARD) ++live;
      if (t.slot.pass == (split ? Pass::BACKWARD_WEIGHT : Pass::BACKWARD)) --live;
      peak = std::max(peak, live);
    }
    stats.peak_in_flight.push_back(peak);
    least_busy = least_busy < 0 ? busy : std::min(least_busy, busy);
    if (!rank.empty()) {
      makespan = std::max(makespan, rank.back().end);
      longest_span = std::max(longest_span, rank.back().end - rank.front().start);
    }
  }
  stats.iteration = steady_state ? longest_span : makespan;
  stats.bubble_fraction = stats.iteration > 0 ? 1.0 - least_busy / stats.iteration : 0.0;
  return stats;
}

}  // namespace trainsim::models

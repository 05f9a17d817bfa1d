#include "models/schedule.hpp"

#include <algorithm>
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

}  // namespace

std::vector<std::vector<PassSlot>> pipeline_order(PipelineSchedule schedule, int stages, int chunks, int micro_batches) {
  TRAINSIM_CHECK(stages >= 1 && chunks >= 1 && micro_batches >= 1, "pipeline sizes must be positive");
  TRAINSIM_CHECK(chunks == 1 || (schedule == PipelineSchedule::INTERLEAVED_1F1B && micro_batches % stages == 0),
                 "model chunks need the interleaved schedule and micro-batches divisible by stages");
  std::vector<std::vector<PassSlot>> order;
  for (int stage = 0; stage < stages; ++stage) {
    if (schedule == PipelineSchedule::GPIPE) {
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
                                                  const std::vector<double>& backward_cost) {
  const int positions = static_cast<int>(forward_cost.size());
  int micro_batches = 0;
  for (const auto& rank : order) {
    for (const PassSlot& s : rank) micro_batches = std::max(micro_batches, s.micro_batch + 1);
  }
  // End times by (micro-batch, position); negative: not run yet.
  const size_t cells = static_cast<size_t>(micro_batches) * static_cast<size_t>(positions);
  std::vector<double> forward_end(cells, -1.0), backward_end(cells, -1.0);
  auto cell = [&](int mb, int position) { return static_cast<size_t>(mb) * static_cast<size_t>(positions) + static_cast<size_t>(position); };

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
        double ready = 0;
        if (s.pass == Pass::FORWARD) {
          if (position > 0) ready = forward_end[cell(s.micro_batch, position - 1)];
        } else {
          ready = position + 1 < positions ? backward_end[cell(s.micro_batch, position + 1)]
                                           : forward_end[cell(s.micro_batch, position)];
        }
        if (ready < 0) break;
        const double start = std::max(free_at[r], ready);
        const double cost = s.pass == Pass::FORWARD ? forward_cost[static_cast<size_t>(position)]
                                                    : backward_cost[static_cast<size_t>(position)];
        const double end = start + cost;
        (s.pass == Pass::FORWARD ? forward_end : backward_end)[cell(s.micro_batch, position)] = end;
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

}  // namespace trainsim::models

#pragma once
// Pipeline schedules: the order in which each pipeline rank runs the forward and backward passes of
// its model chunks over the micro-batches, and a reference timing of that order from which the
// workload builder derives a deadlock-free order of pipeline sends and receives.
//
// Model positions: with p pipeline ranks and v chunks per rank, chunk c of rank r holds model
// position c·p + r (Megatron-LM's interleaved assignment); position i feeds position i + 1.

#include <vector>

#include "models/strategy.hpp"

namespace trainsim::models {

// BACKWARD is the whole backward pass, or under a zero-bubble schedule (splits_backward) only its
// input-gradient part B; BACKWARD_WEIGHT is the weight-gradient part W of a split backward (Qi et
// al. 2024), which waits for the B of the same micro-batch on the same rank and for nothing else.
enum class Pass : uint8_t { FORWARD, BACKWARD, BACKWARD_WEIGHT };

struct PassSlot {
  Pass pass = Pass::FORWARD;
  int micro_batch = 0;
  int chunk = 0;  // model chunk of this rank, 0..chunks-1
  // PipeDream's steady state: the backward of a micro-batch of the previous iteration (its forward
  // ran in the previous window; it is the micro-batch `micro_batch` of that iteration).
  bool carried = false;
};

// Each pipeline rank's passes in execution order (m micro-batches, p ranks, v chunks per rank):
//  GPIPE             all forwards, then all backwards, micro-batches in order (Huang et al. 2019;
//                    Narayanan et al. 2021, Figure 3).
//  ONE_F_ONE_B       PipeDream-Flush (Narayanan et al. 2021, Figure 4 top): min(p - rank - 1, m)
//                    warm-up forwards, then one forward and one backward alternately, then the
//                    remaining backwards. With v = 1 the interleaved schedule is this one.
//  INTERLEAVED_1F1B  Megatron-LM's forward_backward_pipelining_with_interleaving: m·v virtual
//                    micro-batches; virtual micro-batch k runs chunk (k mod p·v) / p forward (reversed,
//                    v - 1 - that, backward) on micro-batch (k / (p·v))·p + k mod p (get_model_chunk_id);
//                    min((p - rank - 1)·2 + (v - 1)·p, m·v) warm-up forwards, then 1F1B, then cool-down.
//  PIPEDREAM,        one window of the steady state of 1F1B without a flush (Narayanan et al. 2019,
//  PIPEDREAM_2BW     PipeDream; Narayanan et al. 2021, PipeDream-2BW): rank r alternates forward i
//                    and backward i - w, w = p - r - 1, for i = 0..m-1; the first w backwards are
//                    those of the previous iteration's last w micro-batches (carried), whose
//                    activations the rank holds when the window starts. Every rank then holds at
//                    most p - r micro-batches. REQUIRES micro_batches >= stages.
//  ZERO_BUBBLE_H1    ZB-H1 (Qi et al. 2024, §3.1): 1F1B's p - r - 1 warm-up forwards, then F, B and W
//                    with rank r's W passes r places behind its B passes, the rest after the last B.
//                    At most p micro-batches in flight on any rank (1F1B's peak); with F = B = W
//                    the bubble is (p - 1)·F, a third of 1F1B's (p - 1)·3F.
//  ZERO_BUBBLE_H2    ZB-H2 (§3.1): up to 2p - 1 micro-batches in flight per rank. Built by list
//                    scheduling with unit pass times: a rank that is free runs a ready B, else a ready
//                    F while fewer than 2p - 1 micro-batches are in flight, else its oldest pending W.
//                    With F = B = W and m >= 2p every rank is busy from its first F to its last W.
// REQUIRES: stages, chunks, micro_batches >= 1; chunks > 1 only with INTERLEAVED_1F1B and then
// micro_batches a multiple of stages.
std::vector<std::vector<PassSlot>> pipeline_order(PipelineSchedule schedule, int stages, int chunks, int micro_batches);

// The most micro-batches a rank of `stage` holds the activations of at once under the schedule
// (forwards run whose backward, or W when split, has not): m (GPipe), p - stage (1F1B, PipeDream,
// PipeDream-2BW), p (ZB-H1), 2p - 1 (ZB-H2); never more than m. Chunks = 1.
int in_flight_limit(PipelineSchedule schedule, int stages, int stage, int micro_batches);

// AxoNN's message-driven execution (Singh & Bhatele, IPDPS 2022): each rank runs, whenever it is
// free, the pass whose input arrived first (ties: backward passes, then W, then forward), forward
// passes only while fewer than in_flight_limit() micro-batches are in flight. The order comes from
// an event simulation with these pass costs (by stage; weight_cost empty unless the schedule splits
// the backward) and instantaneous transfers. The engine applies the same rule to the arrivals it
// simulates (sim/core/workload.hpp, READY POOL); this order is the ready pools' default order.
// REQUIRES: a schedule without chunks, other than PIPEDREAM and PIPEDREAM_2BW.
std::vector<std::vector<PassSlot>> async_pipeline_order(PipelineSchedule schedule, int stages, int micro_batches,
                                                        const std::vector<double>& forward_cost,
                                                        const std::vector<double>& backward_cost,
                                                        const std::vector<double>& weight_cost);

struct TimedSlot {
  PassSlot slot;
  double start = 0;
  double end = 0;
};

// Runs `order` with each pass taking forward_cost[position], backward_cost[position] or
// weight_cost[position] (indexed by model position, all > 0; weight_cost only when the order has W
// passes) and instantaneous transfers: a forward pass waits for the previous position's forward of
// the same micro-batch, a backward pass (B) for the next position's backward (the last position: for
// its own forward), a W for its own B. A carried backward waits for the next position's carried
// backward of the same micro-batch when that position runs it in this window, else for nothing.
// Returns each rank's slots with their times, in order. Throws InternalError when the order cannot
// complete (a bug in pipeline_order).
std::vector<std::vector<TimedSlot>> time_pipeline(const std::vector<std::vector<PassSlot>>& order, int stages,
                                                  const std::vector<double>& forward_cost,
                                                  const std::vector<double>& backward_cost,
                                                  const std::vector<double>& weight_cost = {});

// What a timed schedule (one chunk per rank) costs, as the literature counts it.
struct ScheduleStats {
  double iteration = 0;        // makespan; for a steady-state schedule the period: the longest span of a
                               // rank from its first pass's start to its last pass's end
  double bubble_fraction = 0;  // 1 - (least busy time of a rank) / iteration
  std::vector<int> peak_in_flight;  // by stage: most micro-batches whose activations are held at once
};
// REQUIRES: timed comes from time_pipeline (one chunk per rank).
ScheduleStats schedule_stats(const std::vector<std::vector<TimedSlot>>& timed, bool steady_state);

// Weight versions a rank of `stage` keeps (PipeDream's weight stashing): the peak number of
// micro-batches in flight under PIPEDREAM (each may have run its forward on another version, at most
// p - stage), min(2, that) under PIPEDREAM_2BW (double-buffered weights), else 1.
int weight_versions(PipelineSchedule schedule, int stages, int stage, int micro_batches);

}  // namespace trainsim::models

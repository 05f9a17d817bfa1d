// stage_schedule.cpp: the pipeline schedule families in issue order (fixed, async pool, MoE-overlapped 1F1B).

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "models/stage_emitter.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models::emit {

constexpr size_t NO_SLOT = SIZE_MAX;

// Builds a stage's ready pool (pipeline_execution "async") while the schedule is emitted in its ideal
// order: each pass and its send form a block; receives are loose tasks.
class PoolEmitter {
 public:
  PoolEmitter(core::Program& program, bool active) : program_(program), active_(active) {
    if (active_) program_.pool.begin = static_cast<uint32_t>(program_.tasks.size());
  }

  // Assigns the tasks emitted since the last call to `block` (LOOSE_TASK: loose).
  void mark(uint32_t block) {
    if (!active_) return;
    core::ReadyPool& pool = program_.pool;
    const size_t emitted = program_.tasks.size() - pool.begin;
    if (pool.block_of.size() < emitted) pool.block_of.resize(emitted, pending_block_);
    pending_block_ = block;
  }

  // Starts the block of timed slot `slot`. Queues: B 0, W 1, F 2 (backward first on ties, as
  // schedule.hpp's async_pipeline_order); a forward opens a micro-batch, the pass that frees its
  // activations (B, or W when the backward is split) closes it.
  void open_block(size_t slot, const PassSlot& s, uint32_t trigger) {
    core::PoolBlock b;
    b.trigger = trigger;
    b.queue = s.pass == Pass::BACKWARD ? 0 : s.pass == Pass::BACKWARD_WEIGHT ? 1 : 2;
    split_ = split_ || s.pass == Pass::BACKWARD_WEIGHT;
    b.in_flight = s.pass == Pass::FORWARD ? 1 : 0;
    if (block_of_slot_.size() <= slot) block_of_slot_.resize(slot + 1, core::LOOSE_TASK);
    block_of_slot_[slot] = static_cast<uint32_t>(program_.pool.blocks.size());
    program_.pool.blocks.push_back(b);
    passes_.push_back(s);
    std::vector<size_t>& slots = slots_[static_cast<size_t>(s.pass)];
    if (slots.size() <= static_cast<size_t>(s.micro_batch)) slots.resize(static_cast<size_t>(s.micro_batch) + 1, NO_SLOT);
    slots[static_cast<size_t>(s.micro_batch)] = slot;
    mark(block_of_slot_[slot]);
  }

  uint32_t block_of_slot(size_t slot) const {
    return slot < block_of_slot_.size() ? block_of_slot_[slot] : core::LOOSE_TASK;
  }

  // The timed slot of the pass `pass` of micro-batch `mb` emitted so far, or NO_SLOT.
  size_t slot_of(Pass pass, int mb) const {
    const std::vector<size_t>& slots = slots_[static_cast<size_t>(pass)];
    return static_cast<size_t>(mb) < slots.size() ? slots[static_cast<size_t>(mb)] : NO_SLOT;
  }

  void close(int in_flight_limit) {
    if (!active_) return;
    mark(core::LOOSE_TASK);
    core::ReadyPool& pool = program_.pool;
    pool.end = static_cast<uint32_t>(program_.tasks.size());
    pool.in_flight_limit = static_cast<uint32_t>(in_flight_limit);
    for (size_t b = 0; b < pool.blocks.size(); ++b) {
      const Pass closing = split_ ? Pass::BACKWARD_WEIGHT : Pass::BACKWARD;
      if (passes_[b].pass == closing) pool.blocks[b].in_flight = -1;
    }
  }

 private:
  core::Program& program_;
  bool active_;
  bool split_ = false;
  uint32_t pending_block_ = core::LOOSE_TASK;  // the block of the tasks emitted since the last mark
  std::vector<uint32_t> block_of_slot_;
  std::vector<PassSlot> passes_;                 // by block
  std::array<std::vector<size_t>, 3> slots_;     // by pass, by micro-batch: its timed slot
};

std::vector<Event> StageEmitter::schedule_events() const {
  const std::vector<TimedSlot>& timed = plan_.timed[static_cast<size_t>(stage_)];
  const int last = plan_.positions - 1;
  std::vector<Event> events;
  for (size_t i = 0; i < timed.size(); ++i) {
    const TimedSlot& ts = timed[i];
    const int pos = position(ts.slot.chunk);
    const int mb = ts.slot.micro_batch;
    const bool carried = ts.slot.carried;
    events.push_back({ts.start, 1, 0, 0, Event::PASS, i});
    if (ts.slot.pass == Pass::FORWARD) {
      if (pos > 0) {
        events.push_back({plan_.forward_end[plan_.cell(mb, false, pos - 1)], 0, 0, (pos - 1) % plan_.stages, Event::RECV, i});
      }
      if (pos < last) events.push_back({ts.end, 0, 0, stage_, Event::SEND, i});
    } else if (ts.slot.pass == Pass::BACKWARD) {
      // Gradients of a PipeDream micro-batch whose backward the neighbour runs in another window
      // cross the window boundary: not sent or received in this one.
      if (pos < last && plan_.backward_end[plan_.cell(mb, carried, pos + 1)] >= 0) {
        events.push_back({plan_.backward_end[plan_.cell(mb, carried, pos + 1)], 0, 1, (pos + 1) % plan_.stages, Event::RECV, i});
      }
      if (pos > 0 && plan_.backward_end[plan_.cell(mb, carried, pos - 1)] >= 0) {
        events.push_back({ts.end, 0, 1, stage_, Event::SEND, i});
      }
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.order_class != b.order_class) return a.order_class < b.order_class;
    if (a.direction != b.direction) return a.direction < b.direction;
    return a.sender < b.sender;
  });
  return events;
}

bool StageEmitter::chunk_has_moe(int chunk) const {
  const std::vector<Unit>& units = units_[static_cast<size_t>(chunk)];
  return std::any_of(units.begin(), units.end(), [&](const Unit& u) {
    return u.kind == UnitKind::LAYER && plan_.model->layer_kind(u.layer) == LayerKind::MOE;
  });
}

// moe_a2a_overlap (Megatron-core overlap_moe_expert_parallel_comm, combined_1f1b.py): in the 1F1B
// steady state a forward pass and a backward pass of another micro-batch run merged, layer against
// layer, so that each one's dispatch / combine all-to-alls run under the other's computation.
// pair[i] = i + 1 pairs the adjacent passes timed[i] and timed[i + 1] when both chunks hold MoE
// layers. With a pipeline, Megatron's interleaved schedule merges each steady-state forward with
// the backward after it; they are paired when the backward's input is ready by the forward's
// ideal end, so that it cannot depend on the forward (a path from that forward's output back to
// this stage passes through a pass of positive cost) and the merge cannot create a cyclic wait.
// Without a pipeline (combined_1f1b_schedule_for_no_pipelining) each backward is merged with the
// next micro-batch's forward, whose input is always ready.
std::vector<int> StageEmitter::overlap_pairs(const std::vector<TimedSlot>& timed) const {
  std::vector<int> pair(timed.size(), -1);
  if (!par_.moe_a2a_overlap || !plan_.model->is_moe() || par_.expert <= 1) return pair;
  const bool pipelined = plan_.positions > 1;
  const Pass lead = pipelined ? Pass::FORWARD : Pass::BACKWARD;
  for (size_t i = 0; i + 1 < timed.size(); ++i) {
    const PassSlot& x = timed[i].slot;
    const PassSlot& y = timed[i + 1].slot;
    if (x.pass != lead || y.pass == lead || (x.micro_batch == y.micro_batch && x.chunk == y.chunk)) continue;
    if (!chunk_has_moe(x.chunk) || !chunk_has_moe(y.chunk)) continue;
    if (pipelined) {
      const int pos = position(y.chunk);
      const size_t cell = static_cast<size_t>(y.micro_batch) * static_cast<size_t>(plan_.positions);
      const double input_ready = pos + 1 < plan_.positions ? plan_.backward_end[cell + static_cast<size_t>(pos + 1)]
                                                           : plan_.forward_end[cell + static_cast<size_t>(pos)];
      if (input_ready > timed[i].end) continue;
    }
    pair[i] = static_cast<int>(i + 1);
    ++i;
  }
  return pair;
}

// Emits a paired forward and backward (overlap_pairs) merged: each pass is emitted on its own
// chain, then the new tasks are put in the order of Megatron-core's combined layer schedule,
// alternating between the passes at each expert-parallel all-to-all, backward first:
//   compute: B (up to its combine) | F attention | B experts | F experts | B attention | ...
//   a2a:     B combine-grad        | F dispatch  | B dispatch-grad | F combine | ...
// Streams run in issue order, so the all-to-all of one pass runs under the next segment of the
// other. Returns the last compute task of the forward and of the backward.
std::pair<uint32_t, uint32_t> StageEmitter::merged_passes(const PassSlot& f, const PassSlot& b, bool b_last_of_chunk,
                                                          std::optional<uint32_t> f_recv, std::optional<uint32_t> b_recv) {
  const uint32_t first = static_cast<uint32_t>(prog().tasks.size());
  const std::optional<uint32_t> before = last_compute_;
  const std::vector<uint32_t> carried = pending_;
  if (f_recv) pending_.push_back(*f_recv);
  forward_pass(f.chunk, f.micro_batch);
  const uint32_t f_end = static_cast<uint32_t>(prog().tasks.size());
  const uint32_t f_last = *last_compute_;
  std::vector<uint32_t> f_pending = std::move(pending_);
  last_compute_ = before;
  pending_ = carried;
  if (b_recv) pending_.push_back(*b_recv);
  backward_pass(b.chunk, b.micro_batch, b_last_of_chunk);
  const uint32_t b_last = *last_compute_;
  const uint32_t end = static_cast<uint32_t>(prog().tasks.size());

  // Segments: a pass's tasks up to and including each all-to-all over the expert group.
  auto segments = [&](uint32_t from, uint32_t to) {
    std::vector<std::vector<uint32_t>> out(1);
    for (uint32_t i = from; i < to; ++i) {
      out.back().push_back(i);
      const Task& t = prog().tasks[i];
      if (t.kind == TaskKind::COLLECTIVE && t.collective == CollectiveOp::ALL_TO_ALL && t.group == plan_.groups.expert) {
        out.emplace_back();
      }
    }
    return out;
  };
  const auto forward = segments(first, f_end);
  const auto backward = segments(f_end, end);
  std::vector<uint32_t> order;
  order.reserve(end - first);
  for (size_t k = 0; k < std::max(forward.size(), backward.size()); ++k) {
    if (k < backward.size()) order.insert(order.end(), backward[k].begin(), backward[k].end());
    if (k < forward.size()) order.insert(order.end(), forward[k].begin(), forward[k].end());
  }
  const std::vector<uint32_t> moved = prog().reorder_tail(first, order);
  auto remap = [&](uint32_t id) { return id >= first ? moved[id - first] : id; };
  for (uint32_t& id : gradient_collectives_) id = remap(id);
  for (uint32_t& id : gradient_copies_) id = remap(id);
  for (auto& entry : offloaded_) entry.second = remap(entry.second);
  for (auto& entry : reloaded_) entry.second = remap(entry.second);
  if (embedding_gradient_) embedding_gradient_ = remap(*embedding_gradient_);
  for (uint32_t& id : pending_) id = remap(id);
  for (uint32_t id : f_pending) pending_.push_back(remap(id));
  last_compute_ = std::max(remap(f_last), remap(b_last));
  return {remap(f_last), remap(b_last)};
}

// Emits passes and pipeline transfers in the order of the schedule's ideal execution.
void StageEmitter::emit_schedule() {
  const std::vector<TimedSlot>& timed = plan_.timed[static_cast<size_t>(stage_)];
  // The pass after which a chunk's gradients are final: its last backward, or its last W.
  const Pass final_pass = plan_.split_backward ? Pass::BACKWARD_WEIGHT : Pass::BACKWARD;
  std::vector<int> last_backward(static_cast<size_t>(plan_.chunks), -1);
  for (size_t i = 0; i < timed.size(); ++i) {
    if (timed[i].slot.pass == final_pass) last_backward[static_cast<size_t>(timed[i].slot.chunk)] = static_cast<int>(i);
    if (timed[i].slot.carried) carry_in(timed[i].slot.chunk, timed[i].slot.micro_batch);
  }
  auto final_after = [&](size_t slot) {
    return plan_.update_every_micro_batch ||
           last_backward[static_cast<size_t>(timed[slot].slot.chunk)] == static_cast<int>(slot);
  };
  // The first pass of a pair is emitted with the second, at the second's place; its send waits
  // until then.
  const std::vector<int> pair = overlap_pairs(timed);
  TRAINSIM_CHECK(!plan_.async || std::all_of(pair.begin(), pair.end(), [](int x) { return x < 0; }),
                 "merged passes in a ready pool");
  std::vector<int> paired_with(timed.size(), -1);  // by second pass: the first
  for (size_t i = 0; i < pair.size(); ++i) {
    if (pair[i] >= 0) paired_with[static_cast<size_t>(pair[i])] = static_cast<int>(i);
  }
  int deferred_send = -1;  // the slot whose send waits for its pair, or -1
  std::vector<std::optional<uint32_t>> recv_of(timed.size());
  std::vector<uint32_t> last_compute_of(timed.size(), 0);
  PoolEmitter pool(prog(), plan_.async);
  for (const Event& e : schedule_events()) {
    pool.mark(e.type == Event::RECV ? core::LOOSE_TASK : pool.block_of_slot(e.slot));
    const PassSlot& s = timed[e.slot].slot;
    const int pos = position(s.chunk);
    const bool forward = s.pass == Pass::FORWARD;
    const Stream stream = forward ? Stream::PIPELINE_FORWARD : Stream::PIPELINE_BACKWARD;
    const size_t p = static_cast<size_t>(pos);
    switch (e.type) {
      case Event::RECV: {
        // Activations come from the previous position, gradients from the next one; `layer` is the
        // sender's boundary layer, so a link's SEND and RECV sequences can be compared.
        const int layer = forward ? plan_.first_layer[p] - 1 : plan_.first_layer[p] + plan_.chunk_layers[p];
        Task t = make(TaskKind::RECV, stream, forward ? Phase::FORWARD : Phase::BACKWARD, layer, s.micro_batch,
                      forward ? "recv activations" : "recv gradients");
        t.peer_axis = core::Axis::PIPELINE;
        t.peer_offset = static_cast<int16_t>(forward ? -1 : 1);
        t.tag = forward ? PIPELINE_ACTIVATIONS_TAG : PIPELINE_GRADIENTS_TAG;
        t.bytes = plan_.pipeline_bytes;
        recv_of[e.slot] = prog().add(t);
        break;
      }
      case Event::PASS:
        if (pair[e.slot] >= 0) break;
        if (paired_with[e.slot] >= 0) {
          const size_t other = static_cast<size_t>(paired_with[e.slot]);
          const size_t fs = forward ? e.slot : other;
          const size_t bs = forward ? other : e.slot;
          std::tie(last_compute_of[fs], last_compute_of[bs]) =
              merged_passes(timed[fs].slot, timed[bs].slot,
                            last_backward[static_cast<size_t>(timed[bs].slot.chunk)] == static_cast<int>(bs),
                            recv_of[fs], recv_of[bs]);
          if (deferred_send >= 0) {
            TRAINSIM_CHECK(deferred_send == static_cast<int>(other), "a deferred send belongs to another pass");
            emit_send(timed[other].slot, last_compute_of[other]);
          }
          deferred_send = -1;
          break;
        }
        if (plan_.async) {
          // A block starts from its input alone: whatever ran before it on this stage is another
          // micro-batch's (the executor starts it after the blocks issued before it).
          pending_.clear();
          last_compute_.reset();
          const uint32_t trigger = pool_trigger(s, recv_of[e.slot], pool, last_compute_of);
          if (trigger != core::NO_TASK) pending_.push_back(trigger);
          pool.open_block(e.slot, s, trigger);
        } else if (recv_of[e.slot]) {
          pending_.push_back(*recv_of[e.slot]);
        }
        if (forward) {
          forward_pass(s.chunk, s.micro_batch);
        } else if (s.pass == Pass::BACKWARD_WEIGHT) {
          weight_gradient_pass(s.chunk, s.micro_batch, final_after(e.slot));
        } else {
          backward_pass(s.chunk, s.micro_batch, !plan_.split_backward && final_after(e.slot));
        }
        last_compute_of[e.slot] = *last_compute_;
        if (plan_.async && !pending_.empty()) pass_end();
        break;
      case Event::SEND:
        if (pair[e.slot] >= 0) {
          deferred_send = static_cast<int>(e.slot);
        } else {
          emit_send(s, last_compute_of[e.slot]);
        }
        break;
    }
  }
  pool.close(in_flight_limit(par_.schedule, plan_.stages, stage_, plan_.micro_batches));
}

// The task whose end brings a pass's input under pipeline_execution "async": its receive, the
// last stage's own forward (for its backward) or B (for W), none for the first stage's forwards.
uint32_t StageEmitter::pool_trigger(const PassSlot& s, std::optional<uint32_t> recv, const PoolEmitter& pool,
                                    const std::vector<uint32_t>& last_compute_of) {
  if (recv) return *recv;
  if (s.pass == Pass::FORWARD) return core::NO_TASK;
  const size_t source = pool.slot_of(s.pass == Pass::BACKWARD ? Pass::FORWARD : Pass::BACKWARD, s.micro_batch);
  TRAINSIM_CHECK(source != NO_SLOT, "a pass whose input pass has not been emitted");
  return last_compute_of[source];
}

// The end of a block whose last tasks (a tensor-parallel collective, a blocking copy) the next
// pass would wait for: a zero-byte memory task on the compute stream after them, so that the next
// block, whichever it is, starts after them as it would in a fixed order.
void StageEmitter::pass_end() {
  Task t = make(TaskKind::MEMORY, Stream::COMPUTE, Phase::FORWARD, 0, 0, "pass end");
  prog().add(t, pending_);
  pending_.clear();
}

void StageEmitter::emit_send(const PassSlot& s, uint32_t after) {
  const bool forward = s.pass == Pass::FORWARD;
  const size_t p = static_cast<size_t>(position(s.chunk));
  const Stream stream = forward ? Stream::PIPELINE_FORWARD : Stream::PIPELINE_BACKWARD;
  const int layer = forward ? plan_.first_layer[p] + plan_.chunk_layers[p] - 1 : plan_.first_layer[p];
  Task t = make(TaskKind::SEND, stream, forward ? Phase::FORWARD : Phase::BACKWARD, layer, s.micro_batch,
                forward ? "send activations" : "send gradients");
  t.peer_axis = core::Axis::PIPELINE;
  t.peer_offset = static_cast<int16_t>(forward ? 1 : -1);
  t.tag = forward ? PIPELINE_ACTIVATIONS_TAG : PIPELINE_GRADIENTS_TAG;
  t.bytes = plan_.pipeline_bytes;
  prog().add(t, {after});
}

}  // namespace trainsim::models::emit

#include "tests/engine/fixtures.hpp"

#include <fmt/format.h>

namespace trainsim::engine::testing {

using core::Axis;
using core::Phase;
using core::Stream;
using core::TaskKind;

namespace {

// Appends the forward of micro-batch `mb` on stage `s` of `p`; returns the compute task's index.
uint32_t add_forward(core::Program& prog, int s, int p, int mb, double t_f, double bytes) {
  std::vector<uint32_t> deps;
  if (s > 0) {
    core::Task recv = p2p(TaskKind::RECV, Axis::PIPELINE, -1, bytes, Stream::PIPELINE_FORWARD);
    recv.micro_batch = static_cast<uint32_t>(mb);
    deps.push_back(prog.add(recv));
  }
  core::Task f = compute(t_f, Phase::FORWARD);
  f.micro_batch = static_cast<uint32_t>(mb);
  f.name = 0;
  const uint32_t fi = prog.add(f, deps);
  if (s < p - 1) {
    core::Task send = p2p(TaskKind::SEND, Axis::PIPELINE, +1, bytes, Stream::PIPELINE_FORWARD);
    send.micro_batch = static_cast<uint32_t>(mb);
    prog.add(send, {fi});
  }
  return fi;
}

uint32_t add_backward(core::Program& prog, int s, int p, int mb, double t_b, double bytes) {
  std::vector<uint32_t> deps;
  if (s < p - 1) {
    core::Task recv = p2p(TaskKind::RECV, Axis::PIPELINE, +1, bytes, Stream::PIPELINE_BACKWARD);
    recv.micro_batch = static_cast<uint32_t>(mb);
    deps.push_back(prog.add(recv));
  }
  core::Task b = compute(t_b, Phase::BACKWARD);
  b.micro_batch = static_cast<uint32_t>(mb);
  b.name = 1;
  const uint32_t bi = prog.add(b, deps);
  if (s > 0) {
    core::Task send = p2p(TaskKind::SEND, Axis::PIPELINE, -1, bytes, Stream::PIPELINE_BACKWARD);
    send.micro_batch = static_cast<uint32_t>(mb);
    prog.add(send, {bi});
  }
  return bi;
}

}  // namespace

core::Workload pipeline_workload(int p, int m, double t_f, double t_b, Schedule schedule, double bytes) {
  std::vector<core::Program> programs;
  std::vector<uint32_t> program_of_rank;
  for (int s = 0; s < p; ++s) {
    core::Program prog;
    prog.name = fmt::format("stage {}", s);
    if (schedule == Schedule::GPIPE) {
      for (int mb = 0; mb < m; ++mb) add_forward(prog, s, p, mb, t_f, bytes);
      for (int mb = 0; mb < m; ++mb) add_backward(prog, s, p, mb, t_b, bytes);
    } else {
      const int warmup = std::min(p - s - 1, m);
      int next_forward = 0;
      int next_backward = 0;
      for (; next_forward < warmup; ++next_forward) add_forward(prog, s, p, next_forward, t_f, bytes);
      while (next_forward < m) {
        add_forward(prog, s, p, next_forward++, t_f, bytes);
        add_backward(prog, s, p, next_backward++, t_b, bytes);
      }
      while (next_backward < m) add_backward(prog, s, p, next_backward++, t_b, bytes);
    }
    programs.push_back(std::move(prog));
    program_of_rank.push_back(static_cast<uint32_t>(s));
  }
  core::Workload w = make_workload({1, 1, 1, 1, p}, std::move(programs), std::move(program_of_rank));
  w.intern("forward");
  w.intern("backward");
  w.validate();
  return w;
}

core::Workload timed_pipeline_workload(const PipelineSpec& spec) {
  const int p = spec.stages;
  const int m = spec.micro_batches;
  std::vector<core::Program> programs;
  for (int s = 0; s < p; ++s) {
    core::Program prog;
    prog.name = fmt::format("stage {}", s);
    core::ReadyPool& pool = prog.pool;
    std::vector<uint32_t> forward_of(static_cast<size_t>(m), 0);
    // Tasks [from, end) belong to `block` (LOOSE_TASK: loose).
    auto mark = [&](uint32_t from, uint32_t block) {
      pool.block_of.resize(prog.tasks.size(), core::LOOSE_TASK);
      for (uint32_t i = from; i < prog.tasks.size(); ++i) pool.block_of[i] = block;
    };
    auto pass = [&](bool forward, int mb) {
      const bool receives = forward ? s > 0 : s < p - 1;
      const bool sends = forward ? s < p - 1 : s > 0;
      const Stream stream = forward ? Stream::PIPELINE_FORWARD : Stream::PIPELINE_BACKWARD;
      std::vector<uint32_t> deps;
      core::PoolBlock block;
      if (receives) {
        const double bytes = forward && !spec.activation_bytes.empty()
                                 ? spec.activation_bytes[static_cast<size_t>(s - 1)][static_cast<size_t>(mb)]
                                 : spec.bytes;
        core::Task recv = p2p(TaskKind::RECV, Axis::PIPELINE, forward ? -1 : +1, bytes, stream);
        recv.micro_batch = static_cast<uint32_t>(mb);
        block.trigger = prog.add(recv);
        deps.push_back(block.trigger);
        mark(block.trigger, core::LOOSE_TASK);
      } else if (!forward) {
        block.trigger = forward_of[static_cast<size_t>(mb)];
        deps.push_back(block.trigger);
      }
      const uint32_t first = static_cast<uint32_t>(prog.tasks.size());
      core::Task c = compute(0, forward ? Phase::FORWARD : Phase::BACKWARD);
      c.seconds = forward ? spec.forward_s : spec.backward_s;
      c.micro_batch = static_cast<uint32_t>(mb);
      c.name = forward ? 0 : 1;
      const uint32_t ci = prog.add(c, deps);
      if (forward) forward_of[static_cast<size_t>(mb)] = ci;
      if (spec.activation_memory > 0) prog.add(memory(forward ? spec.activation_memory : -spec.activation_memory), {ci});
      if (sends) {
        const double bytes = forward && !spec.activation_bytes.empty()
                                 ? spec.activation_bytes[static_cast<size_t>(s)][static_cast<size_t>(mb)]
                                 : spec.bytes;
        core::Task send = p2p(TaskKind::SEND, Axis::PIPELINE, forward ? +1 : -1, bytes, stream);
        send.micro_batch = static_cast<uint32_t>(mb);
        prog.add(send, {ci});
      }
      block.queue = forward ? 1 : 0;
      block.in_flight = forward ? 1 : -1;
      mark(first, static_cast<uint32_t>(pool.blocks.size()));
      pool.blocks.push_back(block);
    };
    if (spec.order == Schedule::GPIPE) {
      for (int mb = 0; mb < m; ++mb) pass(true, mb);
      for (int mb = 0; mb < m; ++mb) pass(false, mb);
    } else {
      const int warmup = std::min(p - s - 1, m);
      int f = 0, b = 0;
      for (; f < warmup; ++f) pass(true, f);
      while (f < m) {
        pass(true, f++);
        pass(false, b++);
      }
      while (b < m) pass(false, b++);
    }
    pool.end = static_cast<uint32_t>(prog.tasks.size());
    pool.in_flight_limit = static_cast<uint32_t>(spec.limit.empty() ? p - s : spec.limit[static_cast<size_t>(s)]);
    if (!spec.pool) pool = core::ReadyPool{};
    programs.push_back(std::move(prog));
  }
  std::vector<uint32_t> program_of_rank;
  for (int s = 0; s < p; ++s) program_of_rank.push_back(static_cast<uint32_t>(s));
  core::Workload w = make_workload({1, 1, 1, 1, p}, std::move(programs), std::move(program_of_rank));
  w.intern("forward");
  w.intern("backward");
  w.validate();
  return w;
}

std::vector<std::string> draw_passes(const core::Workload& w, const SimulationResult& r) {
  std::vector<std::string> rows(static_cast<size_t>(w.layout.world_size()),
                                std::string(static_cast<size_t>(r.iteration_time.value() + 0.5), '.'));
  for (const TimelineEvent& e : r.timeline) {
    const core::Task& t = w.program_of(e.rank).tasks[e.task];
    if (t.kind != TaskKind::COMPUTE) continue;
    const char c = t.phase == Phase::FORWARD ? static_cast<char>('0' + t.micro_batch) : static_cast<char>('a' + t.micro_batch);
    std::string& row = rows[static_cast<size_t>(e.rank)];
    for (auto i = static_cast<size_t>(e.start_s + 0.5); i < static_cast<size_t>(e.end_s + 0.5) && i < row.size(); ++i) {
      row[i] = c;
    }
  }
  return rows;
}

core::Workload hybrid_workload(int tp, int dp, int pp, int micro_batches) {
  core::Workload w;
  w.layout = core::ParallelLayout({tp, 1, 1, dp, pp});
  w.groups = {{"tensor", Axis::TENSOR, {}, {}}, {"data", Axis::DATA, {}, {}}};
  const uint32_t fwd = w.intern("forward");
  const uint32_t bwd = w.intern("backward");
  const uint32_t ar = w.intern("all_reduce");
  const double activation = 8e6;
  for (int s = 0; s < pp; ++s) {
    core::Program prog;
    prog.name = fmt::format("stage {}", s);
    prog.static_memory = core::Bytes((s + 1) * 1e9);
    const double t_f = 1e-3 * (1 + 0.25 * s);  // uneven stages: the last one is the slowest
    std::vector<uint32_t> backwards;
    for (int mb = 0; mb < micro_batches; ++mb) {
      std::vector<uint32_t> deps;
      if (s > 0) deps.push_back(prog.add(p2p(TaskKind::RECV, Axis::PIPELINE, -1, activation, Stream::PIPELINE_FORWARD)));
      const uint32_t alloc = prog.add(memory(activation), deps);
      core::Task f = compute(t_f, Phase::FORWARD);
      f.name = fwd;
      f.micro_batch = static_cast<uint32_t>(mb);
      const uint32_t fi = prog.add(f, {alloc});
      core::Task fa = collective(core::CollectiveOp::ALL_REDUCE, 0, activation, Stream::TENSOR_COMM);
      fa.name = ar;
      const uint32_t fai = prog.add(fa, {fi});
      if (s < pp - 1) prog.add(p2p(TaskKind::SEND, Axis::PIPELINE, +1, activation, Stream::PIPELINE_FORWARD), {fai});
    }
    for (int mb = 0; mb < micro_batches; ++mb) {
      std::vector<uint32_t> deps;
      if (s < pp - 1) deps.push_back(prog.add(p2p(TaskKind::RECV, Axis::PIPELINE, +1, activation, Stream::PIPELINE_BACKWARD)));
      core::Task b = compute(2 * t_f, Phase::BACKWARD);
      b.name = bwd;
      b.micro_batch = static_cast<uint32_t>(mb);
      const uint32_t bi = prog.add(b, deps);
      const uint32_t bai = prog.add(collective(core::CollectiveOp::ALL_REDUCE, 0, activation, Stream::TENSOR_COMM), {bi});
      prog.add(memory(-activation), {bai});
      if (s > 0) prog.add(p2p(TaskKind::SEND, Axis::PIPELINE, -1, activation, Stream::PIPELINE_BACKWARD), {bai});
      backwards.push_back(bi);
    }
    // Gradients of the stage's layers, reduced over the data-parallel group once the backward is done.
    const uint32_t grads = prog.add(collective(core::CollectiveOp::ALL_REDUCE, 1, 2e8 / (s + 1), Stream::DATA_COMM),
                                    {backwards.back()});
    core::Task opt = compute(0.5e-3, Phase::OPTIMIZER);
    opt.op_class = core::OpClass::OPTIMIZER;
    prog.add(opt, {grads});
    w.programs.push_back(std::move(prog));
  }
  for (int r = 0; r < w.layout.world_size(); ++r) {
    w.program_of_rank.push_back(static_cast<uint32_t>(w.layout.coord(r, Axis::PIPELINE)));
  }
  w.symmetric_axes[static_cast<size_t>(Axis::TENSOR)] = true;
  w.symmetric_axes[static_cast<size_t>(Axis::DATA)] = true;
  w.validate();
  return w;
}

core::Workload sharded_workload(int tp, int cp, int dp, int layers) {
  core::Workload w;
  w.layout = core::ParallelLayout({tp, cp, 1, dp, 1});
  w.groups = {{"tensor", Axis::TENSOR, {}, {}}, {"context", Axis::CONTEXT, {}, {}}, {"sharded", Axis::DATA, {}, {Axis::CONTEXT}}};
  constexpr double PARAMETERS = 4e8;   // a layer's parameters: all_gathered, gradients reduce_scattered
  constexpr double ACTIVATIONS = 2e8;
  constexpr uint32_t NONE = UINT32_MAX;
  core::Program prog;
  prog.name = "sharded";
  uint32_t gathered = NONE;  // the data stream's previous call: one at a time
  uint32_t last = NONE;      // the previous pass's last task
  auto after = [](std::initializer_list<uint32_t> tasks) {
    std::vector<uint32_t> deps;
    for (uint32_t t : tasks) {
      if (t != NONE) deps.push_back(t);
    }
    return deps;
  };
  for (int pass = 0; pass < 2 * layers; ++pass) {
    const bool forward = pass < layers;
    gathered = prog.add(collective(core::CollectiveOp::ALL_GATHER, 2, PARAMETERS, Stream::DATA_COMM), after({gathered}));
    const double seconds = 1e-3 * (forward ? 1 : 2);
    const uint32_t c = prog.add(compute(seconds, forward ? Phase::FORWARD : Phase::BACKWARD), after({gathered, last}));
    last = prog.add(collective(core::CollectiveOp::ALL_REDUCE, 0, 4 * ACTIVATIONS, Stream::TENSOR_COMM), {c});
    if (forward) {
      last = prog.add(collective(core::CollectiveOp::ALL_GATHER, 1, ACTIVATIONS, Stream::CONTEXT_COMM), {last});
    } else {
      gathered = prog.add(collective(core::CollectiveOp::REDUCE_SCATTER, 2, PARAMETERS, Stream::DATA_COMM),
                          after({gathered, c}));
    }
  }
  w.programs.push_back(std::move(prog));
  w.program_of_rank.assign(static_cast<size_t>(w.layout.world_size()), 0);
  for (Axis axis : {Axis::TENSOR, Axis::CONTEXT, Axis::DATA}) w.symmetric_axes[static_cast<size_t>(axis)] = true;
  w.validate();
  return w;
}

core::Workload hybrid_sharded_workload(int data, int shard, int layers, double bytes) {
  core::Program p;
  p.name = "hsdp";
  for (int l = 0; l < layers; ++l) {
    const uint32_t g = p.add(collective(core::CollectiveOp::ALL_GATHER, 0, bytes, core::Stream::DATA_COMM));
    const uint32_t rs = p.add(collective(core::CollectiveOp::REDUCE_SCATTER, 0, bytes, core::Stream::DATA_COMM), {g});
    p.add(collective(core::CollectiveOp::ALL_REDUCE, 1, bytes / shard, core::Stream::DATA_COMM), {rs});
  }
  core::Workload w = make_workload({1, 1, 1, data, 1}, {p}, std::vector<uint32_t>(static_cast<size_t>(data), 0));
  w.groups = {{"data", core::Axis::DATA, {}, {}, core::AxisCut::BLOCK, shard},
              {"replicate", core::Axis::DATA, {}, {}, core::AxisCut::STRIDED, shard}};
  w.validate();
  return w;
}

}  // namespace trainsim::engine::testing

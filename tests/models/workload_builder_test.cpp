#include "models/workload_builder.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "tests/models/ir_executor.hpp"

namespace trainsim::models {
namespace {

using core::CollectiveOp;
using core::Phase;
using core::Program;
using core::Stream;
using core::Task;
using core::TaskKind;

// A small GPT: 8 layers, h 256, 8 heads, V 1024, s 128.
ModelSpec small_gpt() {
  ModelSpec m;
  m.name = "small";
  m.layers = 8;
  m.hidden = 256;
  m.heads = 8;
  m.kv_heads = 8;
  m.ffn_hidden = 1024;
  m.vocab = 1024;
  return m;
}

struct Config {
  Config() { training.sequence_length = 128; }
  ModelSpec model = small_gpt();
  TrainingConfig training;
  ParallelismConfig par;
  // `micro_batches` per pipeline; sets global_batch accordingly.
  BuiltWorkload build(int micro_batches) {
    training.global_batch = micro_batches * par.sequences_per_step(training);
    core::Diagnostics diag;
    check_strategy(model, training, par, par.world_size(), "test", diag);
    EXPECT_TRUE(diag.empty()) << diag.problems()[0].to_string();
    return build_workload(model, training, par);
  }
};

size_t count(const Program& p, const std::function<bool(const Task&)>& pred) {
  size_t n = 0;
  for (const Task& t : p.tasks) n += pred(t) ? 1 : 0;
  return n;
}

double sum_bytes(const Program& p, const std::function<bool(const Task&)>& pred) {
  double b = 0;
  for (const Task& t : p.tasks) b += pred(t) ? t.bytes : 0;
  return b;
}

const std::string& name(const BuiltWorkload& w, const Task& t) { return w.workload.names[t.name]; }

auto compute_in(Phase phase) {
  return [phase](const Task& t) { return t.kind == TaskKind::COMPUTE && t.phase == phase; };
}

auto collective_on(const BuiltWorkload& w, const std::string& group, CollectiveOp op) {
  return [&w, group, op](const Task& t) {
    return t.kind == TaskKind::COLLECTIVE && w.workload.groups[t.group].name == group && t.collective == op;
  };
}

// The (micro_batch, layer, stream) sequence of every SEND from stage a to stage b, and of every RECV
// on b from a, in program order.
using Transfer = std::tuple<uint32_t, uint16_t, Stream>;
void expect_links_agree(const BuiltWorkload& w) {
  const int p = w.workload.layout.size(core::Axis::PIPELINE);
  std::map<std::pair<int, int>, std::vector<Transfer>> sends, recvs;
  for (int s = 0; s < p; ++s) {
    for (const Task& t : w.workload.programs[static_cast<size_t>(s)].tasks) {
      const int peer = ((s + t.peer_offset) % p + p) % p;
      if (t.kind == TaskKind::SEND) sends[{s, peer}].push_back({t.micro_batch, t.layer, t.stream});
      if (t.kind == TaskKind::RECV) recvs[{peer, s}].push_back({t.micro_batch, t.layer, t.stream});
    }
  }
  EXPECT_EQ(sends.size(), recvs.size());
  for (const auto& [link, seq] : sends) {
    EXPECT_EQ(seq, recvs[link]) << "link " << link.first << " -> " << link.second;
  }
}

void expect_runs_to_completion(const BuiltWorkload& w) {
  const test_support::ExecutionResult r = test_support::execute(w.workload);
  EXPECT_EQ(r.completed, r.total) << "deadlock: " << r.total - r.completed << " tasks never ran";
  EXPECT_EQ(r.mismatched_transfers, 0u);
  EXPECT_EQ(r.mismatched_collectives, 0u);
}

TEST(BalancedSplit, RemainderGoesToTheEarlierChunks) {
  std::vector<int> want(16, 7);
  for (int i = 0; i < 14; ++i) want[static_cast<size_t>(i)] = 8;
  EXPECT_EQ(balanced_split(126, 16), want);
  EXPECT_EQ(balanced_split(96, 8), std::vector<int>(8, 12));
}

TEST(BuildWorkload, LayoutGroupsAndPrograms) {
  Config c;
  c.par.tensor = 2;
  c.par.pipeline = 4;
  c.par.data = 2;
  const BuiltWorkload w = c.build(8);
  EXPECT_EQ(w.workload.programs.size(), 4u);
  EXPECT_EQ(w.workload.layout.world_size(), 16);
  EXPECT_EQ(w.workload.program_of_rank[5], 1u);  // tensor 1, data 0, pipeline 1 in tp-cp-ep-dp-pp order
  EXPECT_EQ(w.workload.program_of_rank[15], 3u);
  EXPECT_EQ(w.workload.programs[2].name, "stage 2");
  std::vector<std::string> groups;
  for (const core::GroupKind& g : w.workload.groups) groups.push_back(g.name);
  EXPECT_EQ(groups, (std::vector<std::string>{"tensor", "context", "expert", "data", "expert-data", "embedding"}));
  EXPECT_EQ(w.workload.groups.back().members, (std::vector<int>{0, 3}));
  EXPECT_EQ(w.workload.symmetric_axes, (std::array<bool, core::AXIS_COUNT>{true, true, true, true, false}));
  EXPECT_EQ(w.micro_batches, 8);
  EXPECT_EQ(w.samples_per_iteration, 16);
  EXPECT_EQ(w.tokens_per_iteration, 16 * 128);
  c.model.tied_embeddings = false;
  EXPECT_EQ(c.build(8).workload.groups.size(), 5u) << "no embedding group when untied";
}

TEST(BuildWorkload, OneComputeTaskPerOpLayerMicroBatchAndDirection) {
  Config c;
  c.par.pipeline = 2;
  const int m = 4;
  const BuiltWorkload w = c.build(m);
  const Program& first = w.workload.programs[0];
  const Program& last = w.workload.programs[1];
  // 4 layers x 10 ops per stage; + embedding on the first, + final_ln, logits, loss on the last.
  EXPECT_EQ(count(first, compute_in(Phase::FORWARD)), static_cast<size_t>(m * (4 * 10 + 1)));
  EXPECT_EQ(count(first, compute_in(Phase::BACKWARD)), static_cast<size_t>(m * (4 * 10 + 1)));
  EXPECT_EQ(count(last, compute_in(Phase::FORWARD)), static_cast<size_t>(m * (4 * 10 + 3)));
  EXPECT_EQ(count(first, compute_in(Phase::RECOMPUTE)), 0u);
  EXPECT_EQ(count(first, compute_in(Phase::OPTIMIZER)), 1u);

  c.par.recompute = Recompute::FULL;
  EXPECT_EQ(count(c.build(m).workload.programs[1], compute_in(Phase::RECOMPUTE)), static_cast<size_t>(m * 4 * 10));
  // Early stop (recompute_early_stop): the re-run ends before mlp_down; mlp_bda is not re-run either.
  c.par.recompute_early_stop = true;
  const BuiltWorkload early = c.build(m);
  EXPECT_EQ(count(early.workload.programs[1], compute_in(Phase::RECOMPUTE)), static_cast<size_t>(m * 4 * 8));
  for (const Task& t : early.workload.programs[1].tasks) {
    if (t.phase == Phase::RECOMPUTE && t.kind == TaskKind::COMPUTE) {
      EXPECT_NE(name(early, t), "mlp_down");
      EXPECT_NE(name(early, t), "mlp_bda");
    }
  }
  c.par.recompute_early_stop = false;
  c.par.recompute = Recompute::SELECTIVE;
  const BuiltWorkload s = c.build(m);
  EXPECT_EQ(count(s.workload.programs[1], compute_in(Phase::RECOMPUTE)), static_cast<size_t>(m * 4));
  for (const Task& t : s.workload.programs[1].tasks) {
    if (t.phase == Phase::RECOMPUTE && t.kind == TaskKind::COMPUTE) {
      EXPECT_EQ(name(s, t), "attention");
    }
  }
}

// An early-stopped re-run leaves out the MLP down-projection and so the tensor all-reduce after it:
// one all-reduce per layer is re-run (the projection's), not two.
TEST(BuildWorkload, EarlyStoppedRecomputeSkipsTheDownProjectionsAllReduce) {
  Config c;
  c.par.tensor = 4;
  c.par.recompute = Recompute::FULL;
  const int m = 2, layers = 8;
  auto rerun_all_reduces = [&](const BuiltWorkload& w) {
    const auto all_reduce = collective_on(w, "tensor", CollectiveOp::ALL_REDUCE);
    return count(w.workload.programs[0], [&](const Task& t) { return t.phase == Phase::RECOMPUTE && all_reduce(t); });
  };
  EXPECT_EQ(rerun_all_reduces(c.build(m)), static_cast<size_t>(m * layers * 2));
  c.par.recompute_early_stop = true;
  EXPECT_EQ(rerun_all_reduces(c.build(m)), static_cast<size_t>(m * layers));
}

TEST(BuildWorkload, TensorParallelCollectivesWithAndWithoutSequenceParallelism) {
  Config c;
  c.par.tensor = 4;
  const int m = 2, layers = 8;
  const BuiltWorkload w = c.build(m);
  const Program& p = w.workload.programs[0];
  // Per layer: all-reduce after proj and mlp_down (forward), after qkv and mlp_up input gradients
  // (backward); plus the embedding (forward), the logits' input gradient and the loss.
  EXPECT_EQ(count(p, collective_on(w, "tensor", CollectiveOp::ALL_REDUCE)), static_cast<size_t>(m * (layers * 4 + 3)));
  EXPECT_EQ(sum_bytes(p, [&](const Task& t) { return t.kind == TaskKind::COLLECTIVE && name(w, t) == "proj all_reduce"; }),
            m * layers * 128.0 * 256 * 2);
  // A blocking collective depends on the compute that produced its input; the next compute on it.
  for (uint32_t i = 0; i + 1 < p.tasks.size(); ++i) {
    if (name(w, p.tasks[i]) != "proj all_reduce") continue;
    const Task& ar = p.tasks[i];
    ASSERT_EQ(ar.dep_count, 1u);
    EXPECT_EQ(name(w, p.tasks[p.deps_of(ar)[0]]), "proj");
    const Task& next = p.tasks[i + 1];
    EXPECT_EQ(name(w, next), "attn_bda");
    ASSERT_EQ(next.dep_count, 1u);
    EXPECT_EQ(p.deps_of(next)[0], i);
  }

  c.par.sequence_parallel = true;
  const BuiltWorkload sp = c.build(m);
  const Program& q = sp.workload.programs[0];
  // Per layer 2 all-gathers + 2 reduce-scatters in each direction; the logits gather / scatter, the
  // embedding's reduce-scatter and gradient gather.
  EXPECT_EQ(count(q, collective_on(sp, "tensor", CollectiveOp::ALL_GATHER)), static_cast<size_t>(m * (layers * 4 + 2)));
  EXPECT_EQ(count(q, collective_on(sp, "tensor", CollectiveOp::REDUCE_SCATTER)),
            static_cast<size_t>(m * (layers * 4 + 2)));
  EXPECT_EQ(count(q, collective_on(sp, "tensor", CollectiveOp::ALL_REDUCE)), static_cast<size_t>(m)) << "loss only";
}

// Per-op selective checkpointing under tensor and context parallelism: the re-run forward repeats
// what torchtitan's save list does not hold. With sequence parallelism, the all-gathers before QKV
// and the MLP (2 per layer and micro-batch; the reduce-scatters are saved); without it, the
// all-reduces after the projection and the MLP (2); with context parallelism and flash attention
// (SDPA saved), no context collective. 8 layers, 2 micro-batches.
TEST(BuildWorkload, SelectiveOpRerunsTheTensorCollectivesItDoesNotSave) {
  Config c;
  c.par.tensor = 2;
  c.par.recompute = Recompute::SELECTIVE_OP;
  c.training.attention = Attention::FLASH;
  const int m = 2, layers = 8;
  auto in_recompute = [](const BuiltWorkload& w, const std::string& group, CollectiveOp op) {
    const auto is = collective_on(w, group, op);
    return count(w.workload.programs[0], [&](const Task& t) { return is(t) && t.phase == Phase::RECOMPUTE; });
  };
  const BuiltWorkload plain = c.build(m);
  EXPECT_EQ(in_recompute(plain, "tensor", CollectiveOp::ALL_REDUCE), static_cast<size_t>(m * layers * 2));
  EXPECT_EQ(in_recompute(plain, "tensor", CollectiveOp::ALL_GATHER), 0u);
  c.par.sequence_parallel = true;
  const BuiltWorkload sp = c.build(m);
  EXPECT_EQ(in_recompute(sp, "tensor", CollectiveOp::ALL_GATHER), static_cast<size_t>(m * layers * 2));
  EXPECT_EQ(in_recompute(sp, "tensor", CollectiveOp::REDUCE_SCATTER), 0u) << "saved";
  EXPECT_EQ(in_recompute(sp, "tensor", CollectiveOp::ALL_REDUCE), 0u);
  c.par.tensor = 1;
  c.par.sequence_parallel = false;
  c.par.context = 2;
  const BuiltWorkload cp = c.build(m);
  EXPECT_EQ(in_recompute(cp, "context", CollectiveOp::ALL_GATHER), 0u) << "inside the saved SDPA";
  EXPECT_GT(count(cp.workload.programs[0], compute_in(Phase::RECOMPUTE)), 0u);
  expect_runs_to_completion(sp);
  expect_runs_to_completion(cp);
}

TEST(BuildWorkload, SendsAndReceivesAgreePerLinkAndNeverDeadlock) {
  for (PipelineSchedule s : {PipelineSchedule::GPIPE, PipelineSchedule::ONE_F_ONE_B, PipelineSchedule::INTERLEAVED_1F1B}) {
    SCOPED_TRACE(to_string(s));
    Config c;
    c.par.pipeline = 4;
    c.par.schedule = s;
    c.par.virtual_stages = s == PipelineSchedule::INTERLEAVED_1F1B ? 2 : 1;
    const int m = 8;
    const BuiltWorkload w = c.build(m);
    // Each chunk boundary carries every micro-batch once per direction: (p·v - 1) boundaries.
    size_t sends = 0;
    for (const Program& p : w.workload.programs) sends += count(p, [](const Task& t) { return t.kind == TaskKind::SEND; });
    EXPECT_EQ(sends, static_cast<size_t>(2 * m * (4 * c.par.virtual_stages - 1)));
    expect_links_agree(w);
    expect_runs_to_completion(w);
  }
}

TEST(BuildWorkload, InterleavedChunksWrapAroundFromTheLastStage) {
  Config c;
  c.par.pipeline = 4;
  c.par.schedule = PipelineSchedule::INTERLEAVED_1F1B;
  c.par.virtual_stages = 2;
  const BuiltWorkload w = c.build(8);
  // Stage 3's chunk 0 (layer 3) sends activations to stage 0's chunk 1 (layer 4).
  const Program& last = w.workload.programs[3];
  EXPECT_EQ(count(last, [](const Task& t) { return t.kind == TaskKind::SEND && t.stream == Stream::PIPELINE_FORWARD; }),
            8u);
  const Program& first = w.workload.programs[0];
  EXPECT_EQ(count(first, [](const Task& t) { return t.kind == TaskKind::RECV && t.layer == 3; }), 8u);
  expect_links_agree(w);
}

TEST(BuildWorkload, DataParallelBucketsCarryTheLocalGradients) {
  Config c;
  c.par.pipeline = 2;
  c.par.data = 2;
  c.par.bucket_size = core::Bytes(1e12);  // one bucket per chunk
  const int m = 4;
  BuiltWorkload w = c.build(m);
  for (size_t s = 0; s < 2; ++s) {
    const Program& p = w.workload.programs[s];
    auto bucket = collective_on(w, "data", CollectiveOp::ALL_REDUCE);
    EXPECT_EQ(count(p, bucket), 1u);
    EXPECT_DOUBLE_EQ(sum_bytes(p, bucket), w.memory[s].gradients.value()) << "fp32 gradients of the stage";
  }
  // Tied embeddings: both ends all-reduce the word embedding's gradient once.
  EXPECT_EQ(count(w.workload.programs[0], collective_on(w, "embedding", CollectiveOp::ALL_REDUCE)), 1u);
  EXPECT_EQ(count(w.workload.programs[1], collective_on(w, "embedding", CollectiveOp::ALL_REDUCE)), 1u);

  c.par.bucket_size = core::Bytes(1);  // one bucket per unit (layer, embedding, head)
  w = c.build(m);
  EXPECT_EQ(count(w.workload.programs[0], collective_on(w, "data", CollectiveOp::ALL_REDUCE)), 5u);
  EXPECT_DOUBLE_EQ(sum_bytes(w.workload.programs[0], collective_on(w, "data", CollectiveOp::ALL_REDUCE)),
                   w.memory[0].gradients.value());
  // Overlapped: each bucket waits for the backward of its layer in the last micro-batch only.
  const Program& p = w.workload.programs[0];
  for (const Task& t : p.tasks) {
    if (!collective_on(w, "data", CollectiveOp::ALL_REDUCE)(t)) continue;
    const Task& producer = p.tasks[p.deps_of(t)[0]];
    EXPECT_EQ(producer.phase, Phase::BACKWARD);
    EXPECT_EQ(producer.micro_batch, static_cast<uint32_t>(m - 1));
  }
  // The optimizer waits for every gradient collective.
  for (const Task& t : p.tasks) {
    if (t.phase == Phase::OPTIMIZER && t.kind == TaskKind::COMPUTE) {
      EXPECT_EQ(t.op_class, core::OpClass::OPTIMIZER);
      EXPECT_EQ(t.dep_count, 5u + 1u + 1u);  // buckets, embedding all-reduce, last compute
    }
  }
  expect_runs_to_completion(w);
}

TEST(BuildWorkload, ZeroOneReduceScattersAndGathersTheParameters) {
  Config c;
  c.par.pipeline = 2;
  c.par.data = 4;
  c.par.zero_stage = 1;
  c.par.overlap_param_gather = false;  // gathers after the step
  c.par.bucket_size = core::Bytes(1);
  const BuiltWorkload w = c.build(4);
  const Program& p = w.workload.programs[1];
  auto rs = collective_on(w, "data", CollectiveOp::REDUCE_SCATTER);
  auto ag = collective_on(w, "data", CollectiveOp::ALL_GATHER);
  EXPECT_EQ(count(p, rs), 5u);  // 4 layers + head
  EXPECT_EQ(count(p, collective_on(w, "data", CollectiveOp::ALL_REDUCE)), 0u);
  EXPECT_EQ(count(p, ag), 5u);
  EXPECT_DOUBLE_EQ(sum_bytes(p, ag), sum_bytes(p, rs) / 4 * 2) << "bf16 parameters vs fp32 gradients";
  for (const Task& t : p.tasks) {
    if (ag(t)) {
      EXPECT_EQ(t.phase, Phase::OPTIMIZER);
    }
  }
  EXPECT_DOUBLE_EQ(w.memory[1].optimizer_states.value(), w.memory[1].gradients.value() * 3 / 4);
  expect_runs_to_completion(w);
}

TEST(BuildWorkload, ZeroThreeGathersEveryUnitInEveryPass) {
  Config c;
  c.par.pipeline = 2;
  c.par.data = 2;
  c.par.zero_stage = 3;
  const int m = 3;
  const BuiltWorkload w = c.build(m);
  const Program& p = w.workload.programs[0];  // embedding + 4 layers
  // FSDP keeps the root's parameters (the embedding) gathered from forward to backward.
  EXPECT_EQ(count(p, collective_on(w, "data", CollectiveOp::ALL_GATHER)), static_cast<size_t>(5 * m + 4 * m));
  EXPECT_EQ(count(p, collective_on(w, "data", CollectiveOp::REDUCE_SCATTER)), static_cast<size_t>(5 * m));
  EXPECT_EQ(count(p, collective_on(w, "data", CollectiveOp::ALL_REDUCE)), 0u);
  EXPECT_GT(w.memory[0].buffers.value(), 0);
  EXPECT_DOUBLE_EQ(w.workload.programs[0].static_memory.value(),
                   (w.memory[0].weights + w.memory[0].gradients + w.memory[0].optimizer_states + w.memory[0].buffers).value());
  // Prefetch 1: the gather of the third unit of a pass waits for the first unit's compute only; the
  // first two gathers of every pass but the first wait for the previous pass's last compute. Stage 0
  // runs m forward passes of 5 units (3m + 2(m - 1) dependencies) and m backward passes of 4 layers
  // and the embedding, which is not gathered again (2m + 2m), each on one compute.
  int gathers_with_compute_dep = 0;
  for (const Task& t : p.tasks) {
    if (!collective_on(w, "data", CollectiveOp::ALL_GATHER)(t)) continue;
    for (uint32_t d = 0; d < t.dep_count; ++d) {
      EXPECT_EQ(p.tasks[p.deps_of(t)[d]].kind, TaskKind::COMPUTE);
      ++gathers_with_compute_dep;
    }
  }
  EXPECT_EQ(gathers_with_compute_dep, 3 * m + 2 * (m - 1) + 2 * m + 2 * m);
  expect_runs_to_completion(w);
}

// Megatron's distributed optimizer with overlap_param_gather: the bucket all-gathers of the updated
// parameters are issued first, and only the first forward of each unit waits for its bucket.
TEST(BuildWorkload, OverlapParamGatherGathersBeforeTheFirstForward) {
  Config c;
  c.par.pipeline = 2;
  c.par.data = 4;
  c.par.zero_stage = 1;
  c.par.bucket_size = core::Bytes(1);  // one bucket per unit
  const int m = 3;
  const BuiltWorkload w = c.build(m);
  const Program& p = w.workload.programs[1];  // 4 layers + head
  auto ag = collective_on(w, "data", CollectiveOp::ALL_GATHER);
  EXPECT_EQ(count(p, ag), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(ag(p.tasks[i])) << "issued before anything else";
    EXPECT_EQ(p.tasks[i].phase, Phase::FORWARD);
  }
  // Each gather is waited for by exactly one compute: the first forward of its unit (micro-batch 0).
  std::map<uint32_t, int> waiters;
  for (const Task& t : p.tasks) {
    for (uint32_t d = 0; d < t.dep_count; ++d) {
      if (ag(p.tasks[p.deps_of(t)[d]])) {
        EXPECT_EQ(t.micro_batch, 0u);
        EXPECT_EQ(t.phase, Phase::FORWARD);
        ++waiters[p.deps_of(t)[d]];
      }
    }
  }
  EXPECT_EQ(waiters.size(), 5u);
  expect_runs_to_completion(w);
}

// FSDP (FULL_SHARD, one unit per layer), data 2, bf16. A layer of small_gpt() holds
// 12h² + 13h = 12·256² + 13·256 = 789,760 parameters (QKV 3h² + 3h, projection h² + h, MLP 8h² + 5h,
// two norms 4h). Per micro-batch each layer all-gathers 789,760 x 2 bytes = 1,579,520 bytes before
// its forward and again before its backward, and reduce-scatters its gradients in the param dtype
// (FSDP MixedPrecision reduce_dtype defaults to param_dtype): 1,579,520 bytes. The root's own
// parameters (embedding, head) are gathered before the forward only (not resharded after it).
// FSDP1 FULL_SHARD over two data-parallel ranks, one unit gathered ahead.
Config fsdp_over_two() {
  Config c;
  c.par.data = 2;
  c.par.zero_stage = 3;
  c.par.zero_impl = ZeroImpl::FSDP;
  c.par.prefetch = 1;
  return c;
}

TEST(BuildWorkload, FsdpGathersAndReduceScattersEachLayerEveryMicroBatch) {
  Config c = fsdp_over_two();
  const int m = 2;
  const BuiltWorkload w = c.build(m);
  ASSERT_DOUBLE_EQ(layer_parameters(c.model, c.par).dense, 789760.0);
  const Program& p = w.workload.programs[0];
  for (uint32_t mb = 0; mb < static_cast<uint32_t>(m); ++mb) {
    for (uint16_t layer = 0; layer < 8; ++layer) {
      double forward_gather = 0, backward_gather = 0, scatter = 0;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::COLLECTIVE || t.micro_batch != mb || t.layer != layer) continue;
        if (name(w, t) == "parameter all_gather") (t.phase == Phase::FORWARD ? forward_gather : backward_gather) += t.bytes;
        if (name(w, t) == "gradient reduce_scatter") scatter += t.bytes;
      }
      // Layer 0 shares its layer number with the embedding and head units (layer 0 in tasks): the
      // root's word embedding (V·h + s·h = 1024·256 + 128·256 = 294,912 parameters, tied with the
      // head) is gathered once per micro-batch, before its forward.
      if (layer == 0) {
        EXPECT_DOUBLE_EQ(forward_gather - 1579520.0, 294912.0 * 2 + 2 * 256 * 2) << "embedding + final norm";
        EXPECT_DOUBLE_EQ(backward_gather, 1579520.0) << "layer 0 only";
        continue;
      }
      EXPECT_DOUBLE_EQ(forward_gather, 1579520.0) << "layer " << layer << " mb " << mb;
      EXPECT_DOUBLE_EQ(backward_gather, 1579520.0);
      EXPECT_DOUBLE_EQ(scatter, 1579520.0);
    }
  }
  // Buffers: the unit in use and one prefetched, the largest unit being a layer.
  EXPECT_DOUBLE_EQ(w.memory[0].buffers.value(), 2 * 1579520.0);
  c.par.prefetch = 3;
  EXPECT_DOUBLE_EQ(c.build(m).memory[0].buffers.value(), 4 * 1579520.0);
  expect_runs_to_completion(w);

  // overlap_grad_reduce false: each micro-batch's reduce-scatters (10 units) wait for the last compute
  // of its backward pass, the embedding's, instead of their own unit's.
  c.par.prefetch = 1;
  c.par.overlap_grad_reduce = false;
  const BuiltWorkload late = c.build(m);
  const Program& q = late.workload.programs[0];
  size_t after_pass = 0;
  for (const Task& t : q.tasks) {
    if (!collective_on(late, "data", CollectiveOp::REDUCE_SCATTER)(t)) continue;
    const Task& producer = q.tasks[q.deps_of(t)[0]];
    EXPECT_EQ(producer.micro_batch, t.micro_batch);
    after_pass += name(late, producer) == "embedding" ? 1 : 0;
  }
  EXPECT_EQ(after_pass, static_cast<size_t>(10 * m)) << "embedding, 8 layers, head per micro-batch";
  expect_runs_to_completion(late);
}

// FSDP's SHARD_GRAD_OP (zero_stage 2, zero_impl fsdp / fsdp2): each layer is gathered before its
// forward only, 789,760 x 2 = 1,579,520 bytes per micro-batch, never again for its backward; its
// gradients are reduce-scattered per unit every micro-batch (1,579,520 bytes), and nothing is
// gathered after the optimizer step. Memory: the unsharded 16-bit weights stay resident from forward
// to backward, so weights count whole (as at stage 0) and no gather buffers; gradients and optimizer
// states are sharded over the two ranks (half of stage 0's).
TEST(BuildWorkload, ShardGradOpGathersOnlyBeforeTheForward) {
  Config c = fsdp_over_two();
  c.par.zero_stage = 2;
  ASSERT_TRUE(c.par.shard_grad_op());
  const int m = 2;
  const BuiltWorkload w = c.build(m);
  const Program& p = w.workload.programs[0];
  for (uint32_t mb = 0; mb < static_cast<uint32_t>(m); ++mb) {
    for (uint16_t layer = 1; layer < 8; ++layer) {
      double forward_gather = 0, backward_gather = 0, scatter = 0;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::COLLECTIVE || t.micro_batch != mb || t.layer != layer) continue;
        if (name(w, t) == "parameter all_gather") (t.phase == Phase::FORWARD ? forward_gather : backward_gather) += t.bytes;
        if (name(w, t) == "gradient reduce_scatter") scatter += t.bytes;
      }
      EXPECT_DOUBLE_EQ(forward_gather, 1579520.0) << "layer " << layer << " mb " << mb;
      EXPECT_DOUBLE_EQ(backward_gather, 0.0);
      EXPECT_DOUBLE_EQ(scatter, 1579520.0);
    }
  }
  EXPECT_EQ(count(p, [](const Task& t) { return t.kind == TaskKind::COLLECTIVE && t.phase == Phase::OPTIMIZER; }), 0u)
      << "no all-gather after the step";
  // Against FULL_SHARD: the same forward gathers and reduce-scatters, one backward gather fewer per
  // layer and micro-batch (8 layers x 2 micro-batches x 1,579,520 bytes).
  Config full = fsdp_over_two();
  const BuiltWorkload f = full.build(m);
  auto ag = collective_on(w, "data", CollectiveOp::ALL_GATHER);
  auto rs = collective_on(w, "data", CollectiveOp::REDUCE_SCATTER);
  EXPECT_DOUBLE_EQ(sum_bytes(f.workload.programs[0], ag) - sum_bytes(p, ag), 8 * m * 1579520.0);
  EXPECT_DOUBLE_EQ(sum_bytes(f.workload.programs[0], rs), sum_bytes(p, rs));
  Config none;
  none.par.data = 2;
  const BuiltWorkload plain = none.build(m);
  EXPECT_DOUBLE_EQ(w.memory[0].weights.value(), plain.memory[0].weights.value()) << "unsharded from forward to backward";
  EXPECT_DOUBLE_EQ(w.memory[0].gradients.value(), plain.memory[0].gradients.value() / 2);
  EXPECT_DOUBLE_EQ(w.memory[0].optimizer_states.value(), plain.memory[0].optimizer_states.value() / 2);
  EXPECT_DOUBLE_EQ(w.memory[0].buffers.value(), 0.0);
  EXPECT_DOUBLE_EQ(f.memory[0].weights.value(), plain.memory[0].weights.value() / 2) << "FULL_SHARD shards them";
  expect_runs_to_completion(w);
  // FSDP2 without resharding after forward: the same messages.
  c.par.zero_impl = ZeroImpl::FSDP2;
  const BuiltWorkload w2 = c.build(m);
  EXPECT_DOUBLE_EQ(sum_bytes(w2.workload.programs[0], ag), sum_bytes(p, ag));
  EXPECT_EQ(count(w2.workload.programs[0], rs), count(p, rs));
}

// FSDP2 under a pipeline (ParallelismConfig::fsdp2_pipelined: PyTorch's pipelining runs every
// backward but the last without gradient sync or resharding). Pipeline 2 x data 2, 4 micro-batches,
// SHARD_GRAD_OP (torchtitan's default with a pipeline), gradients reduced in fp32: each stage's layer
// (789,760 parameters) is gathered once per step, before micro-batch 0's forward (1,579,520 bytes in
// bf16), and reduce-scattered once, after micro-batch 3's backward, from its fp32 accumulator
// (789,760 x 4 = 3,159,040 bytes, no cast task). The accumulator costs 789,760 x (2 + 4) bytes at
// micro-batch 0 and 789,760 x (2 + 8) at each later one, on the compute stream; it holds the stage's
// parameters unsharded in fp32 (4 bytes each) on top of the sharded gradients.
TEST(BuildWorkload, Fsdp2UnderAPipelineGathersAndReducesOncePerStep) {
  Config c = fsdp_over_two();
  c.par.zero_stage = 2;
  c.par.zero_impl = ZeroImpl::FSDP2;
  c.par.pipeline = 2;
  c.par.reduce_dtype = "fp32";
  ASSERT_TRUE(c.par.fsdp2_pipelined());
  const int m = 4;
  const BuiltWorkload w = c.build(m);
  const Program& p = w.workload.programs[0];  // layers 0-3 and the embedding
  for (uint32_t mb = 0; mb < static_cast<uint32_t>(m); ++mb) {
    for (uint16_t layer = 1; layer < 4; ++layer) {
      double gather = 0, scatter = 0, accumulate = 0, cast = 0;
      for (const Task& t : p.tasks) {
        if (t.micro_batch != mb || t.layer != layer) continue;
        if (name(w, t) == "parameter all_gather") gather += t.bytes;
        if (name(w, t) == "gradient reduce_scatter") scatter += t.bytes;
        if (name(w, t) == "gradient accumulate (fp32)") accumulate += t.bytes;
        if (name(w, t) == "gradient cast (fp32)") cast += t.bytes;
      }
      EXPECT_DOUBLE_EQ(gather, mb == 0 ? 1579520.0 : 0.0) << "layer " << layer << " mb " << mb;
      EXPECT_DOUBLE_EQ(scatter, mb == 3 ? 3159040.0 : 0.0) << "layer " << layer << " mb " << mb;
      EXPECT_DOUBLE_EQ(accumulate, 789760.0 * (mb == 0 ? 6 : 10)) << "layer " << layer << " mb " << mb;
      EXPECT_DOUBLE_EQ(cast, 0.0);
    }
  }
  // Memory: the same stage without the pipeline's accumulation (FSDP1's SHARD_GRAD_OP, which
  // reduces every micro-batch) holds 4 bytes per parameter less.
  Config fsdp1 = c;
  fsdp1.par.zero_impl = ZeroImpl::FSDP;
  ASSERT_FALSE(fsdp1.par.fsdp2_pipelined());
  const BuiltWorkload every = fsdp1.build(m);
  // Stage 0's parameters: its 4 layers and the embedding (V 1024 x h 256, positions s 128 x 256),
  // whole under SHARD_GRAD_OP's 2-byte weights.
  const double stage = 4 * 789760.0 + 1024 * 256 + 128 * 256;
  ASSERT_DOUBLE_EQ(every.memory[0].weights.value(), stage * 2);
  EXPECT_DOUBLE_EQ(w.memory[0].gradients.value() - every.memory[0].gradients.value(), stage * 4);
  EXPECT_DOUBLE_EQ(w.memory[0].weights.value(), every.memory[0].weights.value());
  expect_runs_to_completion(w);
  // Without a pipeline FSDP2 reduces every micro-batch, after a cast.
  c.par.pipeline = 1;
  EXPECT_FALSE(c.par.fsdp2_pipelined());
  const BuiltWorkload flat = c.build(m);
  EXPECT_EQ(count(flat.workload.programs[0], [&](const Task& t) { return name(flat, t) == "gradient accumulate (fp32)"; }),
            0u);
  EXPECT_EQ(count(flat.workload.programs[0], [&](const Task& t) { return name(flat, t) == "gradient cast (fp32)"; }),
            count(flat.workload.programs[0], [&](const Task& t) { return name(flat, t) == "gradient reduce_scatter"; }));
}

// HSDP (parallelism.shard_group): FSDP FULL_SHARD over data 4 in shard groups of 2. Each layer
// (789,760 parameters, bf16) is gathered over its shard group of 2 (1,579,520 bytes) before its
// forward and again before its backward, its gradients reduce-scattered there (1,579,520 bytes),
// then the rank's half, 789,760 x 2 / 2 = 789,760 bytes, all-reduced with the other shard group's
// rank at the same place. Memory: the model states are sharded over 2 ranks, not 4: twice FULL_SHARD
// over 4, half of no sharding.
TEST(BuildWorkload, HybridShardGathersInTheShardGroupAndAllReducesTheShardAcrossReplicas) {
  Config c = fsdp_over_two();
  c.par.data = 4;
  c.par.shard_group = 2;
  ASSERT_TRUE(c.par.hybrid_shard());
  const int m = 2;
  const BuiltWorkload w = c.build(m);
  const core::Workload& wl = w.workload;
  const Program& p = wl.programs[0];
  for (uint32_t mb = 0; mb < static_cast<uint32_t>(m); ++mb) {
    for (uint16_t layer = 1; layer < 8; ++layer) {
      double forward_gather = 0, backward_gather = 0, scatter = 0, shard_reduce = 0;
      for (const Task& t : p.tasks) {
        if (t.kind != TaskKind::COLLECTIVE || t.micro_batch != mb || t.layer != layer) continue;
        const std::string& group = wl.groups[t.group].name;
        if (name(w, t) == "parameter all_gather") {
          EXPECT_EQ(group, "data");
          (t.phase == Phase::FORWARD ? forward_gather : backward_gather) += t.bytes;
        }
        if (name(w, t) == "gradient reduce_scatter") {
          EXPECT_EQ(group, "data");
          scatter += t.bytes;
        }
        if (name(w, t) == "gradient shard all_reduce") {
          EXPECT_EQ(group, "replicate");
          EXPECT_EQ(t.collective, CollectiveOp::ALL_REDUCE);
          shard_reduce += t.bytes;
        }
      }
      EXPECT_DOUBLE_EQ(forward_gather, 1579520.0) << "layer " << layer << " mb " << mb;
      EXPECT_DOUBLE_EQ(backward_gather, 1579520.0);
      EXPECT_DOUBLE_EQ(scatter, 1579520.0);
      EXPECT_DOUBLE_EQ(shard_reduce, 789760.0);
    }
  }
  // Each shard all-reduce follows its reduce-scatter.
  for (const Task& t : p.tasks) {
    if (!collective_on(w, "replicate", CollectiveOp::ALL_REDUCE)(t)) continue;
    ASSERT_EQ(t.dep_count, 1u);
    EXPECT_EQ(name(w, p.tasks[p.deps_of(t)[0]]), "gradient reduce_scatter");
  }
  // The groups: rank 3 (data coordinate 3) shards with rank 2 and replicates with rank 1.
  const auto group_of = [&](const std::string& kind, int rank) {
    for (const core::GroupKind& g : wl.groups) {
      if (g.name == kind) return g.ranks_of(wl.layout, rank);
    }
    return std::vector<int>{};
  };
  EXPECT_EQ(group_of("data", 3), (std::vector<int>{2, 3}));
  EXPECT_EQ(group_of("replicate", 3), (std::vector<int>{1, 3}));
  EXPECT_FALSE(wl.symmetric_axes[static_cast<size_t>(core::Axis::DATA)]);
  Config full = fsdp_over_two();
  full.par.data = 4;
  const BuiltWorkload f = full.build(m);
  EXPECT_TRUE(f.workload.symmetric_axes[static_cast<size_t>(core::Axis::DATA)]);
  EXPECT_DOUBLE_EQ(w.memory[0].weights.value(), 2 * f.memory[0].weights.value());
  EXPECT_DOUBLE_EQ(w.memory[0].gradients.value(), 2 * f.memory[0].gradients.value());
  EXPECT_DOUBLE_EQ(w.memory[0].optimizer_states.value(), 2 * f.memory[0].optimizer_states.value());
  EXPECT_DOUBLE_EQ(w.memory[0].buffers.value(), f.memory[0].buffers.value()) << "whole units are gathered either way";
  expect_runs_to_completion(w);
  EXPECT_LE(estimate_task_count(c.model, c.training, c.par) / static_cast<double>(wl.task_count()), 1.25);
  EXPECT_GE(estimate_task_count(c.model, c.training, c.par) / static_cast<double>(wl.task_count()), 0.8);
}

// FSDP1's backward_prefetch (parallelism.backward_prefetch). Backward order: head, layers 7..0,
// embedding. BACKWARD_PRE (prefetch 1): layer L's backward gather reuses the buffer of the unit two
// places before it, so it waits for layer L+2's last backward compute and runs under L+1's.
// BACKWARD_POST: it is issued when layer L+1's gradients are computed (waits for L+1's last compute),
// ahead of L+1's gradient reduce-scatter in program order.
TEST(BuildWorkload, FsdpBackwardPostIssuesEachGatherAfterThePreviousUnitsGradients) {
  Config c = fsdp_over_two();
  for (const bool post : {false, true}) {
    c.par.backward_prefetch_post = post;
    const BuiltWorkload w = c.build(1);
    const Program& p = w.workload.programs[0];
    std::map<uint16_t, size_t> gather_of, scatter_of;
    for (size_t i = 0; i < p.tasks.size(); ++i) {
      const Task& t = p.tasks[i];
      if (t.kind != TaskKind::COLLECTIVE || t.phase != Phase::BACKWARD) continue;
      if (name(w, t) == "parameter all_gather") gather_of[t.layer] = i;
      if (name(w, t) == "gradient reduce_scatter" && !scatter_of.count(t.layer)) scatter_of[t.layer] = i;
    }
    for (uint16_t layer = 1; layer <= 5; ++layer) {
      const Task& gather = p.tasks[gather_of.at(layer)];
      ASSERT_EQ(gather.dep_count, 1u);
      const Task& waited = p.tasks[p.deps_of(gather)[0]];
      EXPECT_EQ(waited.kind, TaskKind::COMPUTE);
      EXPECT_EQ(waited.phase, Phase::BACKWARD);
      EXPECT_EQ(waited.layer, layer + (post ? 1 : 2)) << (post ? "post" : "pre") << ", layer " << layer;
      if (post) {
        EXPECT_LT(gather_of.at(layer), scatter_of.at(layer + 1)) << "gather ahead of the reduce-scatter";
      }
    }
    expect_runs_to_completion(w);
  }
}

// parallelism.reduce_dtype "fp32" (Composer's DEFAULT mixed precision, torchtitan's float32 reduce):
// every unit's reduce-scatter sends 4 bytes per element instead of 2, after a cast of the unit's
// bf16 gradient on the reduction's stream (read 2, write 4 bytes per element). The stage holds
// 6,613,504 parameter elements (Fsdp2AndDeepSpeedZeroThree below), reduced once per micro-batch.
TEST(BuildWorkload, FsdpReduceInFp32SendsFourBytesAfterACast) {
  Config c;
  c.par.data = 2;
  c.par.zero_stage = 3;
  c.par.zero_impl = ZeroImpl::FSDP;
  c.par.prefetch = 1;
  const int m = 2;
  const BuiltWorkload bf16 = c.build(m);
  c.par.reduce_dtype = "fp32";
  const BuiltWorkload fp32 = c.build(m);
  auto rs = collective_on(fp32, "data", CollectiveOp::REDUCE_SCATTER);
  const Program& p16 = bf16.workload.programs[0];
  const Program& p32 = fp32.workload.programs[0];
  EXPECT_DOUBLE_EQ(sum_bytes(p16, rs), m * 6613504.0 * 2);
  EXPECT_DOUBLE_EQ(sum_bytes(p32, rs), m * 6613504.0 * 4);
  EXPECT_EQ(count(p32, rs), count(p16, rs));
  double cast_bytes = 0;
  size_t casts = 0;
  for (const Task& t : p32.tasks) {
    if (t.kind != TaskKind::COLLECTIVE || !rs(t)) continue;
    ASSERT_EQ(t.dep_count, 1u);
    const Task& cast = p32.tasks[p32.deps_of(t)[0]];
    EXPECT_EQ(cast.kind, TaskKind::COMPUTE);
    EXPECT_EQ(cast.stream, Stream::DATA_COMM);
    EXPECT_EQ(name(fp32, cast), "gradient cast (fp32)");
    EXPECT_DOUBLE_EQ(cast.bytes, t.bytes / 4 * 6) << "read 2, write 4 bytes per element";
    cast_bytes += cast.bytes;
    ++casts;
  }
  EXPECT_EQ(casts, count(p32, rs));
  EXPECT_DOUBLE_EQ(cast_bytes, m * 6613504.0 * 6);
  for (const Task& t : p16.tasks) EXPECT_NE(t.kind == TaskKind::COMPUTE ? name(bf16, t) : "", "gradient cast (fp32)");
  expect_runs_to_completion(fp32);
}

// FSDP2 has FSDP's message pattern; DeepSpeed ZeRO-3 reduces per reduce bucket (5e8 elements: one
// bucket holding the whole stage per micro-batch here) and gathers weight matrices, not units: those
// of at least stage3_param_persistence_threshold = 1e5 elements, in each pass: the embedding
// (294,912), and per layer QKV (256 x 768 = 196,608), MLP up and down (262,144 each); the projection
// (65,536), the norms, the biases and the final norm stay whole on every rank. 6,062,080 elements a
// pass. The whole stage, 8 x 789,760 + 294,912 + 512 = 6,613,504 elements, is under
// max_live_parameters (1e9): the gather buffers can hold all of it.
TEST(BuildWorkload, Fsdp2AndDeepSpeedZeroThree) {
  Config c;
  c.par.data = 2;
  c.par.zero_stage = 3;
  const int m = 2;
  c.par.zero_impl = ZeroImpl::FSDP;
  c.par.prefetch = 1;
  const BuiltWorkload fsdp = c.build(m);
  c.par.zero_impl = ZeroImpl::FSDP2;
  const BuiltWorkload fsdp2 = c.build(m);
  auto rs = collective_on(fsdp, "data", CollectiveOp::REDUCE_SCATTER);
  auto ag = collective_on(fsdp, "data", CollectiveOp::ALL_GATHER);
  EXPECT_EQ(count(fsdp2.workload.programs[0], rs), count(fsdp.workload.programs[0], rs));
  EXPECT_DOUBLE_EQ(sum_bytes(fsdp2.workload.programs[0], ag), sum_bytes(fsdp.workload.programs[0], ag));

  c.par.zero_impl = ZeroImpl::DEEPSPEED;
  c.par.prefetch = -1;  // DeepSpeed's prefetch is training.deepspeed's
  const BuiltWorkload ds = c.build(m);
  const Program& p = ds.workload.programs[0];
  EXPECT_EQ(count(p, rs), static_cast<size_t>(m)) << "one reduce bucket per micro-batch";
  EXPECT_DOUBLE_EQ(sum_bytes(p, rs), sum_bytes(fsdp.workload.programs[0], rs));
  EXPECT_EQ(count(p, ag), static_cast<size_t>(m * 2 * (1 + 8 * 3)));
  EXPECT_DOUBLE_EQ(sum_bytes(p, ag), m * 2 * 6062080.0 * 2);
  EXPECT_DOUBLE_EQ(ds.memory[0].buffers.value(), 6613504.0 * 2);
  expect_runs_to_completion(ds);
  EXPECT_LE(estimate_task_count(c.model, c.training, c.par) / static_cast<double>(ds.workload.task_count()), 1.25);
  EXPECT_GE(estimate_task_count(c.model, c.training, c.par) / static_cast<double>(ds.workload.task_count()), 0.8);
}

// DeepSpeed ZeRO-3's hooks (stage_deepspeed.cpp). With the default bucket (5e7 elements, above the
// 6.1M this model gathers a pass) the first hook of each pass prefetches every gather of the pass:
// all of the forward's wait for one host task. With prefetch_bucket_elements 0 each op's hook
// fetches its own weight: layer 3's MLP-up GEMM waits for its all-gather (262,144 x 2 bytes), which
// waits for that op's host hook: one parameter fetched, 4 launches x 25 us = 100 us.
TEST(BuildWorkload, DeepSpeedZeroThreeFetchesEachWeightFromItsHook) {
  Config c;
  c.par.data = 2;
  c.par.zero_stage = 3;
  c.par.zero_impl = ZeroImpl::DEEPSPEED;
  auto host_hook = [](const BuiltWorkload& w, const Task& t) {
    return t.kind == TaskKind::COMPUTE && t.stream == Stream::HOST && name(w, t) == "zero3 fetch hook";
  };
  const BuiltWorkload w = c.build(1);
  const Program& p = w.workload.programs[0];
  auto ag = collective_on(w, "data", CollectiveOp::ALL_GATHER);
  std::set<uint32_t> issuers;
  for (const Task& t : p.tasks) {
    if (!ag(t) || t.phase != Phase::FORWARD) continue;
    ASSERT_EQ(t.dep_count, 1u);
    const uint32_t d = p.deps_of(t)[0];
    EXPECT_TRUE(host_hook(w, p.tasks[d]));
    issuers.insert(d);
  }
  EXPECT_EQ(issuers.size(), 1u);
  expect_runs_to_completion(w);

  c.training.deepspeed = DeepSpeedZeroConfig{};
  c.training.deepspeed->prefetch_bucket_elements = 0;
  const BuiltWorkload d = c.build(1);
  const Program& q = d.workload.programs[0];
  auto dag = collective_on(d, "data", CollectiveOp::ALL_GATHER);
  size_t checked = 0;
  for (const Task& t : q.tasks) {
    if (t.kind != TaskKind::COMPUTE || name(d, t) != "mlp_up" || t.layer != 3 || t.phase != Phase::FORWARD) continue;
    for (uint32_t k = 0; k < t.dep_count; ++k) {
      const uint32_t g = q.deps_of(t)[k];
      if (!dag(q.tasks[g])) continue;
      EXPECT_DOUBLE_EQ(q.tasks[g].bytes, 262144.0 * 2);
      ASSERT_EQ(q.tasks[g].dep_count, 1u);
      const Task& hook = q.tasks[q.deps_of(q.tasks[g])[0]];
      EXPECT_TRUE(host_hook(d, hook));
      EXPECT_EQ(hook.layer, 3);
      EXPECT_DOUBLE_EQ(hook.seconds, 4 * 25e-6);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1u);
  expect_runs_to_completion(d);
}

// tp_comm_overlap: a layer's four sequence-parallel GEMMs are cut into `tensor` chunks with one
// collective chunk each (forward: 2 all-gathers + 2 reduce-scatters of b·s·h·2/t bytes per GEMM;
// backward: the row-parallel GEMMs' output-gradient all-gathers in chunks, the column-parallel ones'
// input all-gather and dgrad reduce-scatter whole); the bytes of each direction's forward
// collectives are unchanged.
TEST(BuildWorkload, TpCommOverlapChunksTheSequenceParallelGemms) {
  Config c;
  c.par.tensor = 2;
  c.par.sequence_parallel = true;
  const BuiltWorkload plain = c.build(1);
  c.par.tp_comm_overlap = true;
  const BuiltWorkload w = c.build(1);
  const Program& p = w.workload.programs[0];
  const Program& q = plain.workload.programs[0];
  auto in_layer = [&](Phase phase, CollectiveOp op, const BuiltWorkload& b) {
    return [&b, phase, op](const Task& t) {
      return collective_on(b, "tensor", op)(t) && t.layer == 3 && t.phase == phase;
    };
  };
  EXPECT_EQ(count(p, in_layer(Phase::FORWARD, CollectiveOp::ALL_GATHER, w)), 4u);
  EXPECT_EQ(count(p, in_layer(Phase::FORWARD, CollectiveOp::REDUCE_SCATTER, w)), 4u);
  EXPECT_EQ(count(p, in_layer(Phase::BACKWARD, CollectiveOp::ALL_GATHER, w)), 2u * 2u + 2u);
  EXPECT_EQ(count(p, in_layer(Phase::BACKWARD, CollectiveOp::REDUCE_SCATTER, w)), 2u);
  const double activation = 128.0 * 256 * 2;  // b·s·h bf16
  EXPECT_DOUBLE_EQ(sum_bytes(p, in_layer(Phase::FORWARD, CollectiveOp::ALL_GATHER, w)), 2 * activation);
  EXPECT_DOUBLE_EQ(sum_bytes(q, in_layer(Phase::FORWARD, CollectiveOp::ALL_GATHER, plain)), 2 * activation);
  EXPECT_DOUBLE_EQ(sum_bytes(p, in_layer(Phase::FORWARD, CollectiveOp::REDUCE_SCATTER, w)), 2 * activation);
  // Every chunk of the QKV GEMM's forward waits for its own all-gather chunk.
  size_t qkv_chunks = 0;
  for (const Task& t : p.tasks) {
    if (t.kind != TaskKind::COMPUTE || name(w, t) != "qkv" || t.layer != 3 || t.phase != Phase::FORWARD) continue;
    ++qkv_chunks;
    ASSERT_EQ(t.dep_count, 1u);
    EXPECT_TRUE(in_layer(Phase::FORWARD, CollectiveOp::ALL_GATHER, w)(p.tasks[p.deps_of(t)[0]]));
  }
  EXPECT_EQ(qkv_chunks, 2u);
  expect_runs_to_completion(w);

  // Without sequence parallelism the flag is ignored: the same program.
  c.par.sequence_parallel = false;
  const BuiltWorkload ignored = c.build(1);
  c.par.tp_comm_overlap = false;
  const BuiltWorkload reference = c.build(1);
  EXPECT_EQ(ignored.workload.programs[0].tasks.size(), reference.workload.programs[0].tasks.size());
}

TEST(BuildWorkload, PeakActivationsFollowTheMicroBatchesInFlight) {
  // Korthikanti et al. 2022, §4.2.3: under 1F1B the first stage holds p micro-batches; under GPipe
  // every stage holds all m.
  Config c;
  c.par.pipeline = 4;
  c.par.tensor = 2;
  c.par.sequence_parallel = true;
  const int m = 8;
  const double per_layer = activation_bytes_per_layer(c.model, c.training, c.par).value();
  BuiltWorkload w = c.build(m);
  EXPECT_DOUBLE_EQ(w.memory[0].activations.value(), 4 * 2 * per_layer);
  EXPECT_DOUBLE_EQ(w.memory[2].activations.value(), 2 * 2 * per_layer);
  c.par.schedule = PipelineSchedule::GPIPE;
  w = c.build(m);
  EXPECT_DOUBLE_EQ(w.memory[0].activations.value(), m * 2 * per_layer);
  // Full recompute: inputs of p micro-batches, plus one layer's working set during its backward.
  c.par.schedule = PipelineSchedule::ONE_F_ONE_B;
  c.par.recompute = Recompute::FULL;
  const double input = activation_bytes_per_layer(c.model, c.training, c.par).value();
  ParallelismConfig none = c.par;
  none.recompute = Recompute::NONE;
  const double working = activation_bytes_per_layer(c.model, c.training, none).value();
  w = c.build(m);
  EXPECT_DOUBLE_EQ(w.memory[0].activations.value(), 4 * 2 * input + working);
}

TEST(BuildWorkload, UnevenStageLayersAreRespected) {
  // Llama 3 405B on 16 stages with lighter first and last stages (embedding and output layer).
  Config c;
  c.model = *find_model("llama3-405b");
  c.training.sequence_length = 128;
  c.par.tensor = 8;
  c.par.pipeline = 16;
  c.par.sequence_parallel = true;
  c.par.stage_layers = std::vector<int>(16, 8);
  c.par.stage_layers.front() = 7;
  c.par.stage_layers.back() = 7;
  const int m = 2;
  const BuiltWorkload w = c.build(m);
  EXPECT_FALSE(w.balanced_split);
  EXPECT_EQ(w.stage_layers, c.par.stage_layers);
  auto qkv = [&](const Task& t) { return compute_in(Phase::FORWARD)(t) && name(w, t) == "qkv"; };
  EXPECT_EQ(count(w.workload.programs[0], qkv), 7u * m);
  EXPECT_EQ(count(w.workload.programs[1], qkv), 8u * m);
  EXPECT_EQ(count(w.workload.programs[15], qkv), 7u * m);
  uint16_t first_layer_of_stage_1 = UINT16_MAX;
  for (const Task& t : w.workload.programs[1].tasks) {
    if (qkv(t)) first_layer_of_stage_1 = std::min(first_layer_of_stage_1, t.layer);
  }
  EXPECT_EQ(first_layer_of_stage_1, 7);
  expect_links_agree(w);
}

// The compute tasks of all ranks execute exactly iteration_flops().hardware.
TEST(BuildWorkload, ComputeFlopsOfAllRanksSumToTheIterationFlops) {
  struct Case {
    int t, p, d, cp, ep;
    bool sp;
    Recompute recompute;
    bool moe;
  };
  for (const Case& k : std::vector<Case>{{2, 2, 2, 1, 1, false, Recompute::NONE, false},
                                         {2, 2, 1, 2, 1, true, Recompute::FULL, false},
                                         {1, 2, 2, 1, 1, false, Recompute::SELECTIVE, false},
                                         {1, 2, 2, 1, 1, false, Recompute::SELECTIVE_OP, false},
                                         {2, 2, 1, 2, 1, true, Recompute::SELECTIVE_OP, false},
                                         {2, 1, 2, 1, 1, false, Recompute::SELECTIVE_OP, false},
                                         {2, 1, 1, 1, 2, true, Recompute::NONE, true},
                                         {1, 2, 1, 2, 2, false, Recompute::FULL, true}}) {
    Config c;
    if (k.moe) {
      c.model.experts = 4;
      c.model.top_k = 2;
    }
    c.par.tensor = k.t;
    c.par.pipeline = k.p;
    c.par.data = k.d;
    c.par.context = k.cp;
    c.par.expert = k.ep;
    c.par.sequence_parallel = k.sp;
    c.par.recompute = k.recompute;
    for (bool overlap : {false, true}) {
      c.par.tp_comm_overlap = overlap;  // chunked GEMMs and dgrad / wgrad halves keep the sum
      c.par.recompute_early_stop = overlap && k.recompute == Recompute::FULL;  // and so does an early stop
      const BuiltWorkload w = c.build(4);
      double flops = 0;
      for (int r = 0; r < w.workload.layout.world_size(); ++r) {
        for (const Task& t : w.workload.program_of(r).tasks) flops += t.flops;
      }
      EXPECT_NEAR(flops / w.flops.hardware.value(), 1.0, 1e-12) << k.t << k.p << k.d << k.cp << k.ep << overlap;
      expect_runs_to_completion(w);
    }
  }
}

TEST(BuildWorkload, ContextAndExpertCollectives) {
  Config c;
  c.model.experts = 4;
  c.model.top_k = 2;
  c.par.context = 2;
  c.par.expert = 2;
  const int m = 2;
  const BuiltWorkload w = c.build(m);
  const Program& p = w.workload.programs[0];
  EXPECT_EQ(count(p, collective_on(w, "context", CollectiveOp::ALL_GATHER)), static_cast<size_t>(8 * m));
  EXPECT_EQ(count(p, collective_on(w, "context", CollectiveOp::REDUCE_SCATTER)), static_cast<size_t>(8 * m));
  EXPECT_EQ(count(p, collective_on(w, "expert", CollectiveOp::ALL_TO_ALL)), static_cast<size_t>(8 * m * 4));
  // Dense gradients reduce over data x expert x context, expert gradients over data x context.
  EXPECT_EQ(w.workload.groups[3].size(w.workload.layout), 4);
  EXPECT_EQ(w.workload.groups[4].size(w.workload.layout), 2);
  EXPECT_EQ(count(p, collective_on(w, "expert-data", CollectiveOp::ALL_REDUCE)), 1u);
}

TEST(BuildWorkload, DeadlockFreeAcrossStrategies) {
  for (PipelineSchedule s : {PipelineSchedule::GPIPE, PipelineSchedule::ONE_F_ONE_B, PipelineSchedule::INTERLEAVED_1F1B}) {
    for (int p : {2, 4}) {
      for (int zero : {0, 1, 3}) {
        SCOPED_TRACE(to_string(s) + " p=" + std::to_string(p) + " zero=" + std::to_string(zero));
        Config c;
        c.par.pipeline = p;
        c.par.data = 2;
        c.par.tensor = 2;
        c.par.sequence_parallel = zero == 1;
        c.par.schedule = s;
        c.par.virtual_stages = s == PipelineSchedule::INTERLEAVED_1F1B ? 2 : 1;
        c.par.recompute = zero == 3 ? Recompute::FULL : Recompute::NONE;
        c.par.zero_stage = zero;
        c.par.overlap_grad_reduce = zero != 1;
        const BuiltWorkload w = c.build(2 * p);
        expect_links_agree(w);
        expect_runs_to_completion(w);
      }
    }
  }
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

// FP8 parameters (strategy.hpp, fp8_params): the distributed optimizer gathers 1 byte per parameter
// instead of 2, and the weights take half the memory; gradients and optimizer states do not change.
TEST(Fp8Params, HalveParameterGathersAndWeightMemory) {
  auto build = [](bool fp8_params) {
    Config c;
    c.training.precision = core::Precision::FP8;
    c.training.fp8_params = fp8_params;
    c.par.data = 4;
    c.par.zero_stage = 1;
    return c.build(2);
  };
  const BuiltWorkload bf16 = build(false);
  const BuiltWorkload fp8 = build(true);
  auto gathered = [](const BuiltWorkload& w) {
    double bytes = 0;
    for (const core::Task& t : w.workload.programs[0].tasks) {
      if (t.kind == core::TaskKind::COLLECTIVE && t.collective == core::CollectiveOp::ALL_GATHER) bytes += t.bytes;
    }
    return bytes;
  };
  ASSERT_GT(gathered(bf16), 0);
  EXPECT_DOUBLE_EQ(gathered(fp8), gathered(bf16) / 2);
  EXPECT_DOUBLE_EQ(fp8.memory[0].weights.value(), bf16.memory[0].weights.value() / 2);
  EXPECT_DOUBLE_EQ(fp8.memory[0].gradients.value(), bf16.memory[0].gradients.value());
  EXPECT_DOUBLE_EQ(fp8.memory[0].optimizer_states.value(), bf16.memory[0].optimizer_states.value());
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

TEST(PipelineSchedules, NewSchedulesKeepLinksAgreeingAndRunToCompletion) {
  for (PipelineSchedule s : {PipelineSchedule::PIPEDREAM, PipelineSchedule::PIPEDREAM_2BW, PipelineSchedule::ZERO_BUBBLE_H1,
                             PipelineSchedule::ZERO_BUBBLE_H2}) {
    for (PipelineExecution e : {PipelineExecution::ORDERED, PipelineExecution::ASYNC}) {
      const bool pipedream = s == PipelineSchedule::PIPEDREAM || s == PipelineSchedule::PIPEDREAM_2BW;
      if (pipedream && e == PipelineExecution::ASYNC) continue;
      SCOPED_TRACE(to_string(s) + " " + to_string(e));
      Config c;
      c.par.pipeline = 4;
      c.par.tensor = 2;
      c.par.data = 2;
      c.par.schedule = s;
      c.par.execution = e;
      const BuiltWorkload w = c.build(8);
      expect_links_agree(w);
      expect_runs_to_completion(w);
      EXPECT_EQ(w.workload.steady_state, steady_state_schedule(s));
    }
  }
}

// pipeline_execution "async": each stage's passes form a ready pool (workload_builder.hpp): one block
// per pass holding its compute and its send, the receives loose and triggering their passes, the
// schedule's in-flight limit, forwards opening and the pass that frees the activations closing.
TEST(PipelineSchedules, AsyncStagesAreReadyPools) {
  for (PipelineSchedule s : {PipelineSchedule::ONE_F_ONE_B, PipelineSchedule::ZERO_BUBBLE_H1}) {
    SCOPED_TRACE(to_string(s));
    Config c;
    c.par.pipeline = 4;
    c.par.tensor = 2;
    c.par.schedule = s;
    c.par.execution = PipelineExecution::ASYNC;
    const BuiltWorkload w = c.build(8);
    const bool split = splits_backward(s);
    for (int stage = 0; stage < 4; ++stage) {
      const Program& prog = w.workload.programs[static_cast<size_t>(stage)];
      const core::ReadyPool& pool = prog.pool;
      ASSERT_EQ(pool.blocks.size(), split ? 24u : 16u);
      EXPECT_EQ(pool.in_flight_limit, static_cast<uint32_t>(in_flight_limit(s, 4, stage, 8)));
      int opens = 0, closes = 0;
      for (const core::PoolBlock& b : pool.blocks) {
        opens += b.in_flight > 0 ? 1 : 0;
        closes += b.in_flight < 0 ? 1 : 0;
        EXPECT_LE(b.queue, 2);
        if (b.trigger == core::NO_TASK) {
          EXPECT_EQ(stage, 0) << "only the first stage's forwards have their input from the start";
          EXPECT_EQ(b.queue, 2);
          continue;
        }
        const Task& trigger = prog.tasks[b.trigger];
        const bool received = pool.block(b.trigger) == core::LOOSE_TASK;
        EXPECT_EQ(received, trigger.kind == TaskKind::RECV);
        if (!received) {
          // The last stage's backward waits for its own forward, a W for its B: their last compute.
          EXPECT_EQ(trigger.kind, TaskKind::COMPUTE);
          EXPECT_TRUE(stage == 3 || b.queue == 1);
        }
      }
      EXPECT_EQ(opens, 8);
      EXPECT_EQ(closes, 8);
      size_t loose = 0, sends = 0;
      for (uint32_t i = pool.begin; i < pool.end; ++i) {
        const bool in_block = pool.block(i) != core::LOOSE_TASK;
        loose += in_block ? 0 : 1;
        sends += in_block && prog.tasks[i].kind == TaskKind::SEND ? 1 : 0;
        if (!in_block) {
          EXPECT_EQ(prog.tasks[i].kind, TaskKind::RECV);
        }
      }
      // Activations from the previous stage and gradients from the next, one per micro-batch each.
      EXPECT_EQ(loose, static_cast<size_t>(8 * ((stage > 0 ? 1 : 0) + (stage < 3 ? 1 : 0))));
      EXPECT_EQ(sends, loose);
    }
  }
}

TEST(PipelineSchedules, ZeroBubbleSplitsEachGemmBackwardIntoDataAndWeightGradients) {
  Config ref;
  ref.par.pipeline = 4;
  const BuiltWorkload one = ref.build(8);
  Config zb = ref;
  zb.par.schedule = PipelineSchedule::ZERO_BUBBLE_H1;
  const BuiltWorkload split = zb.build(8);
  for (size_t s = 0; s < 4; ++s) {
    const Program& a = one.workload.programs[s];
    const Program& b = split.workload.programs[s];
    auto flops = [](const Program& p, core::BackwardPart part, bool gemm_only) {
      double f = 0;
      for (const Task& t : p.tasks) {
        if (t.kind == TaskKind::COMPUTE && t.phase == Phase::BACKWARD && t.gradient == part &&
            (!gemm_only || t.op_class == core::OpClass::GEMM)) {
          f += t.flops;
        }
      }
      return f;
    };
    // The same backward FLOPs, cut in two; W holds only GEMMs, exactly half of the GEMMs' backward.
    const double whole = flops(a, core::BackwardPart::BOTH, false);
    const double input = flops(b, core::BackwardPart::INPUT, false);
    const double weight = flops(b, core::BackwardPart::WEIGHT, false);
    EXPECT_NEAR(input + weight, whole, 1e-6 * whole);
    EXPECT_DOUBLE_EQ(weight, flops(b, core::BackwardPart::WEIGHT, true));
    EXPECT_NEAR(weight, 0.5 * flops(a, core::BackwardPart::BOTH, true), 1e-6 * whole);
    EXPECT_EQ(flops(b, core::BackwardPart::BOTH, false), 0.0);
    // Every W task is a GEMM and waits for no communication: no collective between B and W.
    for (const Task& t : b.tasks) {
      if (t.gradient == core::BackwardPart::WEIGHT) {
        EXPECT_EQ(t.op_class, core::OpClass::GEMM);
      }
    }
  }
  // ZB-H1 holds at most p micro-batches (of which the W-pending part is smaller): its activation
  // peak is at most 1F1B's stage-0 peak on every stage.
  double peak_1f1b = 0;
  for (const MemoryBreakdown& m : one.memory) peak_1f1b = std::max(peak_1f1b, m.activations.value());
  for (const MemoryBreakdown& m : split.memory) EXPECT_LE(m.activations.value(), peak_1f1b * (1 + 1e-9));
  EXPECT_EQ(split.schedule.peak_in_flight, (std::vector<int>{4, 4, 4, 4}));
}

TEST(PipelineSchedules, PipeDreamStashesWeightVersionsAndHoldsCarriedActivations) {
  Config c;
  c.par.pipeline = 4;
  c.par.schedule = PipelineSchedule::PIPEDREAM;
  const BuiltWorkload pd = c.build(8);
  c.par.schedule = PipelineSchedule::PIPEDREAM_2BW;
  const BuiltWorkload bw = c.build(8);
  c.par.schedule = PipelineSchedule::ONE_F_ONE_B;
  const BuiltWorkload ofob = c.build(8);
  for (size_t s = 0; s < 4; ++s) {
    const double weights = pd.memory[s].weights.value();
    const double versions = 4.0 - static_cast<double>(s);  // p - stage
    EXPECT_DOUBLE_EQ(pd.memory[s].stashed_weights.value(), (versions - 1) * weights);
    EXPECT_DOUBLE_EQ(bw.memory[s].stashed_weights.value(), (std::min(2.0, versions) - 1) * weights);
    EXPECT_EQ(ofob.memory[s].stashed_weights.value(), 0.0);
    // The window opens with the previous iteration's p - stage - 1 micro-batches held, and peaks at
    // p - stage, as 1F1B does.
    EXPECT_NEAR(pd.memory[s].activations.value(), ofob.memory[s].activations.value(), 1e-6 * ofob.memory[s].activations.value());
  }
  // PipeDream updates after every micro-batch: m steps' optimizer traffic; 2BW one step.
  auto optimizer_bytes = [](const BuiltWorkload& w) { return sum_bytes(w.workload.programs[0], compute_in(Phase::OPTIMIZER)); };
  EXPECT_DOUBLE_EQ(optimizer_bytes(pd), 8 * optimizer_bytes(bw));
  EXPECT_DOUBLE_EQ(optimizer_bytes(bw), optimizer_bytes(ofob));
}

TEST(PipelineSchedules, BadCombinationsAreRefusedWithTheReason) {
  auto problems = [](ParallelismConfig par, int micro_batches) {
    Config c;
    c.par = par;
    c.training.global_batch = micro_batches * par.sequences_per_step(c.training);
    core::Diagnostics diag;
    check_strategy(c.model, c.training, c.par, c.par.world_size(), "s.json", diag);
    std::string all;
    for (const auto& p : diag.problems()) all += p.to_string() + "\n";
    return all;
  };
  ParallelismConfig p;
  p.pipeline = 4;
  p.schedule = PipelineSchedule::ZERO_BUBBLE_H1;
  p.virtual_stages = 2;
  EXPECT_NE(problems(p, 8).find("/parallelism/virtual_stages: pipeline_schedule \"zero-bubble-h1\" has no interleaved form"),
            std::string::npos)
      << problems(p, 8);
  p.virtual_stages = 1;
  p.tensor = 2;
  p.sequence_parallel = true;
  p.tp_comm_overlap = true;
  EXPECT_NE(problems(p, 8).find("/parallelism/tp_comm_overlap"), std::string::npos);
  p = ParallelismConfig{};
  p.pipeline = 4;
  p.data = 2;
  p.zero_stage = 3;
  p.schedule = PipelineSchedule::ZERO_BUBBLE_H2;
  EXPECT_NE(problems(p, 8).find("/parallelism/zero_stage: pipeline_schedule \"zero-bubble-h2\" with zero_stage 3"),
            std::string::npos);
  p.zero_stage = 1;
  p.schedule = PipelineSchedule::PIPEDREAM;
  EXPECT_NE(problems(p, 8).find("/parallelism/zero_stage: pipeline_schedule \"pipedream\" stashes"), std::string::npos);
  p.zero_stage = 0;
  EXPECT_NE(problems(p, 2).find("/training/global_batch: pipeline_schedule \"pipedream\" models one window"),
            std::string::npos);
  EXPECT_EQ(problems(p, 4), "");
  p.execution = PipelineExecution::ASYNC;
  EXPECT_NE(problems(p, 4).find("/parallelism/pipeline_execution: pipeline_execution \"async\""), std::string::npos);
}

}  // namespace
}  // namespace trainsim::models

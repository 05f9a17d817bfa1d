// Layer graph -> Workload IR (models/layer_graph.hpp; workload_builder.hpp's build_workload calls it
// for a layer-graph model). One program ("stage 0") that every rank runs: layout {1, spatial, 1,
// data, 1}, spatial on the CONTEXT axis.
//
// Per micro-batch, forward in layer order, then backward in reverse:
//  - a split conv / pool with a halo: SEND its boundary planes to both neighbours along CONTEXT
//    (offset +1, tag 0; offset -1, tag 1) on CONTEXT_COMM and RECV theirs (tags 0 from -1, 1 from
//    +1) on EXPERT_COMM (a stream of their own: see halo()); the SENDs wait for the compute that produced the data, the layer's compute waits
//    for the RECVs. The domain is treated as periodic, so every rank runs the same program: the two
//    end ranks of a non-periodic split exchange one halo they would not need (their time is that of
//    the interior ranks, which bound the iteration anyway).
//  - one COMPUTE task (GEMM with its implicit-GEMM shape for conv and dense: m = output voxels x
//    samples, n = Cout, k = Cin·K^d, as cuDNN's implicit-GEMM kernels compute a convolution; NORM
//    for the norms; ELEMENTWISE for the others), backward 2x the forward FLOPs; an attention block
//    is one task per op of a transformer layer (accounting.hpp's layer_ops, encoder_block());
//  - batch_norm under a split: the statistics' all-reduce over "spatial" after the compute; dense /
//    global_pool consuming the split: the output's all-reduce over "spatial" (forward only).
//  - MEMORY: the layer's stored activations allocated after its forward, freed after its backward.
// Gradients of the last micro-batch fill buckets of bucket_elements() in backward order; each bucket
// is all-reduced on "data" (DATA and CONTEXT: every replica of the weights) at 4 bytes per element
// (fp32 main gradients) as soon as its last layer's backward has run (overlap_grad_reduce); without
// overlap_grad_reduce all gradients go in one all-reduce after the whole backward. The optimizer step depends on every bucket.
#include <fmt/format.h>

#include "models/layer_graph.hpp"
#include "models/workload_builder.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

using core::Axis;
using core::Stream;
using core::Task;
using core::TaskKind;

constexpr uint8_t HALO_UP_TAG = 0;    // to the +1 neighbour
constexpr uint8_t HALO_DOWN_TAG = 1;  // to the -1 neighbour

core::OpClass op_class_of(GraphOp op) {
  switch (op) {
    case GraphOp::CONV:
    case GraphOp::DENSE:
    case GraphOp::ATTENTION: return core::OpClass::GEMM;
    case GraphOp::BATCH_NORM:
    case GraphOp::LAYER_NORM: return core::OpClass::NORM;
    default: return core::OpClass::ELEMENTWISE;
  }
}

struct Emitter {
  core::Workload& w;
  core::Program& prog;
  uint16_t spatial_group = 0;
  uint16_t data_group = 0;

  // Halo exchange with both neighbours; returns the RECVs.
  std::vector<uint32_t> halo(double bytes, core::Phase phase, uint16_t layer, uint32_t mb, uint32_t after) {
    Task s;
    s.kind = TaskKind::SEND;
    s.stream = Stream::CONTEXT_COMM;
    s.phase = phase;
    s.peer_axis = Axis::CONTEXT;
    s.bytes = bytes;
    s.layer = layer;
    s.micro_batch = mb;
    s.name = w.intern("halo");
    Task up = s, down = s;
    up.peer_offset = 1;
    up.tag = HALO_UP_TAG;
    down.peer_offset = -1;
    down.tag = HALO_DOWN_TAG;
    if (after == UINT32_MAX) {
      prog.add(up);
      prog.add(down);
    } else {
      prog.add(up, {after});
      prog.add(down, {after});
    }
    Task r = s;
    r.kind = TaskKind::RECV;
    // Receives on a stream of their own: with every rank's sends first on one FIFO stream, a ring of
    // rendezvous sends would wait on each other (the EXPERT stream is otherwise unused here; the
    // report counts sends and receives for their peer axis, CONTEXT, whatever the stream).
    r.stream = Stream::EXPERT_COMM;
    Task from_down = r, from_up = r;
    from_down.peer_offset = -1;
    from_down.tag = HALO_UP_TAG;
    from_up.peer_offset = 1;
    from_up.tag = HALO_DOWN_TAG;
    return {prog.add(from_down), prog.add(from_up)};
  }

  uint32_t all_reduce(uint16_t group, Stream stream, double bytes, core::Phase phase, const char* name, uint16_t layer,
                      uint32_t mb, uint32_t after) {
    Task c;
    c.kind = TaskKind::COLLECTIVE;
    c.collective = core::CollectiveOp::ALL_REDUCE;
    c.stream = stream;
    c.phase = phase;
    c.group = group;
    c.bytes = bytes;
    c.layer = layer;
    c.micro_batch = mb;
    c.name = w.intern(name);
    return prog.add(c, {after});
  }

  // The compute task of `l` in a pass, before its FLOPs and bytes.
  Task layer_task(core::Phase phase, const GraphLayer& l, uint16_t layer, uint32_t mb) {
    Task task;
    task.phase = phase;
    task.op_class = op_class_of(l.op);
    task.layer = layer;
    task.micro_batch = mb;
    task.name = w.intern(l.name);
    return task;
  }

  uint32_t memory(double bytes, uint16_t layer, uint32_t mb, uint32_t after, const char* name = "activations") {
    Task m;
    m.kind = TaskKind::MEMORY;
    m.bytes = bytes;
    m.layer = layer;
    m.micro_batch = mb;
    m.name = w.intern(name);
    return prog.add(m, {after});
  }
};

std::vector<OpCost> attention_ops(const GraphLayer& l, const TrainingConfig& t) {
  const EncoderBlock block = encoder_block(l, t);
  return layer_ops(block.model, block.training, ParallelismConfig{}, LayerKind::DENSE);
}

}  // namespace

BuiltWorkload build_layer_graph_workload(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  const LayerGraph& g = *m.graph;
  BuiltWorkload built;
  built.micro_batches = static_cast<int>(t.global_batch / (t.micro_batch * p.data));
  built.stage_layers = {static_cast<int>(g.layers.size())};
  built.samples_per_iteration = t.global_batch;
  built.tokens_per_iteration = 0;  // no tokens: samples_per_s is the throughput (docs/cnn.md)
  built.flops = iteration_flops(m, t, p);
  built.schedule.peak_in_flight = {1};

  core::Workload& w = built.workload;
  w.layout = core::ParallelLayout(p.layout_sizes());
  w.precision = t.precision;
  // Halo SEND/RECVs along CONTEXT make its ranks peers, not mirrors: only data replicas are symmetric.
  w.symmetric_axes = {true, p.spatial == 1, true, true, false};
  w.groups.push_back({"spatial", Axis::CONTEXT, {}, {}});
  std::vector<Axis> data_extra;
  if (p.spatial > 1) data_extra.push_back(Axis::CONTEXT);
  w.groups.push_back({"data", Axis::DATA, {}, data_extra});
  w.programs.push_back({});
  core::Program& prog = w.programs.back();
  prog.name = "stage 0";
  Emitter em{w, prog, 0, 1};

  const std::vector<LocalLayerCost> costs = local_layer_costs(g, t, p);
  const size_t n = g.layers.size();
  const bool reduce = p.data * p.spatial > 1;
  const double bucket = p.bucket_elements();
  std::vector<uint32_t> gradient_collectives;
  uint32_t last = UINT32_MAX;  // the last compute (or collective the next compute waits for)
  double live = 0, peak = 0;
  double gradients = 0, gradients_at_peak = 0;  // gradient_buffers "per-step": allocated so far, and at the peak
  auto grow = [&](double bytes) {  // `bytes` more live: the peak, and the gradients live at it
    live += bytes;
    if (live > peak) {
      peak = live;
      gradients_at_peak = gradients;
    }
  };

  for (int mb = 0; mb < built.micro_batches; ++mb) {
    const auto umb = static_cast<uint32_t>(mb);
    std::vector<uint32_t> stored(n, UINT32_MAX);
    for (size_t i = 0; i < n; ++i) {
      const GraphLayer& l = g.layers[i];
      const LocalLayerCost& c = costs[i];
      const auto layer = static_cast<uint16_t>(std::min<size_t>(i, UINT16_MAX));
      std::vector<uint32_t> deps;
      if (last != UINT32_MAX) deps.push_back(last);
      if (c.halo_forward_bytes > 0) {
        for (uint32_t r : em.halo(c.halo_forward_bytes, core::Phase::FORWARD, layer, umb, last)) deps.push_back(r);
      }
      Task task = em.layer_task(core::Phase::FORWARD, l, layer, umb);
      task.bytes = c.bytes;
      if (l.op == GraphOp::ATTENTION) {
        // One task per op of the block, as a transformer layer's (accounting.hpp's layer_ops).
        for (const OpCost& op : attention_ops(l, t)) {
          Task o = task;
          o.name = w.intern(l.name + "." + op.name);
          o.op_class = op.op_class;
          o.flops = op.forward_flops.value();
          o.bytes = op.forward_bytes.value();
          o.gemm = op.gemm;
          last = prog.add(o, deps);
          deps = {last};
        }
      } else {
        task.flops = c.flops;
        task.gemm = c.gemm;
        last = prog.add(task, deps);
      }
      if (c.spatial_reduce_bytes > 0) {
        last = em.all_reduce(em.spatial_group, Stream::CONTEXT_COMM, c.spatial_reduce_bytes, core::Phase::FORWARD,
                             l.op == GraphOp::BATCH_NORM ? "bn_statistics" : "spatial_reduce", layer, umb, last);
      }
      if (c.stored_bytes > 0) {
        stored[i] = em.memory(c.stored_bytes, layer, umb, last);
        grow(c.stored_bytes);
      }
    }
    const bool last_mb = mb + 1 == built.micro_batches;
    double filled = 0;
    uint32_t bucket_end = UINT32_MAX;
    auto flush = [&](uint32_t after) {
      if (filled <= 0) return;
      gradient_collectives.push_back(
          em.all_reduce(em.data_group, Stream::DATA_COMM, filled * 4.0, core::Phase::BACKWARD, "gradient_bucket", 0, umb, after));
      filled = 0;
    };
    for (size_t k = n; k-- > 0;) {
      const GraphLayer& l = g.layers[k];
      const LocalLayerCost& c = costs[k];
      const auto layer = static_cast<uint16_t>(std::min<size_t>(k, UINT16_MAX));
      std::vector<uint32_t> deps = {last};
      if (c.halo_backward_bytes > 0) {
        for (uint32_t r : em.halo(c.halo_backward_bytes, core::Phase::BACKWARD, layer, umb, last)) deps.push_back(r);
      }
      Task task = em.layer_task(core::Phase::BACKWARD, l, layer, umb);
      if (l.op == GraphOp::ATTENTION) {
        const std::vector<OpCost> ops = attention_ops(l, t);
        for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
          Task o = task;
          o.name = w.intern(l.name + "." + op->name);
          o.op_class = op->op_class;
          o.flops = (op->backward_flops + op->backward_recompute_flops).value();
          o.bytes = op->backward_bytes.value();
          o.gemm = op->gemm;
          last = prog.add(o, deps);
          deps = {last};
        }
      } else {
        task.flops = 2 * c.flops;
        task.bytes = 2 * c.bytes;
        task.gemm = c.gemm;
        last = prog.add(task, deps);
      }
      if (l.op == GraphOp::BATCH_NORM && c.spatial_reduce_bytes > 0) {
        last = em.all_reduce(em.spatial_group, Stream::CONTEXT_COMM, c.spatial_reduce_bytes, core::Phase::BACKWARD,
                             "bn_statistics", layer, umb, last);
      }
      if (stored[k] != UINT32_MAX) {
        em.memory(-c.stored_bytes, layer, umb, last);
        live -= c.stored_bytes;
      }
      // gradient_buffers "per-step": the layer's gradients come into being with its first backward.
      if (p.gradients_per_step && mb == 0 && l.parameters > 0) {
        ParameterCount layer_params;
        layer_params.dense = l.parameters;
        const double bytes = model_state_memory(layer_params, t, p).gradients.value();
        em.memory(bytes, layer, umb, last, "gradients");
        gradients += bytes;
        grow(bytes);
      }
      if (last_mb && reduce && l.parameters > 0) {
        filled += l.parameters;
        bucket_end = last;
        if (p.overlap_grad_reduce && filled >= bucket) flush(last);
      }
    }
    if (last_mb && reduce) flush(p.overlap_grad_reduce ? bucket_end : last);
  }
  Task step;
  step.phase = core::Phase::OPTIMIZER;
  step.op_class = core::OpClass::OPTIMIZER;
  step.name = w.intern("optimizer");
  step.bytes = g.parameter_count() * optimizer_step_bytes_per_parameter(t.precision);
  std::vector<uint32_t> deps = gradient_collectives;
  deps.push_back(last);
  const uint32_t stepped = prog.add(step, deps);
  if (gradients > 0) em.memory(-gradients, 0, static_cast<uint32_t>(built.micro_batches - 1), stepped, "gradients");

  ParameterCount params;
  params.dense = g.parameter_count();
  MemoryBreakdown mem = model_state_memory(params, t, p);
  mem.activations = core::Bytes(peak);
  built.gradients_per_step = p.gradients_per_step;
  if (p.gradients_per_step) {
    mem.gradients = core::Bytes(gradients_at_peak);
    mem.activations = core::Bytes(peak - gradients_at_peak);
  }
  prog.static_memory = mem.weights + (p.gradients_per_step ? core::Bytes(0) : mem.gradients) + mem.optimizer_states;
  built.memory.push_back(mem);
  built.host_states.push_back({});
  built.nvme_states.push_back({});
  built.peak_without_offload.push_back(prog.static_memory + core::Bytes(peak));
  w.program_of_rank.assign(static_cast<size_t>(w.layout.world_size()), 0);
  w.validate();
  return built;
}

double estimate_layer_graph_task_count(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  // The tasks build_layer_graph_workload emits, counted from the per-layer costs (no workload built).
  const LayerGraph& g = *m.graph;
  const std::vector<LocalLayerCost> costs = local_layer_costs(g, t, p);
  double per_micro_batch = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const LocalLayerCost& c = costs[i];
    const double computes = g.layers[i].op == GraphOp::ATTENTION ? 2.0 * static_cast<double>(attention_ops(g.layers[i], t).size()) : 2.0;
    per_micro_batch += computes + (c.stored_bytes > 0 ? 2 : 0);
    if (c.halo_forward_bytes > 0) per_micro_batch += 8;
    if (c.spatial_reduce_bytes > 0) per_micro_batch += g.layers[i].op == GraphOp::BATCH_NORM ? 2 : 1;
  }
  const double micro_batches = static_cast<double>(t.global_batch / (t.micro_batch * p.data));
  const double buckets = p.data * p.spatial > 1 ? g.parameter_count() / p.bucket_elements() + 1 : 0.0;
  return micro_batches * per_micro_batch + buckets + 1;
}

}  // namespace trainsim::models

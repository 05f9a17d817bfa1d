#pragma once
// Hand-built workloads, clusters and profiles for the engine tests. Compute tasks are given in
// seconds: with unit_profile() (every efficiency 1, no kernel overhead) a task of t*peak FLOPs takes t.

#include <array>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "sim/core/device.hpp"
#include "sim/core/workload.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::engine::testing {

inline const core::GpuSpec& gpu() { return *core::find_gpu("A100-SXM4-80GB"); }

inline core::Profile unit_profile() {
  core::Profile p;
  for (core::OpEfficiency& e : p.device.ops) e = {1.0, 0.0, 1.0};
  p.device.kernel_overhead = core::Seconds(0);
  p.network.intra_node = {1.0, core::Seconds(0)};
  p.network.inter_node = {1.0, core::Seconds(0)};
  return p;
}

// A cluster of A100s with the given link bandwidths (per GPU) and latencies.
inline network::ClusterConfig make_cluster(int nodes, int gpus_per_node, double intra_bandwidth = 300e9,
                                           double nic_bandwidth = 25e9, double latency = 0) {
  network::ClusterConfig c;
  c.gpu_spec = gpu();
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.intra_node.bandwidth = core::BytesPerSecond(intra_bandwidth);
  c.intra_node.latency = core::Seconds(latency);
  c.network.nics_per_node = gpus_per_node;
  c.network.nic_bandwidth = core::BytesPerSecond(nic_bandwidth);
  c.network.latency = core::Seconds(latency);
  return c;
}

// Communication that costs (almost) nothing: 1e30 B/s, zero latency.
inline network::ClusterConfig free_network_cluster(int nodes, int gpus_per_node) {
  return make_cluster(nodes, gpus_per_node, 1e30, 1e30, 0);
}

inline core::Task compute(double seconds, core::Phase phase = core::Phase::FORWARD) {
  core::Task t;
  t.kind = core::TaskKind::COMPUTE;
  t.stream = core::Stream::COMPUTE;
  t.phase = phase;
  t.flops = seconds * gpu().peak(core::Precision::BF16).value();
  return t;
}

inline core::Task collective(core::CollectiveOp op, uint16_t group, double bytes, core::Stream stream) {
  core::Task t;
  t.kind = core::TaskKind::COLLECTIVE;
  t.collective = op;
  t.group = group;
  t.bytes = bytes;
  t.stream = stream;
  return t;
}

inline core::Task p2p(core::TaskKind kind, core::Axis axis, int offset, double bytes, core::Stream stream) {
  core::Task t;
  t.kind = kind;
  t.peer_axis = axis;
  t.peer_offset = static_cast<int16_t>(offset);
  t.bytes = bytes;
  t.stream = stream;
  return t;
}

inline core::Task memory(double bytes, core::Stream stream = core::Stream::COMPUTE) {
  core::Task t;
  t.kind = core::TaskKind::MEMORY;
  t.bytes = bytes;
  t.stream = stream;
  return t;
}

// A workload on the given layout whose ranks all run program `program_of_rank[r]`.
inline core::Workload make_workload(std::array<int, core::AXIS_COUNT> sizes, std::vector<core::Program> programs,
                                    std::vector<uint32_t> program_of_rank) {
  core::Workload w;
  w.layout = core::ParallelLayout(sizes);
  w.programs = std::move(programs);
  w.program_of_rank = std::move(program_of_rank);
  return w;
}

enum class Schedule { GPIPE, ONE_F_ONE_B };

// One program per pipeline stage (layout {1, 1, 1, 1, p}): m micro-batches of forward time t_f and
// backward time t_b, activations sent to the next stage on PIPELINE_FORWARD and gradients to the
// previous one on PIPELINE_BACKWARD, under GPipe (all forwards, then all backwards) or 1F1B
// (p - s - 1 warm-up forwards, then one forward one backward, then the remaining backwards;
// Narayanan et al. 2021, Fig. 4).
core::Workload pipeline_workload(int p, int m, double t_f, double t_b, Schedule schedule, double bytes = 1e6);

// A pipeline with exact pass times (Task::seconds), for hand-drawn timelines: per stage, per
// micro-batch a forward (receive activations, compute, allocate `activation_memory`, send) and a
// backward (receive gradients, compute, free, send), in `order` (program order). With `pool`, each
// stage's passes form a ready pool (workload.hpp, READY POOL; AxoNN's message-driven execution):
// each pass with its send is a block, the receives are loose; queues backward 0, forward 1; a
// forward opens a micro-batch and its backward closes it, at most limit[s] open on stage s.
struct PipelineSpec {
  int stages = 4;
  int micro_batches = 8;
  double forward_s = 1;
  double backward_s = 2;
  Schedule order = Schedule::ONE_F_ONE_B;
  bool pool = false;
  std::vector<int> limit;        // by stage; default p - s (1F1B's)
  double bytes = 0;              // payload of every transfer
  std::vector<std::vector<double>> activation_bytes;  // if given, [stage][mb]: the activations it sends
  double activation_memory = 0;
};
core::Workload timed_pipeline_workload(const PipelineSpec& spec);

// The compute stream of every rank on a result's timeline, one row per rank and one character per
// second: the forward of micro-batch k is the digit k, its backward the letter 'a' + k, '.' idle
// (the notation of tests/models/schedule_test.cpp). REQUIRES: every rank on the timeline.
std::vector<std::string> draw_passes(const core::Workload& w, const SimulationResult& r);

// Tensor x data x pipeline job: per micro-batch a forward (compute, tensor all_reduce, send to next
// stage), a backward (recv from next stage, compute, tensor all_reduce, send to previous stage), and
// per stage a data-parallel gradient all_reduce overlapped with the last backwards; memory
// allocations per micro-batch. Every stage runs a different amount of work.
core::Workload hybrid_workload(int tp, int dp, int pp, int micro_batches);

// Fully sharded data parallelism (ZeRO-3) with tensor and context parallelism: the parameters are
// sharded over the data x context group (group 2, spanning both axes, as FSDP shards them). Per
// layer a forward (all_gather of the layer's parameters over that group, prefetched on the data
// stream while the previous layer computes; compute; tensor all_reduce; context all_gather) and a
// backward (all_gather again; compute; tensor all_reduce; reduce_scatter of the gradients). The
// tensor all_reduces cross the NVLink ports that the sharded group's ring also uses.
core::Workload sharded_workload(int tp, int cp, int dp, int layers);

// Hybrid sharding (HSDP) over `data` ranks in shard groups of `shard` (core::AxisCut): group 0 is the
// shard group (a BLOCK of adjacent data ranks), group 1 the replica group (STRIDED). Per layer an
// all_gather of `bytes` over the shard group, a reduce_scatter of `bytes` over it, then an all_reduce
// of the rank's gradient shard (bytes / shard) across the replicas, all on DATA_COMM, one after the
// other. The data axis is not symmetric (Workload::validate).
core::Workload hybrid_sharded_workload(int data, int shard, int layers, double bytes);

}  // namespace trainsim::engine::testing

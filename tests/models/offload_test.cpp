// Offloading (models/offload.hpp): the bytes each offload target moves per iteration, summed over a
// built program's COPY tasks, against hand-derived counts (P the rank's parameters, m micro-batches,
// e = 2 bytes in bf16), and the memory split of the model states.

#include <gtest/gtest.h>

#include <array>

#include "models/offload.hpp"
#include "models/workload_builder.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

using core::CopyDirection;

// 4 layers of hidden 1024: small enough that every layer's ops, and their copies, are quick to build.
ModelSpec small_model() {
  ModelSpec m;
  m.name = "offload-test";
  m.layers = 4;
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden = 4096;
  m.vocab = 1000;
  return m;
}

TrainingConfig two_micro_batches() {
  TrainingConfig t;
  t.sequence_length = 512;
  t.global_batch = 4;
  t.micro_batch = 2;
  return t;
}

// Bytes of the program's copies, by direction.
std::array<double, core::COPY_DIRECTION_COUNT> moved(const BuiltWorkload& w, int program = 0) {
  std::array<double, core::COPY_DIRECTION_COUNT> out{};
  for (const core::Task& t : w.workload.programs[static_cast<size_t>(program)].tasks) {
    if (t.kind == core::TaskKind::COPY) out[static_cast<size_t>(t.copy)] += t.bytes;
  }
  return out;
}

double at(const std::array<double, core::COPY_DIRECTION_COUNT>& m, CopyDirection d) {
  return m[static_cast<size_t>(d)];
}

double parameters(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p) {
  return stage_parameters(m, t, p)[0].total();
}

TEST(Offload, ZeroOffloadMovesSixteenBitGradientsEveryMicroBatchAndParametersOnce) {
  const ModelSpec m = small_model();
  const TrainingConfig t = two_micro_batches();
  const ParallelismConfig p;
  const double P = parameters(m, t, p);
  const auto bytes = moved(build_workload(m, t, p, {}, offload_preset("zero-offload")));
  // Gradients out in 16 bits after each of the 2 micro-batches; the updated 16-bit weights back once.
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::DEVICE_TO_HOST), 2 * P * 2);
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::HOST_TO_DEVICE), P * 2);
  for (CopyDirection d : {CopyDirection::NVME_TO_DEVICE, CopyDirection::DEVICE_TO_NVME, CopyDirection::NVME_TO_HOST,
                          CopyDirection::HOST_TO_NVME}) {
    EXPECT_EQ(at(bytes, d), 0.0);
  }
}

TEST(Offload, CpuOptimizerWithGradientsOnTheGpuMovesFp32GradientsOnce) {
  // Megatron-core's --optimizer-cpu-offload: main gradients stay on the GPU until the step.
  const ModelSpec m = small_model();
  const TrainingConfig t = two_micro_batches();
  const ParallelismConfig p;
  OffloadConfig o;
  o.optimizer_states = o.master_weights = OffloadTarget::CPU;
  o.step_on_host = true;
  const double P = parameters(m, t, p);
  const auto bytes = moved(build_workload(m, t, p, {}, o));
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::DEVICE_TO_HOST), P * 4);
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::HOST_TO_DEVICE), P * 2);
}

TEST(Offload, AxonnScratchPadStreamsMasterWeightsAndMomentsBothWays) {
  const ModelSpec m = small_model();
  const TrainingConfig t = two_micro_batches();
  const ParallelismConfig p;
  const double P = parameters(m, t, p);
  const BuiltWorkload w = build_workload(m, t, p, {}, offload_preset("axonn"));
  const auto bytes = moved(w);
  // fp32 master (4) + Adam m and v (8) in and out once per iteration, for the GPU step.
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::HOST_TO_DEVICE), P * 12);
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::DEVICE_TO_HOST), P * 12);
  // Not overlapped: one chunk of bucket_size / 4 parameters of states resident on the GPU.
  EXPECT_DOUBLE_EQ(w.memory[0].buffers.value(), std::min(P, p.bucket_elements()) * 12);
}

TEST(Offload, ActivationsGoOutAfterForwardAndBackBeforeBackwardExceptEachChunksLastLayer) {
  const ModelSpec m = small_model();
  const TrainingConfig t = two_micro_batches();
  ParallelismConfig p;
  OffloadConfig o;
  o.activations = OffloadTarget::CPU;
  const double stored = activation_bytes_per_layer(m, t, p).value();
  const BuiltWorkload w = build_workload(m, t, p, {}, o);
  const auto bytes = moved(w);
  // 2 micro-batches x 3 of the 4 layers, each way.
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::DEVICE_TO_HOST), 2 * 3 * stored);
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::HOST_TO_DEVICE), 2 * 3 * stored);
  // The GPU's issue-order peak drops below the one without offloading, which the builder reports.
  EXPECT_LT(w.memory[0].activations.value(), w.peak_without_offload[0].value() - w.memory[0].weights.value() -
                                                 w.memory[0].gradients.value() - w.memory[0].optimizer_states.value());
  // Pipeline of 2 stages (two layers per chunk): only the first layer of each stage goes out.
  p.pipeline = 2;
  TrainingConfig t4 = t;
  t4.global_batch = 8;
  const auto staged = moved(build_workload(m, t4, p, {}, o));
  EXPECT_DOUBLE_EQ(at(staged, CopyDirection::DEVICE_TO_HOST), 4 * 1 * stored);
}

TEST(Offload, ZeroInfinityFetchesShardsFromNvmeAndSwapsStatesThroughTheHost) {
  const ModelSpec m = small_model();
  const TrainingConfig t = two_micro_batches();
  ParallelismConfig p;
  p.data = 2;
  p.zero_stage = 3;
  p.zero_impl = ZeroImpl::DEEPSPEED;
  TrainingConfig t2 = t;
  t2.global_batch = 8;  // 2 micro-batches per replica
  const double P = parameters(m, t2, p);
  const double shard = P / 2;
  const auto bytes = moved(build_workload(m, t2, p, {}, offload_preset("zero-infinity")));
  // Every unit's shard fetched before its forward and its backward (DeepSpeed regathers the root's
  // units too), in both micro-batches, 16-bit.
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::NVME_TO_DEVICE), 2 * 2 * shard * 2);
  // The rank's share of every reduce-scatter, 16-bit, in both micro-batches.
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::DEVICE_TO_NVME), 2 * shard * 2);
  // The step reads moments (8), master (4) and fp32 gradients (4), writes moments and master back
  // and the updated 16-bit shard.
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::NVME_TO_HOST), shard * 16);
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::HOST_TO_NVME), shard * (12 + 2));
  EXPECT_EQ(at(bytes, CopyDirection::HOST_TO_DEVICE), 0.0);
  EXPECT_EQ(at(bytes, CopyDirection::DEVICE_TO_HOST), 0.0);
}

TEST(Offload, ParametersInHostMemoryWithoutReplicasAreFetchedWhole) {
  // ZeRO-3 on one GPU (ZeRO-3 Offload's single-GPU case): nothing to gather, every unit copied in.
  const ModelSpec m = small_model();
  const TrainingConfig t = two_micro_batches();
  ParallelismConfig p;
  p.zero_stage = 3;
  p.zero_impl = ZeroImpl::DEEPSPEED;
  OffloadConfig o = offload_preset("zero-offload");
  o.parameters = OffloadTarget::CPU;
  const double P = parameters(m, t, p);
  const BuiltWorkload w = build_workload(m, t, p, {}, o);
  const auto bytes = moved(w);
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::HOST_TO_DEVICE), 2 * 2 * P * 2);  // no upload: the step writes them in place
  EXPECT_DOUBLE_EQ(at(bytes, CopyDirection::DEVICE_TO_HOST), 2 * P * 2);
  EXPECT_EQ(w.memory[0].weights.value(), 0.0);
  EXPECT_GT(w.memory[0].buffers.value(), 0.0);  // the fetched units
}

TEST(Offload, StateSplitMovesTheOffloadedBytesToTheHostOrNvme) {
  ParameterCount local;
  local.dense = 1e9;
  TrainingConfig t;
  t.precision = core::Precision::BF16;
  ParallelismConfig p;
  const StateSplit none = split_model_states(local, t, p, OffloadConfig{});
  EXPECT_DOUBLE_EQ(none.gpu.total().value(), 18e9);  // 2 + 4 + 12 bytes per parameter
  EXPECT_DOUBLE_EQ(none.host.total().value(), 0.0);

  const StateSplit zo = split_model_states(local, t, p, offload_preset("zero-offload"));
  EXPECT_DOUBLE_EQ(zo.gpu.weights.value(), 2e9);
  EXPECT_DOUBLE_EQ(zo.gpu.gradients.value(), p.bucket_elements() * 2);  // a 16-bit staging bucket
  EXPECT_DOUBLE_EQ(zo.gpu.optimizer_states.value(), 0.0);
  EXPECT_DOUBLE_EQ(zo.host.optimizer_states.value(), 8e9);
  EXPECT_DOUBLE_EQ(zo.host.master_weights.value(), 4e9);
  EXPECT_DOUBLE_EQ(zo.host.gradients.value(), 4e9);

  // ZeRO-3 over 4 replicas with ZeRO-Infinity: the shard's 18 bytes per parameter on NVMe.
  p.data = 4;
  p.zero_stage = 3;
  const StateSplit zi = split_model_states(local, t, p, offload_preset("zero-infinity"));
  EXPECT_DOUBLE_EQ(zi.nvme.total().value(), 1e9 / 4 * (8 + 4 + 4 + 2));
  EXPECT_DOUBLE_EQ(zi.host.total().value(), 0.0);
  EXPECT_DOUBLE_EQ(zi.gpu.weights.value(), 0.0);

  // fp32 training has no master copy.
  t.precision = core::Precision::FP32;
  p = ParallelismConfig{};
  const StateSplit fp32 = split_model_states(local, t, p, offload_preset("zero-offload"));
  EXPECT_DOUBLE_EQ(fp32.host.master_weights.value(), 0.0);
  EXPECT_DOUBLE_EQ(fp32.gpu.optimizer_states.value(), 0.0);
}

TEST(Offload, PresetsReadBackAndKeysOverrideThem) {
  for (const std::string& name : OffloadConfig::presets()) {
    const OffloadConfig o = offload_preset(name);
    core::Diagnostics diag;
    const core::Json j = o.to_json();
    core::ObjectReader r(j, "t.json", "/optimizations/offload", diag);
    EXPECT_EQ(OffloadConfig::from_json(r).to_json(), j) << name;
    EXPECT_TRUE(diag.empty()) << name;
  }
  core::Diagnostics diag;
  const core::Json j = {{"preset", "zero-offload"}, {"activations", "cpu"}, {"overlap", false}};
  core::ObjectReader r(j, "t.json", "/optimizations/offload", diag);
  const OffloadConfig o = OffloadConfig::from_json(r);
  EXPECT_EQ(o.optimizer_states, OffloadTarget::CPU);
  EXPECT_EQ(o.activations, OffloadTarget::CPU);
  EXPECT_FALSE(o.overlap);
  EXPECT_TRUE(o.step_on_host);
  // The master weights follow the optimizer states; the step goes to the host with them.
  const core::Json k = {{"optimizer_states", "cpu"}};
  core::ObjectReader rk(k, "t.json", "/optimizations/offload", diag);
  const OffloadConfig states = OffloadConfig::from_json(rk);
  EXPECT_EQ(states.master_weights, OffloadTarget::CPU);
  EXPECT_TRUE(states.step_on_host);
  EXPECT_TRUE(diag.empty());
}

TEST(Offload, ImpossibleCombinationsAreNamed) {
  ParallelismConfig p;
  core::Diagnostics diag;
  check_offload(offload_preset("zero-infinity"), p, false, "s.json", diag);
  // nvme without cluster.nvme (4 keys) and parameters without ZeRO-3.
  ASSERT_EQ(diag.problems().size(), 5u);
  EXPECT_EQ(diag.problems()[0].pointer, "/optimizations/offload/parameters");
  EXPECT_NE(diag.problems()[0].message.find("zero_stage 3"), std::string::npos);
  EXPECT_NE(diag.problems()[1].message.find("cluster.nvme"), std::string::npos);

  core::Diagnostics step;
  OffloadConfig o;
  o.step_on_host = true;  // with the states on the GPU
  check_offload(o, p, true, "s.json", step);
  ASSERT_EQ(step.problems().size(), 1u);
  EXPECT_EQ(step.problems()[0].pointer, "/optimizations/offload/optimizer_step");
}

}  // namespace
}  // namespace trainsim::models

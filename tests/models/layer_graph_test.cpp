// Layer-graph models (models/layer_graph.hpp): per-layer FLOPs, activations, halos and parameters
// against hand-computed oracles, the catalog against published parameter counts, the workload's
// halo SEND/RECVs and the bad-input rules.
#include <gtest/gtest.h>

#include "models/layer_graph.hpp"
#include "models/model_spec.hpp"
#include "models/workload_builder.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

using core::Json;

// A 3D conv 4 -> 16 channels, kernel 3, stride 1, padding 1 on 8^3 voxels, then a dense head.
Json small_3d(Json extra_conv = Json::object()) {
  Json conv = {{"type", "conv"}, {"name", "c1"}, {"out_channels", 16}, {"kernel", 3}, {"padding", 1}};
  conv.update(extra_conv);
  return {{"family", "layer_graph"},
          {"input", {{"channels", 4}, {"dims", {8, 8, 8}}}},
          {"layers", {conv, {{"type", "dense"}, {"name", "fc"}, {"out_features", 10}}}}};
}

std::shared_ptr<const LayerGraph> read(const Json& j, core::Diagnostics& diag) {
  return read_layer_graph(j, "f.json", "/model", diag);
}

TEST(LayerGraph, ConvFlopsParametersAndShape) {
  core::Diagnostics diag;
  auto g = read(small_3d(), diag);
  ASSERT_TRUE(diag.empty());
  const GraphLayer& c = g->layers[0];
  EXPECT_EQ(to_string(c.out), "16x8x8x8");
  // 2·K^d·Cin·Cout·out voxels = 2·27·4·16·512.
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 27 * 4 * 16 * 512);
  // K^d·Cin·Cout + Cout (bias).
  EXPECT_DOUBLE_EQ(c.parameters, 27.0 * 4 * 16 + 16);
  // Implicit GEMM: m = output voxels, n = Cout, k = Cin·K^d.
  EXPECT_FLOAT_EQ(c.gemm.m, 512);
  EXPECT_FLOAT_EQ(c.gemm.n, 16);
  EXPECT_FLOAT_EQ(c.gemm.k, 108);
  // Dense flattens 16·512 = 8192 features: 2·8192·10 FLOPs, 8192·10 + 10 parameters.
  EXPECT_DOUBLE_EQ(g->layers[1].flops, 2.0 * 8192 * 10);
  EXPECT_DOUBLE_EQ(g->layers[1].parameters, 8192.0 * 10 + 10);
}

TEST(LayerGraph, StridedConvOutputShape) {
  core::Diagnostics diag;
  auto g = read(small_3d({{"stride", 2}}), diag);
  ASSERT_TRUE(diag.empty());
  // (8 + 2·1 − 3) / 2 + 1 = 4.
  EXPECT_EQ(to_string(g->layers[0].out), "16x4x4x4");
  EXPECT_EQ(g->layers[0].halo, 1);  // ceil((3 − 2) / 2)
}

TEST(LayerGraph, LocalCostsActivationAndHaloBytes) {
  core::Diagnostics diag;
  auto g = read(small_3d(), diag);
  TrainingConfig t;
  t.global_batch = 4;
  t.micro_batch = 2;
  t.precision = core::Precision::BF16;
  ParallelismConfig p;
  p.spatial = 2;
  p.data = 2;
  const std::vector<LocalLayerCost> c = local_layer_costs(*g, t, p);
  // Stored activations: the conv's output 16·8³ elements x 2 samples x 2 bytes, half of it per rank.
  EXPECT_DOUBLE_EQ(c[0].stored_bytes, 16.0 * 512 * 2 * 2 / 2);
  // Halo of 1 plane: forward Cin·8·8 elements, backward Cout·8·8, x 2 samples x 2 bytes.
  EXPECT_DOUBLE_EQ(c[0].halo_forward_bytes, 1.0 * 4 * 64 * 2 * 2);
  EXPECT_DOUBLE_EQ(c[0].halo_backward_bytes, 1.0 * 16 * 64 * 2 * 2);
  EXPECT_DOUBLE_EQ(c[0].flops, 2.0 * 27 * 4 * 16 * 512 * 2 / 2);
  // The dense layer consumes the split: half its FLOPs, then an all-reduce of b·out elements.
  EXPECT_DOUBLE_EQ(c[1].flops, 2.0 * 8192 * 10 * 2 / 2);
  EXPECT_DOUBLE_EQ(c[1].spatial_reduce_bytes, 10.0 * 2 * 2);
}

TEST(LayerGraph, WorkloadHasHaloSendRecvAndBackwardTwiceForward) {
  ModelSpec m = ModelSpec::from_json(small_3d(), "f.json", "/model", *std::make_unique<core::Diagnostics>());
  ASSERT_TRUE(m.is_layer_graph());
  TrainingConfig t;
  t.global_batch = 4;
  t.micro_batch = 2;
  ParallelismConfig p;
  p.spatial = 2;
  p.data = 2;
  core::Diagnostics diag;
  check_strategy(m, t, p, 4, "f.json", diag);
  ASSERT_TRUE(diag.empty()) << diag.problems().front().message;
  const BuiltWorkload b = build_workload(m, t, p);
  EXPECT_EQ(b.workload.layout.world_size(), 4);
  EXPECT_EQ(b.workload.layout.size(core::Axis::CONTEXT), 2);
  int sends = 0, recvs = 0;
  double forward = 0, backward = 0;
  for (const core::Task& task : b.workload.programs[0].tasks) {
    if (task.kind == core::TaskKind::SEND) ++sends;
    if (task.kind == core::TaskKind::RECV) ++recvs;
    if (task.kind == core::TaskKind::COMPUTE && task.layer == 0 && task.phase == core::Phase::FORWARD) forward += task.flops;
    if (task.kind == core::TaskKind::COMPUTE && task.layer == 0 && task.phase == core::Phase::BACKWARD) backward += task.flops;
  }
  // One micro-batch per replica (4 / (2 x 2)); the conv exchanges with both neighbours each way.
  EXPECT_EQ(sends, 4);
  EXPECT_EQ(recvs, 4);
  EXPECT_DOUBLE_EQ(backward, 2 * forward);
  // Model FLOPs: 3 x forward (conv + dense) x global batch.
  EXPECT_DOUBLE_EQ(b.flops.model.value(), 3.0 * (2.0 * 27 * 4 * 16 * 512 + 2.0 * 8192 * 10) * 4);
}

TEST(LayerGraph, CatalogParameterCountsAsPublished) {
  // torchvision's resnet50 (v1 and v1.5 have the same parameters): 25,557,032 (He et al.: 25.6M).
  EXPECT_DOUBLE_EQ(find_layer_graph("resnet50")->parameter_count(), 25557032);
  // VGG-16 configuration D: 138,357,544 (Simonyan & Zisserman: 138M).
  EXPECT_DOUBLE_EQ(find_layer_graph("vgg16")->parameter_count(), 138357544);
  // ViT-B/16 with a 1000-class head: 12 x 7,087,872 + patch 590,592 + class 768 + positions 197·768
  // + final norm 1536 + head 769,000 = 86,567,656 (Dosovitskiy et al.: 86M).
  EXPECT_DOUBLE_EQ(find_layer_graph("vit-b16")->parameter_count(), 86567656);
}

TEST(LayerGraph, ResNet50MultiplyAdds) {
  // He et al. 2016 Table 1: 3.8e9 FLOPs (multiply-adds) for v1; v1.5 (stride on the 3x3) is ~4.1e9.
  const double macs = find_layer_graph("resnet50")->multiply_adds_per_sample();
  EXPECT_GT(macs, 3.8e9);
  EXPECT_LT(macs, 4.2e9);
  const auto& layers = find_layer_graph("resnet50")->layers;
  EXPECT_EQ(to_string(layers.back().in), "2048");  // after the global average pool
}

TEST(LayerGraph, CosmoFlowShapes) {
  auto g = find_layer_graph("cosmoflow-512");
  // 512 -> 7 conv/pool levels (one strided conv) -> 256 x 2^3 = 2048 features into the first dense layer.
  for (const GraphLayer& l : g->layers) {
    if (l.op == GraphOp::DENSE) {
      EXPECT_EQ(to_string(l.in), "256x2x2x2");
      break;
    }
  }
  // conv1: 2·27·4·16·512³.
  EXPECT_DOUBLE_EQ(g->layers[0].flops, 2.0 * 27 * 4 * 16 * 512.0 * 512 * 512);
}

TEST(LayerGraph, VitAttentionBlockIsATransformerLayer) {
  ModelSpec m;
  core::Diagnostics diag;
  m = ModelSpec::from_json(Json("vit-b16"), "f.json", "/model", diag);
  ASSERT_TRUE(m.is_layer_graph());
  TrainingConfig t;
  t.global_batch = 1;
  t.micro_batch = 1;
  ParallelismConfig p;
  const BuiltWorkload b = build_workload(m, t, p);
  // The first encoder block (layer 2) as the ops of a transformer layer: their forward FLOPs are
  // the block's matmuls 2·n·(4h² + 2h·mlp) + 4·n²·h with n = 197, h = 768, mlp = 3072
  // (= 2,907,909,120) plus the norms' and activations' elementwise work (under 1%).
  double forward = 0;
  int tasks = 0;
  for (const core::Task& task : b.workload.programs[0].tasks) {
    if (task.kind == core::TaskKind::COMPUTE && task.layer == 2 && task.phase == core::Phase::FORWARD) {
      forward += task.flops;
      ++tasks;
    }
  }
  EXPECT_GT(tasks, 4);
  EXPECT_GE(forward, 2907909120.0);
  EXPECT_LT(forward, 1.01 * 2907909120.0);
}

std::string first_problem(const core::Diagnostics& d) { return d.empty() ? "" : d.problems().front().message; }

TEST(LayerGraph, MismatchedShapesNameTheLayer) {
  core::Diagnostics diag;
  read(small_3d({{"in_channels", 3}}), diag);
  EXPECT_NE(first_problem(diag).find("layer 'c1' expects 3 in_channels"), std::string::npos) << first_problem(diag);

  core::Diagnostics d2;
  Json residual = {{"family", "layer_graph"},
                   {"input", {{"channels", 4}, {"dims", {8, 8}}}},
                   {"layers", {{{"type", "residual"}, {"name", "b1"},
                                {"body", {{{"type", "conv"}, {"out_channels", 8}, {"kernel", 3}, {"padding", 1}}}}}}}};
  read(residual, d2);
  EXPECT_NE(first_problem(d2).find("residual 'b1': its body gives 8x8x8 but its shortcut gives 4x8x8"),
            std::string::npos)
      << first_problem(d2);
}

// MAX_GRAPH_LAYERS counts every entry, residual bodies and shortcuts included, before any layer is
// read (issue 34: a graph of 2 million layers ran for minutes).
TEST(LayerGraph, LayerCountAboveTheBudgetIsRefusedWithItsCount) {
  auto graph = [](size_t top, size_t body, size_t shortcut) {
    Json layers = Json::array();
    for (size_t i = 0; i < top; ++i) layers.push_back({{"type", "relu"}});
    Json residual = {{"type", "residual"}, {"body", Json::array()}, {"shortcut", Json::array()}};
    for (size_t i = 0; i < body; ++i) residual["body"].push_back({{"type", "relu"}});
    for (size_t i = 0; i < shortcut; ++i) residual["shortcut"].push_back({{"type", "relu"}});
    layers.push_back(residual);
    return Json{{"family", "layer_graph"}, {"input", {{"channels", 4}, {"dims", {8, 8}}}}, {"layers", layers}};
  };
  core::Diagnostics over;
  const auto g = read(graph(60'000, 30'000, MAX_GRAPH_LAYERS - 90'000), over);  // 1 + the budget
  ASSERT_EQ(over.problems().size(), 1u);
  EXPECT_EQ(over.problems().front().pointer, "/model/layers");
  EXPECT_NE(first_problem(over).find("expected at most 100000 layers (counting residual bodies and shortcuts"),
            std::string::npos)
      << first_problem(over);
  EXPECT_NE(first_problem(over).find("found 100001"), std::string::npos) << first_problem(over);
  EXPECT_TRUE(g->layers.empty());  // nothing was read

  core::Diagnostics at;
  read(graph(60'000, 30'000, MAX_GRAPH_LAYERS - 90'001), at);  // the budget exactly
  EXPECT_TRUE(at.empty()) << first_problem(at);
}

TEST(LayerGraph, SpatialSplitRules) {
  core::Diagnostics d0;
  auto g = read(small_3d(), d0);
  TrainingConfig t;
  t.global_batch = 16;
  t.micro_batch = 1;
  ParallelismConfig p;
  p.spatial = 16;
  core::Diagnostics d1;
  check_layer_graph_strategy(*g, t, p, 16, "f.json", d1);
  EXPECT_NE(first_problem(d1).find("layer 'c1' (conv): spatial split 16 is larger than its input's first spatial "
                                   "dimension 8"),
            std::string::npos)
      << first_problem(d1);
  // kernel 7: halo 3 planes, wider than the 2-plane block of 8 / 4.
  auto wide = read(small_3d({{"kernel", 7}, {"padding", 3}}), d0);
  p.spatial = 4;
  core::Diagnostics d2;
  check_layer_graph_strategy(*wide, t, p, 4, "f.json", d2);
  EXPECT_NE(first_problem(d2).find("layer 'c1' (conv, kernel 7 stride 1): its halo of 3 planes is wider than the local "
                                   "block of 2 planes"),
            std::string::npos)
      << first_problem(d2);
  // A transformer cannot take a spatial split.
  core::Diagnostics d3;
  check_strategy(*find_model("gpt3-175b"), t, p, 4, "f.json", d3);
  EXPECT_FALSE(d3.empty());
}

}  // namespace
}  // namespace trainsim::models

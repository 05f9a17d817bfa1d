#include "models/layer_graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/accounting.hpp"

namespace trainsim::models {

std::string to_string(GraphOp op) {
  static const char* const names[] = {"conv", "pool", "global_pool", "batch_norm", "layer_norm",
                                      "relu", "dense", "sequence", "attention", "add"};
  return names[static_cast<size_t>(op)];
}

double ActivationShape::voxels() const {
  double v = 1;
  for (int64_t d : dims) v *= static_cast<double>(d);
  return v;
}

std::string to_string(const ActivationShape& s) {
  return s.dims.empty() ? fmt::format("{}", s.channels) : fmt::format("{}x{}", s.channels, fmt::join(s.dims, "x"));
}

double LayerGraph::parameter_count() const {
  double n = 0;
  for (const GraphLayer& l : layers) n += l.parameters;
  return n;
}

double LayerGraph::forward_flops_per_sample() const {
  double n = 0;
  for (const GraphLayer& l : layers) n += l.flops;
  return n;
}

double LayerGraph::model_flops_per_sample() const {
  double n = 0;
  for (const GraphLayer& l : layers) n += l.model_flops;
  return 3 * n;
}

double LayerGraph::multiply_adds_per_sample() const {
  double n = 0;
  for (const GraphLayer& l : layers) n += l.model_flops / 2;
  return n;
}

namespace {

constexpr int64_t MAX_SIZE = 1 << 24;
// Measured on a conv + ReLU graph of 80,000 layers (2 cores, Release): `run --backend analytic` of one
// micro-batch takes 6 us and 2 KB per layer (0.49 s, 160 MB).
constexpr double SECONDS_PER_LAYER = 6e-6;
constexpr double BYTES_PER_LAYER = 2e3;

struct GraphReader {
  const std::string& file;
  core::Diagnostics& diag;
  std::vector<GraphLayer>& out;
  std::map<std::string, int> counters;

  std::string default_name(const std::string& type) { return type + std::to_string(++counters[type]); }

  void problem(const std::string& pointer, const std::string& message) { diag.add(file, pointer, message); }

  // Reads `layers` (an array) starting from `shape`; returns the output shape (channels 0 on error).
  ActivationShape read_list(const core::Json& layers, const std::string& pointer, ActivationShape shape,
                            const std::string& prefix) {
    if (!layers.is_array() || layers.empty()) {
      problem(pointer, fmt::format("expected a non-empty array of layers, found {}", core::describe_json(layers)));
      return {};
    }
    for (size_t i = 0; i < layers.size(); ++i) {
      if (shape.channels <= 0) return {};
      shape = read_layer(layers[i], core::append_pointer(pointer, i), shape, prefix);
    }
    return shape;
  }

  ActivationShape read_layer(const core::Json& v, const std::string& pointer, const ActivationShape& in,
                             const std::string& prefix) {
    if (!v.is_object()) {
      problem(pointer, fmt::format("expected a layer object with a \"type\", found {}", core::describe_json(v)));
      return {};
    }
    core::ObjectReader r(v, file, pointer, diag);
    const std::string type =
        r.choice("type", "conv", {"conv", "pool", "global_pool", "batch_norm", "layer_norm", "relu", "dense",
                                  "sequence", "attention", "residual"});
    if (!r.has("type")) r.problem("type", "missing required layer type");
    std::string name = r.string("name", "");
    if (name.empty()) name = default_name(type == "residual" ? "block" : type);
    name = prefix + name;
    GraphLayer l;
    l.name = name;
    l.pointer = pointer;
    l.in = in;
    const double e_in = in.elements();
    const int d = static_cast<int>(in.dims.size());
    auto windowed = [&](int64_t out_channels) {
      l.kernel = r.integer("kernel", 1, 1, 1024);
      l.stride = r.integer("stride", 1, 1, 1024);
      l.padding = r.integer("padding", 0, 0, 1024);
      if (d == 0) {
        r.problem("type", fmt::format("layer '{}' ({}) needs an input with spatial dims, found {}", name, type,
                                      to_string(in)));
        return false;
      }
      l.out.channels = out_channels;
      for (int64_t dim : in.dims) {
        const int64_t span = dim + 2 * l.padding - l.kernel;
        if (span < 0) {
          r.problem("kernel", fmt::format("layer '{}': kernel {} is wider than its padded input ({} + 2x{}) of shape {}",
                                          name, l.kernel, dim, l.padding, to_string(in)));
          return false;
        }
        l.out.dims.push_back(span / l.stride + 1);
      }
      l.halo = l.kernel > l.stride ? (l.kernel - l.stride + 1) / 2 : 0;
      return true;
    };
    auto check_in = [&](const char* key, int64_t given_from) {
      if (!r.has(key)) return;
      const int64_t given = r.integer(key, 0, 1, INT64_MAX);
      if (given != given_from) {
        r.problem(key, fmt::format("layer '{}' expects {} {}, but its input {} gives {} (shapes do not match)", name,
                                   given, key, to_string(in), given_from));
      }
    };
    if (type == "conv") {
      check_in("in_channels", in.channels);
      const int64_t cout = r.integer("out_channels", 0, 1, MAX_SIZE);
      if (!r.has("out_channels")) r.problem("out_channels", "missing required out_channels");
      const bool bias = r.boolean("bias", true);
      l.op = GraphOp::CONV;
      if (!windowed(cout)) return finish(r, {});
      const double kd = std::pow(static_cast<double>(l.kernel), d);
      const double macs = kd * static_cast<double>(in.channels) * static_cast<double>(cout) * l.out.voxels();
      l.flops = 2 * macs;
      l.model_flops = l.flops;
      l.parameters = kd * static_cast<double>(in.channels) * static_cast<double>(cout) + (bias ? static_cast<double>(cout) : 0.0);
      l.gemm = {static_cast<float>(l.out.voxels()), static_cast<float>(cout),
                static_cast<float>(kd * static_cast<double>(in.channels)), 1};
    } else if (type == "pool") {
      r.choice("mode", "max", {"max", "avg"});
      l.op = GraphOp::POOL;
      if (!windowed(in.channels)) return finish(r, {});
      l.flops = std::pow(static_cast<double>(l.kernel), d) * l.out.elements();
    } else if (type == "global_pool") {
      const std::string mode = r.choice("mode", "avg", {"avg", "token"});
      l.op = GraphOp::GLOBAL_POOL;
      if (d == 0) r.problem("type", fmt::format("layer '{}' (global_pool) needs spatial dims, found {}", name, to_string(in)));
      l.out = {in.channels, {}};
      l.flops = mode == "avg" ? e_in : 0.0;
    } else if (type == "batch_norm" || type == "layer_norm") {
      l.op = type == "batch_norm" ? GraphOp::BATCH_NORM : GraphOp::LAYER_NORM;
      l.out = in;
      l.flops = 5 * e_in;
      l.parameters = 2 * static_cast<double>(in.channels);
    } else if (type == "relu") {
      l.op = GraphOp::RELU;
      l.out = in;
      l.flops = e_in;
    } else if (type == "dense") {
      check_in("in_features", static_cast<int64_t>(e_in));
      const int64_t features = r.integer("out_features", 0, 1, MAX_SIZE);
      if (!r.has("out_features")) r.problem("out_features", "missing required out_features");
      const bool bias = r.boolean("bias", true);
      l.op = GraphOp::DENSE;
      l.out = {features, {}};
      l.flops = 2 * e_in * static_cast<double>(features);
      l.model_flops = l.flops;
      l.parameters = e_in * static_cast<double>(features) + (bias ? static_cast<double>(features) : 0.0);
      l.gemm = {1, static_cast<float>(features), static_cast<float>(e_in), 1};
    } else if (type == "sequence") {
      const bool cls = r.boolean("class_token", false);
      const bool positions = r.boolean("position_embedding", true);
      l.op = GraphOp::SEQUENCE;
      const int64_t tokens = static_cast<int64_t>(in.voxels()) + (cls ? 1 : 0);
      l.out = {in.channels, {tokens}};
      const double h = static_cast<double>(in.channels);
      l.parameters = (cls ? h : 0.0) + (positions ? static_cast<double>(tokens) * h : 0.0);
      l.flops = l.out.elements();
    } else if (type == "attention") {
      l.op = GraphOp::ATTENTION;
      l.heads = static_cast<int>(r.integer("heads", 0, 1, 4096));
      if (!r.has("heads")) r.problem("heads", "missing required heads");
      l.mlp = r.integer("mlp", 4 * in.channels, 1, MAX_SIZE);
      if (d != 1) {
        r.problem("type", fmt::format("layer '{}' (attention) needs a token sequence (one dim: add a \"sequence\" "
                                      "layer before it), found {}",
                                      name, to_string(in)));
        return finish(r, {});
      }
      if (l.heads > 0 && in.channels % l.heads != 0) {
        r.problem("heads", fmt::format("layer '{}': heads {} must divide its width {}", name, l.heads, in.channels));
      }
      const double h = static_cast<double>(in.channels), n = in.voxels(), mlp = static_cast<double>(l.mlp);
      l.out = in;
      l.gemm = {static_cast<float>(n), static_cast<float>(4 * h + 2 * mlp), static_cast<float>(h), 1};
      l.attention_core_flops = 4 * n * n * h;
      l.flops = 2 * n * (4 * h * h + 2 * h * mlp) + l.attention_core_flops + 10 * n * h;  // + norms, residuals
      l.model_flops = 2 * n * (4 * h * h + 2 * h * mlp) + l.attention_core_flops;
      l.parameters = 4 * h * h + 4 * h + 2 * h * mlp + mlp + h + 4 * h;
      l.stored_elements = 17 * n * h + 2.5 * l.heads * n * n;
    } else {  // residual
      const core::Json* body = r.raw("body");
      if (!body) {
        r.problem("body", "missing required body (an array of layers)");
        return finish(r, {});
      }
      const ActivationShape body_out = read_list(*body, r.pointer_of("body"), in, name + ".");
      ActivationShape shortcut_out = in;
      if (const core::Json* shortcut = r.raw("shortcut")) {
        shortcut_out = read_list(*shortcut, r.pointer_of("shortcut"), in, name + ".shortcut.");
      }
      if (body_out.channels <= 0 || shortcut_out.channels <= 0) return finish(r, {});
      if (!(body_out == shortcut_out)) {
        r.problem("body", fmt::format("residual '{}': its body gives {} but its shortcut gives {} (shapes do not match)",
                                      name, to_string(body_out), to_string(shortcut_out)));
        return finish(r, {});
      }
      GraphLayer add;
      add.op = GraphOp::ADD;
      add.name = name + ".add";
      add.pointer = pointer;
      add.in = body_out;
      add.out = body_out;
      add.flops = body_out.elements();
      add.stored_elements = body_out.elements();
      out.push_back(add);
      return finish(r, body_out);
    }
    if (l.stored_elements == 0) l.stored_elements = l.out.elements();
    out.push_back(l);
    return finish(r, l.out);
  }

  ActivationShape finish(core::ObjectReader& r, ActivationShape s) {
    r.finish({"type"});
    return s;
  }
};

// The entries of a `layers` array and of its residuals' `body` and `shortcut` (the JSON depth limit
// bounds the recursion).
size_t count_layers(const core::Json& layers) {
  if (!layers.is_array()) return 0;
  size_t n = layers.size();
  for (const core::Json& l : layers) {
    if (!l.is_object()) continue;
    for (const char* nested : {"body", "shortcut"}) {
      if (auto it = l.find(nested); it != l.end()) n += count_layers(*it);
    }
  }
  return n;
}

}  // namespace

std::shared_ptr<const LayerGraph> read_layer_graph(const core::Json& value, const std::string& file,
                                                   const std::string& pointer, core::Diagnostics& diag) {
  auto g = std::make_shared<LayerGraph>();
  core::ObjectReader r(value, file, pointer, diag);
  r.choice("family", "layer_graph", {"layer_graph"});
  g->name = r.string("name", "custom");
  g->source = r.string("source", "");
  const size_t before = diag.problems().size();
  if (auto in = r.object("input")) {
    g->input.channels = in->integer("channels", 0, 1, MAX_SIZE);
    if (!in->has("channels")) in->problem("channels", "missing required channels");
    g->input.dims = in->integer_array("dims", 1, MAX_SIZE);
    if (g->input.dims.size() > 3) in->problem("dims", fmt::format("expected 0-3 spatial dims, found {}", g->input.dims.size()));
    in->finish();
  } else {
    r.problem("input", "missing required input ({\"channels\": C, \"dims\": [spatial sizes]})");
  }
  const core::Json* layers = r.raw("layers");
  if (!layers) r.problem("layers", "missing required layers (an array)");
  r.finish();
  if (const size_t n = layers ? count_layers(*layers) : 0; n > MAX_GRAPH_LAYERS) {
    diag.add(file, core::append_pointer(pointer, "layers"),
             fmt::format("expected at most {} layers (counting residual bodies and shortcuts: 30 times "
                         "ResNet-1001), found {} (a prediction of about {:.1f} GB and {:.0f} s per micro-batch)",
                         MAX_GRAPH_LAYERS, n, static_cast<double>(n) * BYTES_PER_LAYER / 1e9,
                         std::ceil(static_cast<double>(n) * SECONDS_PER_LAYER)));
    return g;
  }
  if (layers && diag.problems().size() == before) {
    GraphReader reader{file, diag, g->layers, {}};
    reader.read_list(*layers, core::append_pointer(pointer, "layers"), g->input, "");
    g->definition = {{"input", value.at("input")}, {"layers", *layers}};
  }
  return g;
}

namespace {

using core::Json;

Json conv(int64_t out, int64_t kernel, int64_t stride, int64_t padding, bool bias, const std::string& name = "") {
  Json j = {{"type", "conv"}, {"out_channels", out}, {"kernel", kernel}, {"stride", stride}, {"padding", padding}, {"bias", bias}};
  if (!name.empty()) j["name"] = name;
  return j;
}
Json simple(const char* type) { return {{"type", type}}; }

// ResNet-50 (He et al. 2016, Table 1, "50-layer"), with the stride of each down-sampling block on its
// 3x3 convolution (v1.5: torchvision, NVIDIA Deep Learning Examples), BN after every convolution,
// a projection shortcut (1x1 conv + BN) at the first block of each stage.
Json resnet50() {
  Json layers = Json::array();
  layers.push_back(conv(64, 7, 2, 3, false, "conv1"));
  layers.push_back(simple("batch_norm"));
  layers.push_back(simple("relu"));
  layers.push_back({{"type", "pool"}, {"mode", "max"}, {"kernel", 3}, {"stride", 2}, {"padding", 1}});
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t mid = 64LL << stage, out = 4 * mid;
    for (int b = 0; b < blocks[stage]; ++b) {
      const int64_t stride = (b == 0 && stage > 0) ? 2 : 1;
      Json body = Json::array({conv(mid, 1, 1, 0, false), simple("batch_norm"), simple("relu"),
                               conv(mid, 3, stride, 1, false), simple("batch_norm"), simple("relu"),
                               conv(out, 1, 1, 0, false), simple("batch_norm")});
      Json block = {{"type", "residual"}, {"name", fmt::format("conv{}_{}", stage + 2, b + 1)}, {"body", body}};
      if (b == 0) block["shortcut"] = Json::array({conv(out, 1, stride, 0, false), simple("batch_norm")});
      layers.push_back(block);
      layers.push_back(simple("relu"));
    }
  }
  layers.push_back({{"type", "global_pool"}, {"mode", "avg"}});
  layers.push_back({{"type", "dense"}, {"name", "fc"}, {"out_features", 1000}});
  return {{"family", "layer_graph"}, {"name", "resnet50"},
          {"source", "He et al. 2016, Deep Residual Learning for Image Recognition, Table 1 (50-layer); "
                     "stride on the 3x3 convolution (v1.5, NVIDIA DeepLearningExamples resnet50v1.5)"},
          {"input", {{"channels", 3}, {"dims", {224, 224}}}},
          {"layers", layers}};
}

// VGG-16: Simonyan & Zisserman 2015, Table 1, configuration D (13 conv3 with bias, 5 max-pools, FC
// 4096-4096-1000).
Json vgg16() {
  Json layers = Json::array();
  const int convs[] = {2, 2, 3, 3, 3};
  for (int stage = 0; stage < 5; ++stage) {
    const int64_t width = std::min<int64_t>(64LL << stage, 512);
    for (int c = 0; c < convs[stage]; ++c) {
      layers.push_back(conv(width, 3, 1, 1, true));
      layers.push_back(simple("relu"));
    }
    layers.push_back({{"type", "pool"}, {"mode", "max"}, {"kernel", 2}, {"stride", 2}});
  }
  layers.push_back({{"type", "dense"}, {"out_features", 4096}});
  layers.push_back(simple("relu"));
  layers.push_back({{"type", "dense"}, {"out_features", 4096}});
  layers.push_back(simple("relu"));
  layers.push_back({{"type", "dense"}, {"out_features", 1000}});
  return {{"family", "layer_graph"}, {"name", "vgg16"},
          {"source", "Simonyan & Zisserman 2015, Very Deep Convolutional Networks, Table 1 configuration D"},
          {"input", {{"channels", 3}, {"dims", {224, 224}}}},
          {"layers", layers}};
}

// ViT-B/16: Dosovitskiy et al. 2021, Table 1 (12 layers, hidden 768, MLP 3072, 12 heads), 16x16
// patches of a 224x224 image (196 tokens + the class token), a 1000-class head.
Json vit_b16() {
  Json layers = Json::array();
  layers.push_back(conv(768, 16, 16, 0, true, "patch_embedding"));
  layers.push_back({{"type", "sequence"}, {"class_token", true}, {"position_embedding", true}});
  for (int i = 0; i < 12; ++i) layers.push_back({{"type", "attention"}, {"heads", 12}, {"mlp", 3072}});
  layers.push_back(simple("layer_norm"));
  layers.push_back({{"type", "global_pool"}, {"mode", "token"}});
  layers.push_back({{"type", "dense"}, {"name", "head"}, {"out_features", 1000}});
  return {{"family", "layer_graph"}, {"name", "vit-b16"},
          {"source", "Dosovitskiy et al. 2021, An Image is Worth 16x16 Words, Table 1 (ViT-Base, 86M), patch 16, "
                     "224x224 input, 1000-class head"},
          {"input", {{"channels", 3}, {"dims", {224, 224}}}},
          {"layers", layers}};
}

// The CosmoFlow network of LBANN (LLNL/lbann applications/physics/cosmology/cosmoflow, the model of
// Oyama et al.'s hybrid-parallel runs, after Mathuriya et al. SC18) at input width 512: 4 input
// channels (redshifts), 7 conv3 (16, 32, 64, 128 stride 2, 256, 256, 256; no bias) each followed by
// an average pool 3 stride 2 padding 1, then FC 2048-256-4.
Json cosmoflow512() {
  Json layers = Json::array();
  const int64_t widths[] = {16, 32, 64, 128, 256, 256, 256};
  for (int i = 0; i < 7; ++i) {
    layers.push_back(conv(widths[i], 3, i == 3 ? 2 : 1, 1, false));
    layers.push_back(simple("relu"));
    layers.push_back({{"type", "pool"}, {"mode", "avg"}, {"kernel", 3}, {"stride", 2}, {"padding", 1}});
  }
  layers.push_back({{"type", "dense"}, {"out_features", 2048}});
  layers.push_back(simple("relu"));
  layers.push_back({{"type", "dense"}, {"out_features", 256}});
  layers.push_back(simple("relu"));
  layers.push_back({{"type", "dense"}, {"out_features", 4}});
  return {{"family", "layer_graph"}, {"name", "cosmoflow-512"},
          {"source", "LBANN CosmoFlow model (LLNL/lbann applications/physics/cosmology/cosmoflow, input_width 512), "
                     "the network of Oyama et al. 2020 (TPDS, The Case for Strong Scaling in Deep Learning) after "
                     "Mathuriya et al. SC18 CosmoFlow; 4 input channels"},
          {"input", {{"channels", 4}, {"dims", {512, 512, 512}}}},
          {"layers", layers}};
}

}  // namespace

const std::vector<std::shared_ptr<const LayerGraph>>& layer_graph_catalog() {
  static const std::vector<std::shared_ptr<const LayerGraph>> catalog = [] {
    std::vector<std::shared_ptr<const LayerGraph>> c;
    for (const Json& j : {resnet50(), vgg16(), vit_b16(), cosmoflow512()}) {
      core::Diagnostics diag;
      c.push_back(read_layer_graph(j, "<catalog>", "", diag));
      diag.throw_if_any();
    }
    return c;
  }();
  return catalog;
}

std::shared_ptr<const LayerGraph> find_layer_graph(const std::string& name) {
  for (const auto& g : layer_graph_catalog()) {
    if (g->name == name) return g;
  }
  return nullptr;
}

void check_layer_graph_strategy(const LayerGraph& g, const TrainingConfig& t, const ParallelismConfig& p,
                                int world_size, const std::string& file, core::Diagnostics& diag) {
  auto problem = [&](const std::string& pointer, const std::string& message) { diag.add(file, pointer, message); };
  const std::pair<const char*, int> unsupported[] = {
      {"tensor", p.tensor}, {"pipeline", p.pipeline}, {"context", p.context}, {"expert", p.expert}};
  for (const auto& [key, value] : unsupported) {
    if (value != 1) {
      problem(std::string("/parallelism/") + key,
              fmt::format("a layer-graph model ({}) runs data and spatial parallelism only: {} must be 1, found {}",
                          g.name, key, value));
    }
  }
  if (p.folded()) problem("/parallelism/expert_tensor", "a layer-graph model has no experts: leave expert_tensor out");
  if (p.zero_stage != 0) {
    problem("/parallelism/zero_stage", fmt::format("ZeRO is not modelled for layer-graph models: zero_stage must be 0, "
                                                   "found {}",
                                                   p.zero_stage));
  }
  if (p.recompute != Recompute::NONE) {
    problem("/parallelism/recompute", "recompute is not modelled for layer-graph models: use \"none\"");
  }
  if (p.world_size() != world_size) {
    problem("/parallelism", fmt::format("data x spatial = {} x {} = {} must equal the cluster's GPUs ({})", p.data,
                                        p.spatial, p.world_size(), world_size));
  }
  const int64_t per_step = t.micro_batch * p.data;
  if (t.global_batch % per_step != 0) {
    problem("/training/global_batch", fmt::format("global_batch {} must be a multiple of micro_batch x data = {} x {}",
                                                  t.global_batch, t.micro_batch, p.data));
  }
  if (p.spatial == 1) return;
  for (const GraphLayer& l : g.layers) {
    if (l.in.dims.empty()) break;  // the split has been consumed (dense, global_pool)
    if (l.op == GraphOp::SEQUENCE || l.op == GraphOp::ATTENTION) {
      problem("/parallelism/spatial",
              fmt::format("layer '{}' ({}) needs its whole sample, but spatial {} splits its input {}: spatial "
                          "parallelism splits convolutional layers; use spatial 1",
                          l.name, to_string(l.op), p.spatial, to_string(l.in)));
      return;
    }
    if (l.op == GraphOp::DENSE || l.op == GraphOp::GLOBAL_POOL) break;  // consumes the split (features)
    const int64_t depth = l.in.dims[0];
    if (depth < p.spatial) {
      problem("/parallelism/spatial",
              fmt::format("layer '{}' ({}): spatial split {} is larger than its input's first spatial dimension {} "
                          "(input {})",
                          l.name, to_string(l.op), p.spatial, depth, to_string(l.in)));
      return;
    }
    const int64_t block = depth / p.spatial;
    if (l.halo > block) {
      problem("/parallelism/spatial",
              fmt::format("layer '{}' ({}, kernel {} stride {}): its halo of {} planes is wider than the local block "
                          "of {} planes ({} / spatial {})",
                          l.name, to_string(l.op), l.kernel, l.stride, l.halo, block, depth, p.spatial));
      return;
    }
  }
}

namespace {
constexpr double SPLIT_K_ROWS = 4096;
}  // namespace

std::vector<LocalLayerCost> local_layer_costs(const LayerGraph& g, const TrainingConfig& t, const ParallelismConfig& p) {
  const double e = activation_element_bytes(t.precision);
  const double w = weight_bytes_per_parameter(t);
  const double b = static_cast<double>(t.micro_batch);
  std::vector<LocalLayerCost> costs;
  bool split = p.spatial > 1;
  for (const GraphLayer& l : g.layers) {
    LocalLayerCost c;
    c.split = split && !l.in.dims.empty();
    if (c.split) {
      const double depth = static_cast<double>(l.in.dims[0]);
      // dense and global_pool split the flattened features evenly; the others by planes.
      c.fraction = l.op == GraphOp::DENSE || l.op == GraphOp::GLOBAL_POOL ? 1.0 / p.spatial
                                                                          : std::ceil(depth / p.spatial) / depth;
    }
    // Layers that keep spatial dims split their output like their input; dense and global_pool
    // produce a whole (replicated) output.
    const bool output_split = c.split && !l.out.dims.empty();
    const double out_fraction = output_split ? c.fraction : 1.0;
    c.flops = l.flops * b * c.fraction;
    c.bytes = (l.in.elements() * c.fraction + l.out.elements() * out_fraction) * b * e + l.parameters * w;
    c.stored_bytes = l.stored_elements * b * e * out_fraction;
    if (l.op == GraphOp::ATTENTION) {
      const EncoderBlock block = encoder_block(l, t);
      c.stored_bytes = activation_bytes_per_layer(block.model, block.training, ParallelismConfig{}).value();
    }
    c.gemm = l.gemm;
    if (c.gemm.count > 0) {
      if (l.op == GraphOp::DENSE) {
        c.gemm.m = static_cast<float>(b);
        c.gemm.k = static_cast<float>(l.gemm.k * c.fraction);
      } else {
        // The implicit GEMM's rows (output voxels x samples) in chunks of at most SPLIT_K_ROWS, as
        // `count` products: the same forward and data-gradient tiles, and a weight gradient
        // (Cin·K^d x Cout, reduced over the rows) split over the chunks, as cuDNN's split-K
        // weight-gradient kernels run it instead of one small output tile set.
        const double rows = static_cast<double>(l.gemm.m) * b * c.fraction;
        const double chunks = l.op == GraphOp::CONV ? std::max(1.0, std::floor(rows / SPLIT_K_ROWS)) : 1.0;
        c.gemm.m = static_cast<float>(rows / chunks);
        c.gemm.count = static_cast<uint32_t>(chunks);
      }
    }
    if (c.split && l.halo > 0) {
      const double in_plane = l.in.elements() / static_cast<double>(l.in.dims[0]);
      const double out_plane = l.out.elements() / static_cast<double>(l.out.dims[0]);
      c.halo_forward_bytes = static_cast<double>(l.halo) * in_plane * b * e;
      c.halo_backward_bytes = static_cast<double>(l.halo) * out_plane * b * e;
    }
    if (c.split && l.op == GraphOp::BATCH_NORM) c.spatial_reduce_bytes = 2.0 * static_cast<double>(l.in.channels) * 4.0;
    if (c.split && (l.op == GraphOp::DENSE || l.op == GraphOp::GLOBAL_POOL)) {
      c.spatial_reduce_bytes = l.out.elements() * b * e;
      split = false;
    }
    costs.push_back(c);
  }
  return costs;
}

EncoderBlock encoder_block(const GraphLayer& l, const TrainingConfig& t) {
  EncoderBlock b;
  b.model.name = l.name;
  b.model.layers = 1;
  b.model.hidden = l.in.channels;
  b.model.heads = l.heads;
  b.model.kv_heads = l.heads;
  b.model.ffn_hidden = l.mlp;
  b.model.vocab = 1;
  b.model.activation = Activation::GELU;
  b.training = t;
  b.training.sequence_length = l.in.dims.empty() ? 1 : l.in.dims[0];
  return b;
}

}  // namespace trainsim::models

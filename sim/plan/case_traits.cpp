#include "sim/plan/case_traits.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

// A catalog name's prefix and its generation. Described GPUs are judged by their base.
struct GenerationPrefix {
  const char* prefix;
  const char* generation;
};
constexpr GenerationPrefix GENERATIONS[] = {{"V100", "volta"},  {"A100", "ampere"},   {"H100", "hopper"},
                                            {"H200", "hopper"}, {"H800", "hopper"},   {"B200", "blackwell"},
                                            {"GB200", "blackwell"}, {"L40S", "ada"}, {"MI300X", "cdna3"}};

std::string generation_title(const std::string& g) {
  if (g.empty()) return g;
  std::string t = g;
  t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return g == "cdna3" ? "CDNA 3" : t;
}

std::string mix_of(const models::ParallelismConfig& p) {
  std::vector<std::string> axes;
  if (p.tensor > 1) axes.push_back("TP");
  if (p.context > 1) axes.push_back("CP");
  if (p.expert > 1) axes.push_back("EP");
  if (p.pipeline > 1) axes.push_back("PP");
  if (p.spatial > 1) axes.push_back("SPATIAL");
  if (p.data > 1) axes.push_back(p.zero_stage == 3 ? "FSDP" : "DP");
  if (axes.empty()) return "1 GPU";
  return fmt::format("{}", fmt::join(axes, "+"));
}

// The data-parallel mechanism: plain gradient all-reduce, ZeRO-1/2's reduce-scatter and parameter
// all-gather, ZeRO-3/FSDP's per-layer parameter gathers, or HSDP's (gathers in the shard group,
// gradient shards all-reduced across replicas).
MechanismUse data_mechanism(const models::ParallelismConfig& p) {
  const double dp = p.data;
  if (p.hybrid_shard()) {
    return {"hsdp", dp, "DP",
            fmt::format("HSDP: parameter gathers over shard groups of {} and gradient-shard all-reduces across {} replicas "
                        "at DP {}",
                        p.shard_group, p.shard_replicas(), p.data)};
  }
  if (p.fsdp2_pipelined()) {
    return {"fsdp2-pipelined", dp, "DP",
            fmt::format("FSDP2 under a pipeline (gathers and reduce-scatters once per step) at DP {}", p.data)};
  }
  if (p.zero_stage == 3) return {"fsdp", dp, "DP", fmt::format("FSDP (ZeRO-3) parameter gathers at DP {}", p.data)};
  if (p.zero_stage > 0) {
    return {fmt::format("zero:{}", p.zero_stage), dp, "DP",
            fmt::format("ZeRO-{} sharded optimizer (reduce-scatter, parameter all-gather) at DP {}", p.zero_stage, p.data)};
  }
  return {"data", dp, "DP", fmt::format("data-parallel gradient all-reduce at DP {}", p.data)};
}

void parallelism_mechanisms(const Scenario& s, std::vector<MechanismUse>& m) {
  const models::ParallelismConfig& p = s.parallelism;
  if (p.tensor > 1) {
    m.push_back({"tensor", double(p.tensor), "TP",
                 fmt::format("tensor parallelism at TP {}{}", p.tensor, p.sequence_parallel ? " with sequence parallelism" : "")});
  }
  if (p.tp_overlap_active()) m.push_back({"tp_comm_overlap", 0, "", "tensor-parallel communication overlap (userbuffers)"});
  if (p.pipeline > 1) {
    const std::string schedule = models::to_string(p.schedule);
    m.push_back({"pipeline:" + schedule, double(p.pipeline), "PP",
                 fmt::format("{} pipeline at PP {}{}", schedule, p.pipeline,
                             p.virtual_stages > 1 ? fmt::format(" (v={})", p.virtual_stages) : "")});
  }
  if (p.context > 1) m.push_back({"context", double(p.context), "CP", fmt::format("context parallelism at CP {}", p.context)});
  if (p.expert > 1) {
    m.push_back({"expert", double(p.expert), "EP",
                 fmt::format("MoE expert all-to-alls at EP {}{}", p.expert, p.moe_a2a_overlap ? " (overlapped)" : "")});
  }
  if (p.data > 1) m.push_back(data_mechanism(p));
  if (p.recompute != models::Recompute::NONE) {
    // An early-stopped re-run (PyTorch's non-reentrant checkpoint) is its own mechanism.
    const std::string r = models::to_string(p.recompute) + (p.recompute_early_stop ? " (early stop)" : "");
    m.push_back({"recompute:" + r, 0, "", fmt::format("{} activation recomputation", r)});
  }
}

void optimization_mechanisms(const Scenario& s, const std::string& generation, std::vector<MechanismUse>& m) {
  const double gpus = s.cluster.world_size();
  if (s.training.precision == core::Precision::FP8) {
    m.push_back({"fp8:" + generation, gpus, "GPUs", fmt::format("FP8 GEMMs on {} GPUs", generation_title(generation))});
  }
  if (s.training.compile) m.push_back({"compile", 0, "", "torch.compile"});
  if (s.cluster.intra_node.nvls) m.push_back({"nvls", 0, "", "NVLS (NVLink SHARP) collectives inside the node"});
  const network::AggregationKind agg = s.cluster.network.aggregation_kind();
  if (agg != network::AggregationKind::NONE) {
    m.push_back({"in_network:" + network::to_string(agg), gpus, "GPUs",
                 fmt::format("in-network aggregation ({})", network::to_string(agg))});
  }
  if (s.offload.active()) {
    const std::string where = s.offload.uses_nvme() ? "nvme" : "cpu";
    m.push_back({"offload:" + where, gpus, "GPUs",
                 fmt::format("{} offload (preset {})", where == "nvme" ? "NVMe" : "CPU", s.offload.preset)});
  }
  if (s.pruning.enabled()) {
    const std::string method = models::to_string(s.pruning.method);
    m.push_back({"pruning:" + method + (s.pruning.sparse_kernel ? ":sparse" : ""), 0, "",
                 s.pruning.sparse_kernel ? fmt::format("{} sparse GEMMs", method) : fmt::format("{} pruning (dense GEMMs)", method)});
  }
  if (s.compression.enabled()) {
    const std::string method = models::to_string(s.compression.method);
    m.push_back({"compression:" + method, 0, "", fmt::format("{} gradient compression", method)});
  }
  if (s.model.is_layer_graph()) m.push_back({"layer_graph", 0, "", "a layer-graph model (CNN/ViT)"});
}

}  // namespace

std::string gpu_generation(const std::string& gpu_name) {
  for (const GenerationPrefix& g : GENERATIONS) {
    if (gpu_name.rfind(g.prefix, 0) == 0) return g.generation;
  }
  return "other";
}

bool similar_scale(double a, double b) {
  if (a <= 0 || b <= 0) return a == b;
  return std::max(a, b) <= SIMILAR_SCALE * std::min(a, b);
}

CaseTraits traits_of(const Scenario& s) {
  CaseTraits t;
  t.stack = core::to_string(models::resolved_stack(s.training, s.parallelism));
  t.generation = gpu_generation(s.cluster.profile_gpu());
  t.mix = mix_of(s.parallelism);
  t.gpus = s.cluster.world_size();
  const double gpus = t.gpus;
  t.mechanisms.push_back({"stack:" + t.stack, gpus, "GPUs", fmt::format("the {} training stack at {} GPUs", t.stack, t.gpus)});
  t.mechanisms.push_back({"gpu:" + t.generation, gpus, "GPUs",
                          fmt::format("{} GPUs ({}) at {} GPUs", generation_title(t.generation), s.cluster.gpu, t.gpus)});
  parallelism_mechanisms(s, t.mechanisms);
  optimization_mechanisms(s, t.generation, t.mechanisms);
  return t;
}

core::Json MechanismUse::to_json() const {
  core::Json j{{"key", key}, {"description", description}};
  if (scale > 0) {
    j["scale"] = scale;
    j["scale_name"] = scale_name;
  }
  return j;
}

core::Json CaseTraits::to_json() const {
  core::Json m = core::Json::array();
  for (const MechanismUse& u : mechanisms) m.push_back(u.to_json());
  return {{"stack", stack}, {"generation", generation}, {"mix", mix}, {"gpus", gpus}, {"mechanisms", m}};
}

CaseTraits CaseTraits::from_json(core::ObjectReader& r) {
  CaseTraits t;
  t.stack = r.required_string("stack").value_or("");
  t.generation = r.required_string("generation").value_or("");
  t.mix = r.required_string("mix").value_or("");
  t.gpus = static_cast<int>(r.required_integer("gpus", 1, 100'000'000).value_or(1));
  if (const core::Json* m = r.raw("mechanisms")) {
    if (!m->is_array()) {
      r.problem("mechanisms", fmt::format("expected an array of mechanisms, found {}", core::describe_json(*m)));
    } else {
      for (size_t i = 0; i < m->size(); ++i) {
        core::ObjectReader e((*m)[i], r.file(), core::append_pointer(r.pointer_of("mechanisms"), i), r.diagnostics());
        MechanismUse u;
        u.key = e.required_string("key").value_or("");
        u.description = e.string("description", u.key);
        u.scale = e.number("scale", 0, 0, 1e9);
        u.scale_name = e.string("scale_name", "");
        e.finish();
        t.mechanisms.push_back(u);
      }
    }
  }
  return t;
}

}  // namespace trainsim::plan

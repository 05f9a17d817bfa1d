#include "sim/cli/cli_options.hpp"
#include "sim/cli/collective_command.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "network/collective_cost.hpp"
#include "network/feasibility.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/engine/collective_simulation.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

using core::Bytes;
using core::InputError;

constexpr double FLOAT_BYTES = 4;  // nccl-tests' default data type
// Sizes of one run: each is a simulation of its own (seconds at flow fidelity on large groups).
constexpr double MAX_COLLECTIVE_SIZES = 1000;

core::CollectiveOp parse_op(const std::string& text) {
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  if (core::parse_collective_op(text, op)) return op;
  throw InputError::expected("--op", "", "all_reduce, reduce_scatter, all_gather, broadcast, reduce or all_to_all",
                             fmt::format("\"{}\"", text));
}

Bytes parse_size(const std::string& text) {
  Bytes b;
  if (!core::parse_bytes(text, b) || b.value() <= 0) {
    throw InputError::expected("--sizes", "", "a positive size like 1M, 64KiB or 16G", fmt::format("\"{}\"", text));
  }
  return b;
}

// "MIN:MAX" or one size; MIN, MIN*factor, ... up to MAX (nccl-tests' -b -e -f).
std::vector<Bytes> parse_sizes(const std::string& text, double factor) {
  if (!(factor > 1)) throw InputError::expected("--factor", "", "a number > 1", fmt::format("{}", factor));
  const size_t colon = text.find(':');
  const Bytes min = parse_size(text.substr(0, colon));
  const Bytes max = colon == std::string::npos ? min : parse_size(text.substr(colon + 1));
  if (max < min) throw InputError("--sizes", "", fmt::format("MAX ({}) is below MIN ({})", text.substr(colon + 1), text.substr(0, colon)));
  // Counted before the sizes are made: a factor just above 1 over a wide range made tens of millions.
  const double count = std::floor(std::log(max.value() / min.value() * (1 + 1e-12)) / std::log(factor)) + 1;
  if (count > MAX_COLLECTIVE_SIZES) {
    throw InputError::expected("--factor", "",
                               fmt::format("at most {} sizes from MIN to MAX (nccl-tests' 1K:16G at factor 2 has 25): a "
                                           "larger --factor or a narrower --sizes",
                                           MAX_COLLECTIVE_SIZES),
                               fmt::format("{} over {}: {:.3g} sizes", factor, text, count));
  }
  std::vector<Bytes> sizes;
  for (double s = min.value(); s <= max.value() * (1 + 1e-12); s *= factor) sizes.emplace_back(std::round(s));
  return sizes;
}

struct Setup {
  network::ClusterConfig cluster;
  core::Profile profile;
  std::vector<int> ranks;
};

Setup setup_from_options(const CollectiveArgs& args) {
  if (args.gpus < 1) throw InputError("--gpus", "", "give the number of GPUs (>= 1), or --scenario");
  if (args.gpus_per_node < 1) throw InputError("--gpus-per-node", "", "must be >= 1");
  const int per_node = std::min(args.gpus, args.gpus_per_node);
  if (args.gpus % per_node != 0) {
    throw InputError("--gpus", "", fmt::format("{} is not a multiple of --gpus-per-node ({})", args.gpus, per_node));
  }
  core::Json doc = {{"nodes", args.gpus / per_node}, {"gpus_per_node", per_node}};
  core::Json network = {{"nics_per_node", per_node}};
  if (!args.gpu.empty()) {
    if (core::find_gpu(args.gpu) == nullptr) {
      throw InputError("--gpu", "", fmt::format("unknown GPU \"{}\" (`trainsim describe gpus` lists them)", args.gpu));
    }
    doc["gpu"] = args.gpu;
  }
  if (!args.nic_bandwidth.empty()) {
    core::BytesPerSecond bw;
    if (!core::parse_bandwidth(args.nic_bandwidth, bw)) {
      throw InputError::expected("--nic-bandwidth", "", "a bandwidth like \"200 Gb/s\" or \"25 GB/s\"",
                                 fmt::format("\"{}\"", args.nic_bandwidth));
    }
    network["nic_bandwidth"] = args.nic_bandwidth;
  }
  if (!args.topology.empty()) network["topology"] = args.topology;
  doc["network"] = network;
  core::Diagnostics diag;
  core::ObjectReader reader(doc, "trainsim collective", "", diag);
  Setup s;
  s.cluster = network::ClusterConfig::from_json(reader);
  reader.finish();
  diag.throw_if_any();
  network::check_feasibility(s.cluster, "trainsim collective", "", diag);
  diag.throw_if_any();
  return s;
}

Setup make_setup(const CollectiveArgs& args) {
  if (args.scenario.empty()) return setup_from_options(args);
  const Scenario scenario = load_scenario(args.scenario);
  Setup s{scenario.cluster, scenario.profile, {}};
  const int world = s.cluster.world_size();
  if (args.gpus < 0 || args.gpus > world) {
    throw InputError("--gpus", "", fmt::format("{} is outside the scenario's cluster of {} GPUs", args.gpus, world));
  }
  const int n = args.gpus == 0 ? world : args.gpus;
  for (int r = 0; r < n; ++r) s.ranks.push_back(r);
  return s;
}

// One measured case of the --compare file: bus bandwidth in GB/s by size.
std::map<double, double> read_measurements(const std::string& path) {
  const core::Json doc = core::load_json_file(path);
  std::map<double, double> busbw;
  if (!doc.is_array()) throw InputError::expected(path, "", "an array of nccl-tests cases", doc.type_name());
  for (size_t i = 0; i < doc.size(); ++i) {
    const core::Json& c = doc[i];
    const std::string pointer = fmt::format("/{}/measured/busbw_GBps_by_size", i);
    if (!c.contains("measured") || !c["measured"].contains("busbw_GBps_by_size")) {
      throw InputError::expected(path, pointer, "an object of bus bandwidths by size", "nothing");
    }
    for (const auto& [key, value] : c["measured"]["busbw_GBps_by_size"].items()) {
      Bytes size;
      if (!core::parse_bytes(key, size) || !value.is_number()) {
        throw InputError::expected(path, pointer + "/" + key, "a size key and a number in GB/s", value.dump());
      }
      busbw[size.value()] = value.get<double>();
    }
  }
  return busbw;
}

struct Comparison {
  double size = 0;
  double measured = 0;   // GB/s
  double predicted = 0;  // GB/s
  double error() const { return predicted / measured - 1; }
};

std::vector<Comparison> compare(const CollectiveArgs& args, core::CollectiveOp op, const Setup& s,
                                const std::vector<engine::CollectiveResult>& results) {
  const int n = s.ranks.empty() ? s.cluster.world_size() : static_cast<int>(s.ranks.size());
  const bool one_node = n == 8 && (s.ranks.empty() ? s.cluster.nodes == 1 : s.cluster.node_of(s.ranks.back()) == 0);
  if (op != core::CollectiveOp::ALL_REDUCE || !one_node || s.cluster.gpu.rfind("A100", 0) != 0 ||
      s.cluster.intra_node.fabric != network::IntraFabric::NVSWITCH) {
    throw InputError("--compare", "",
                     "the measurements are all_reduce on one node of 8 A100 GPUs over NVSwitch: run that "
                     "(--op all_reduce --gpus 8 with an A100 and the nvswitch fabric)");
  }
  const std::map<double, double> measured = read_measurements(args.compare);
  std::vector<Comparison> out;
  for (const engine::CollectiveResult& r : results) {
    auto it = measured.find(r.size.value());
    if (it != measured.end()) out.push_back({r.size.value(), it->second, r.busbw / 1e9});
  }
  return out;
}

void print_json(std::ostream& out, const CollectiveArgs& args, const Setup& s, int ranks,
                const std::vector<engine::CollectiveResult>& results, const std::vector<Comparison>& comparison) {
  core::Json doc;
  doc["schema"] = "trainsim.collective/1";
  doc["op"] = args.op;
  doc["ranks"] = ranks;
  doc["fidelity"] = args.fidelity;
  doc["cluster"] = s.cluster.to_json();
  core::Json rows = core::Json::array();
  for (const engine::CollectiveResult& r : results) {
    core::Json links = core::Json::array();
    for (const engine::LinkLoad& l : r.top_links) {
      links.push_back({{"link", l.link}, {"bytes", l.bytes}, {"utilization", l.utilization}});
    }
    rows.push_back({{"size_bytes", r.size.value()},
                    {"count", std::floor(r.size.value() / FLOAT_BYTES)},
                    {"time_us", r.time.value() * 1e6},
                    {"algbw_GBps", r.algbw / 1e9},
                    {"busbw_GBps", r.busbw / 1e9},
                    {"algorithm", network::to_string(r.algorithm)},
                    {"flows", r.flows},
                    {"top_links", links}});
  }
  doc["results"] = rows;
  if (!args.compare.empty()) {
    core::Json cmp = core::Json::array();
    for (const Comparison& c : comparison) {
      cmp.push_back({{"size_bytes", c.size}, {"measured_busbw_GBps", c.measured},
                     {"predicted_busbw_GBps", c.predicted}, {"error", c.error()}});
    }
    doc["comparison"] = {{"source", args.compare}, {"sizes", cmp}};
  }
  out << doc.dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
}

void print_table(std::ostream& out, const CollectiveArgs& args, const Setup& s, int ranks,
                 const std::vector<engine::CollectiveResult>& results, const std::vector<Comparison>& comparison) {
  out << fmt::format("# trainsim collective: {} on {} GPUs ({}, {} per node), fidelity {}\n", args.op, ranks,
                     s.cluster.gpu, s.cluster.gpus_per_node, args.fidelity);
  out << fmt::format("#{:>15} {:>13} {:>12} {:>11} {:>11}  {}\n", "size_bytes", "count", "time_us", "algbw_GB/s",
                     "busbw_GB/s", "algorithm");
  for (const engine::CollectiveResult& r : results) {
    out << fmt::format(" {:>15.0f} {:>13.0f} {:>12.2f} {:>11.2f} {:>11.2f}  {}\n", r.size.value(),
                       std::floor(r.size.value() / FLOAT_BYTES), r.time.value() * 1e6, r.algbw / 1e9, r.busbw / 1e9,
                       network::to_string(r.algorithm));
  }
  if (!results.empty() && !results.back().top_links.empty()) {
    out << fmt::format("# most utilized links at {} bytes:\n", results.back().size.value());
    for (const engine::LinkLoad& l : results.back().top_links) {
      out << fmt::format("#   {:<36} {:>16.0f} bytes  {:>6.1f}%\n", l.link, l.bytes, 100 * l.utilization);
    }
  }
  if (!args.compare.empty()) {
    out << fmt::format("# compared with {}\n", args.compare);
    out << fmt::format("#{:>15} {:>14} {:>15} {:>9}\n", "size_bytes", "measured_GB/s", "predicted_GB/s", "error");
    for (const Comparison& c : comparison) {
      out << fmt::format(" {:>15.0f} {:>14.2f} {:>15.2f} {:>+8.1f}%\n", c.size, c.measured, c.predicted,
                         100 * c.error());
    }
  }
}

// One row per size, the table's columns (the comparison and the links stay in table and JSON).
void print_csv(std::ostream& out, const std::vector<engine::CollectiveResult>& results) {
  out << "size_bytes,count,time_us,algbw_GB/s,busbw_GB/s,algorithm\n";
  for (const engine::CollectiveResult& r : results) {
    out << fmt::format("{:.0f},{:.0f},{},{},{},{}\n", r.size.value(), std::floor(r.size.value() / FLOAT_BYTES),
                       r.time.value() * 1e6, r.algbw / 1e9, r.busbw / 1e9, network::to_string(r.algorithm));
  }
}

// A forced algorithm that cannot run the op on the group is an input error (the closed form would
// fall back to the ring, as NCCL does, and print a result under another name).
void check_algorithm_applies(const engine::CollectiveRequest& request, const network::ClusterConfig& cluster,
                             int ranks) {
  if (request.algorithm == network::Algorithm::AUTO) return;
  std::vector<int> members = request.ranks;
  if (members.empty()) {
    members.resize(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) members[static_cast<size_t>(r)] = r;
  }
  const network::GroupPlacement g = network::GroupPlacement::of(members, cluster);
  if (network::algorithm_applies(request.algorithm, request.op, g, cluster) || g.ranks <= 1) return;
  std::string needs;
  switch (request.algorithm) {
    case network::Algorithm::NVLS:
      needs = "an NVSwitch node with NVLink SHARP (a --scenario whose cluster.intra_node.nvls is true), a group inside "
              "one node, and all_reduce, reduce_scatter or all_gather";
      break;
    case network::Algorithm::IN_NETWORK:
      needs = "switches that aggregate (a --scenario with cluster.network.in_network_aggregation), a group spanning "
              "nodes, and not all_to_all; \"switchml\" only all_reduce over nodes under one switch";
      break;
    case network::Algorithm::HALVING_DOUBLING: needs = "a power-of-two group with the same GPUs on every node"; break;
    case network::Algorithm::HIERARCHICAL:
      needs = "all_reduce, reduce_scatter or all_gather on the same number of GPUs on every node";
      break;
    case network::Algorithm::TREE: needs = "all_reduce, broadcast or reduce"; break;
    case network::Algorithm::DIRECT: needs = "all_to_all, or all_gather / reduce_scatter on at most 16 GPUs"; break;
    default: needs = "an op other than all_to_all"; break;
  }
  throw InputError::expected("--algorithm", "", needs,
                             fmt::format("{} for {} on {} GPUs over {} node(s)", network::to_string(request.algorithm),
                                         core::to_string(request.op), g.ranks, g.nodes));
}

// The budgets of collective_command.hpp, on the whole cluster (its platform is built whatever the
// group), before anything is built.
void check_cluster_budget(int64_t gpus, engine::Fidelity fidelity, int64_t ranks) {
  const bool simgrid = fidelity != engine::Fidelity::ANALYTIC;
  const int64_t most = simgrid ? MAX_SIMGRID_COLLECTIVE_GPUS : MAX_ANALYTIC_COLLECTIVE_GPUS;
  if (gpus <= most) return;
  const double g = static_cast<double>(gpus);
  const std::string size = ranks == gpus ? fmt::format("{} GPUs", gpus) : fmt::format("a cluster of {} GPUs (for a group of {})", gpus, ranks);
  if (simgrid) {
    throw InputError::expected(
        "--fidelity", "",
        fmt::format("a SimGrid platform of at most {} GPUs at step and flow fidelity: use --fidelity analytic "
                    "(closed forms, up to {} GPUs) or fewer --gpus",
                    most, MAX_ANALYTIC_COLLECTIVE_GPUS),
        fmt::format("{} at {} fidelity (the platform alone: about {:.0f} GB and {:.0f} s to build before the first "
                    "flow, at 18 KB and 40 us per GPU)",
                    size, engine::to_string(fidelity), std::ceil(g * 18e3 / 1e9), std::ceil(g * 40e-6)));
  }
  throw InputError::expected("--gpus", "", fmt::format("a cluster of at most {} GPUs at analytic fidelity", most),
                             fmt::format("{} (its topology alone: about {:.0f} GB, at 1.5 KB per GPU)", size,
                                         std::ceil(g * 1.5e3 / 1e9)));
}

}  // namespace

int collective_command(const CollectiveArgs& args, std::ostream& out) {
  engine::CollectiveRequest request;
  request.op = parse_op(args.op);
  if (!network::parse_algorithm(args.algorithm, request.algorithm)) {
    throw InputError::expected("--algorithm", "", "auto or an algorithm name", fmt::format("\"{}\"", args.algorithm));
  }
  if (!engine::parse_fidelity(args.fidelity, request.fidelity)) {
    throw InputError::expected("--fidelity", "", "step, flow or analytic", fmt::format("\"{}\"", args.fidelity));
  }
  request.sizes = parse_sizes(args.sizes, args.factor);
  request.top_links = args.top_links;
  request.use_symmetry = !args.no_symmetry;
  request.timings = args.timings ? &std::cerr : nullptr;
  // Options make a cluster of --gpus GPUs: refused before it is read (its nodes are bounded too).
  if (args.scenario.empty()) check_cluster_budget(args.gpus, request.fidelity, args.gpus);
  const Setup setup = make_setup(args);
  request.ranks = setup.ranks;
  const int ranks = setup.ranks.empty() ? setup.cluster.world_size() : static_cast<int>(setup.ranks.size());
  check_cluster_budget(setup.cluster.world_size(), request.fidelity, ranks);
  check_algorithm_applies(request, setup.cluster, ranks);
  if (request.fidelity == engine::Fidelity::STEP) {
    const uint64_t flows = engine::step_flows_lower_bound(request, setup.cluster, setup.profile);
    if (flows > engine::STEP_FLOW_BUDGET) {
      throw InputError::expected(
          "--fidelity", "",
          fmt::format("a step-fidelity run of at most {:.0e} flows (SimGrid runs 0.05-0.5 million flows per "
                      "CPU-second, fewer the more are in flight): use --fidelity flow, fewer GPUs or another "
                      "--algorithm",
                      static_cast<double>(engine::STEP_FLOW_BUDGET)),
          fmt::format("step for {} GPUs, at least {} flows ({:.0f} to {:.0f} CPU-minutes at those rates, and "
                      "gigabytes of memory)",
                      ranks, flows, std::ceil(static_cast<double>(flows) / 0.5e6 / 60),
                      std::ceil(static_cast<double>(flows) / 0.05e6 / 60)));
    }
  }
  const std::vector<engine::CollectiveResult> results = engine::simulate_collective(request, setup.cluster, setup.profile);
  const std::vector<Comparison> comparison =
      args.compare.empty() ? std::vector<Comparison>{} : compare(args, request.op, setup, results);
  if (args.format == Format::JSON) {
    print_json(out, args, setup, ranks, results, comparison);
  } else if (args.format == Format::CSV) {
    print_csv(out, results);
  } else {
    print_table(out, args, setup, ranks, results, comparison);
  }
  return 0;
}

CollectiveSubcommand::CollectiveSubcommand(CLI::App& app) {
  command_ = app.add_subcommand("collective", "Simulate one collective over a range of sizes (an nccl-tests-like table)");
  command_->add_option("--op", args_.op, "all_reduce, reduce_scatter, all_gather, broadcast, reduce or all_to_all")
      ->default_str("all_reduce");
  command_->add_option("--gpus", args_.gpus, "GPUs in the group (with --scenario: the first N; default all)");
  command_->add_option("--gpus-per-node", args_.gpus_per_node, "GPUs per node (one NIC each)")->default_str("8");
  command_->add_option("--gpu", args_.gpu, "GPU catalog name (`trainsim describe gpus`)");
  command_->add_option("--nic-bandwidth", args_.nic_bandwidth, "Per NIC and direction, e.g. \"400 Gb/s\"");
  command_->add_option("--topology", args_.topology, "fat-tree, rail-optimized, dragonfly, torus or ideal");
  command_->add_option("--scenario", args_.scenario, "Take the cluster and profile from this scenario file");
  command_->add_option("--algorithm", args_.algorithm, "Collective algorithm, or auto (NCCL-like tuner)")
      ->default_str("auto");
  command_->add_option("--fidelity", args_.fidelity, "step, flow or analytic")->default_str("flow");
  command_->add_option("--sizes", args_.sizes, "MIN:MAX per-rank buffer sizes, e.g. 1M:16G")->default_str("1M:16G");
  command_->add_option("--factor", args_.factor, "Size multiplier from MIN to MAX")->default_str("2");
  add_format(command_, args_.format, /*csv=*/true);
  command_->add_option("--compare", args_.compare, "nccl-tests measurements (JSON) to compare with");
  command_->add_option("--top-links", args_.top_links, "Most utilized links listed")->default_str("5");
  command_->add_flag("--timings", args_.timings,
                     "Print where the wall time goes (topology, platform, flows, simulation) on stderr");
  command_->add_flag("--no-symmetry", args_.no_symmetry,
                     "flow: simulate every flow, also those that copy others on links of their own (same result)");
}

std::optional<int> CollectiveSubcommand::run(std::ostream& out) const {
  if (!command_->parsed()) return std::nullopt;
  return collective_command(args_, out);
}

}  // namespace trainsim::cli

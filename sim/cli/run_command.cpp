#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "sim/cli/commands.hpp"
#include "sim/cli/prediction.hpp"
#include "sim/cli/report_figures.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/timeline.hpp"

namespace trainsim::cli {
namespace {

std::vector<int> default_timeline_ranks(const Scenario& s) {
  // The first rank (tensor, context, expert and data coordinate 0) of every pipeline stage.
  const models::ParallelismConfig& p = s.parallelism;
  const int stage_stride = p.world_size() / p.pipeline;
  std::vector<int> ranks;
  for (int stage = 0; stage < p.pipeline; ++stage) ranks.push_back(stage * stage_stride);
  return ranks;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw core::InputError(path.string(), "", "cannot create the file (does its folder exist and is it writable?)");
  f << text;
  if (!f) throw core::InputError(path.string(), "", "error while writing the file");
}

}  // namespace

int run_command(const RunArgs& args, std::ostream& out) {
  const Scenario scenario = load_scenario(args.scenario, args.overrides);
  std::vector<int> ranks = args.timeline_ranks;
  if (!args.timeline.empty() && ranks.empty()) ranks = default_timeline_ranks(scenario);
  for (int r : ranks) {
    if (r < 0 || r >= scenario.cluster.world_size()) {
      throw core::InputError("--timeline-ranks", "",
                             fmt::format("rank {} is outside the cluster's 0..{}", r, scenario.cluster.world_size() - 1));
    }
  }
  const Prediction prediction = predict(scenario, args.backend, ranks);
  const core::Json report = report_json(scenario, prediction);
  const std::string table = report_table(scenario, prediction);

  switch (args.format) {
    case Format::JSON: out << report.dump(2) << "\n"; break;
    case Format::CSV: out << report_csv(report); break;
    case Format::TABLE: out << table; break;
  }

  if (!args.out_dir.empty()) {
    const std::filesystem::path dir(args.out_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw core::InputError(args.out_dir, "", fmt::format("cannot create the folder: {}", ec.message()));
    write_file(dir / "report.json", report.dump(2) + "\n");
    write_file(dir / "report.txt", table);
    write_file(dir / "scenario.resolved.json", scenario.to_json().dump(2) + "\n");
  }
  if (!args.timeline.empty()) {
    std::ofstream f(args.timeline, std::ios::binary);
    if (!f) throw core::InputError(args.timeline, "", "cannot create the timeline file");
    engine::write_chrome_trace(prediction.result, prediction.built.workload, f);
  }
  return 0;
}

int check_command(const CheckArgs& args, std::ostream& out) {
  const Scenario scenario = load_scenario(args.scenario, args.overrides);
  out << scenario.to_json().dump(2) << "\n";
  return 0;
}

}  // namespace trainsim::cli

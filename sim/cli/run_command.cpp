#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "sim/cli/commands.hpp"
#include "sim/cli/html_report.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/progress.hpp"
#include "sim/plan/report_figures.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/engine/simgrid_backend.hpp"
#include "sim/engine/timeline.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

std::vector<int> default_timeline_ranks(const Scenario& s) {
  // The first rank (tensor, context, expert and data coordinate 0) of every pipeline stage.
  const models::ParallelismConfig& p = s.parallelism;
  const int stage_stride = p.world_size() / p.pipeline;
  std::vector<int> ranks;
  for (int stage = 0; stage < p.pipeline; ++stage) ranks.push_back(stage * stage_stride);
  return ranks;
}

void write_file(const std::filesystem::path& path, const std::string& text, const std::string& flag) {
  core::write_output_file(path.string(), text, flag);
}

// --timeline-window START:END and --timeline-micro-batches, checked against the prediction.
engine::TimelineFilter timeline_filter(const RunArgs& args, const Prediction& p) {
  engine::TimelineFilter f;
  if (!args.timeline_window.empty()) {
    const size_t colon = args.timeline_window.find(':');
    const auto bad = [&] {
      return core::InputError("--timeline-window", "",
                              fmt::format("expected START:END in simulated seconds (END may be left out), e.g. 0:1.5, found \"{}\"",
                                          args.timeline_window));
    };
    if (colon == std::string::npos) throw bad();
    try {
      size_t used = 0;
      const std::string a = args.timeline_window.substr(0, colon), b = args.timeline_window.substr(colon + 1);
      f.start_s = a.empty() ? 0.0 : std::stod(a, &used);
      if (used != a.size()) throw bad();
      if (!b.empty()) {
        f.end_s = std::stod(b, &used);
        if (used != b.size()) throw bad();
      }
    } catch (const std::logic_error&) {
      throw bad();
    }
    if (!(f.start_s >= 0) || !(f.end_s > f.start_s)) throw bad();
  }
  for (int mb : args.timeline_micro_batches) {
    if (mb < 0 || mb >= p.built.micro_batches) {
      throw core::InputError("--timeline-micro-batches", "",
                             fmt::format("micro-batch {} is outside 0..{} (the iteration has {} micro-batches)", mb,
                                         p.built.micro_batches - 1, p.built.micro_batches));
    }
    f.micro_batches.push_back(static_cast<uint32_t>(mb));
  }
  if (args.timeline.empty() && !f.keeps_all()) {
    throw core::InputError(args.timeline_window.empty() ? "--timeline-micro-batches" : "--timeline-window", "",
                           "limits the --timeline file: give --timeline FILE too");
  }
  return f;
}

void print_warnings(const Scenario& s, std::ostream& err) {
  for (const std::string& w : s.warnings) err << "warning: " << w << "\n";
}

}  // namespace

int run_command(const RunArgs& args, std::ostream& out, std::ostream& err) {
  const Scenario scenario = load_scenario(args.scenario, args.overrides);
  if (args.strict_profile && !scenario.profile_mismatch.empty()) {
    throw core::InputError(scenario.file, "/simulation/profile", scenario.profile_mismatch + " (--strict-profile)");
  }
  print_warnings(scenario, err);
  std::vector<int> ranks = args.timeline_ranks;
  if (!args.timeline.empty() && ranks.empty()) ranks = default_timeline_ranks(scenario);
  for (int r : ranks) {
    if (r < 0 || r >= scenario.cluster.world_size()) {
      throw core::InputError("--timeline-ranks", "",
                             fmt::format("rank {} is outside the cluster's 0..{}", r, scenario.cluster.world_size() - 1));
    }
  }
  // `run` simulates once per process: SimGrid's platform needs only the links that run crosses.
  engine::simgrid_links_on_demand();
  Prediction prediction;
  try {
    // A long SimGrid run says where it is on stderr, and Ctrl-C stops it with what it knew.
    const WatchSimulations watch(err, args.scenario);
    const StopOnInterrupt stop;
    prediction = predict(scenario, args.backend, ranks);
  } catch (const engine::Interrupted& e) {
    err << "interrupted: " << WatchSimulations::describe(e.progress) << "\n";
    const Prediction analytic = predict(scenario, "analytic");
    err << fmt::format("the analytic backend (the same execution without contention) predicts {:.6g} s per iteration\n",
                       analytic.result.iteration_time.value());
    return EXIT_INTERRUPTED;
  }
  if (args.simulate_failures > 0) simulate_failures(scenario, prediction, args.simulate_failures, args.seed);
  if (!args.bands.empty()) {
    prediction.bands = std::make_shared<const BandSet>(band_set_with(args.bands));
  }
  const engine::TimelineFilter filter = timeline_filter(args, prediction);
  const core::Json report = report_json(scenario, prediction);
  const std::string table = report_table(scenario, prediction);

  switch (args.format) {
    case Format::JSON: out << report.dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n"; break;
    case Format::CSV: out << report_csv(report); break;
    case Format::TABLE: out << table; break;
  }

  if (!args.out_dir.empty()) {
    const std::filesystem::path dir(args.out_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw core::InputError(args.out_dir, "", fmt::format("cannot create the folder: {}", ec.message()));
    // The three files or none: all are written and closed before any is renamed into place.
    core::OutputFile json((dir / "report.json").string(), "--out");
    core::OutputFile text((dir / "report.txt").string(), "--out");
    core::OutputFile resolved((dir / "scenario.resolved.json").string(), "--out");
    json.stream() << report.dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
    text.stream() << table;
    resolved.stream() << scenario.to_json().dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
    for (core::OutputFile* f : {&json, &text, &resolved}) f->close();
    for (core::OutputFile* f : {&json, &text, &resolved}) f->commit();
  }
  if (!args.timeline.empty()) {
    core::OutputFile f(args.timeline, "--timeline");
    engine::write_chrome_trace(prediction.result, prediction.built.workload, f.stream(), filter);
    f.commit();
  }
  if (!args.html.empty()) write_file(args.html, html_report(report, args.timeline), "--html");
  return 0;
}

int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  const Scenario scenario = load_scenario(args.scenario, args.overrides);
  print_warnings(scenario, err);
  const Scenario::ProfileOut profile = args.resolve_profile ? Scenario::ProfileOut::RESOLVED : Scenario::ProfileOut::AS_GIVEN;
  out << scenario.to_json(profile).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace trainsim::cli

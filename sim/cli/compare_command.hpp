#pragma once
// `trainsim compare`: several configurations side by side, with the differences highlighted: the
// options and printing of plan::compare (sim/plan/compare.hpp), which does the work.
//
//   trainsim compare INPUT... [--set key=value]... [--backend analytic|simgrid] [--format table|json|csv]
//       Each INPUT is a report ("schema": "trainsim.report/1", from `run --format json` or `run --out`)
//       or a scenario, predicted with the analytic backend unless --backend simgrid. --set applies
//       to every scenario (an error with a report: its figures are fixed).
//   trainsim compare SCENARIO --vary key.path=V1,V2,... [--vary ...]... [--set ...]
//       One configuration per combination of the --vary values (several --vary: their cartesian
//       product, the first --vary changing slowest), each value applied like --set. Values are
//       separated by commas outside brackets, braces and quotes ("stage_layers=[4,4],[2,6]").
//
// One column per configuration, labelled by its file name or its --vary values; one row per report
// figure (report_figures.hpp: iteration time, throughput, TFLOP/s per GPU, MFU, the breakdown with
// the exposed communication per axis, peak memory and whether it fits, time-to-train and cost when
// the reports have them). Each number after the reference column (the first that did not fail) shows
// its difference from it in percent; a row where a configuration differs by more than 1% (or a
// label or "fits" differs) is marked "*" and, on a terminal, its differing cells are bold, green
// when better and red when worse. --plot draws one bar per configuration: the iteration's breakdown
// (--plot-figure time, the default), or the whole run's days, GPU-hours or cost (days, gpu_hours,
// cost: steady state plus what failures add), titled with what is compared. --html FILE writes
// one self-contained page: the table, the accuracy lines, and the iteration-time bars, plus the days
// and cost bars when every configuration that ran has them (training.tokens; a price). --format json gives every report in full plus the rows; --format
// csv one line per figure: metric, each configuration's value, then each one's difference in percent.
//
// A configuration that cannot run (load_scenario's ImpossibleScenario: divisibility, world size,
// parallelism.data "auto") is a column with its error message; the others are still shown. Bad input
// is an InputError (exit 2): an unreadable file, a malformed --vary or --set, an unknown key, a value
// of the wrong type, a file that is neither a scenario nor a trainsim.report/1 report.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"
#include "sim/plan/compare.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct CompareArgs {
  std::vector<std::string> inputs{};   // reports or scenarios; exactly one scenario with --vary
  std::vector<std::string> vary{};     // --vary key.path=v1,v2,...
  std::vector<std::string> overrides{};  // --set key.path=value, on every scenario
  std::string backend = "analytic";    // for scenarios: analytic | simgrid
  Format format = Format::TABLE;
  bool color = false;                  // table: bold/colour differing cells (stdout is a terminal)
  std::string plot{};                  // --plot FILE.svg|.png: the breakdowns side by side as bars
  std::string plot_figure = "time";    // --plot-figure time|days|gpu_hours|cost: what --plot draws
  std::string html{};                  // --html FILE: the table and the charts as one page
  bool quiet = false;                  // --quiet: no progress bar (there is one on a terminal only)
  std::vector<std::string> prices{};   // --price NAME=USD,... (plan::parse_prices)
  std::string bands{};                 // --bands FILE (plan::CompareOptions::bands)
};
// The table (or JSON, CSV) on `out`; on `err` the configurations' warnings (a profile fitted on
// another GPU, ...: scenario_warnings.hpp, each once with the columns it concerns) and, on a
// terminal, a progress bar over the configurations.
int compare_command(const CompareArgs& args, std::ostream& out, std::ostream& err);


// `compare`, registered on the application's CLI11 App (like ReplaySubcommand).
//
// Example (sim/cli/main.cpp):
//   CompareSubcommand compare(app);
//   app.parse(argc, argv);
//   if (std::optional<int> code = compare.run(std::cout, std::cerr)) return *code;
class CompareSubcommand {
 public:
  explicit CompareSubcommand(CLI::App& app);
  CompareSubcommand(const CompareSubcommand&) = delete;
  CompareSubcommand& operator=(const CompareSubcommand&) = delete;

  // After app.parse(): the exit code, or std::nullopt when `compare` was not on the command line.
  // Colours the table when `out` is std::cout on a terminal and NO_COLOR is not set.
  std::optional<int> run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_ = nullptr;
  CompareArgs args_;
};

}  // namespace trainsim::cli

#pragma once
// `trainsim sweep SCENARIO --set-range KEY=RANGE ...`: runs the scenario at every point of the
// cartesian product of the ranges and prints the scaling curve: per point the swept values, GPUs,
// iteration time, tokens/s, model TFLOP/s per GPU, MFU and the scaling efficiency, i.e. the
// throughput per GPU relative to the first point that ran:
//   efficiency_i = (tokens_per_s_i / gpus_i) / (tokens_per_s_0 / gpus_0)     (1 exactly at point 0)
// Points are ordered like nested loops over the ranges in the order given (the last range varies
// fastest). A point that cannot run (a degree that no longer divides, ...) is a row with its error;
// the others still run. Exit 0 when some point ran, 2 when none did or the input is bad.
//
//   trainsim sweep scenarios/gpt3-175b-a100-1024.json --set-range parallelism.pipeline=4,8,16
//       --set-range training.micro_batch=1:4:x2 --format csv --plot scaling.svg     (one line)

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"
#include "sim/core/json_reader.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

// One swept key and its values.
struct SweepRange {
  std::string key;                // a --set key path, e.g. "cluster.nodes"
  std::vector<core::Json> values;
  bool geometric = false;         // given as START:END:xFACTOR (plots use a log2 axis)
};

// Parses "KEY=START:END:xFACTOR" (geometric: START, START*FACTOR, ... <= END; FACTOR > 1, START > 0),
// "KEY=START:END:+STEP" (arithmetic; STEP > 0) or "KEY=V1,V2,..." (a list; each value JSON when it
// parses as JSON, else a string, like --set). Integers stay integers when START, END and the factor
// or step are integers. Ranges with more than `max_values` values are refused before they are built.
// Throws InputError (file "--set-range") naming the flag's text and what was expected.
SweepRange parse_sweep_range(const std::string& assignment, uint64_t max_values = 10'000'000);

// A sweep of more points than this needs --yes.
inline constexpr uint64_t SWEEP_POINTS_WITHOUT_YES = 10'000;
// The most points a sweep runs even with --yes: each range is capped at this, and so is their
// product (three ranges of 10^7 values made 10^21 points, read as 0 and reported as "none of the
// 0 points could run").
inline constexpr uint64_t MAX_SWEEP_POINTS = 10'000'000;

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> overrides;  // --set, applied before the ranges
  std::vector<std::string> ranges;     // --set-range, at least one
  std::string backend = "analytic";    // --backend analytic | simgrid
  Format format = Format::TABLE;       // table | json | csv
  std::string plot;                    // --plot FILE.svg | FILE.png: the scaling curve
  bool yes = false;                    // --yes: allow more than SWEEP_POINTS_WITHOUT_YES points
  bool quiet = false;                  // --quiet: no progress bar (drawn only on a terminal anyway)
};
// The curve on `out`; on `err` the points' warnings (a profile fitted on another GPU, ...:
// scenario_warnings.hpp, each once with the points it concerns) and, on a terminal, a progress bar.
int sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err);

// `sweep`, registered on the application's CLI11 App (like CollectiveSubcommand): keep it in place
// until run(), which returns std::nullopt when `sweep` was not on the command line.
class SweepSubcommand {
 public:
  explicit SweepSubcommand(CLI::App& app);
  SweepSubcommand(const SweepSubcommand&) = delete;
  SweepSubcommand& operator=(const SweepSubcommand&) = delete;
  std::optional<int> run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_ = nullptr;
  SweepArgs args_;
};

}  // namespace trainsim::cli

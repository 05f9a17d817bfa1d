#pragma once
// A scenario run at every point of the cartesian product of ranges of values (`trainsim sweep`): the
// scaling curve. Per point the swept values and the report, or why it cannot run; and the scaling
// efficiency, i.e. the throughput per GPU relative to the first point that ran:
//   efficiency_i = (tokens_per_s_i / gpus_i) / (tokens_per_s_0 / gpus_0)     (1 exactly at point 0)
// (samples/s for a layer-graph model, which has no tokens). Points are ordered like nested loops over
// the ranges in the order given (the last range varies fastest). A point that cannot run (a degree
// that no longer divides, ...) keeps its error; the others still run.
//
// Example:
//   plan::SweepOptions o;
//   o.scenario = "scenarios/gpt3-6.7b-a100-8.json";
//   o.ranges = {"training.micro_batch=1:4:x2"};   // 1, 2, 4
//   const plan::SweepResult r = plan::sweep(o);
//   // r.points[2].values[0] == 4; r.points[2].figure("iteration_time_s"); r.points[2].efficiency

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/prices.hpp"
#include "sim/plan/scenario_warnings.hpp"

namespace trainsim::plan {

// One swept key and its values.
struct SweepRange {
  std::string key;                // a scenario key path (apply_override), e.g. "cluster.nodes"
  std::vector<core::Json> values;
  bool geometric = false;         // given as START:END:xFACTOR (plots use a log2 axis)
};

// Parses "KEY=START:END:xFACTOR" (geometric: START, START*FACTOR, ... <= END; FACTOR > 1, START > 0),
// "KEY=START:END:+STEP" (arithmetic; STEP > 0) or "KEY=V1,V2,..." (a list; each value JSON when it
// parses as JSON, else a string, like an override; commas inside JSON objects, arrays and strings do
// not split: `cluster.gpu={"base":"H100-SXM5-80GB","label":"H100"},B200`). Integers stay integers when START, END and the
// factor or step are integers. Ranges with more than `max_values` values are refused before they are
// built. Throws InputError (file "--set-range") naming the text and what was expected.
SweepRange parse_sweep_range(const std::string& assignment, uint64_t max_values = 10'000'000);

// A sweep of more points than this needs SweepOptions::yes.
inline constexpr uint64_t SWEEP_POINTS_WITHOUT_YES = 10'000;
// The most points a sweep runs even with `yes`: each range is capped at this, and so is their
// product (three ranges of 10^7 values made 10^21 points, read as 0 and reported as "none of the
// 0 points could run").
inline constexpr uint64_t MAX_SWEEP_POINTS = 10'000'000;

struct SweepOptions {
  std::string scenario{};              // the scenario file
  std::vector<std::string> overrides{};  // "key.path=value", applied before the ranges
  std::vector<std::string> ranges{};   // parse_sweep_range's syntax; at least one range in all (with
                                       // parsed_ranges), each key once
  std::string backend = "analytic";    // analytic | simgrid (each point in a child process)
  bool yes = false;                    // allow more than SWEEP_POINTS_WITHOUT_YES points
  bool quiet = false;                  // no progress bar (drawn on a terminal only: progress.hpp)
  // --price: each point's cluster.price_per_gpu_hour from its GPU's entry (apply_prices); a name that
  // prices none of the points' GPUs is an InputError.
  PriceList prices{};
  // The scenario already in memory (the Python module's dicts): read instead of the file `scenario`,
  // which then only names it in messages and anchors relative paths (simulation.profile).
  std::optional<core::Json> document{};
  // Ranges already parsed (parse_sweep_range's, or values given one by one: the Python module's
  // lists, whose strings may hold ',' or ':'), swept after those of `ranges`; each needs a key and a
  // value.
  std::vector<SweepRange> parsed_ranges{};
};

struct SweepPoint {
  std::vector<core::Json> values;    // one per range
  std::optional<core::Json> report;  // trainsim.report/1 (predict_report); absent when it cannot run
  std::string error;                 // why it cannot run: "pointer: message; ..."
  double efficiency = 0;             // scaling efficiency (see the top of this file); 0 when it cannot run

  // A number of the report ("iteration_time_s", "mfu", ...); NaN when the point cannot run.
  double figure(const std::string& name) const;
  // The report's world_size; 0 when the point cannot run.
  int gpus() const;
};

struct SweepResult {
  std::string name;     // the scenario's name (of the first point that reads; else the file's stem)
  std::string backend;
  std::vector<SweepRange> ranges;
  std::vector<SweepPoint> points;
  ScenarioWarnings warnings;  // the points' scenarios' warnings, labelled by their values

  // The points that ran.
  size_t ran() const;
  // "tokens_per_s", or "samples_per_s" for a layer-graph model (no tokens; docs/cnn.md).
  std::string throughput() const;
};

// Runs the sweep. Throws InputError for bad input: a malformed or repeated range, too many points
// (MAX_SWEEP_POINTS; SWEEP_POINTS_WITHOUT_YES without `yes`), an unreadable scenario or override, an
// unknown key in a range (once, naming --set-range, rather than at every point). A sweep where no
// point ran is a result (ran() == 0), for the caller to show the errors before it reports it. Throws
// engine::Interrupted on Ctrl-C (a SimGrid child ended by SIGINT, or StopOnInterrupt's flag between
// points).
SweepResult sweep(const SweepOptions& options);

}  // namespace trainsim::plan

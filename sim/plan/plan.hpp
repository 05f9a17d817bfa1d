#pragma once
// The planner as a library (namespace and target trainsim::plan): what `trainsim run`, `check`,
// `search`, `compare`, `sweep` and `validate` compute, without the command line (sim/cli parses the
// arguments, calls these and prints the results). Scenario in, report out:
//
//   #include "sim/plan/plan.hpp"
//   namespace plan = trainsim::plan;
//
//   // One prediction (the report of `trainsim run --format json`).
//   const plan::Scenario s = plan::load_scenario("scenarios/gpt3-6.7b-a100-8.json", {"training.micro_batch=2"});
//   const plan::Prediction p = plan::predict(s, "analytic");   // "" = the scenario's backend (simgrid)
//   const trainsim::core::Json report = plan::report_json(s, p);
//   double t = report["iteration_time_s"];                      // == p.iteration_time_s()
//
//   // Every layout of the model on its cluster, ranked (`trainsim search`).
//   plan::SearchOptions so;
//   so.scenario = "scenarios/gpt3-6.7b-a100-8.json";
//   so.recheck = false;                                          // no SimGrid re-check of the top
//   const plan::Search search(so);
//   const plan::SearchResult found = search.run();               // found.ranked[0]: the best layout
//
//   // Configurations side by side (`trainsim compare`), a scaling curve (`trainsim sweep`).
//   const plan::CompareResult c = plan::compare({.inputs = {so.scenario}, .vary = {"parallelism.tensor=2,4"}});
//   const plan::SweepResult w = plan::sweep({.scenario = so.scenario, .ranges = {"training.micro_batch=1:4:x2"}});
//
//   // Published runs against their predictions (`trainsim validate`).
//   const plan::ValidateResult v = plan::validate({.paths = {"validation/training"}, .backend = "analytic"});
//
// The pieces, one header each:
//   scenario.hpp           Scenario, load_scenario / read_scenario (file, overrides, every check),
//                          apply_override ("key.path=value"), ImpossibleScenario
//   prediction.hpp         predict (scenario -> workload -> backend), report_json (trainsim.report/1),
//                          report_table, predict_report (SimGrid in a child process), WatchSimulations
//   search.hpp             Search, SearchOptions, SearchResult, shard files and merge_shards
//   search_estimate.hpp    the closed-form first pass of search (estimate_layout)
//   compare.hpp            compare: CompareOptions -> CompareResult (configurations and rows)
//   sweep.hpp              sweep: SweepOptions -> SweepResult (points, scaling efficiency)
//   validate.hpp           validate: ValidateOptions -> ValidateResult (cases, signed errors, totals)
//   results_json.hpp       search's, compare's, sweep's and validate's results as the JSON documents
//                          their commands print (`--format json`) and the Python module returns
//   time_to_train.hpp      time-to-train and cost at a predicted iteration time
//   resilience.hpp         checkpoints and failures in closed form, and simulated runs
//   report_figures.hpp     the report's main figures (compare's rows, run's CSV columns)
//   scenario_warnings.hpp  the warnings of many scenarios, each once
//   progress.hpp           Progress (a bar on stderr, only on a terminal) and StopOnInterrupt (Ctrl-C)
//
// Errors: bad input throws core::InputError (file, JSON pointer, message; the options a command line
// fills name their flag, e.g. "--set-range"); a bug throws core::InternalError. Nothing here exits
// or writes to stdout. The only output is Progress's bar on stderr when it is a terminal (every
// options struct has `quiet` to turn it off) and WatchSimulations' lines on the stream it is given.
// SimGrid builds one platform per process: predict() with the SimGrid backend runs once per process,
// and predict_report (used by compare, sweep and search's re-check) forks a child for each. Search,
// compare, sweep and validate stop on Ctrl-C while a StopOnInterrupt exists (progress.hpp): search
// with what it has (result.interrupted), the others by throwing engine::Interrupted.
// Scenarios already in memory (the Python module's dicts, python/bindings.cpp): read_scenario, and
// SearchOptions::document, SweepOptions::document, CompareOptions::documents.

#include "sim/plan/compare.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/results_json.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/plan/search.hpp"
#include "sim/plan/sweep.hpp"
#include "sim/plan/time_to_train.hpp"
#include "sim/plan/validate.hpp"

#pragma once
// The results of search, compare, sweep and validate as JSON documents: what each command prints with
// `--format json`, and what the Python module returns (docs/python.md). Each document names its schema;
// fields are added, never renamed.
//
//   trainsim.search/1      scenario, objective, interrupted, space {candidates, valid, rejected by
//                          reason}, simgrid_runs, recheck_refused (when any), ranked: best first,
//                          each {rank, layout (Layout::to_json), objective, estimate {iteration_time_s,
//                          peak_bytes_per_gpu}, analytic and simgrid (Figures::to_json, when evaluated),
//                          band {relative, low, high} of the objective, envelope {inside, summary}},
//                          accuracy (RankingAccuracy::to_json: which of the best are tied)
//   trainsim.compare/1     reference (index, or null), highlight_pct, configurations: each {label,
//                          source, kind, vary (when varied), report or error + problems}, rows: each
//                          {metric, values (one per configuration, null where absent), diff_pct, differs}
//   trainsim.sweep/1       scenario, backend, keys, points: each {values {key: value}, world_size,
//                          iteration_time_s, tokens_per_s, samples_per_s, model_tflops_per_gpu, mfu,
//                          scaling_efficiency} or {values, error}
//   trainsim.validation/1  signed_error (its definition), cases: each {case, file, metric, predicted,
//                          measured, signed_error, prediction, within_tolerance (with a tolerance),
//                          not_judged} or {case, file, error, error_kind, problems}, summary, tolerance
//
// Example:
//   const plan::Search search(options);
//   const plan::SearchResult result = search.run();
//   std::cout << plan::search_json(search, result).dump(2) << "\n";

#include "sim/core/json_reader.hpp"
#include "sim/plan/compare.hpp"
#include "sim/plan/search.hpp"
#include "sim/plan/sweep.hpp"
#include "sim/plan/validate.hpp"

namespace trainsim::plan {

core::Json search_json(const Search& search, const SearchResult& result);
core::Json compare_json(const CompareResult& result);
core::Json sweep_json(const SweepResult& result);
core::Json validate_json(const ValidateResult& result);

}  // namespace trainsim::plan

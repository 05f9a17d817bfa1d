#include "sim/cli/search_command.hpp"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <thread>

#include "sim/plan/progress.hpp"
#include "sim/plan/ranking_accuracy.hpp"
#include "sim/plan/results_json.hpp"
#include "sim/cli/cli_options.hpp"
#include "sim/cli/report_charts.hpp"
#include "sim/cli/search_mpi.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/report/bar_chart.hpp"
#include "sim/report/chart_file.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

int parse_positive(const std::string& text, const std::string& flag) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1 || v > 1'000'000) {
    throw core::InputError(flag, "", fmt::format("expected a positive GPU count, found \"{}\"", text));
  }
  return static_cast<int>(v);
}

void parse_shard(const std::string& text, SearchOptions& o) {
  const size_t slash = text.find('/');
  bool ok = slash != std::string::npos;
  if (ok) {
    try {
      size_t a = 0, b = 0;
      o.shard_index = std::stoi(text.substr(0, slash), &a);
      o.shard_count = std::stoi(text.substr(slash + 1), &b);
      ok = a == slash && b == text.size() - slash - 1;
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count) {
    throw core::InputError("--shard", "", fmt::format("expected I/N with 0 <= I < N (e.g. 0/4), found \"{}\"", text));
  }
}

std::vector<std::pair<std::string, double>> breakdown_rows(const Figures& f) {
  std::vector<std::pair<std::string, double>> rows;
  const core::Json& b = f.breakdown_s;
  rows.emplace_back("compute", b.value("compute", 0.0));
  if (b.contains("exposed_communication_by_axis")) {
    for (const auto& [axis, v] : b["exposed_communication_by_axis"].items()) {
      rows.emplace_back("exposed " + axis + " comm", v.get<double>());
    }
  }
  rows.emplace_back("pipeline bubble", b.value("pipeline_bubble", 0.0));
  rows.emplace_back("optimizer + other", b.value("other", 0.0));
  rows.emplace_back("iteration time", f.iteration_time_s);
  return rows;
}

std::string objective_text(const Search& s, const Evaluated& e) {
  const double v = s.objective_of(e);
  switch (s.options().objective) {
    case Objective::MFU: return fmt::format("{:.1f}%", 100 * v);
    case Objective::TOKENS_PER_S:
    case Objective::SAMPLES_PER_S: return fmt::format("{:.0f}", v);
    case Objective::TIME_TO_TRAIN: return fmt::format("{:.2f} days", v);
    case Objective::COST: return fmt::format("${:.0f}", v);
    case Objective::TOKENS_PER_DOLLAR: return fmt::format("{:.0f}", v);
    case Objective::ENERGY:
      if (s.scenario_of(e.layout).training.tokens) return fmt::format("{:.4g} MWh", v);
      return fmt::format("{:.4g} J/{}", v, s.layer_graph() ? "sample" : "token");
    case Objective::CO2: return fmt::format("{:.4g} tCO2eq", v);
    default: return fmt::format("{:.4f}", v);
  }
}

std::string result_csv(const Search& s, const SearchResult& r) {
  std::string out =
      "rank,gpu,gpus,tensor,pipeline,data,context,expert,virtual_stages,micro_batch,sequence_parallel,recompute,"
      "zero_stage,zero_impl,estimate_s,analytic_s,simgrid_s,tokens_per_s,mfu,peak_bytes_per_gpu,fits,objective,goodput,"
      "spatial,samples_per_s,stack,stack_runs,objective_low,objective_high,inside_envelope,tied_with_first,equivalent";
  // A cluster of several GPU types: the pools each layout uses and the one that binds, last.
  const bool pools = std::any_of(r.ranked.begin(), r.ranked.end(), [](const Evaluated& e) { return !e.layout.pools.empty(); });
  out += pools ? ",pools,binding_pool\n" : "\n";
  const RankingAccuracy accuracy = search_accuracy(s, r, r.ranked.size(), s.band_set());
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    const Evaluated& e = r.ranked[i];
    const RankedEntry& a = accuracy.entries[i];
    const Layout& l = e.layout;
    const Figures* f = e.best_figures();
    std::string equivalent;  // the merged layouts' descriptions, ';'-separated (no ',' in them)
    for (const Layout& q : e.equivalent) equivalent += fmt::format("{}{}", equivalent.empty() ? "" : ";", q.describe());
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i + 1, l.gpu, l.gpus, l.tensor,
                       l.pipeline, l.data, l.context, l.expert, l.virtual_stages, l.micro_batch, l.sequence_parallel,
                       models::to_string(l.recompute), l.zero_stage, l.zero_stage > 0 ? models::to_string(l.zero_impl) : "",
                       e.estimate.iteration_time_s, e.analytic ? fmt::format("{}", e.analytic->iteration_time_s) : "",
                       e.simgrid ? fmt::format("{}", e.simgrid->iteration_time_s) : "",
                       f ? fmt::format("{}", f->tokens_per_s) : "", f ? fmt::format("{}", f->mfu) : "",
                       f ? f->peak_memory_bytes : e.estimate.peak_memory_bytes, f ? (f->fits ? "true" : "false") : "",
                       s.objective_of(e), f && f->goodput ? fmt::format("{}", *f->goodput) : "", l.spatial,
                       f ? fmt::format("{}", f->samples_per_s) : "", l.stack, l.stack_runs ? "true" : "false",
                       a.band.finite() ? fmt::format("{}", a.band.low(a.value)) : "",
                       a.band.finite() ? fmt::format("{}", a.band.high(a.value)) : "", a.envelope.inside() ? "true" : "false",
                       i < accuracy.tied ? "true" : "false", equivalent);
    if (pools) {
      out.back() = ',';
      out += fmt::format("{},{}\n", l.pools, f ? f->binding_pool : "");
    }
  }
  return out;
}

std::string result_table(const Search& s, const SearchResult& r) {
  const SearchOptions& o = s.options();
  std::string out;
  auto line = [&out](const std::string& t) { out += t + "\n"; };
  uint64_t rejected = 0;
  for (const auto& [reason, n] : r.rejected) rejected += n;
  size_t refined = 0, rechecked = 0;
  for (const Evaluated& e : r.ranked) {
    refined += e.analytic.has_value();
    rechecked += e.simgrid.has_value();
  }
  line(fmt::format("search {}: objective {}{}", o.scenario, to_string(o.objective),
                   r.interrupted ? " (INTERRUPTED: best found so far)" : ""));
  line(fmt::format("candidates: {} enumerated, {} valid, {} rejected; {} ranked with the analytic backend, {} re-checked "
                   "with SimGrid{}",
                   r.candidates, r.valid, rejected, refined, rechecked,
                   rechecked > r.simgrid_runs && r.simgrid_runs > 0
                       ? fmt::format(" ({} simulations: layouts with the same workload timing share one)", r.simgrid_runs)
                       : ""));
  if (r.merged > 0) {
    line(fmt::format("merged: {} layout(s) whose figures equal a ranked one's, listed under it as \"same figures\"",
                     r.merged));
  }
  // Re-checks over simulation.max_flows that priced some collectives in closed form (marked ~).
  std::map<std::string, size_t> approximated;
  for (size_t i = 0; i < std::min(r.ranked.size(), static_cast<size_t>(o.top)); ++i) {
    const std::optional<plan::Figures>& f = r.ranked[i].simgrid;
    if (f && !f->closed_form.empty()) ++approximated[fmt::format("{}", fmt::join(f->closed_form, ", "))];
  }
  for (const auto& [groups, n] : approximated) {
    line(fmt::format("approximated: {} re-check(s) over simulation.max_flows priced the collectives of the {} groups in "
                     "closed form, without contention (simgrid_s marked ~; simulation.over_budget)",
                     n, groups));
  }
  for (const auto& [reason, n] : r.recheck_refused) {
    line(fmt::format("not re-checked: {} simulation(s) {} (analytic figures kept; --backend analytic or a larger "
                     "simulation.max_flows)",
                     n, reason));
  }
  line("");
  const bool many_types = o.gpu_types.size() > 1;
  const size_t shown = std::min(r.ranked.size(), static_cast<size_t>(o.top));
  // With training.checkpoint every refined candidate has a goodput: a column (the objective uses it).
  bool goodputs = false;
  for (size_t i = 0; i < shown; ++i) goodputs = goodputs || (r.ranked[i].best_figures() && r.ranked[i].best_figures()->goodput);
  // The layout and GPU columns as wide as their longest entry (suffixes such as " offload:none" or
  // "[fsdp]" vary in length), at least as wide as they always were.
  size_t layout_width = 60, gpu_width = 16, pools_width = 5, binds_width = 5;
  bool pools = false;  // a cluster of several GPU types: which pools each layout uses, and which binds
  for (size_t i = 0; i < shown; ++i) {
    layout_width = std::max(layout_width, r.ranked[i].layout.describe().size());
    gpu_width = std::max(gpu_width, r.ranked[i].layout.gpu.size());
    pools_width = std::max(pools_width, r.ranked[i].layout.pools.size());
    if (const Figures* f = r.ranked[i].best_figures()) binds_width = std::max(binds_width, f->binding_pool.size());
    pools = pools || !r.ranked[i].layout.pools.empty();
  }
  // "h100+a100 a100": the pools it runs on, and the pool whose ranks finish last ("-" on one pool).
  const auto pool_columns = [&](const Evaluated& e) {
    if (!pools) return std::string();
    const Figures* f = e.best_figures();
    return fmt::format(" {:<{}} {:<{}}", e.layout.pools, pools_width,
                       f && !f->binding_pool.empty() ? f->binding_pool : "-", binds_width);
  };
  line(fmt::format("{:>4} {:>6}{}{} {:<{}} {:>11} {:>11} {:>10} {:>6} {:>9}{} {:>12}", "rank", "gpus",
                   many_types ? fmt::format(" {:<{}}", "gpu", gpu_width) : "",
                   pools ? fmt::format(" {:<{}} {:<{}}", "pools", pools_width, "binds", binds_width) : "", "layout",
                   layout_width, "analytic_s",
                   "simgrid_s", s.layer_graph() ? "samples/s" : "tokens/s", "MFU", "mem_GiB",
                   goodputs ? fmt::format(" {:>8}", "goodput") : "", to_string(o.objective)));
  for (size_t i = 0; i < shown; ++i) {
    const Evaluated& e = r.ranked[i];
    const Figures* f = e.best_figures();
    const std::string goodput = !goodputs ? ""
                                : f && f->goodput ? fmt::format(" {:>7.2f}%", 100 * *f->goodput)
                                                  : fmt::format(" {:>8}", "-");
    line(fmt::format("{:>4} {:>6}{}{} {:<{}} {:>11} {:>11} {:>10} {:>6} {:>9.1f}{} {:>12}", i + 1, e.layout.gpus,
                     many_types ? fmt::format(" {:<{}}", e.layout.gpu, gpu_width) : "", pool_columns(e),
                     e.layout.describe(), layout_width,
                     e.analytic ? fmt::format("{:.4f}", e.analytic->iteration_time_s)
                                : fmt::format("~{:.4f}", e.estimate.iteration_time_s),
                     e.simgrid ? fmt::format("{}{:.4f}", e.simgrid->closed_form.empty() ? "" : "~",
                                             e.simgrid->iteration_time_s)
                               : "-",
                     f ? fmt::format("{:.0f}", s.layer_graph() ? f->samples_per_s : f->tokens_per_s) : "-", f ? fmt::format("{:.1f}%", 100 * f->mfu) : "-",
                     (f ? f->peak_memory_bytes : e.estimate.peak_memory_bytes) / core::GiB, goodput,
                     objective_text(s, e)));
    if (!e.equivalent.empty()) {
      std::string names;
      for (const Layout& q : e.equivalent) names += fmt::format("{}{}", names.empty() ? "" : "; ", q.difference_from(e.layout));
      line(fmt::format("{:>11} same figures: {}", "", names));
    }
  }
  if (shown > 0) {
    line("");
    const BandSet& bands = s.band_set();
    line(fmt::format("accuracy ({} backend residuals of {} validation cases, {}):", bands.backend, bands.cases.size(),
                     bands.source));
    for (const std::string& l : search_accuracy(s, r, shown, s.band_set()).lines()) line("  " + l);
  }
  if (!r.rejected.empty()) {
    line("");
    line("rejected (first reason):");
    for (const auto& [reason, n] : rejection_reasons(r.rejected)) line(fmt::format("  {:>10}  {}", n, reason));
  }
  // The runner-up: the first layout whose figures differ from the winner's (layouts that differ only
  // in an implementation detail the model prices the same, e.g. fsdp and fsdp2, tell nothing).
  size_t runner = 1;
  if (!r.ranked.empty() && r.ranked[0].best_figures()) {
    const double t0 = r.ranked[0].best_figures()->iteration_time_s;
    for (size_t i = 1; i < r.ranked.size(); ++i) {
      const Figures* f = r.ranked[i].best_figures();
      if (f != nullptr && std::abs(f->iteration_time_s - t0) > 1e-4 * t0) {
        runner = i;
        break;
      }
    }
  }
  if (r.ranked.size() > runner && r.ranked[0].best_figures() && r.ranked[runner].best_figures()) {
    const Figures& a = *r.ranked[0].best_figures();
    const Figures& b = *r.ranked[runner].best_figures();
    const std::string second = fmt::format("#{}", runner + 1);
    line("");
    line(fmt::format("why #1 wins over {}, the first with different figures ({} figures, seconds per iteration on the "
                     "critical rank):",
                     second, r.ranked[0].simgrid && r.ranked[runner].simgrid ? "SimGrid" : "analytic"));
    line(fmt::format("  #1 {}", r.ranked[0].layout.describe()));
    line(fmt::format("  {} {}", second, r.ranked[runner].layout.describe()));
    line(fmt::format("  {:<28}{:>12}{:>12}{:>12}", "", "#1", second, second + " - #1"));
    const auto ra = breakdown_rows(a), rb = breakdown_rows(b);
    for (size_t i = 0; i < ra.size() && i < rb.size(); ++i) {
      if (ra[i].second == 0 && rb[i].second == 0) continue;
      line(fmt::format("  {:<28}{:>12.4f}{:>12.4f}{:>+12.4f}", ra[i].first, ra[i].second, rb[i].second,
                       rb[i].second - ra[i].second));
    }
    line(fmt::format("  {:<28}{:>12.2f}{:>12.2f}{:>+12.2f}", "peak memory (GiB)", a.peak_memory_bytes / core::GiB,
                     b.peak_memory_bytes / core::GiB, (b.peak_memory_bytes - a.peak_memory_bytes) / core::GiB));
  }
  return out;
}

void print(const Search& s, const SearchResult& r, Format format, std::ostream& out) {
  if (format == Format::JSON) {
    out << search_json(s, r).dump(2, ' ', false, core::Json::error_handler_t::replace) << "\n";
  } else if (format == Format::CSV) {
    out << result_csv(s, r);
  } else {
    out << result_table(s, r);
  }
}

// The shown layouts as ranked bars of their breakdown (SimGrid figures where re-checked).
void write_plot(const Search& search, const SearchResult& r, const std::string& path) {
  std::vector<LabeledReport> bars;
  const size_t shown = std::min(r.ranked.size(), static_cast<size_t>(search.options().top));
  for (size_t i = 0; i < shown; ++i) {
    const Figures* f = r.ranked[i].best_figures();
    if (f == nullptr) continue;
    core::Json report;
    report["iteration_time_s"] = f->iteration_time_s;
    report["breakdown_s"] = f->breakdown_s;
    bars.push_back({fmt::format("#{} {}", i + 1, r.ranked[i].layout.describe()), report});
  }
  report::write_chart_file(path, report::render_bar_chart(breakdown_bar_chart(bars, "search: " + search.options().scenario)),
                           "--plot");
}

// The scenario's warnings are not progress: printed even with --quiet, like `run` does.
void print_warnings(const Search& search, std::ostream& err) {
  for (const std::string& w : search.warnings()) err << "warning: " << w << "\n";
}

void log_first_pass(const SearchResult& result, const SearchOptions& o, std::ostream& err) {
  if (o.quiet) return;
  err << fmt::format("search: first pass: {} candidates, {} estimated, {} valid in {:.2f} s ({:.0f} estimates per "
                     "minute, {} jobs)\n",
                     result.candidates, result.estimated, result.valid, result.first_pass_s,
                     static_cast<double>(result.estimated) / std::max(result.first_pass_s, 1e-9) * 60, o.jobs);
  err << fmt::format("search: analytic backend: {} best estimates in {:.2f} s\n", result.ranked.size(), result.refine_s);
}

int finish(const Search& search, SearchResult& result, const SearchArgs& args, std::ostream& out) {
  search.finish(result);
  print(search, result, args.format, out);
  if (!args.plot.empty()) write_plot(search, result, args.plot);
  return result.interrupted ? EXIT_INTERRUPTED : 0;
}

}  // namespace

std::vector<int> parse_gpu_counts(const std::string& text) {
  std::vector<int> out;
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const int lo = parse_positive(text.substr(0, colon), "--gpus");
    const int hi = parse_positive(text.substr(colon + 1), "--gpus");
    if (lo > hi) throw core::InputError("--gpus", "", fmt::format("empty range {}: {} > {}", text, lo, hi));
    for (int64_t g = lo; g <= hi; g *= 2) out.push_back(static_cast<int>(g));
    if (out.back() != hi) out.push_back(hi);
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(parse_positive(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start), "--gpus"));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// --max-power: a number of MW, or a power with its unit ("30MW", "500 kW"), in watts.
double parse_site_power(const std::string& text) {
  double watts = 0;
  const core::Json as_text = text;
  char* end = nullptr;
  const double mw = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && *end == '\0') {
    watts = mw * 1e6;
  } else if (!core::parse_watts(as_text, watts)) {
    throw core::InputError("--max-power", "", fmt::format("expected a site power such as \"30MW\", \"30\" (MW) or "
                                                          "\"500 kW\", found \"{}\"", text));
  }
  if (!(watts > 0)) {
    throw core::InputError("--max-power", "", fmt::format("expected a positive site power, found \"{}\"", text));
  }
  return watts;
}

// The options given as text (--gpus, --price, --memory-headroom, --max-power) into args.options.
void parse_text_options(SearchArgs& args) {
  if (!args.gpus.empty()) args.options.gpus = parse_gpu_counts(args.gpus);
  if (!args.prices.empty()) args.options.prices = parse_prices(args.prices, "--price");
  if (!args.headroom.empty()) args.options.headroom = MemoryHeadroom::parse(args.headroom, "--memory-headroom");
  if (!args.max_power.empty()) args.options.max_power_w = parse_site_power(args.max_power);
}

std::string search_shard_text(SearchArgs args, std::ostream& err, bool& interrupted) {
  parse_text_options(args);
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  const Search search(args.options);
  if (mpi_world_size() == 1 || args.options.shard_index == 0) print_warnings(search, err);  // once under mpirun
  const SearchResult result = search.evaluate();
  log_first_pass(result, args.options, err);
  interrupted = result.interrupted;
  return shard_json(search, result).dump(1, ' ', false, core::Json::error_handler_t::replace) + "\n";
}

int search_command(SearchArgs args, std::ostream& out, std::ostream& err) {
  if (args.options.scenario.empty()) throw core::InputError("search", "", "expected a scenario file (or `search merge FILES`)");
  // Started by mpirun with several ranks: each evaluates its share and rank 0 prints the merge.
  if (mpi_world_size() > 1) return search_mpi_command(std::move(args), out, err);
  parse_text_options(args);
  if (!args.shard.empty()) parse_shard(args.shard, args.options);
  if (!args.plot.empty()) report::check_chart_path(args.plot, "--plot");
  StopOnInterrupt interrupt;
  const auto start = std::chrono::steady_clock::now();
  const Search search(args.options);
  print_warnings(search, err);
  SearchResult result = search.evaluate();
  log_first_pass(result, args.options, err);
  if (!args.shard.empty()) {
    const std::string text = shard_json(search, result).dump(1, ' ', false, core::Json::error_handler_t::replace) + "\n";
    if (args.out.empty()) {
      out << text;
    } else {
      core::write_output_file(args.out, text, "--out");
    }
    return result.interrupted ? EXIT_INTERRUPTED : 0;
  }
  const int code = finish(search, result, args, out);
  if (!args.options.quiet) {
    err << fmt::format("search: done in {:.1f} s\n",
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return code;
}

int merge_shards(const std::vector<std::pair<core::Json, std::string>>& files, const SearchArgs& args, std::ostream& out) {
  plan::MergedShards merged = plan::merge_shards(files, args.options);
  return finish(merged.search, merged.result, args, out);
}

int search_merge_command(SearchArgs args, std::ostream& out, std::ostream&) {
  if (args.merge_files.empty()) throw core::InputError("search merge", "", "expected shard files");
  StopOnInterrupt interrupt;
  std::vector<std::pair<core::Json, std::string>> files;
  for (const std::string& file : args.merge_files) files.emplace_back(core::load_json_file(file), file);
  return merge_shards(files, args, out);
}

SearchSubcommand::SearchSubcommand(CLI::App& app) {
  SearchOptions& o = args_.options;
  command_ = app.add_subcommand("search", "Rank every parallel layout of a scenario's model on its cluster (docs/search.md)");
  command_->add_option("scenario", o.scenario, "Scenario JSON file (its parallelism section is replaced)");
  command_->add_option("--set", o.overrides, "Override a scenario value first: key.path=value (repeatable)")
      ->type_name("KEY=VALUE");
  command_->add_option("--gpus", args_.gpus, "GPU counts: MIN:MAX (powers of two between) or a list A,B,C")
      ->type_name("SPEC");
  command_->add_option("--gpu", o.gpu_types, "GPU types to search (catalog names, comma-separated)")->delimiter(',');
  auto objective = command_->add_option("--objective", o.objective,
                                        "iteration_time, tokens_per_s, samples_per_s, mfu, time_to_train, cost, "
                                        "tokens_per_dollar, energy or co2 (docs/search.md)");
  objective->transform(CLI::CheckedTransformer(objective_names(), CLI::ignore_case))->default_str("iteration_time");
  command_->add_option("--top", o.top, "Layouts shown and re-simulated with SimGrid")->default_val(10);
  command_->add_option("--refine", o.refine, "Best first-pass estimates evaluated with the analytic backend")
      ->default_val(30);
  command_->add_flag("!--no-recheck", o.recheck, "Skip the SimGrid re-check of the top");
  command_->add_option("--max-gpus", o.max_gpus, "Only GPU counts up to N");
  command_->add_option("--min-mfu", o.min_mfu, "Only layouts with at least this MFU (a fraction, 0.4 = 40%)");
  command_->add_flag("--fits,!--no-fits", o.fits, "Only layouts that fit in GPU memory (default on)");
  command_->add_flag("--any-stack", o.any_stack,
                     "Also rank layouts no training stack runs as a whole (FSDP1 or DeepSpeed with context "
                     "parallelism, ...), labelled [stack? no stack runs it]; by default they are rejected");
  command_->add_option("--memory-headroom", args_.headroom,
                       "With --fits: GPU memory kept free, a share (\"10%\") or a size (\"4 GiB\")")
      ->type_name("PCT|SIZE");
  command_->add_option("--deadline", o.deadline_days,
                       "Only layouts that train training.tokens within DAYS (with failures when the scenario has "
                       "checkpoints)")
      ->type_name("DAYS");
  command_->add_option("--budget", o.budget_usd, "Only layouts whose whole run costs at most USD (with failures)")
      ->type_name("USD");
  command_->add_option("--max-power", args_.max_power,
                       "Only layouts whose facility peak power is at most this site budget: MW (\"30\", \"30MW\") "
                       "or \"500 kW\" (docs/energy.md)")
      ->type_name("MW");
  add_prices(command_, args_.prices);
  add_bands(command_, args_.options.bands);
  command_->add_option("--max-micro-batch", o.max_micro_batch,
                       "Largest micro-batch tried (default 16; a layer-graph model: the whole per-replica batch)")
      ->default_val(0)
      ->default_str("16");
  command_->add_option("--offload", o.offload,
                       "Offload choices tried for every layout, comma-separated: none, zero-offload, zero-infinity, "
                       "axonn, activations (default: the scenario's own offload)")
      ->delimiter(',');
  command_->add_option("--compression", o.compression,
                       "Gradient compression methods tried for every layout, comma-separated, each at its defaults: "
                       "none, fp16, bf16, fp8, int8, topk, powersgd, onebit_adam (default: the scenario's own)")
      ->delimiter(',');
  o.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  command_->add_option("--jobs,-j", o.jobs, "Evaluation threads (default: the hardware's)");
  command_->add_flag("--yes", o.yes, "Search even when the space has more than 10^7 candidates");
  command_->add_flag("--quiet,-q", o.quiet, "No progress bar or timing on stderr");
  command_->add_option("--shard", args_.shard, "Evaluate shard I of N (0-based) and write it as JSON for `search merge`")
      ->type_name("I/N");
  command_->add_option("--out", args_.out, "--shard: write the shard JSON to FILE (default stdout)");
  const std::map<std::string, Format> formats{{"table", Format::TABLE}, {"json", Format::JSON}, {"csv", Format::CSV}};
  command_->add_option("--format", args_.format, "table, json or csv")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
      ->default_str("table");

  command_->add_option("--plot", args_.plot, "Also draw the shown layouts' time breakdowns as ranked bars to FILE.svg or FILE.png");

  merge_ = command_->add_subcommand("merge", "Rank the union of `search --shard` files as one search would");
  merge_->add_option("files", args_.merge_files, "Shard files, one per shard")->required();
  merge_->add_option("--top", o.top, "Layouts shown and re-simulated with SimGrid")->default_val(10);
  merge_->add_flag("!--no-recheck", o.recheck, "Skip the SimGrid re-check of the top");
  merge_->add_flag("--quiet,-q", o.quiet, "No progress bar on stderr");
  merge_->add_option("--format", args_.format, "table, json or csv")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
      ->default_str("table");
}

std::optional<int> SearchSubcommand::run(std::ostream& out, std::ostream& err) {
  if (!command_->parsed()) return std::nullopt;
  if (merge_->parsed()) return search_merge_command(args_, out, err);
  return search_command(args_, out, err);
}

}  // namespace trainsim::cli

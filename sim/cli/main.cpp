// trainsim: predict how a distributed training job runs. Maps the command line onto the commands of
// commands.hpp and exceptions onto exit codes (0 ok, 1 runtime failure, 2 usage or input error,
// 3 outside tolerance).

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "sim/cli/calibrate_command.hpp"
#include "sim/cli/cli_options.hpp"
#include "sim/cli/collective_command.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/compare_command.hpp"
#include "sim/cli/replay_command.hpp"
#include "sim/cli/emulate_command.hpp"
#include "sim/cli/import_command.hpp"
#include "sim/cli/schedule_command.hpp"
#include "sim/cli/search_command.hpp"
#include "sim/cli/stage_power_command.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/cli/trace_command.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/engine/simgrid_backend.hpp"

namespace {

int run_main(int argc, char** argv) {
  using trainsim::cli::add_bands;
  using trainsim::cli::add_format;
  using trainsim::cli::add_overrides;
  CLI::App app{"trainsim: simulate large-scale distributed deep-learning training before paying for the GPUs"};
  app.require_subcommand(1);
  // The commit is the one checked out when cmake configured the build (sim/cli/CMakeLists.txt).
  const std::string version = std::string("trainsim ") + TRAINSIM_VERSION +
                              (std::string(TRAINSIM_GIT_COMMIT).empty() ? "" : std::string(" (git ") + TRAINSIM_GIT_COMMIT + ")");
  app.set_version_flag("--version", version);
  CLI::App* version_cmd = app.add_subcommand("version", "Print the version (the same as --version)");

  trainsim::cli::StagePowerArgs stage_power;
  CLI::App* stage_power_cmd = app.add_subcommand(
      "stage-power", "Per-stage GPU power caps that cut a pipeline's energy at the same iteration time (docs/energy.md)");
  trainsim::cli::add_stage_power_options(stage_power_cmd, stage_power);

  trainsim::cli::RunArgs run;
  CLI::App* run_cmd = app.add_subcommand("run", "Predict one training iteration of a scenario");
  run_cmd->add_option("scenario", run.scenario, "Scenario JSON file")->required();
  add_format(run_cmd, run.format, /*csv=*/true);
  add_overrides(run_cmd, run.overrides);
  run_cmd->add_option("--out", run.out_dir, "Also write report.json, report.txt and scenario.resolved.json here");
  run_cmd->add_option("--timeline", run.timeline, "Write a Chrome/Perfetto trace of the iteration to FILE");
  run_cmd->add_option("--timeline-ranks", run.timeline_ranks,
                      "Ranks shown in the timeline (default: first rank of every pipeline stage)")
      ->delimiter(',');
  run_cmd->add_option("--backend", run.backend, "Simulation backend: analytic or simgrid (overrides simulation.backend)")
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  run_cmd->add_option("--html", run.html, "Also write a self-contained HTML report (figures, breakdown, memory)");
  run_cmd->add_option("--timeline-window", run.timeline_window, "Timeline only over START:END simulated seconds");
  run_cmd->add_option("--timeline-micro-batches", run.timeline_micro_batches,
                      "Timeline only for these micro-batches (and the optimizer and data-parallel tasks)")
      ->delimiter(',');
  run_cmd->add_flag("--strict-profile", run.strict_profile,
                    "A profile fitted on another GPU than the scenario's is an error (exit 2), not a warning");
  run_cmd->add_option("--simulate-failures", run.simulate_failures,
                      "With training.checkpoint and training.tokens: simulate N whole runs with random failures and "
                      "report percentiles of the time to train (docs/resilience.md)")
      ->check(CLI::Range(1, 1000000));
  run_cmd->add_option("--seed", run.seed, "Seed of --simulate-failures (default 1)");
  add_bands(run_cmd, run.bands);

  trainsim::cli::CheckArgs check;
  CLI::App* check_cmd = app.add_subcommand("check", "Print the fully resolved scenario, or every error in it");
  check_cmd->add_option("scenario", check.scenario, "Scenario JSON file")->required();
  add_overrides(check_cmd, check.overrides);
  check_cmd->add_flag("--resolve-profile", check.resolve_profile,
                      "Also embed the resolved device and network profile (by default only a profile the scenario "
                      "gives is written, so that a later --set cluster.gpu=... gets that GPU's own profile)");

  trainsim::cli::DescribeArgs describe;
  CLI::App* describe_cmd = app.add_subcommand("describe", "List the built-in catalogs and defaults");
  describe_cmd->add_option("what", describe.what, "gpus, models or profile")
      ->required()
      ->check(CLI::IsMember({"gpus", "models", "profile"}));
  describe_cmd->add_option("--gpu", describe.gpu, "profile: the built-in profile of this GPU (e.g. A100-SXM4-80GB)");
  describe_cmd->add_option("--stack", describe.stack, "profile: with this training stack's costs (megatron, torchtitan, "
                           "composer, deepspeed, fsdp, ddp; docs/scenario.md training.stack)");
  describe_cmd->add_flag("--compile", describe.compile, "profile: the stack with torch.compile");
  add_format(describe_cmd, describe.format, /*csv=*/true);  // gpus and models; profile: table or json

  trainsim::cli::ValidateArgs validate;
  double tolerance_pct = -1;
  CLI::App* validate_cmd =
      app.add_subcommand("validate", "Run validation cases (scenarios with an \"expect\" block) against measurements");
  validate_cmd->add_option("cases", validate.paths, "Case files, or folders of *.json cases")->required();
  validate_cmd->add_option("--tolerance", tolerance_pct, "Exit 3 when a case's judged |error| exceeds PCT percent")
      ->check(CLI::PositiveNumber)
      ->type_name("PCT");
  add_format(validate_cmd, validate.format, /*csv=*/true);
  add_overrides(validate_cmd, validate.overrides);
  validate_cmd->add_option("--backend", validate.backend, "Simulation backend: analytic or simgrid")
      ->check(CLI::IsMember({"analytic", "simgrid"}));
  validate_cmd->add_flag("--quiet,-q", validate.quiet, "No progress bar on stderr");
  validate_cmd->add_option("--write-bands", validate.write_bands,
                           "Also write the cases' residuals as a bands file (validation/bands.json: "
                           "docs/validation.md, Error bands)");

  trainsim::cli::TraceSubcommand trace(app);
  trainsim::cli::CollectiveSubcommand collective(app);
  trainsim::cli::CalibrateSubcommand calibrate(app);
  trainsim::cli::ReplaySubcommand replay(app);
  trainsim::cli::CompareSubcommand compare(app);
  trainsim::cli::SearchSubcommand search(app);
  trainsim::cli::SweepSubcommand sweep(app);
  trainsim::cli::ScheduleSubcommand schedule(app);
  trainsim::cli::EmulateSubcommand emulate(app);
  trainsim::cli::ImportSubcommands import_export(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  // A closed pipe is a write error reported below (exit 2), not a silent SIGPIPE death.
  std::signal(SIGPIPE, SIG_IGN);
  // Runs the command; the results on standard output must then reach it.
  const auto command = [&]() -> int {
    if (std::optional<int> code = trace.run(std::cout, std::cerr)) return *code;
    if (std::optional<int> code = collective.run(std::cout)) return *code;
    if (std::optional<int> code = calibrate.run(std::cout)) return *code;
    if (std::optional<int> code = replay.run(std::cout)) return *code;
    if (std::optional<int> code = compare.run(std::cout, std::cerr)) return *code;
    if (*version_cmd) {
      std::cout << version << "\n";
      return 0;
    }
    if (std::optional<int> code = search.run(std::cout, std::cerr)) return *code;
    if (std::optional<int> code = sweep.run(std::cout, std::cerr)) return *code;
    if (std::optional<int> code = schedule.run(std::cout, std::cerr)) return *code;
    if (std::optional<int> code = emulate.run(std::cout, std::cerr)) return *code;
    if (std::optional<int> code = import_export.run(std::cout, std::cerr)) return *code;
    if (*run_cmd) return trainsim::cli::run_command(run, std::cout, std::cerr);
    if (*stage_power_cmd) return trainsim::cli::stage_power_command(stage_power, std::cout);
    if (*check_cmd) return trainsim::cli::check_command(check, std::cout, std::cerr);
    if (*describe_cmd) return trainsim::cli::describe_command(describe, std::cout);
    if (*validate_cmd) {
      if (tolerance_pct > 0) validate.tolerance = tolerance_pct / 100.0;
      return trainsim::cli::validate_command(validate, std::cout, std::cerr);
    }
    return 2;
  };
  try {
    const int code = command();
    trainsim::core::check_stream_written(std::cout, "standard output");
    return code;
  } catch (const trainsim::core::InputError& e) {
    for (const auto& p : e.problems()) std::cerr << "error: " << p.to_string() << "\n";
    return 2;
  } catch (const trainsim::core::InternalError& e) {
    std::cerr << "trainsim: " << e.what() << "\n(this is a bug in trainsim; please report it with the scenario)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "trainsim: " << e.what() << "\n";
    return 1;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int code = run_main(argc, argv);
  // SimGrid's exit handler frees its platform link by link, as long as building it took (a fifth of
  // a folded 16,384-GPU run): once the output is out, a process that built one leaves without it.
  if (trainsim::engine::simgrid_platform_built()) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

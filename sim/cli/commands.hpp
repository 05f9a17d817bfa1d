#pragma once
// The subcommands of `trainsim`. Each returns the process exit code (STYLE.md: 0 ok, 1 runtime
// failure, 2 usage or input error, 3 outside tolerance) and lets InputError propagate to main.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace trainsim::cli {

// Output formats. CSV: `validate` (one row per compared figure), `run` (a header and one row of the
// report's main figures, report_figures.hpp), `compare` and `search` (one row per layout), `calibrate` (one row per category); the other
// commands take table and json.
enum class Format { TABLE, JSON, CSV };

// `calibrate` fitted nothing (every category kept the base profile): no profile is written. Like
// `validate`'s "outside the tolerance", a measured answer rather than an error.
inline constexpr int EXIT_NOTHING_FITTED = 3;

// The exit code of a command stopped by Ctrl-C after printing its partial results: 130 (128 +
// SIGINT, the shell's convention), outside STYLE.md's 0-3 because the command did not finish.
inline constexpr int EXIT_INTERRUPTED = 130;

struct RunArgs {
  std::string scenario;
  std::vector<std::string> overrides;  // --set key.path=value
  Format format = Format::TABLE;
  std::string out_dir;                 // --out: report.json, report.txt, scenario.resolved.json
  std::string timeline;                // --timeline FILE (Chrome/Perfetto JSON)
  std::vector<int> timeline_ranks;     // default: the first rank of every pipeline stage
  std::string backend;                 // --backend, overrides simulation.backend
  std::string html;                    // --html FILE: self-contained HTML report (sim/cli/html_report.hpp)
  std::string timeline_window;         // --timeline-window START:END, simulated seconds (END may be empty)
  std::vector<int> timeline_micro_batches;  // --timeline-micro-batches 0,1 (engine::TimelineFilter)
  bool strict_profile = false;         // --strict-profile: a profile fitted on another GPU is an input error
  int simulate_failures = 0;           // --simulate-failures N: N simulated runs with failures (0: none)
  uint64_t seed = 1;                   // --seed: of --simulate-failures (resilience.hpp DEFAULT_FAILURE_SEED)
  std::string bands;                   // --bands FILE: a bands file whose cases join the built-in ones
};
// The report on `out`; the scenario's warnings (Scenario::warnings) on `err`, one "warning: " line
// each, and in the report. Throws core::InputError at /simulation/profile for a profile fitted on
// another GPU with strict_profile.
int run_command(const RunArgs& args, std::ostream& out, std::ostream& err);

struct CheckArgs {
  std::string scenario;
  std::vector<std::string> overrides;
  // Embed the resolved device and network profile (Scenario::ProfileOut::RESOLVED): a record of what
  // a prediction used, which stays with its GPU on a later --set cluster.gpu=... (and warns there).
  bool resolve_profile = false;
};
// The resolved scenario on `out` (a scenario: the GPU by name or object, the profile only as given,
// unless resolve_profile), its warnings on `err`.
int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err);

struct DescribeArgs {
  std::string what;  // gpus | models | profile
  std::string gpu;   // profile: the built-in profile of this catalog GPU (default: the generic one)
  std::string stack;  // profile: with this training stack's costs (core/stack.hpp); "" = megatron
  bool compile = false;  // profile: the stack with torch.compile
  Format format = Format::TABLE;
};
int describe_command(const DescribeArgs& args, std::ostream& out);

// `trainsim validate`: sim/cli/validate_command.hpp.
struct ValidateArgs {
  std::vector<std::string> paths;    // files, or folders searched for *.json
  std::optional<double> tolerance;   // relative, e.g. 0.10; exit 3 when a judged figure is outside it
  Format format = Format::TABLE;     // table | json | csv
  std::vector<std::string> overrides;
  std::string backend;
  bool quiet = false;                // --quiet: no progress bar (drawn only on a terminal anyway)
  std::string write_bands;           // --write-bands FILE: the cases' residuals as a bands file (plan/bands.hpp)
};
int validate_command(const ValidateArgs& args, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli

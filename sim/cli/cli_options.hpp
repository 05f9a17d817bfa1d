#pragma once
// The command-line options that several subcommands share, registered one way everywhere: --set,
// --backend and --format.
//
// Example:
//   CLI::App* cmd = app.add_subcommand("sweep", "...");
//   add_overrides(cmd, args.overrides);
//   add_backend(cmd, args.backend, "Simulation backend: analytic (default) or simgrid");
//   add_format(cmd, args.format, /*csv=*/true);

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"

namespace trainsim::cli {

// --set KEY=VALUE (repeatable): a scenario value overridden before the scenario is read.
inline void add_overrides(CLI::App* cmd, std::vector<std::string>& overrides) {
  cmd->add_option("--set", overrides, "Override a scenario value: key.path=value (repeatable), e.g. parallelism.tensor=4")
      ->type_name("KEY=VALUE");
}

// --price NAME=USD,...: USD per GPU-hour by GPU type (plan::parse_prices reads the entries).
inline void add_prices(CLI::App* cmd, std::vector<std::string>& prices) {
  cmd->add_option("--price", prices,
                  "USD per GPU-hour by GPU type, comma-separated: H100=2.5,A100=1.3 (default: "
                  "cluster.price_per_gpu_hour)")
      ->delimiter(',')
      ->type_name("NAME=USD");
}

// --bands FILE: a user's validation cases (validate --write-bands) join the built-in ones.
inline void add_bands(CLI::App* cmd, std::string& bands) {
  cmd->add_option("--bands", bands,
                  "A bands file (validate --write-bands) whose cases join the built-in ones for the error bands "
                  "and the envelope (docs/validation.md, Error bands)");
}

// --backend analytic|simgrid; `help` says what the default is for this command.
inline void add_backend(CLI::App* cmd, std::string& backend, const std::string& help) {
  cmd->add_option("--backend", backend, help)->check(CLI::IsMember({"analytic", "simgrid"}));
}

// --format table|json, and csv where the command writes it; default table.
inline void add_format(CLI::App* cmd, Format& format, bool csv) {
  std::map<std::string, Format> formats{{"table", Format::TABLE}, {"json", Format::JSON}};
  if (csv) formats.emplace("csv", Format::CSV);
  cmd->add_option("--format", format, csv ? "Output format: table, json or csv" : "Output format: table or json")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
      ->default_str("table");
}

}  // namespace trainsim::cli

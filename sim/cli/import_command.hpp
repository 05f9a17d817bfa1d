#pragma once
// `trainsim import` and `trainsim export`: the options and printing of sim/plan/config_import.hpp
// and sim/plan/config_export.hpp, which do the work (docs/import.md).
//
//   trainsim import [--hf config.json] [--megatron ARGS_FILE] [--torchtitan JOB.toml] [--deepspeed DS.json]
//                   [--base SCENARIO | --cluster-from SCENARIO] [--gpu NAME] [--nodes N] [--gpus-per-node G]
//                   [--name NAME] [--set key=value]... [-o FILE] [--no-check] [--quiet] [-- MEGATRON_ARGS...]
//       The scenario on stdout (or FILE): JSON preceded by // comments naming the sources and every
//       value without a counterpart. On stderr: one "note:" line per such value (not with --quiet)
//       and a summary (the model's parameters). Bad input: exit 2, each problem naming its file and
//       field.
//   trainsim export --to megatron|torchtitan|deepspeed|hf SCENARIO [--set key=value]... [-o FILE] [--strict]
//       The scenario as the framework's file on stdout (or FILE); on stderr what it cannot express
//       and the import command that reads it back. --strict: anything not expressed is an error
//       (exit 2).

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/plan/config_import.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct ImportArgs {
  plan::ImportOptions options;
  bool no_check = false;
  std::string out;     // -o FILE; "" = stdout
  bool quiet = false;  // no notes on stderr (they stay in the file)
};
int import_command(const ImportArgs& args, std::ostream& out, std::ostream& err);

struct ExportArgs {
  std::string to;  // megatron | torchtitan | deepspeed | hf | chakra (per-rank traces in the folder `out`)
  std::string scenario;
  std::vector<std::string> overrides;
  std::string out;
  bool strict = false;
};
int export_command(const ExportArgs& args, std::ostream& out, std::ostream& err);

// Both subcommands, registered on the application's CLI11 App (like CompareSubcommand).
class ImportSubcommands {
 public:
  explicit ImportSubcommands(CLI::App& app);
  ImportSubcommands(const ImportSubcommands&) = delete;
  ImportSubcommands& operator=(const ImportSubcommands&) = delete;

  // After app.parse(): the exit code, or std::nullopt when neither was on the command line.
  std::optional<int> run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* import_ = nullptr;
  CLI::App* export_ = nullptr;
  ImportArgs import_args_;
  ExportArgs export_args_;
};

}  // namespace trainsim::cli

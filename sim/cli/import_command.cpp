#include "sim/cli/import_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "sim/cli/cli_options.hpp"
#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"
#include "sim/plan/chakra_export.hpp"
#include "sim/plan/config_export.hpp"

namespace trainsim::cli {

int import_command(const ImportArgs& args, std::ostream& out, std::ostream& err) {
  plan::ImportOptions o = args.options;
  o.check = !args.no_check;
  const plan::ImportResult r = plan::import_configs(o);
  const std::string text = plan::scenario_text(r);
  if (!args.quiet) {
    for (const plan::ImportNote& n : r.notes) err << "note: " << n.to_string() << "\n";
  }
  if (args.out.empty()) {
    out << text;
  } else {
    core::write_output_file(args.out, text, "-o");
  }
  std::string summary = fmt::format("imported {} value{} without a counterpart", r.notes.size(), r.notes.size() == 1 ? "" : "s");
  if (r.parameters > 0) {
    summary = fmt::format("model: {:.2f}B parameters", r.parameters / 1e9) +
              (r.active_parameters != r.parameters ? fmt::format(" ({:.2f}B active)", r.active_parameters / 1e9) : "") + "; " + summary;
  }
  err << summary << (args.out.empty() ? "" : "; wrote " + args.out) << "\n";
  return 0;
}

// `export --to chakra`: per-rank Chakra execution traces in the folder -o names (docs/chakra.md).
int export_chakra_command(const ExportArgs& args, std::ostream& err) {
  if (args.out.empty()) throw core::InputError("-o", "", "--to chakra writes one file per rank: give the folder to write them in with -o");
  const plan::Scenario s = plan::load_scenario(args.scenario, args.overrides);
  const plan::ChakraExportResult r = plan::export_chakra(s, args.out);
  if (args.strict && !r.notes.empty()) {
    std::vector<core::InputProblem> problems;
    for (const plan::ExportLoss& l : r.notes) problems.push_back({args.scenario, l.key, "not expressible as Chakra traces: " + l.message});
    throw core::InputError(problems);
  }
  for (const plan::ExportLoss& l : r.notes) err << "not expressed: " << l.key << ": " << l.message << "\n";
  std::string back = fmt::format("trainsim replay --chakra {} --scenario {}", r.prefix, args.scenario);
  for (const std::string& o : args.overrides) back += " --set " + o;
  err << fmt::format("wrote {} Chakra traces ({} nodes) as {}.<rank>.et and the process groups as {}; read them back with: {}\n",
                     r.files.size(), r.nodes, r.prefix, r.comm_groups, back);
  return 0;
}

int export_command(const ExportArgs& args, std::ostream& out, std::ostream& err) {
  if (args.to == "chakra") return export_chakra_command(args, err);
  const std::optional<plan::ConfigFormat> format = plan::config_format_named(args.to);
  if (!format) throw core::InputError("--to", "", fmt::format("expected megatron, torchtitan, deepspeed or hf, found \"{}\"", args.to));
  const plan::Scenario s = plan::load_scenario(args.scenario, args.overrides);
  const plan::ExportResult r = plan::export_scenario(s, *format);
  if (args.strict && !r.lost.empty()) {
    std::vector<core::InputProblem> problems;
    for (const plan::ExportLoss& l : r.lost) {
      problems.push_back({args.scenario, l.key, fmt::format("not expressible as {}: {}", plan::describe(*format), l.message)});
    }
    throw core::InputError(problems);
  }
  for (const plan::ExportLoss& l : r.lost) err << "not expressed: " << l.key << ": " << l.message << "\n";
  if (args.out.empty()) {
    out << r.text;
  } else {
    core::write_output_file(args.out, r.text, "-o");
  }
  const std::string flag = *format == plan::ConfigFormat::MEGATRON     ? "--megatron"
                           : *format == plan::ConfigFormat::TORCHTITAN ? "--torchtitan"
                           : *format == plan::ConfigFormat::DEEPSPEED  ? "--deepspeed"
                                                                       : "--hf";
  // The model comes with the file (Megatron, a torchtitan flavor), from a config.json beside it
  // (DeepSpeed), or the file is the model alone (hf: the rest from the scenario as a base).
  const std::string file = args.out.empty() ? "FILE" : args.out;
  std::string back = *format == plan::ConfigFormat::HUGGING_FACE ? fmt::format("trainsim import --hf {} --base {}", file, args.scenario)
                     : *format == plan::ConfigFormat::DEEPSPEED
                         ? fmt::format("trainsim import --deepspeed {} --hf CONFIG.json (export --to hf) --cluster-from {}", file, args.scenario)
                         : fmt::format("trainsim import {} {} --cluster-from {}", flag, file, args.scenario);
  for (const std::string& o : r.import_overrides) back += " --set " + o;
  err << (r.lost.empty() ? "everything expressed" : fmt::format("{} value{} not expressed", r.lost.size(), r.lost.size() == 1 ? "" : "s"))
      << "; read it back with: " << back << "\n";
  return 0;
}

ImportSubcommands::ImportSubcommands(CLI::App& app) {
  import_ = app.add_subcommand("import", "Make a scenario from Megatron-LM arguments, a torchtitan TOML, a DeepSpeed config, "
                                         "a Hugging Face config.json (docs/import.md)");
  plan::ImportOptions& o = import_args_.options;
  import_->add_option("--hf", o.hf_config, "A Hugging Face config.json: the model's shape")->type_name("FILE");
  import_->add_option("--megatron", o.megatron, "A file of Megatron-LM arguments or Megatron-Bridge overrides (also: after --)")
      ->type_name("FILE");
  import_->add_option("--torchtitan", o.torchtitan, "A torchtitan job config (TOML)")->type_name("FILE");
  import_->add_option("--deepspeed", o.deepspeed, "A DeepSpeed config (JSON)")->type_name("FILE");
  CLI::Option* base = import_->add_option("--base", o.base, "A scenario whose sections the imports leave are kept (cluster, ...)")
                          ->type_name("SCENARIO");
  import_->add_option("--cluster-from", o.cluster_from, "A scenario whose cluster is used")->type_name("SCENARIO")->excludes(base);
  import_->add_option("--gpu", o.gpu, "cluster.gpu (`trainsim describe gpus`)")->type_name("NAME");
  import_->add_option("--nodes", o.nodes, "cluster.nodes")->check(CLI::Range(1, 1 << 20));
  import_->add_option("--gpus-per-node", o.gpus_per_node, "cluster.gpus_per_node")->check(CLI::Range(1, 1 << 10));
  import_->add_option("--name", o.name, "The scenario's name");
  // One value per --set, so that `--set k=v -- ARGS` leaves the Megatron arguments after -- alone.
  import_->add_option("--set", o.overrides, "Override a scenario value: key.path=value (repeatable), applied last")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  import_->add_option("-o,--out", import_args_.out, "Write the scenario to FILE instead of standard output")->type_name("FILE");
  import_->add_flag("--no-check", import_args_.no_check, "Write the scenario even when `trainsim check` would refuse it");
  import_->add_flag("--quiet,-q", import_args_.quiet, "No notes on stderr (they stay in the file's comments)");
  import_->add_option("megatron_args", o.megatron_args, "Megatron-LM arguments or Megatron-Bridge overrides, after --")
      ->type_name("ARGS");

  export_ = app.add_subcommand("export", "Write a scenario as Megatron-LM arguments, a torchtitan TOML, a DeepSpeed config or a "
                                         "Hugging Face config.json (docs/import.md), or the workload as Chakra execution traces (docs/chakra.md)");
  export_->add_option("--to", export_args_.to, "megatron, torchtitan, deepspeed, hf, or chakra (per-rank traces into the folder -o)")
      ->required()
      ->check(CLI::IsMember({"megatron", "torchtitan", "deepspeed", "hf", "chakra"}));
  export_->add_option("scenario", export_args_.scenario, "Scenario JSON file")->required();
  add_overrides(export_, export_args_.overrides);
  export_->add_option("-o,--out", export_args_.out, "Write to FILE instead of standard output (chakra: the folder)")->type_name("FILE");
  export_->add_flag("--strict", export_args_.strict, "A value the format cannot express is an error (exit 2), not a note");
}

std::optional<int> ImportSubcommands::run(std::ostream& out, std::ostream& err) const {
  if (import_->parsed()) return import_command(import_args_, out, err);
  if (export_->parsed()) return export_command(export_args_, out, err);
  return std::nullopt;
}

}  // namespace trainsim::cli

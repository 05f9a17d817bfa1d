#pragma once
// `trainsim search SCENARIO [options]` and `trainsim search merge SHARD.json...` (docs/search.md).
// Exit codes: 0 ranked; 2 bad options, an empty or exploding search space, nothing left after the
// constraints; 130 (EXIT_INTERRUPTED) stopped by Ctrl-C after printing the best found so far.

#include <optional>
#include <ostream>

#include "sim/cli/commands.hpp"
#include "sim/cli/search.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct SearchArgs {
  SearchOptions options;
  std::string gpus;           // --gpus "512:4096" (powers of two between) or "512,1024"
  std::string shard;          // --shard I/N
  std::string out;            // --out FILE: where a shard writes its JSON (default stdout)
  std::vector<std::string> merge_files;
  Format format = Format::TABLE;
  std::string plot;           // --plot FILE.svg|.png: the shown layouts' breakdowns as ranked bars
};

int search_command(SearchArgs args, std::ostream& out, std::ostream& err);
int search_merge_command(SearchArgs args, std::ostream& out, std::ostream& err);

// Parses --gpus: "A:B" (the powers of two from A to B, A and B included) or "A,B,C". Throws
// InputError naming --gpus.
std::vector<int> parse_gpu_counts(const std::string& text);

class SearchSubcommand {
 public:
  explicit SearchSubcommand(CLI::App& app);
  SearchSubcommand(const SearchSubcommand&) = delete;
  SearchSubcommand& operator=(const SearchSubcommand&) = delete;
  // After app.parse(): the exit code of `search`, or std::nullopt when it was not on the command line.
  std::optional<int> run(std::ostream& out, std::ostream& err);

 private:
  CLI::App* command_ = nullptr;
  CLI::App* merge_ = nullptr;
  SearchArgs args_;
};

}  // namespace trainsim::cli

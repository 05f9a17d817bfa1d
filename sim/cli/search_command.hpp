#pragma once
// `trainsim search SCENARIO [options]` and `trainsim search merge SHARD.json...` (docs/search.md): the
// options and printing of plan::Search (sim/plan/search.hpp), which does the search.
// Exit codes: 0 ranked; 2 bad options, an empty or exploding search space, nothing left after the
// constraints; 130 (EXIT_INTERRUPTED) stopped by Ctrl-C after printing the best found so far.

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/cli/commands.hpp"
#include "sim/plan/search.hpp"

namespace CLI {
class App;
}

namespace trainsim::cli {

struct SearchArgs {
  plan::SearchOptions options;
  std::string gpus;           // --gpus "512:4096" (powers of two between) or "512,1024"
  std::string shard;          // --shard I/N
  std::string out;            // --out FILE: where a shard writes its JSON (default stdout)
  std::vector<std::string> merge_files;
  Format format = Format::TABLE;
  std::string plot;           // --plot FILE.svg|.png: the shown layouts' breakdowns as ranked bars
  std::vector<std::string> prices;  // --price NAME=USD,... (plan::parse_prices)
  std::string headroom;       // --memory-headroom "10%" or "4 GiB" (plan::MemoryHeadroom::parse)
  std::string max_power;      // --max-power "30MW", "30" (MW), "500 kW"
};

int search_command(SearchArgs args, std::ostream& out, std::ostream& err);
int search_merge_command(SearchArgs args, std::ostream& out, std::ostream& err);

// Stages 1-4 of `search` on the shard in args.options (shard_index/shard_count; --gpus and --plot
// checked first): the shard JSON text that `--shard` writes; `interrupted` tells whether Ctrl-C
// stopped it. Logs the first-pass timing on `err` unless quiet. Throws InputError as search_command.
std::string search_shard_text(SearchArgs args, std::ostream& err, bool& interrupted);
// `search merge` on shard documents already read (each with the name its errors give):
// plan::merge_shards (they come from one search and cover every shard once), then ranks, re-checks
// and prints the result as one process would have (args: --top, --no-recheck, --format, --plot,
// --quiet, --jobs).
int merge_shards(const std::vector<std::pair<core::Json, std::string>>& shards, const SearchArgs& args, std::ostream& out);

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

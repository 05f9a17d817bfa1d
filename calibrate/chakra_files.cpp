// load_chakra_traces (calibrate/chakra_workload.hpp): finding and reading the files of one job.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

#include "calibrate/chakra_workload.hpp"
#include "sim/core/error.hpp"
#include "sim/core/trace_io.hpp"

namespace trainsim::calibrate {
namespace {

namespace fs = std::filesystem;
using core::InputError;

// Splits "PREFIX.<rank>.et"; false for other names.
bool split_trace_name(const std::string& name, std::string& prefix, std::string& rank_text) {
  if (name.size() < 4 || name.compare(name.size() - 3, 3, ".et") != 0) return false;
  const std::string stem = name.substr(0, name.size() - 3);
  const size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == stem.size()) return false;
  rank_text = stem.substr(dot + 1);
  if (!std::all_of(rank_text.begin(), rank_text.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  prefix = stem.substr(0, dot);
  return true;
}

int parse_rank(const std::string& text, const fs::path& file) {
  int64_t rank = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
  if (ec != std::errc() || end != text.data() + text.size() || rank >= core::TRACE_MAX_WORLD_SIZE) {
    throw InputError(file.string(), "", fmt::format("rank number {} in the file name is above the limit of {} ranks "
                                                    "(TRACE_MAX_WORLD_SIZE)",
                                                    text, core::TRACE_MAX_WORLD_SIZE));
  }
  return static_cast<int>(rank);
}

}  // namespace

std::vector<core::ChakraTrace> load_chakra_traces(const std::string& path) {
  const bool folder = fs::is_directory(path);
  const fs::path dir = folder ? fs::path(path) : fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  const std::string wanted = folder ? "" : fs::path(path).filename().string();
  if (!fs::is_directory(dir)) throw InputError(path, "", "no such folder, and not the prefix of Chakra traces (PREFIX.<rank>.et)");
  std::map<std::string, std::map<int, fs::path>> by_prefix;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    std::string prefix, rank_text;
    if (!e.is_regular_file() || !split_trace_name(e.path().filename().string(), prefix, rank_text)) continue;
    if (!wanted.empty() && prefix != wanted) continue;
    by_prefix[prefix][parse_rank(rank_text, e.path())] = e.path();
  }
  if (by_prefix.empty()) {
    throw InputError(path, "", folder ? "the folder holds no Chakra trace (PREFIX.<rank>.et)"
                                      : fmt::format("neither a folder nor the prefix of Chakra traces: no {}.<rank>.et in {}",
                                                    wanted, dir.string()));
  }
  if (by_prefix.size() > 1) {
    std::vector<std::string> prefixes;
    for (const auto& [p, files] : by_prefix) prefixes.push_back(p);
    throw InputError(path, "", fmt::format("the folder holds the Chakra traces of {} prefixes ({}): give one, as "
                                           "FOLDER/PREFIX",
                                           prefixes.size(), fmt::join(prefixes, ", ")));
  }
  const auto& [prefix, files] = *by_prefix.begin();
  const int highest = files.rbegin()->first;
  uint64_t total = 0;
  for (int r = 0; r <= highest; ++r) {
    const auto it = files.find(r);
    if (it == files.end()) {
      throw InputError((dir / fmt::format("{}.{}.et", prefix, r)).string(), "",
                       fmt::format("rank {} has no file: a replay needs one file per rank, from {}.0.et to {}.{}.et "
                                   "({} of {} found)",
                                   r, prefix, prefix, highest, files.size(), highest + 1));
    }
    total += fs::file_size(it->second);
  }
  if (total > CHAKRA_MAX_TOTAL_BYTES) {
    throw InputError(path, "", fmt::format("the {} files hold {} bytes, more than the {} byte limit of one replay "
                                           "(CHAKRA_MAX_TOTAL_BYTES): replay a smaller job",
                                           files.size(), total, CHAKRA_MAX_TOTAL_BYTES));
  }
  std::vector<core::ChakraTrace> out;
  out.reserve(files.size());
  uint64_t nodes = 0;
  for (const auto& [r, file] : files) {
    out.push_back(core::read_chakra_file(file.string()));
    nodes += out.back().nodes.size();
    if (nodes > CHAKRA_MAX_TOTAL_NODES) {
      throw InputError(path, "", fmt::format("more than {} nodes in the first {} of the {} files, more than one replay "
                                             "reads (CHAKRA_MAX_TOTAL_NODES): replay a smaller job",
                                             CHAKRA_MAX_TOTAL_NODES, r + 1, files.size()));
    }
  }
  return out;
}

}  // namespace trainsim::calibrate

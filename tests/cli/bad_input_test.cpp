// The bad-input corpus: every tests/data/bad/NAME.json is a scenario that must be rejected, and
// NAME.expected holds the exact message (one problem per line; "{file}" stands for the file's path).

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "sim/plan/scenario.hpp"

namespace trainsim::cli {

using namespace trainsim::plan;
namespace {

const std::filesystem::path BAD = std::filesystem::path(TRAINSIM_SOURCE_DIR) / "tests/data/bad";

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::vector<std::filesystem::path> corpus() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(BAD)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(BadInput, CorpusIsNotEmptyAndEveryCaseHasItsMessage) {
  const auto files = corpus();
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(f).replace_extension(".expected"))) << f;
  }
}

TEST(BadInput, EachCaseProducesItsExactMessage) {
  for (const auto& f : corpus()) {
    SCOPED_TRACE(f.filename().string());
    std::string expected = read_text(std::filesystem::path(f).replace_extension(".expected"));
    for (size_t at; (at = expected.find("{file}")) != std::string::npos;) expected.replace(at, 6, f.string());
    try {
      load_scenario(f.string());
      ADD_FAILURE() << "accepted a bad scenario";
    } catch (const core::InputError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

}  // namespace
}  // namespace trainsim::cli

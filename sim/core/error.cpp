#include "sim/core/error.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace trainsim::core {
namespace {

std::string join_problems(const std::vector<InputProblem>& problems) {
  std::string out;
  for (const InputProblem& p : problems) {
    if (!out.empty()) out += '\n';
    out += p.to_string();
  }
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string InputProblem::to_string() const {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!pointer.empty()) out += pointer + ": ";
  out += message;
  return out;
}

InputError::InputError(std::vector<InputProblem> problems)
    : std::runtime_error(join_problems(problems)), problems_(std::move(problems)) {}

InputError::InputError(std::string file, std::string pointer, std::string message)
    : InputError(std::vector<InputProblem>{{std::move(file), std::move(pointer), std::move(message)}}) {}

InputError InputError::expected(std::string file, std::string pointer, const std::string& expected,
                                const std::string& found) {
  return InputError(std::move(file), std::move(pointer),
                    fmt::format("expected {}, found {}", expected, found));
}

void Diagnostics::throw_if_any() const {
  if (!problems_.empty()) throw InputError(problems_);
}

void fail_check(const char* condition, const std::string& message, std::source_location where) {
  throw InternalError(fmt::format("internal error at {}:{}: check `{}` failed: {}", where.file_name(),
                                  where.line(), condition, message));
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

}  // namespace trainsim::core

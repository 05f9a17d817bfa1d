#pragma once
// Two kinds of errors, never mixed:
//  - InputError: the user's input is wrong (a malformed file, a value out of range, an impossible
//    configuration). It names the file, the JSON pointer of the offending value, and what was wrong.
//    `trainsim` maps it to exit code 2. InputErrors carries every problem found in one pass.
//  - InternalError: a bug in trainsim, raised by TRAINSIM_CHECK with the source location. Exit code 1.

#include <source_location>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::core {

// One problem in the user's input. `file` may be empty for values that did not come from a file
// (command-line options); `pointer` is an RFC 6901 JSON pointer ("/parallelism/tensor"), or empty
// when the problem concerns the file as a whole.
struct InputProblem {
  std::string file;
  std::string pointer;
  std::string message;

  // "scenario.json: /parallelism/tensor: must divide heads (96), found 7"
  std::string to_string() const;
};

class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<InputProblem> problems);
  InputError(std::string file, std::string pointer, std::string message);

  // Convenience for the common "expected X, found Y" form.
  static InputError expected(std::string file, std::string pointer, const std::string& expected,
                             const std::string& found);

  const std::vector<InputProblem>& problems() const { return problems_; }

 private:
  std::vector<InputProblem> problems_;
};

// Collects problems so that one pass over a file reports all of them, not only the first.
class Diagnostics {
 public:
  void add(InputProblem p) { problems_.push_back(std::move(p)); }
  void add(std::string file, std::string pointer, std::string message) {
    problems_.push_back({std::move(file), std::move(pointer), std::move(message)});
  }
  bool empty() const { return problems_.empty(); }
  size_t size() const { return problems_.size(); }
  const std::vector<InputProblem>& problems() const { return problems_; }
  // Throws InputError with every problem collected, if any.
  void throw_if_any() const;

 private:
  std::vector<InputProblem> problems_;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_check(const char* condition, const std::string& message,
                             std::source_location where = std::source_location::current());

// Suggests the closest candidate to `word` (edit distance at most a third of its length, at least 2),
// or an empty string. Used for "did you mean" hints on unknown keys and catalog names.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace trainsim::core

// REQUIRES-style contract check for conditions that only a bug in trainsim can break.
#define TRAINSIM_CHECK(cond, msg)                                     \
  do {                                                                \
    if (!(cond)) ::trainsim::core::fail_check(#cond, (msg));          \
  } while (false)

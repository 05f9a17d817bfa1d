#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <string>

#include "calibrate/accuracy.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/prediction.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {
namespace {

// Files named on the command line, plus every *.json under named folders, each folder sorted.
std::vector<std::string> collect_cases(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path().string());
      }
      if (ec) throw core::InputError(p, "", fmt::format("cannot list the folder: {}", ec.message()));
      std::sort(found.begin(), found.end());
      if (found.empty()) throw core::InputError(p, "", "no *.json validation case in this folder");
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(p, ec)) {
      files.push_back(p);
    } else {
      throw core::InputError(p, "", "no such file or folder");
    }
  }
  return files;
}

struct CaseResult {
  std::string name;
  std::string file;
  double predicted_s = 0;
  double measured_s = 0;
  double error = 0;
  std::string failure;  // non-empty when the case could not be run
};

// The predicted iteration time of a case. SimGrid builds one platform per process and the cases'
// clusters differ, so a SimGrid case runs in a child process of its own, which sends back the time
// or the error it threw, which the parent throws again as the same kind (InputError or InternalError).
double predicted_iteration(const Scenario& s, const std::string& backend) {
  const std::string chosen = backend.empty() ? s.simulation.backend : backend;
  if (chosen != "simgrid") return predict(s, backend).iteration_time_s();
  std::array<int, 2> pipe_fd{};
  TRAINSIM_CHECK(pipe(pipe_fd.data()) == 0, fmt::format("pipe: {}", std::strerror(errno)));
  const pid_t child = fork();
  TRAINSIM_CHECK(child >= 0, fmt::format("fork: {}", std::strerror(errno)));
  if (child == 0) {
    close(pipe_fd[0]);
    std::string message;
    try {
      message = fmt::format("ok {:.17g}", predict(s, backend).iteration_time_s());
    } catch (const core::InputError& e) {
      message = fmt::format("input {}", e.what());
    } catch (const std::exception& e) {
      message = fmt::format("internal {}", e.what());
    }
    const char* p = message.data();
    size_t left = message.size();
    while (left > 0) {
      const ssize_t n = write(pipe_fd[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    _exit(0);  // no atexit handlers, no flush of the parent's buffered output
  }
  close(pipe_fd[1]);
  std::string message;
  std::array<char, 4096> buffer{};
  ssize_t n = 0;
  while ((n = read(pipe_fd[0], buffer.data(), buffer.size())) > 0) message.append(buffer.data(), static_cast<size_t>(n));
  close(pipe_fd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (message.rfind("ok ", 0) == 0) return std::stod(message.substr(3));
  if (message.rfind("input ", 0) == 0) throw core::InputError("", "", message.substr(6));  // names its file
  if (message.rfind("internal ", 0) == 0) throw core::InternalError(message.substr(9));
  throw core::InternalError(fmt::format("{}: the simulation process ended without a result (wait status {})", s.file, status));
}

}  // namespace

int validate_command(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  std::vector<CaseResult> results;
  for (const std::string& file : collect_cases(args.paths)) {
    CaseResult c;
    c.file = file;
    c.name = std::filesystem::path(file).stem().string();
    try {
      const Scenario s = load_scenario(file, args.overrides);
      c.name = s.name;
      if (!s.expect || !s.expect->iteration_time_s) {
        throw core::InputError(file, "/expect/iteration_time_s", "a validation case needs a measured iteration_time_s");
      }
      c.measured_s = *s.expect->iteration_time_s;
      c.predicted_s = predicted_iteration(s, args.backend);
      c.error = calibrate::signed_error(c.predicted_s, c.measured_s);
    } catch (const core::InputError& e) {
      c.failure = e.what();
      err << "error: " << e.what() << "\n";
    }
    results.push_back(c);
  }

  std::vector<double> errors;
  size_t failures = 0, outside = 0;
  for (const CaseResult& c : results) {
    if (!c.failure.empty()) {
      ++failures;
      continue;
    }
    errors.push_back(c.error);
    if (args.tolerance && std::abs(c.error) > *args.tolerance) ++outside;
  }

  if (args.format == Format::JSON) {
    core::Json j;
    j["schema"] = "trainsim.validation/1";
    core::Json cases = core::Json::array();
    for (const CaseResult& c : results) {
      core::Json row{{"case", c.name}, {"file", c.file}};
      if (c.failure.empty()) {
        row["predicted_s"] = c.predicted_s;
        row["measured_s"] = c.measured_s;
        row["signed_error"] = c.error;
        if (args.tolerance) row["within_tolerance"] = std::abs(c.error) <= *args.tolerance;
      } else {
        row["error"] = c.failure;
      }
      cases.push_back(row);
    }
    j["cases"] = cases;
    if (!errors.empty()) {
      const calibrate::ErrorSummary s = calibrate::summarize(errors);
      j["summary"] = {{"cases", s.cases}, {"median_abs_error", s.median_abs}, {"mean_abs_error", s.mean_abs},
                      {"max_abs_error", s.max_abs}, {"failed", failures}};
    }
    if (args.tolerance) j["tolerance"] = *args.tolerance;
    out << j.dump(2) << "\n";
  } else {
    size_t width = 4;
    for (const CaseResult& c : results) width = std::max(width, c.name.size());
    out << fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}\n", "case", width, "predicted_s", "measured_s", "error");
    for (const CaseResult& c : results) {
      if (!c.failure.empty()) {
        out << fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}\n", c.name, width, "-", "-", "failed");
        continue;
      }
      const bool bad = args.tolerance && std::abs(c.error) > *args.tolerance;
      out << fmt::format("{:<{}}  {:>12.3f}  {:>12.3f}  {:>+7.1f}%{}\n", c.name, width, c.predicted_s, c.measured_s,
                         100 * c.error, bad ? "  outside tolerance" : "");
    }
    if (!errors.empty()) {
      const calibrate::ErrorSummary s = calibrate::summarize(errors);
      std::string worst;
      size_t k = 0;
      for (const CaseResult& c : results) {
        if (!c.failure.empty()) continue;
        if (k++ == s.worst) worst = c.name;
      }
      out << fmt::format("{} cases: median |error| {:.1f}%, mean {:.1f}%, max {:.1f}% ({})", s.cases,
                         100 * s.median_abs, 100 * s.mean_abs, 100 * s.max_abs, worst);
      if (args.tolerance) out << fmt::format("; {} outside tolerance {:.1f}%", outside, 100 * *args.tolerance);
      out << "\n";
    }
    if (failures > 0) out << fmt::format("{} case(s) could not be run\n", failures);
  }
  if (failures > 0) return 2;
  if (outside > 0) return 3;
  return 0;
}

}  // namespace trainsim::cli

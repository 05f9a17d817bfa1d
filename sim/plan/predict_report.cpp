// predict_report: one prediction as its report, SimGrid's in a child process (SimGrid 3.32 builds one
// platform per process: see prediction.hpp).
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <string>

#include "sim/core/error.hpp"
#include "sim/engine/simgrid_backend.hpp"
#include "sim/plan/prediction.hpp"

namespace trainsim::plan {
namespace {

// One InputProblem as JSON (the SimGrid child sends its InputError to the parent).
core::Json problem_json(const core::InputProblem& p) {
  return {{"file", p.file}, {"pointer", p.pointer}, {"message", p.message}};
}

}  // namespace

core::Json predict_report(const Scenario& s, const std::string& backend) {
  const std::string chosen = backend.empty() ? s.simulation.backend : backend;
  if (chosen != "simgrid") return report_json(s, predict(s, backend));
  // The child sends back one JSON document: {"report": ...}, {"input_error": [problems]} or
  // {"internal_error": message}, which the parent throws again as the same kind.
  std::array<int, 2> pipe_fd{};
  TRAINSIM_CHECK(pipe(pipe_fd.data()) == 0, fmt::format("pipe: {}", std::strerror(errno)));
  const pid_t child = fork();
  TRAINSIM_CHECK(child >= 0, fmt::format("fork: {}", std::strerror(errno)));
  if (child == 0) {
    // Ctrl-C ends the child at once, whatever the parent does with it (search: stops, keeping what it
    // has; below: a child ended by SIGINT is an interruption, not a bug).
    std::signal(SIGINT, SIG_DFL);
    close(pipe_fd[0]);
    engine::simgrid_links_on_demand();  // one simulation in this process: only the links it crosses
    core::Json message;
    try {
      message["report"] = report_json(s, predict(s, backend));
    } catch (const core::InputError& e) {
      core::Json problems = core::Json::array();
      for (const core::InputProblem& p : e.problems()) problems.push_back(problem_json(p));
      message["input_error"] = problems;
    } catch (const std::exception& e) {
      message["internal_error"] = e.what();
    }
    const std::string text = message.dump();
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      const ssize_t n = write(pipe_fd[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    _exit(0);  // no atexit handlers, no flush of the parent's buffered output
  }
  close(pipe_fd[1]);
  std::string text;
  std::array<char, 4096> buffer{};
  ssize_t n = 0;
  while ((n = read(pipe_fd[0], buffer.data(), buffer.size())) > 0) text.append(buffer.data(), static_cast<size_t>(n));
  close(pipe_fd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  const core::Json message = core::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_object() && message.contains("report")) return message["report"];
  if (message.is_object() && message.contains("input_error")) {
    std::vector<core::InputProblem> problems;
    for (const core::Json& p : message["input_error"]) {
      problems.push_back({p["file"].get<std::string>(), p["pointer"].get<std::string>(), p["message"].get<std::string>()});
    }
    throw core::InputError(problems);
  }
  if (message.is_object() && message.contains("internal_error")) {
    throw core::InternalError(message["internal_error"].get<std::string>());
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) throw engine::Interrupted(engine::SimulationProgress{});
  throw core::InternalError(
      fmt::format("{}: the simulation process ended without a result (wait status {})", s.file, status));
}

}  // namespace trainsim::plan

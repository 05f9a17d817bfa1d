#pragma once
// A progress bar with an ETA for long commands (search, compare, sweep, validate), drawn on a
// terminal only: it writes to stderr when stderr is a TTY and the caller did not ask for quiet
// (--quiet; every options struct of sim/plan has `quiet`), and nothing otherwise, so that logs and
// pipes stay clean (STYLE.md: progress only on a TTY). It is the planner library's only output of
// its own. advance() may be
// called from any thread; the bar is redrawn at most 10 times a second, by whichever thread
// advances it then.
//
// Example:
//   Progress bar("evaluating", candidates.size(), !args.quiet);
//   for (...) { ...; bar.advance(); }
//   bar.finish();   // erases the bar

#include <atomic>
#include <chrono>
#include <cstdint>
#include <csignal>
#include <mutex>
#include <string>

namespace trainsim::plan {

class Progress {
 public:
  // `enabled` false (e.g. --quiet) or stderr not a terminal: every call does nothing.
  Progress(std::string label, uint64_t total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(uint64_t n = 1);
  // Erases the bar (idempotent).
  void finish();
  bool active() const { return active_; }

  // Whether stderr is a terminal.
  static bool stderr_is_tty();

 private:
  void draw(uint64_t done);

  std::string label_;
  uint64_t total_;
  bool active_;
  std::atomic<uint64_t> done_{0};
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// Ctrl-C handling for commands that can stop early with partial results: while a StopOnInterrupt
// exists, SIGINT sets a flag instead of killing the process. With `second_ends_process` (the
// command line's default) a second SIGINT kills it as usual; without (the Python module, where it
// would take the interpreter or a notebook's kernel with it) every SIGINT only sets the flag. The
// destructor puts back the SIGINT disposition that was there before (Python's own handler, flags
// included). One at a time; construct it on the thread that runs the work.
class StopOnInterrupt {
 public:
  explicit StopOnInterrupt(bool second_ends_process = true);
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;
  // Whether SIGINT arrived since the live StopOnInterrupt was made; false when none exists. Long
  // loops of the library (search's stages, compare's configurations, sweep's points, SimGrid runs
  // watched by WatchSimulations) check it and stop.
  static bool requested();

 private:
  struct sigaction previous_ {};
};

}  // namespace trainsim::plan

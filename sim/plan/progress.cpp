#include "sim/plan/progress.hpp"

#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <unistd.h>

namespace trainsim::plan {
namespace {

volatile std::sig_atomic_t interrupted = 0;

extern "C" void on_sigint(int) {
  interrupted = 1;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process
}

extern "C" void on_every_sigint(int) { interrupted = 1; }

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  const long whole = static_cast<long>(s);
  if (s < 3600) return fmt::format("{}m{:02}s", whole / 60, whole % 60);
  return fmt::format("{:.1f}h", s / 3600);
}

}  // namespace

bool Progress::stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)), total_(total), active_(enabled && total > 0 && stderr_is_tty()),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::advance(uint64_t n) {
  const uint64_t done = done_.fetch_add(n) + n;
  if (!active_) return;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  draw(done);
}

void Progress::draw(uint64_t done) {
  const double fraction = std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string eta = fraction > 0 ? duration_text(elapsed * (1 - fraction) / fraction) : "?";
  constexpr int WIDTH = 30;
  const int filled = static_cast<int>(fraction * WIDTH);
  std::fprintf(stderr, "\r%s [%s%s] %3.0f%% %llu/%llu ETA %s  ", label_.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(WIDTH - filled), '.').c_str(), 100 * fraction,
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_), eta.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  active_ = false;
}

StopOnInterrupt::StopOnInterrupt(bool second_ends_process) {
  interrupted = 0;
  // sigaction rather than signal(): the disposition put back must be the previous one exactly (the
  // Python interpreter's handler is installed without SA_RESTART, so that Ctrl-C interrupts a read).
  struct sigaction action {};
  action.sa_handler = second_ends_process ? on_sigint : on_every_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_);
}

StopOnInterrupt::~StopOnInterrupt() {
  sigaction(SIGINT, &previous_, nullptr);
  interrupted = 0;
}

bool StopOnInterrupt::requested() { return interrupted != 0; }

}  // namespace trainsim::plan

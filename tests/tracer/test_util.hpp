#pragma once
// Helpers shared by the tracer tests: a fresh temporary folder, and reading back what a session
// wrote with the reader of sim/core (libprotobuf's generated classes).

#include <filesystem>
#include <stdexcept>
#include <unistd.h>
#include <string>
#include <vector>

#include "sim/core/trace_io.hpp"

namespace trainsim::tracer::testing {

// A new empty folder under the system temporary folder, unique to this process and `name`.
inline std::string temp_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("trainsim-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The only *.trace file in `dir`, read whole.
inline core::TraceFile read_only_trace(const std::string& dir) {
  std::vector<std::string> files = core::expand_trace_paths({dir});
  if (files.size() != 1) throw std::runtime_error("expected one trace file in " + dir);
  return core::read_trace_file(files[0]);
}

}  // namespace trainsim::tracer::testing

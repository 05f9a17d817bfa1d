#include "sim/report/chart_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <spawn.h>
#include <sys/wait.h>

#include "sim/core/error.hpp"
#include "sim/core/output_file.hpp"

extern char** environ;

namespace trainsim::report {
namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

void write_text(const std::string& path, const std::string& text, const std::string& option) {
  core::write_output_file(path, text, option);
}

// Runs `rsvg-convert -f png -o png_path svg_path`; returns its exit status, or -1 with errno set
// when it could not be started.
int run_converter(const std::string& svg_path, const std::string& png_path) {
  std::vector<std::string> args{PNG_CONVERTER, "--format=png", "--output=" + png_path, svg_path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, PNG_CONVERTER, nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

void check_chart_path(const std::string& path, const std::string& option) {
  const std::string ext = lower_extension(path);
  if (ext != ".svg" && ext != ".png") {
    throw core::InputError(option, "", fmt::format("cannot tell the picture format of \"{}\": expected a file name ending in .svg or .png", path));
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    throw core::InputError(option, "", fmt::format("cannot write \"{}\": the folder {} does not exist", path, parent.string()));
  }
}

void write_chart_file(const std::string& path, const SvgDocument& svg, const std::string& option) {
  const std::string ext = lower_extension(path);
  if (ext == ".svg") {
    write_text(path, svg.str(true), option);
    return;
  }
  if (ext != ".png") {
    throw core::InputError(option, "", fmt::format("cannot tell the picture format of \"{}\": expected a file name ending in .svg or .png", path));
  }
  // The SVG goes next to the PNG (same folder, so the same permissions) and is removed afterwards.
  const std::string tmp = path + ".tmp.svg";
  write_text(tmp, svg.str(true), option);
  const int status = run_converter(tmp, path);
  const int spawn_errno = errno;
  std::error_code ignored;
  std::filesystem::remove(tmp, ignored);
  if (status == -1 && spawn_errno == ENOENT) {
    throw core::InputError(option, "", fmt::format("writing {} needs {} (Debian package librsvg2-bin), which is not on PATH; "
                                                   "install it (scripts/setup.sh does) or ask for an .svg file",
                                                   path, PNG_CONVERTER));
  }
  if (status != 0) {
    throw core::InputError(option, "", fmt::format("{} failed to write {} ({})", PNG_CONVERTER, path,
                                                   status == -1 ? std::strerror(spawn_errno) : fmt::format("exit status {}", status)));
  }
}

}  // namespace trainsim::report

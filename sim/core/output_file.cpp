#include "sim/core/output_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::core {
namespace {

std::string reason(int err) { return err != 0 ? std::strerror(err) : "write error"; }

}  // namespace

OutputFile::OutputFile(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path_, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status)) {
    if (fs::is_directory(status)) fail("is a folder, not a file");
  } else {
    // Next to the destination, so that the rename stays on one file system (atomic).
    const fs::path p(path_);
    temp_ = (p.parent_path() / fmt::format(".{}.tmp-{}", p.filename().string(), ::getpid())).string();
  }
  errno = 0;
  out_.open(temp_.empty() ? path_ : temp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    const int err = errno;
    temp_.clear();  // nothing to remove
    fail(fmt::format("cannot create the file: {} (does its folder exist and is it writable?)", reason(err)));
  }
}

OutputFile::~OutputFile() {
  if (committed_ || temp_.empty()) return;
  out_.close();
  std::remove(temp_.c_str());
}

void OutputFile::fail(const std::string& what) {
  if (!temp_.empty()) {
    out_.close();
    std::remove(temp_.c_str());
    temp_.clear();
  }
  committed_ = true;
  throw InputError(path_, "", flag_.empty() ? what : fmt::format("{} ({})", what, flag_));
}

void OutputFile::close() {
  if (closed_) return;
  closed_ = true;
  errno = 0;
  out_.flush();
  int err = errno;
  const bool written = static_cast<bool>(out_);
  out_.close();
  if (err == 0) err = errno;
  if (!written || out_.fail()) {
    fail(fmt::format("cannot write the file: {}{}", reason(err), temp_.empty() ? "" : ", nothing was written"));
  }
}

void OutputFile::commit() {
  close();
  if (!temp_.empty() && std::rename(temp_.c_str(), path_.c_str()) != 0) {
    fail(fmt::format("cannot write the file: {}", reason(errno)));
  }
  committed_ = true;
}

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  OutputFile f(path, flag);
  f.stream() << text;
  f.commit();
}

void check_stream_written(std::ostream& out, const std::string& name) {
  errno = 0;
  out.flush();
  if (!out) throw InputError(name, "", fmt::format("cannot write the results: {}", reason(errno)));
}

}  // namespace trainsim::core

#include "sim/core/text_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "sim/core/error.hpp"

namespace trainsim::core {
namespace {

// Bytes a text file never holds: control characters other than \t \n \v \f \r and escape.
bool is_binary_byte(unsigned char c) { return (c < 0x20 && (c < '\t' || c > '\r') && c != 0x1b) || c == 0x7f; }

void refuse_binary(const std::string& path, const std::string& text, std::string_view what) {
  const size_t end = std::min(text.size(), TEXT_PROBE_BYTES);
  for (size_t i = 0; i < end; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (is_binary_byte(c)) {
      throw InputError(path, "",
                       fmt::format("byte {} is 0x{:02x}, a control character that {} text never holds: this is "
                                   "binary data (a device such as /dev/zero or /dev/urandom, or a binary file), "
                                   "not {}",
                                   i, c, what, what));
    }
  }
}

}  // namespace

std::string read_text_file(const std::string& path, uintmax_t max_bytes, std::string_view what,
                           const std::function<void(const std::string& prefix)>& check_prefix,
                           std::string_view limit_reason) {
  std::string reason;  // appended (not " " + limit_reason: GCC 12's -Wrestrict misfires on it)
  if (!limit_reason.empty()) reason.append(" ").append(limit_reason);
  std::error_code ec;
  // A folder opens as a stream on Linux and reads as empty text.
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", fmt::format("is a folder; expected a {} file", what));
  const bool regular = std::filesystem::is_regular_file(path, ec);
  if (regular) {
    // A regular file says its size: refuse a large one before reading it (the read is bounded anyway).
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes) {
      throw InputError(path, "",
                       fmt::format("the file is {} bytes; {} is limited to {} bytes{}", size, what, max_bytes, reason));
    }
  }
  const uintmax_t limit = regular ? max_bytes : std::min(max_bytes, MAX_STREAM_BYTES);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file (does it exist and is it readable?)");
  std::string text;
  size_t next_check = TEXT_PROBE_BYTES;
  bool probed = false;
  std::string chunk(size_t{1} << 20, '\0');
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    if (text.size() + got > limit) {
      if (regular) {
        throw InputError(path, "",
                         fmt::format("more than {} bytes read although the file said it had fewer; {} is limited "
                                     "to {} bytes{}",
                                     limit, what, limit, reason));
      }
      throw InputError(path, "",
                       fmt::format("more than {} bytes ({} MiB) read and the stream goes on: {} read from a "
                                   "stream (not a regular file: a FIFO, a device, a socket) is limited to {} bytes; "
                                   "write it to a file first (files may have up to {} bytes){}",
                                   limit, limit >> 20, what, limit, max_bytes, reason));
    }
    text.append(chunk.data(), got);
    if (!probed && (text.size() >= TEXT_PROBE_BYTES || in.eof())) {
      refuse_binary(path, text, what);
      probed = true;
    }
    if (!regular && check_prefix && text.size() >= next_check && next_check <= MAX_PREFIX_CHECK_BYTES) {
      check_prefix(text);
      next_check = 2 * text.size();
    }
  }
  if (in.bad()) throw InputError(path, "", "error while reading the file");
  if (!probed) refuse_binary(path, text, what);
  return text;
}

}  // namespace trainsim::core

#pragma once
// Reading a text input file whole without trusting what the file system says about it. A path may
// name an endless stream (/dev/zero, /dev/urandom, a FIFO fed by `yes`, /proc files whose size
// reads as 0) or a file that grows while it is read: the size from stat() is a hint, never a bound.
//
// read_text_file reads in chunks and refuses, as an InputError naming the file:
//  - more than `max_bytes` read from a regular file, whatever stat() said, or more than
//    MAX_STREAM_BYTES from anything else (a FIFO, a device, a socket: a stream's writer may never
//    stop, and at a pipe's few hundred MB/s the smaller limit is reached in a fraction of a second;
//    a larger input is given as a file);
//  - binary data: a control character other than tab, line feed, vertical tab, form feed,
//    carriage return and escape (0x1b, terminal colours) in the first TEXT_PROBE_BYTES. JSON and
//    nccl-tests outputs never hold one, and an endless binary stream is refused at its first chunk.
// For a file that is not a regular file (a FIFO, a device, a socket), `check_prefix` (when given)
// sees the text read so far each time it has doubled from TEXT_PROBE_BYTES up to
// MAX_PREFIX_CHECK_BYTES, and may throw: a JSON reader refuses a stream that is already invalid JSON
// without reading it to the limit (beyond a few MiB, the limit is reached sooner than a parser runs).
//
// Example:
//   const std::string text = read_text_file(path, MAX_JSON_FILE_BYTES, "JSON input");

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace trainsim::core {

inline constexpr size_t TEXT_PROBE_BYTES = size_t{64} << 10;  // 64 KiB
inline constexpr size_t MAX_PREFIX_CHECK_BYTES = size_t{4} << 20;  // 4 MiB
inline constexpr uintmax_t MAX_STREAM_BYTES = uintmax_t{64} << 20;  // 64 MiB

// REQUIRES: max_bytes > 0. `what` names the kind of text in messages ("JSON"); `limit_reason`, when
// given, is appended to the size messages ("(a scenario: ...)").
// Throws InputError naming `path`: a folder, a file that cannot be opened or read, above max_bytes,
// or binary data (see above).
std::string read_text_file(const std::string& path, uintmax_t max_bytes, std::string_view what,
                           const std::function<void(const std::string& prefix)>& check_prefix = {},
                           std::string_view limit_reason = "");

}  // namespace trainsim::core

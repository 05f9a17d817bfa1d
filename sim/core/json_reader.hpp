#pragma once
// Reading JSON input with paths. Every value is read through an ObjectReader, which knows the file
// and JSON pointer of the object, records each problem (wrong type, out of range, unknown key with a
// "did you mean" hint) in a shared Diagnostics, and returns the default so that one pass finds every
// problem. Parse once, at the edge: modules turn JSON into typed config structs here and nowhere else.

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/units.hpp"

namespace trainsim::core {

// Ordered, so that resolved configurations print in the order they were written.
using Json = nlohmann::ordered_json;

// Limits on JSON input, checked before parsing (InputError naming the file): nesting depth (a
// scenario needs 5 levels, a Kineto trace 4) and file size (nlohmann's values take about 10x the text).
constexpr size_t MAX_JSON_DEPTH = 256;
constexpr uintmax_t MAX_JSON_FILE_BYTES = uintmax_t{1} << 30;
// A scenario (or a report, or a validation case, where a scenario may be given) is kilobytes; the
// largest a reader accepts, a layer graph of models::MAX_GRAPH_LAYERS layers, is about 10 MB. A larger
// file is refused before it is parsed (nlohmann parses 20-40 MB/s: 2 million layers took 3.5 s).
constexpr uintmax_t MAX_SCENARIO_FILE_BYTES = uintmax_t{16} << 20;

// Reads and parses a JSON file; // and /* */ comments are allowed. Throws InputError naming the file
// (and line:column for syntax errors) when the file cannot be read or parsed, is larger than
// MAX_JSON_FILE_BYTES (counted while reading: a stream or device is cut off there, core/text_file.hpp),
// holds binary data, nests deeper than MAX_JSON_DEPTH or holds a number beyond a double's range. A
// stream that is not valid JSON is refused as soon as what was read shows it, not at the limit.
Json load_json_file(const std::string& path);
// A scenario file (also where a report or a validation case may be given instead): load_json_file
// with MAX_SCENARIO_FILE_BYTES, its size message saying why.
Json load_scenario_file(const std::string& path);
// Parses JSON text; `origin` names it in error messages.
Json parse_json_text(const std::string& text, const std::string& origin);

// "/a/b" + "c~d" -> "/a/b/c~0d" (RFC 6901 escaping).
std::string append_pointer(const std::string& pointer, std::string_view key);
std::string append_pointer(const std::string& pointer, size_t index);

// A short description of a JSON value's type and content for "found ..." messages: `"abc"`, `12`,
// `an array`, `an object`, `null`; a value longer than MAX_ECHO_CHARS is cut (truncate_echo).
std::string describe_json(const Json& value);
// Values echoed in messages are cut to this many characters, with the full length appended: a
// 200 KB string in a scenario is not repeated whole on stderr.
constexpr size_t MAX_ECHO_CHARS = 80;
std::string truncate_echo(const std::string& text);
// The value as an int64_t when it is an integer that fits one exactly (an integral double too);
// std::nullopt otherwise (a fraction, a string, an unsigned value above INT64_MAX).
std::optional<int64_t> exact_integer(const Json& value);

constexpr double MAX_BYTES = 1152921504606846976.0;  // 1 EiB
constexpr double MAX_LATENCY_S = 1.0;
constexpr double MIN_BANDWIDTH = 125.0;  // 1 kb/s
constexpr double MAX_BANDWIDTH = 1e15;   // 1 PB/s
constexpr double MIN_FLOPS_RATE = 1e6;
constexpr double MAX_FLOPS_RATE = 1e18;

class ObjectReader {
 public:
  // REQUIRES: `node` and `diag` outlive the reader. A node that is not an object is reported once and
  // then read as an empty object (every accessor returns its default).
  ObjectReader(const Json& node, std::string file, std::string pointer, Diagnostics& diag);

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  std::string pointer_of(std::string_view key) const { return append_pointer(pointer_, key); }
  Diagnostics& diagnostics() { return *diag_; }
  // Records a problem about `key` of this object (or about the object itself when `key` is empty).
  void problem(std::string_view key, std::string message);

  bool has(std::string_view key) const;
  // The raw value of `key`, or nullptr. Marks the key as known.
  const Json* raw(std::string_view key);

  int64_t integer(std::string_view key, int64_t fallback, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  std::optional<int64_t> required_integer(std::string_view key, int64_t min = INT64_MIN,
                                          int64_t max = INT64_MAX);
  double number(std::string_view key, double fallback, double min, double max);
  bool boolean(std::string_view key, bool fallback);
  std::string string(std::string_view key, const std::string& fallback);
  std::optional<std::string> required_string(std::string_view key);
  // A string that must be one of `allowed`; the message lists them and suggests the closest.
  std::string choice(std::string_view key, const std::string& fallback, const std::vector<std::string>& allowed);

  // Quantities with units, refused outside physical sense (NaN and infinities too): sizes 0 to
  // MAX_BYTES, durations 0 to MAX_LATENCY_S (every duration read is a latency or an overhead),
  // bandwidths MIN_BANDWIDTH to MAX_BANDWIDTH, compute rates MIN_FLOPS_RATE to MAX_FLOPS_RATE.
  Bytes bytes(std::string_view key, Bytes fallback);
  Seconds duration(std::string_view key, Seconds fallback);
  BytesPerSecond bandwidth(std::string_view key, BytesPerSecond fallback);
  FlopsPerSecond flops_rate(std::string_view key, FlopsPerSecond fallback);

  // A nested object. Absent key: std::nullopt (the key is still known to finish()).
  std::optional<ObjectReader> object(std::string_view key);
  // An array of integers each in [min, max]; absent key: empty.
  std::vector<int64_t> integer_array(std::string_view key, int64_t min, int64_t max);
  // An array of strings; absent key: empty.
  std::vector<std::string> string_array(std::string_view key);

  // Reports every key that no accessor asked for, with a "did you mean" hint among the known keys.
  // `also_allowed` are keys that are valid here but read by somebody else (e.g. "expect").
  void finish(std::initializer_list<std::string_view> also_allowed = {});

 private:
  const Json* lookup(std::string_view key);
  template <class Q, class Parse>
  Q quantity(std::string_view key, Q fallback, Parse parse, const char* what, double min, double max, const char* range);

  const Json* node_;
  std::string file_;
  std::string pointer_;
  Diagnostics* diag_;
  std::set<std::string, std::less<>> known_;
  bool is_object_ = true;
};

}  // namespace trainsim::core

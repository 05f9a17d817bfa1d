#include "sim/core/json_reader.hpp"

#include <cmath>
#include <fmt/format.h>

#include "sim/core/text_file.hpp"

namespace trainsim::core {
namespace {

// Turns a byte offset into "line L, column C" for syntax errors.
std::string line_column(const std::string& text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += '"' + items[i] + '"';
  }
  return out;
}

// `text` with every byte that is not part of valid UTF-8, and every control character, written as
// \xNN: nlohmann's syntax errors echo the bytes read, and a message goes into JSON outputs
// (`validate --format json`), which must be valid UTF-8.
std::string printable_text(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    for (size_t k = 1; k < len; ++k) {
      if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) len = 0;
    }
    if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7f))) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(text, i, len);
      i += len;
    }
  }
  return out;
}

// The offset of the first bracket nested deeper than `limit` (outside strings and comments), or
// npos. nlohmann's parser and its values' destructors recurse per level: refusing deep documents
// before parsing keeps a hostile file from overflowing the stack.
size_t too_deep_at(const std::string& text, size_t limit) {
  size_t depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 1;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

// Whether `prefix` can begin a JSON text: its first syntax error, if any, is at its end (a value cut
// off by the end of what was read so far), within a token's length of it.
bool valid_json_prefix(const std::string& prefix) {
  struct FirstError : nlohmann::json_sax<Json> {
    size_t at = std::string::npos;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
      at = position;
      return false;
    }
  } sax;
  Json::sax_parse(prefix, &sax, nlohmann::detail::input_format_t::json, /*strict=*/true, /*ignore_comments=*/true);
  constexpr size_t TOKEN_MARGIN = 64;  // a literal or number cut at the end errs within this
  return sax.at == std::string::npos || sax.at + TOKEN_MARGIN >= prefix.size();
}

}  // namespace

Json parse_json_text(const std::string& text, const std::string& origin) {
  if (const size_t at = too_deep_at(text, MAX_JSON_DEPTH); at != std::string::npos) {
    throw InputError(origin, "",
                     fmt::format("invalid JSON at {}: nested deeper than {} levels", line_column(text, at), MAX_JSON_DEPTH));
  }
  try {
    return Json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const Json::out_of_range& e) {
    // A number beyond the range of a double (e.g. 1e309): nlohmann reports no position.
    std::string what = e.what();
    const size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    throw InputError(origin, "", fmt::format("invalid JSON: {} (numbers must fit a double, at most about 1.8e308)", what));
  } catch (const Json::parse_error& e) {
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line..."; keep
    // only the part after the last ": " which says what was expected.
    std::string what = e.what();
    const size_t colon = what.rfind(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw InputError(origin, "",
                     fmt::format("invalid JSON at {}: {}", line_column(text, e.byte == 0 ? 0 : e.byte - 1),
                                 printable_text(what)));
  }
}

namespace {

Json load_json(const std::string& path, uintmax_t max_bytes, std::string_view limit_reason) {
  // A stream (FIFO, device) is parsed as far as it was read each time the text read doubles: one that
  // is already invalid JSON (`yes` into a FIFO) is refused then, not after the limit.
  const auto refuse_invalid_prefix = [&path](const std::string& prefix) {
    if (too_deep_at(prefix, MAX_JSON_DEPTH) != std::string::npos || !valid_json_prefix(prefix)) {
      parse_json_text(prefix, path);  // throws the same message as the whole text would
    }
  };
  return parse_json_text(read_text_file(path, max_bytes, "JSON", refuse_invalid_prefix, limit_reason), path);
}

}  // namespace

Json load_json_file(const std::string& path) { return load_json(path, MAX_JSON_FILE_BYTES, ""); }

Json load_scenario_file(const std::string& path) {
  return load_json(path, MAX_SCENARIO_FILE_BYTES,
                   "(a scenario: the largest layer graph accepted, 100,000 layers, takes about 10 MB)");
}

std::string append_pointer(const std::string& pointer, std::string_view key) {
  std::string out = pointer + "/";
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string append_pointer(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

std::string truncate_echo(const std::string& text) {
  if (text.size() <= MAX_ECHO_CHARS) return text;
  // Cut at a UTF-8 character boundary so that the message stays valid text.
  size_t cut = MAX_ECHO_CHARS - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} characters)", text.substr(0, cut), text.size());
}

std::string describe_json(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    default: return truncate_echo(value.dump());
  }
}

std::optional<int64_t> exact_integer(const Json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63 is the first double above INT64_MAX; below it every integral double converts exactly.
    if (std::floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

ObjectReader::ObjectReader(const Json& node, std::string file, std::string pointer, Diagnostics& diag)
    : node_(&node), file_(std::move(file)), pointer_(std::move(pointer)), diag_(&diag) {
  if (!node.is_object()) {
    is_object_ = false;
    diag_->add(file_, pointer_, fmt::format("expected an object, found {}", describe_json(node)));
  }
}

void ObjectReader::problem(std::string_view key, std::string message) {
  diag_->add(file_, key.empty() ? pointer_ : pointer_of(key), std::move(message));
}

bool ObjectReader::has(std::string_view key) const {
  return is_object_ && node_->find(key) != node_->end();
}

const Json* ObjectReader::lookup(std::string_view key) {
  known_.emplace(key);
  if (!is_object_) return nullptr;
  auto it = node_->find(key);
  if (it == node_->end()) return nullptr;
  // `null` is not "absent": it reaches the accessor, whose type check refuses it (docs/hardening.md,
  // "null"). Reading it as the default let a layer with `null` channels run with zero weights.
  return &*it;
}

const Json* ObjectReader::raw(std::string_view key) { return lookup(key); }

int64_t ObjectReader::integer(std::string_view key, int64_t fallback, int64_t min, int64_t max) {
  const Json* v = lookup(key);
  if (v == nullptr) return fallback;
  const std::optional<int64_t> i = exact_integer(*v);
  const bool integral = v->is_number_integer() || v->is_number_unsigned() ||
                        (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>());
  if (!integral) {
    problem(key, fmt::format("expected an integer, found {}", describe_json(*v)));
    return fallback;
  }
  if (!i || *i < min || *i > max) {
    std::string range = max == INT64_MAX ? fmt::format("an integer >= {}", min)
                                         : fmt::format("an integer in [{}, {}]", min, max);
    problem(key, fmt::format("expected {}, found {}", range, describe_json(*v)));
    return fallback;
  }
  return *i;
}

std::optional<int64_t> ObjectReader::required_integer(std::string_view key, int64_t min, int64_t max) {
  if (!has(key)) {
    known_.emplace(key);
    problem(key, "missing required integer");
    return std::nullopt;
  }
  const size_t before = diag_->size();
  const int64_t v = integer(key, min, min, max);
  if (diag_->size() != before) return std::nullopt;
  return v;
}

double ObjectReader::number(std::string_view key, double fallback, double min, double max) {
  const Json* v = lookup(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) {
    problem(key, fmt::format("expected a number, found {}", describe_json(*v)));
    return fallback;
  }
  const double d = v->get<double>();
  if (!(d >= min && d <= max)) {
    problem(key, fmt::format("expected a number in [{:g}, {:g}], found {}", min, max, describe_json(*v)));
    return fallback;
  }
  return d;
}

bool ObjectReader::boolean(std::string_view key, bool fallback) {
  const Json* v = lookup(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) {
    problem(key, fmt::format("expected true or false, found {}", describe_json(*v)));
    return fallback;
  }
  return v->get<bool>();
}

std::string ObjectReader::string(std::string_view key, const std::string& fallback) {
  const Json* v = lookup(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) {
    problem(key, fmt::format("expected a string, found {}", describe_json(*v)));
    return fallback;
  }
  return v->get<std::string>();
}

std::optional<std::string> ObjectReader::required_string(std::string_view key) {
  if (!has(key)) {
    known_.emplace(key);
    problem(key, "missing required string");
    return std::nullopt;
  }
  const size_t before = diag_->size();
  std::string s = string(key, "");
  if (diag_->size() != before) return std::nullopt;
  return s;
}

std::string ObjectReader::choice(std::string_view key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) {
  const Json* v = lookup(key);
  if (v == nullptr) return fallback;
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    for (const std::string& a : allowed) {
      if (a == s) return s;
    }
    const std::string hint = closest_match(s, allowed);
    problem(key, fmt::format("expected one of {}, found {}{}", quoted_list(allowed), describe_json(*v),
                             hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
    return fallback;
  }
  problem(key, fmt::format("expected one of {}, found {}", quoted_list(allowed), describe_json(*v)));
  return fallback;
}

template <class Q, class Parse>
Q ObjectReader::quantity(std::string_view key, Q fallback, Parse parse, const char* what, double min, double max,
                         const char* range) {
  const Json* v = lookup(key);
  if (v == nullptr) return fallback;
  Q out = fallback;
  if (!v->is_string() || !parse(v->get<std::string>(), out)) {
    problem(key, fmt::format("expected {}, found {}", what, describe_json(*v)));
    return fallback;
  }
  if (!std::isfinite(out.value()) || out.value() < min || out.value() > max) {
    problem(key, fmt::format("expected {}, found {}", range, describe_json(*v)));
    return fallback;
  }
  return out;
}

Bytes ObjectReader::bytes(std::string_view key, Bytes fallback) {
  return quantity(key, fallback, parse_bytes, "a size such as \"80 GiB\" or \"512 MB\"", 0, MAX_BYTES,
                  "a size from 0 to 1 EiB");
}

Seconds ObjectReader::duration(std::string_view key, Seconds fallback) {
  return quantity(key, fallback, parse_duration, "a duration such as \"1.5 us\" or \"2 ms\"", 0, MAX_LATENCY_S,
                  "a duration from 0 to 1 s (a latency or an overhead)");
}

BytesPerSecond ObjectReader::bandwidth(std::string_view key, BytesPerSecond fallback) {
  return quantity(key, fallback, parse_bandwidth, "a bandwidth such as \"200 Gb/s\" or \"300 GB/s\"",
                  MIN_BANDWIDTH, MAX_BANDWIDTH, "a bandwidth from 1 kb/s to 1 PB/s");
}

FlopsPerSecond ObjectReader::flops_rate(std::string_view key, FlopsPerSecond fallback) {
  return quantity(key, fallback, parse_flops_rate, "a compute rate such as \"312 TFLOP/s\"", MIN_FLOPS_RATE,
                  MAX_FLOPS_RATE, "a compute rate from 1 MFLOP/s to 1 EFLOP/s");
}

std::optional<ObjectReader> ObjectReader::object(std::string_view key) {
  const Json* v = lookup(key);
  if (v == nullptr) return std::nullopt;
  return ObjectReader(*v, file_, pointer_of(key), *diag_);
}

std::vector<int64_t> ObjectReader::integer_array(std::string_view key, int64_t min, int64_t max) {
  std::vector<int64_t> out;
  const Json* v = lookup(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    problem(key, fmt::format("expected an array of integers, found {}", describe_json(*v)));
    return out;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& e = (*v)[i];
    if (!e.is_number_integer() && !e.is_number_unsigned()) {
      diag_->add(file_, append_pointer(pointer_of(key), i),
                 fmt::format("expected an integer, found {}", describe_json(e)));
      continue;
    }
    // An unsigned value above INT64_MAX is out of range, not a negative number (get<int64_t> wraps).
    const std::optional<int64_t> x = exact_integer(e);
    if (!x || *x < min || *x > max) {
      diag_->add(file_, append_pointer(pointer_of(key), i),
                 fmt::format("expected an integer in [{}, {}], found {}", min, max, describe_json(e)));
      continue;
    }
    out.push_back(*x);
  }
  return out;
}

std::vector<std::string> ObjectReader::string_array(std::string_view key) {
  std::vector<std::string> out;
  const Json* v = lookup(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    problem(key, fmt::format("expected an array of strings, found {}", describe_json(*v)));
    return out;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& e = (*v)[i];
    if (!e.is_string()) {
      diag_->add(file_, append_pointer(pointer_of(key), i), fmt::format("expected a string, found {}", describe_json(e)));
      continue;
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

void ObjectReader::finish(std::initializer_list<std::string_view> also_allowed) {
  if (!is_object_) return;
  for (std::string_view k : also_allowed) known_.emplace(k);
  const std::vector<std::string> candidates(known_.begin(), known_.end());
  for (auto it = node_->begin(); it != node_->end(); ++it) {
    if (known_.count(it.key()) != 0) continue;
    const std::string hint = closest_match(it.key(), candidates);
    problem(it.key(), fmt::format("unknown key \"{}\"{}", it.key(),
                                  hint.empty() ? fmt::format(" (known keys: {})", quoted_list(candidates))
                                               : fmt::format(" (did you mean \"{}\"?)", hint)));
  }
}

}  // namespace trainsim::core

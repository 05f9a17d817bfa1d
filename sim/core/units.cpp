#include "sim/core/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace trainsim::core {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "12.5 GB/s" into 12.5 and "GB/s". Rejects negative, NaN and infinite numbers.
bool split_number(std::string_view text, double& number, std::string_view& unit) {
  text = trim(text);
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc() || !std::isfinite(number) || number < 0) return false;
  unit = trim(std::string_view(ptr, static_cast<size_t>(end - ptr)));
  return true;
}

template <size_t N>
bool parse_with(std::string_view text, const std::array<Unit, N>& units, bool unit_required,
                double& out) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit)) return false;
  if (unit.empty()) {
    if (unit_required) return false;
    out = number;
    return true;
  }
  for (const Unit& u : units) {
    if (u.name == unit) {
      out = number * u.factor;
      return true;
    }
  }
  return false;
}

constexpr std::array<Unit, 17> BYTE_UNITS{{{"B", 1},
                                           {"KB", 1e3},
                                           {"MB", 1e6},
                                           {"GB", 1e9},
                                           {"TB", 1e12},
                                           {"PB", 1e15},
                                           {"KiB", KiB},
                                           {"MiB", MiB},
                                           {"GiB", GiB},
                                           {"TiB", TiB},
                                           {"K", KiB},
                                           {"M", MiB},
                                           {"G", GiB},
                                           {"T", TiB},
                                           {"k", KiB},
                                           {"bytes", 1},
                                           {"byte", 1}}};

constexpr std::array<Unit, 7> TIME_UNITS{{{"s", 1},
                                          {"ms", 1e-3},
                                          {"us", 1e-6},
                                          {"µs", 1e-6},
                                          {"ns", 1e-9},
                                          {"min", 60},
                                          {"h", 3600}}};

constexpr std::array<Unit, 16> RATE_UNITS{{{"b/s", 1.0 / 8},
                                           {"Kb/s", 1e3 / 8},
                                           {"Mb/s", 1e6 / 8},
                                           {"Gb/s", 1e9 / 8},
                                           {"Tb/s", 1e12 / 8},
                                           {"Gbps", 1e9 / 8},
                                           {"B/s", 1},
                                           {"KB/s", 1e3},
                                           {"MB/s", 1e6},
                                           {"GB/s", 1e9},
                                           {"TB/s", 1e12},
                                           {"KiB/s", KiB},
                                           {"MiB/s", MiB},
                                           {"GiB/s", GiB},
                                           {"TiB/s", TiB},
                                           {"GBps", 1e9}}};

constexpr std::array<Unit, 6> FLOP_RATE_UNITS{{{"FLOP/s", 1},
                                               {"GFLOP/s", 1e9},
                                               {"TFLOP/s", 1e12},
                                               {"PFLOP/s", 1e15},
                                               {"TFLOPS", 1e12},
                                               {"PFLOPS", 1e15}}};

// Chooses the largest unit in `units` (ordered from small to large) that keeps the number >= 1.
std::string format_scaled(double v, std::initializer_list<Unit> units) {
  const Unit* chosen = units.begin();
  for (const Unit& u : units) {
    if (std::abs(v) >= u.factor) chosen = &u;
  }
  return fmt::format("{:g} {}", v / chosen->factor, chosen->name);
}

}  // namespace

bool parse_bytes(std::string_view text, Bytes& out) {
  double v = 0;
  // A bare number is a byte count.
  if (!parse_with(text, BYTE_UNITS, false, v)) return false;
  out = Bytes(v);
  return true;
}

bool parse_duration(std::string_view text, Seconds& out) {
  double v = 0;
  if (!parse_with(text, TIME_UNITS, true, v)) return false;
  out = Seconds(v);
  return true;
}

bool parse_bandwidth(std::string_view text, BytesPerSecond& out) {
  double v = 0;
  if (!parse_with(text, RATE_UNITS, true, v)) return false;
  out = BytesPerSecond(v);
  return true;
}

bool parse_flops_rate(std::string_view text, FlopsPerSecond& out) {
  double v = 0;
  if (!parse_with(text, FLOP_RATE_UNITS, true, v)) return false;
  out = FlopsPerSecond(v);
  return true;
}

std::string format_bytes(Bytes b) {
  return format_scaled(b.value(), {{"B", 1}, {"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB}, {"TiB", TiB}});
}

std::string format_duration(Seconds s) {
  const double v = s.value();
  if (v == 0) return "0 s";
  return format_scaled(v, {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}});
}

std::string format_bandwidth(BytesPerSecond r) {
  return format_scaled(r.value(), {{"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12}});
}

std::string format_flops_rate(FlopsPerSecond r) {
  return format_scaled(r.value(), {{"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}});
}

}  // namespace trainsim::core

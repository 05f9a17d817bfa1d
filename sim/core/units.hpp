#pragma once
// Strong unit types. Every quantity that crosses a module boundary carries its unit in its type:
// Bytes, Seconds, BytesPerSecond, Flops, FlopsPerSecond. Conventions: GB = 1e9, GiB = 2^30,
// b = bit, B = byte ("200 Gb/s" is 25e9 bytes per second).

#include <compare>
#include <string>
#include <string_view>

namespace trainsim::core {

template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : value_(value) {}
  constexpr double value() const { return value_; }

  constexpr Quantity& operator+=(Quantity o) { value_ += o.value_; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value_ -= o.value_; return *this; }
  constexpr Quantity& operator*=(double k) { value_ *= k; return *this; }
  constexpr Quantity& operator/=(double k) { value_ /= k; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator-(Quantity a) { return Quantity(-a.value_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.value_ / k); }
  // The ratio of two quantities of one unit is a plain number.
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

 private:
  double value_ = 0.0;
};

struct BytesTag {};
struct SecondsTag {};
struct BytesPerSecondTag {};
struct FlopsTag {};
struct FlopsPerSecondTag {};

using Bytes = Quantity<BytesTag>;
using Seconds = Quantity<SecondsTag>;
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using Flops = Quantity<FlopsTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;

constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value() / r.value()); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.value() * t.value()); }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond(f.value() / t.value()); }

inline constexpr double KiB = 1024.0;
inline constexpr double MiB = 1024.0 * KiB;
inline constexpr double GiB = 1024.0 * MiB;
inline constexpr double TiB = 1024.0 * GiB;

// Parsers for quantity strings. Each returns false (leaving `out` untouched) when `text` is not a
// number followed by a unit of the right dimension; the caller turns that into an InputError.
//   bytes:     "80 GiB", "1.5 GB", "4096 B", "512 KiB", "16M" (bare K/M/G/T suffixes are binary, as in
//              nccl-tests' size arguments), "1e9"
//   duration:  "1.5 us", "2 ms", "0.3 s", "100 ns"
//   bandwidth: "200 Gb/s" (bits), "300 GB/s" (bytes), "25 GiB/s"
//   flops:     "312 TFLOP/s", "1.5 PFLOP/s"
bool parse_bytes(std::string_view text, Bytes& out);
bool parse_duration(std::string_view text, Seconds& out);
bool parse_bandwidth(std::string_view text, BytesPerSecond& out);
bool parse_flops_rate(std::string_view text, FlopsPerSecond& out);

// Human-readable forms used by `check` output and tables. They round-trip through the parsers.
std::string format_bytes(Bytes b);            // "80 GiB", "1.5 MiB", "123 B"
std::string format_duration(Seconds s);       // "1.5 us", "2 ms"
std::string format_bandwidth(BytesPerSecond r);  // "300 GB/s"
std::string format_flops_rate(FlopsPerSecond r);  // "312 TFLOP/s"

}  // namespace trainsim::core

// Shared by the libFuzzer targets (tests/fuzz, docs/hardening.md): what counts as a finding.
//
// A target feeds one input to a reader and lets only core::InputError through: that is the clear
// error a user gets (exit 2). Anything else that escapes (InternalError, std::bad_alloc, a library
// exception) reaches std::terminate, and a signal, a sanitizer report or a libFuzzer timeout or
// out-of-memory is a finding too; each becomes a regression input (tests/data/bad, tests/data/traces/bad).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace trainsim::fuzz {

inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A number a reader accepted and returned as a result must be finite and not negative: a silently
// wrong figure is a finding even without a crash.
inline void require_sane(double value, std::string_view what) {
  if (!std::isfinite(value) || value < 0) {
    std::fprintf(stderr, "fuzz: %.*s is %g after the input was accepted\n", static_cast<int>(what.size()),
                 what.data(), value);
    std::abort();
  }
}

}  // namespace trainsim::fuzz

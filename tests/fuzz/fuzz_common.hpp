// Shared by the libFuzzer targets (tests/fuzz, docs/hardening.md): what counts as a finding.
//
// A target feeds one input to a reader and lets only core::InputError through: that is the clear
// error a user gets (exit 2). Anything else that escapes (InternalError, std::bad_alloc, a library
// exception) reaches std::terminate, and a signal, a sanitizer report or a libFuzzer timeout or
// out-of-memory is a finding too; each becomes a regression input (tests/data/bad, tests/data/traces/bad).
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "models/workload_builder.hpp"
#include "sim/plan/pool_placement.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim::fuzz {

inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Writes the input to this process's scratch file (for readers that take paths, as the commands
// do) and returns its path: /tmp/trainsim-fuzz-PID<suffix>.
inline const std::string& write_scratch(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = "/tmp/trainsim-fuzz-" + std::to_string(getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

// The task budget of `trainsim check` (plan::check_task_budget, InputError above it), then an analytic
// prediction when the workload is small enough to keep the fuzzer fast (at most 20,000 estimated
// tasks: ~10 ms); nothing above that, or for a layer graph unless `layer_graphs`.
inline std::optional<plan::Prediction> predict_if_small(const plan::Scenario& s, bool layer_graphs) {
  constexpr double kMaxFuzzTasks = 20'000;
  plan::check_task_budget(s);
  // The training the strategy runs (a batch split over pools sets its global batch), as
  // check_task_budget counts it: the scenario's own global batch need not divide over the replicas.
  if ((!layer_graphs && s.model.is_layer_graph()) ||
      models::estimate_task_count(s.model, plan::strategy_training(s), s.parallelism, s.offload, s.compression) >
          kMaxFuzzTasks) {
    return std::nullopt;
  }
  return plan::predict(s, "analytic");
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

// A key whose value is a duration, by its unit (tests/cli/output_check.py has the same rule): the last
// `_` part is s, us, ms, ns, h, hours or days (not after "per": `tokens_per_s` is a rate), or
// `_s_per_` (`amortized_s_per_iteration`); every number under such a key is one too.
inline bool is_duration_key(std::string_view key) {
  if (key.find("_s_per_") != std::string_view::npos) return true;
  const size_t last = key.rfind('_');
  if (last == std::string_view::npos) return key == "days" || key == "hours" || key == "seconds";
  const std::string_view unit = key.substr(last + 1);
  const std::string_view before = key.substr(0, last);
  const bool per = before.size() >= 4 && before.substr(before.size() - 4) == "_per";
  return !per && (unit == "s" || unit == "us" || unit == "ms" || unit == "ns" || unit == "h" || unit == "hours" ||
                  unit == "days" || unit == "seconds");
}

// An output document a command printed after accepting its input: every number finite, durations
// not negative, MFU, HFU and goodput in [0, 1] (docs/hardening.md, "Numbers in the output"). `null` is not
// checked here: nlohmann writes a NaN as null only when dumping, and these are the values before.
inline void require_sane_json(const core::Json& j, std::string_view key = "", bool duration = false) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) require_sane_json(v, k, duration || is_duration_key(k));
  } else if (j.is_array()) {
    for (const core::Json& v : j) require_sane_json(v, key, duration);
  } else if (j.is_number()) {
    const double v = j.get<double>();
    const bool fraction = key == "mfu" || key == "hfu" || key == "goodput";
    if (!std::isfinite(v) || (duration && v < 0) || (fraction && (v < 0 || v > 1))) {
      std::fprintf(stderr, "fuzz: %.*s = %g in an accepted input's output\n", static_cast<int>(key.size()), key.data(), v);
      std::abort();
    }
  }
}

}  // namespace trainsim::fuzz

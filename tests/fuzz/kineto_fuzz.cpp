// libFuzzer target: the Kineto (PyTorch profiler) importer (docs/hardening.md). The input is a
// Chrome-trace JSON document; parsed with core::parse_json_text's limits, imported, and the import
// written as a trainsim trace into memory (the path `trace import-kineto` takes, without the file).
// The import is then fitted as `trainsim calibrate` fits it (the GEMM shapes and op costs that
// record_shapes=True traces give): every fitted figure must be finite, the efficiencies in (0, 1].
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "calibrate/kineto_import.hpp"
#include "calibrate/profile_fit.hpp"
#include "calibrate/trace_set.hpp"
#include "sim/core/device.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {

trainsim::calibrate::FitOptions h100_options() {
  using namespace trainsim;
  calibrate::FitOptions o;
  o.gpu = *core::find_gpu("H100-SXM5-80GB");
  o.links = {core::BytesPerSecond(450e9), core::Seconds(1e-6), core::BytesPerSecond(50e9), core::Seconds(2e-6)};
  o.base.device = core::DeviceProfile::defaults_for("H100-SXM5-80GB");
  return o;
}

// Efficiencies are fractions of a peak; the other fitted figures rates, bytes or seconds.
void require_sane_profile(const trainsim::core::Json& j, std::string_view key = "") {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) require_sane_profile(v, k);
  } else if (j.is_array()) {
    for (const trainsim::core::Json& v : j) require_sane_profile(v, key);
  } else if (j.is_number()) {
    const double v = j.get<double>();
    const bool efficiency = key.find("efficiency") != std::string_view::npos;
    if (!std::isfinite(v) || v < 0 || (efficiency && (v <= 0 || v > 1))) {
      std::fprintf(stderr, "fuzz: fitted %.*s = %g\n", static_cast<int>(key.size()), key.data(), v);
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  try {
    const core::Json doc = core::parse_json_text(fuzz::as_text(data, size), "fuzz-kineto.json");
    const calibrate::KinetoImport imported = calibrate::import_kineto_json(doc, "fuzz-kineto.json");
    (void)calibrate::kineto_output_name(imported);
    core::TraceFile file;
    file.path = "fuzz-kineto.trace";
    file.header = imported.header;
    file.records = imported.records;
    const calibrate::ProfileFit fit = calibrate::fit_profile(calibrate::TraceSet({file}), h100_options());
    require_sane_profile(fit.profile.to_json());
    for (const calibrate::FitCategory& c : fit.categories) {
      for (const auto& [name, value] : c.parameters) require_sane_profile(core::Json{{name, value}});
    }
  } catch (const core::InputError&) {
  }
  return 0;
}

// libFuzzer target: the Kineto (PyTorch profiler) importer (docs/hardening.md). The input is a
// Chrome-trace JSON document; parsed with core::parse_json_text's limits, imported, and the import
// written as a trainsim trace into memory (the path `trace import-kineto` takes, without the file).
#include <cstddef>
#include <cstdint>

#include "calibrate/kineto_import.hpp"
#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  try {
    const core::Json doc = core::parse_json_text(fuzz::as_text(data, size), "fuzz-kineto.json");
    const calibrate::KinetoImport imported = calibrate::import_kineto_json(doc, "fuzz-kineto.json");
    (void)calibrate::kineto_output_name(imported);
  } catch (const core::InputError&) {
  }
  return 0;
}

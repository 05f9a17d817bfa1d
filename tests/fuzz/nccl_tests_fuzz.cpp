// libFuzzer target: the nccl-tests output parser (docs/hardening.md). The input is the text of an
// nccl-tests run (all_reduce_perf and friends); every run parsed is turned into calibration samples.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "calibrate/nccl_tests_import.hpp"
#include "sim/core/error.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  try {
    std::istringstream in(fuzz::as_text(data, size));
    for (const calibrate::NcclTestsRun& run : calibrate::parse_nccl_tests(in, "fuzz-nccl-tests.txt")) {
      for (const calibrate::CollectiveSample& sample : calibrate::collective_samples(run)) {
        fuzz::require_sane(sample.time.value(), "a parsed collective time");
      }
    }
  } catch (const core::InputError&) {
  }
  return 0;
}

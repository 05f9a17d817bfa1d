#pragma once
// What a calibration measured: the GPU and the software stack, recorded in the profile it writes
// (core::FittedOn, the profile's "fitted_on") so that a scenario on another GPU can say so.
//
//  - cuda: the CUDA runtime version of the trace headers (Header.cuda_runtime_version; Kineto's
//    "cuda_runtime_version"), e.g. 12040 -> "12.4".
//  - nccl: the NCCL version of the trace headers (Header.nccl_version; Kineto's
//    distributedInfo.nccl_version), else of a Library record named "nccl" (the tracer learns it once
//    NCCL is loaded), else of nccl-tests outputs ("nccl-library=N"), e.g. 22105 -> "2.21.5".
//  - framework: "pytorch" when the traces were imported from the PyTorch profiler (Kineto).
// Where the inputs name several versions, they are listed in the order first seen, joined by " / ".
// Unknown: "".
//
// Example:
//   fit.profile.device.fitted_on = measured_on(fit.gpu, &traces, nccl_runs);

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/nccl_tests_import.hpp"
#include "calibrate/trace_set.hpp"
#include "sim/core/device.hpp"

namespace trainsim::calibrate {

// `traces` may be nullptr (nccl-tests outputs only).
core::FittedOn measured_on(const std::string& gpu, const TraceSet* traces, const std::vector<NcclTestsRun>& runs);

// CUDA's version code (1000 x major + 10 x minor) as "12.4"; "" for 0.
std::string cuda_version_text(uint32_t code);
// NCCL_VERSION_CODE as "2.21.5" (10000 x major + 100 x minor + patch since NCCL 2.9, 1000 x major +
// 100 x minor + patch before); "" for 0.
std::string nccl_version_text(uint32_t code);

}  // namespace trainsim::calibrate

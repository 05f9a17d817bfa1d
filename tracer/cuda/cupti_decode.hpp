#pragma once
// Decoding CUPTI 13 activity records (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, ...) into the
// CUDA-free mirrors of record/cupti_activity.hpp. Needs cupti_activity.h, not libcupti, so tests
// build synthetic buffers of real CUPTI structs wherever the CUDA headers are installed.

#include "tracer/record/cupti_activity.hpp"

namespace trainsim::tracer {

// REQUIRES: `record` points at a CUPTI activity record (CUpti_Activity). Kinds other than those of
// ActivityKind decode to std::monostate.
CuptiActivity decode_cupti_record(const void* record);

}  // namespace trainsim::tracer

// The NCCL profiler plugin entry point: NCCL_PROFILER_PLUGIN names libtrainsim_tracer.so, NCCL
// dlopens it and reads the ncclProfiler_v5 table. Every callback goes to one NcclProfiler writing
// into the process's trace session (record/nccl_profiler.hpp). Plain C++, no NCCL headers.

#include <cstdlib>

#include "tracer/record/nccl_profiler.hpp"

namespace {

using namespace trainsim::tracer;

// Null when no trace file could be created: init then fails and NCCL disables the plugin.
NcclProfiler* profiler() {
  static NcclProfiler* p = [] {
    TraceSession* session = process_session();
    if (session == nullptr) return static_cast<NcclProfiler*>(nullptr);
    auto* created = new NcclProfiler(*session);
    // Operations whose kernel never reported (or whose communicator is never destroyed, as in most
    // PyTorch jobs) are written at exit. Registered after the session's own exit handler, so it
    // runs before the session's final status.
    std::atexit([] { profiler()->flush_open(); });
    return created;
  }();
  return p;
}

nccl_abi::Result init(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes, int n_ranks,
                      int rank, nccl_abi::DebugLogger logger) {
  NcclProfiler* p = profiler();
  if (p == nullptr) return nccl_abi::INTERNAL_ERROR;
  return p->init(context, comm_id, mask, comm_name, n_nodes, n_ranks, rank, logger);
}

// NCCL calls the others only after a successful init, so profiler() is not null there.
nccl_abi::Result start_event(void* context, void** handle, nccl_abi::EventDescrV5* descr) {
  return profiler()->start_event(context, handle, descr);
}
nccl_abi::Result stop_event(void* handle) { return profiler()->stop_event(handle); }
nccl_abi::Result record_event_state(void* handle, nccl_abi::EventState state, nccl_abi::EventStateArgsV5* args) {
  return profiler()->record_event_state(handle, state, args);
}
nccl_abi::Result finalize(void* context) { return profiler()->finalize(context); }

}  // namespace

extern "C" {
__attribute__((visibility("default"))) nccl_abi::ProfilerV5 ncclProfiler_v5 = {
    "trainsim", init, start_event, stop_event, record_event_state, finalize};
}

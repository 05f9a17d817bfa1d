// The CUDA injection entry point: CUDA_INJECTION64_PATH names libtrainsim_tracer.so, and the CUDA
// driver calls InitializeInjection() once, during cuInit. It starts CUPTI's activity API, opens the
// process's trace session and converts each completed activity buffer into records on the spot
// (record/cupti_activity.hpp), so the trace grows while the job runs. At exit it flushes CUPTI's
// buffers and finalizes CUPTI.
//
// Every CUPTI failure is reported once (TraceSession::report_error) and disables only what failed:
// an activity kind CUPTI refuses is not recorded, the others are.

#include <cstdint>
#include <cstdlib>
#include <cupti.h>
#include <dlfcn.h>
#include <mutex>
#include <string>

#include "tracer/cuda/cupti_decode.hpp"
#include "tracer/record/environment.hpp"
#include "tracer/record/library_lookup.hpp"
#include "tracer/record/session.hpp"

#define TRAINSIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace trainsim::tracer {
namespace {

constexpr size_t BUFFER_BYTES = 8u << 20;  // CUPTI's recommended size range is 1-10 MiB
constexpr size_t BUFFER_ALIGNMENT = ACTIVITY_RECORD_ALIGNMENT;

TraceSession* session = nullptr;
std::mutex converter_mutex;
ActivityConverter* converter = nullptr;

std::string cupti_error(const char* call, CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
  return std::string(call) + " failed: " + text;
}

uint64_t cupti_timestamp() {
  uint64_t ts = 0;
  return cuptiGetTimestamp(&ts) == CUPTI_SUCCESS ? ts : realtime_ns();
}

NextStatus cupti_next_record(uint8_t* buffer, size_t valid_size, void** record) {
  auto** activity = reinterpret_cast<CUpti_Activity**>(record);
  const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_size, activity);
  if (r == CUPTI_SUCCESS) return NextStatus::OK;
  if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) return NextStatus::END;
  return NextStatus::ERROR;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(BUFFER_ALIGNMENT, BUFFER_BYTES));
  *size = *buffer == nullptr ? 0 : BUFFER_BYTES;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                               size_t valid_size) {
  std::string out;
  uint64_t records = 0;
  uint64_t unsupported = 0;
  bool error = false;
  {
    std::lock_guard<std::mutex> lock(converter_mutex);
    const ActivityConverter::Counts before = converter->counts();
    error = walk_activity_buffer(buffer, valid_size, cupti_next_record, decode_cupti_record, *converter, out).error;
    records = converter->counts().records - before.records;
    unsupported = converter->counts().unsupported - before.unsupported;
  }
  std::free(buffer);
  session->append(out, records);
  session->add_unsupported(unsupported);
  if (error) session->report_error("cuptiActivityGetNextRecord failed; the rest of an activity buffer was lost");
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    session->add_dropped(dropped);
  }
  session->flush();
}

void push_correlation(uint32_t kind, uint64_t id) {
  cuptiActivityPushExternalCorrelationId(static_cast<CUpti_ExternalCorrelationKind>(kind), id);
}

void pop_correlation(uint32_t kind) {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(static_cast<CUpti_ExternalCorrelationKind>(kind), &last);
}

void at_exit() {
  CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) session->report_error(cupti_error("cuptiActivityFlushAll", r));
  r = cuptiFinalize();
  if (r != CUPTI_SUCCESS) session->report_error(cupti_error("cuptiFinalize", r));
  session->close();
}

// A function of a loaded library (libcuda, the CUDA runtime), looked up without linking to it: the
// tracer must load in processes without a GPU driver too (LD_PRELOAD reaches every child process).
template <class Fn>
Fn loaded_function(const char* name) {
  static const int own = 0;
  const LoadedLibrary lib = find_library_defining(name, &own);
  return reinterpret_cast<Fn>(lib.symbol(name));
}

SessionSetup session_setup() {
  SessionSetup setup;
  setup.clock = cupti_timestamp;
  setup.clock_kind = TraceClock::CUPTI;
  int version = 0;
  if (auto* get = loaded_function<int (*)(int*)>("cuDriverGetVersion"); get != nullptr && get(&version) == 0) {
    setup.cuda_driver_version = static_cast<uint32_t>(version);
  }
  if (auto* get = loaded_function<int (*)(int*)>("cudaRuntimeGetVersion"); get != nullptr && get(&version) == 0) {
    setup.cuda_runtime_version = static_cast<uint32_t>(version);
  }
  uint32_t cupti_version = 0;
  if (cuptiGetVersion(&cupti_version) == CUPTI_SUCCESS) setup.cupti_api_version = cupti_version;
  return setup;
}

bool enable(CUpti_ActivityKind kind, const char* what) {
  const CUptiResult r = cuptiActivityEnable(kind);
  if (r != CUPTI_SUCCESS) {
    session->report_error(cupti_error("cuptiActivityEnable", r) + "; " + what + " are not recorded");
  }
  return r == CUPTI_SUCCESS;
}

// The API calls that put work on a GPU stream: launches, asynchronous copies and sets, graph
// launches. Their records are what an external correlation record needs (start()); every other API
// call's record would only cost time: PyTorch makes several runtime calls per operator, and with
// all of them recorded a host-bound step ran 69% slower under the tracer (docs/gpu-runs.md).
constexpr CUpti_CallbackId LAUNCH_DRIVER_APIS[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz};
constexpr CUpti_CallbackId LAUNCH_RUNTIME_APIS[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000};

// API records for the launches only, or (`all`, TRAINSIM_TRACE_API=all) for every driver and runtime
// call; a CUPTI without per-call control gets all of them.
void enable_api_records(bool all) {
  bool selected = !all;
  for (CUpti_CallbackId id : LAUNCH_DRIVER_APIS) selected = selected && cuptiActivityEnableDriverApi(id, 1) == CUPTI_SUCCESS;
  for (CUpti_CallbackId id : LAUNCH_RUNTIME_APIS) selected = selected && cuptiActivityEnableRuntimeApi(id, 1) == CUPTI_SUCCESS;
  if (selected) return;
  enable(CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API calls (kernels are not joined to NCCL and cuBLAS calls)");
  enable(CUPTI_ACTIVITY_KIND_DRIVER, "driver API calls (kernels are not joined to NCCL and cuBLAS calls)");
}

void start() {
  session = process_session(session_setup());
  if (session == nullptr) return;  // logged by process_session
  converter = new ActivityConverter();
  const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    session->report_error(cupti_error("cuptiActivityRegisterCallbacks", r) + "; no CUDA activity is recorded");
    return;
  }
  // Kernels first: when CUPTI cannot record them (no driver, a profiler already attached), it
  // cannot record anything else either, and one message says so.
  if (!enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CUDA activities (kernels, copies, ...)")) return;
  enable(CUPTI_ACTIVITY_KIND_DEVICE, "device properties");
  enable(CUPTI_ACTIVITY_KIND_CONTEXT, "contexts");
  enable(CUPTI_ACTIVITY_KIND_STREAM, "streams");
  enable(CUPTI_ACTIVITY_KIND_MEMCPY, "memory copies");
  enable(CUPTI_ACTIVITY_KIND_MEMCPY2, "peer-to-peer copies");
  enable(CUPTI_ACTIVITY_KIND_MEMSET, "memsets");
  // CUPTI writes an external correlation record per driver or runtime API call made while an id is
  // pushed, and only while API records are enabled: without them no kernel joins its NCCL or cuBLAS
  // call (CuptiApiCall in record/cupti_activity.hpp). Only the wrappers push ids.
  const TracerOptions options = read_options(process_environment());
  if (options.wrappers && enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "external correlations")) {
    enable_api_records(options.all_api_records);
  }
  if (options.nvtx) enable(CUPTI_ACTIVITY_KIND_MARKER, "NVTX ranges");
  session->set_correlation_hooks({push_correlation, pop_correlation});
  // Registered after the session's own exit handler, so it runs first: CUPTI's last buffers are
  // written before the session's final status.
  std::atexit(at_exit);
}

}  // namespace
}  // namespace trainsim::tracer

TRAINSIM_EXPORT int InitializeInjection() {
  static std::once_flag once;
  std::call_once(once, trainsim::tracer::start);
  return 1;
}

// NVTX_INJECTION64_PATH=libtrainsim_tracer.so (set by `trainsim trace --nvtx`): NVTX's ranges go to
// CUPTI, which records them as CUPTI_ACTIVITY_KIND_MARKER. CUPTI implements the NVTX injection
// interface; this forwards to it.
TRAINSIM_EXPORT int InitializeInjectionNvtx2(void* get_export_table) {
  using InitFn = int (*)(void*);
  const trainsim::tracer::LoadedLibrary cupti = trainsim::tracer::find_loaded_library(trainsim::tracer::is_cupti_library);
  auto* init = reinterpret_cast<InitFn>(cupti.symbol("InitializeInjectionNvtx2"));
  if (init == nullptr) {
    trainsim::tracer::log_once("nvtx", "libcupti lacks InitializeInjectionNvtx2; NVTX ranges are not recorded");
    return 0;
  }
  return init(get_export_table);
}

#pragma once
// The nccl* API wrapper's bookkeeping. With libtrainsim_tracer.so in LD_PRELOAD, the process's calls
// to ncclAllReduce & co. reach tracer/nccl_exports.cpp, which forwards each to the real function
// found by NcclWrapper (library_lookup.hpp) and records it here:
//  - a Collective / P2p record (SOURCE_NCCL_WRAPPER, TIMING_ENQUEUE: the host call) with the op,
//    count, bytes, datatype, communicator size and rank (ncclCommCount / ncclCommUserRank, cached
//    per communicator until ncclCommDestroy / ncclCommAbort), root or peer, and stream;
//  - an external correlation id, pushed to CUPTI around the call that launches the NCCL kernel, so
//    that the kernel's record can be joined to the call. Inside ncclGroupStart/End the kernels are
//    launched by the outermost ncclGroupEnd: every call of the group gets the group's id, and that
//    id is pushed around ncclGroupEnd.
//
// Example:
//   NcclWrapper w(session, find_loaded_library(is_nccl_library));
//   nccl_api::Result r = w.collective("AllReduce", CollectiveOp::ALL_REDUCE, count, dtype, -1, comm,
//                                     stream, [&] { return w.api().all_reduce(...); });

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "tracer/record/events.hpp"
#include "tracer/record/library_lookup.hpp"
#include "tracer/record/session.hpp"

namespace trainsim::tracer {

// Our declarations of the parts of nccl.h the wrapper uses (C ABI: enums are ints, handles pointers).
namespace nccl_api {
struct CommOpaque;
using Comm = CommOpaque*;   // ncclComm_t
using Stream = void*;       // cudaStream_t
using Result = int;         // ncclResult_t
using DataTypeCode = int;   // ncclDataType_t
using RedOp = int;          // ncclRedOp_t
inline constexpr Result SUCCESS = 0;
inline constexpr Result SYSTEM_ERROR = 2;

using AllReduceFn = Result (*)(const void*, void*, size_t, DataTypeCode, RedOp, Comm, Stream);
using ReduceScatterFn = Result (*)(const void*, void*, size_t, DataTypeCode, RedOp, Comm, Stream);
using AllGatherFn = Result (*)(const void*, void*, size_t, DataTypeCode, Comm, Stream);
using BroadcastFn = Result (*)(const void*, void*, size_t, DataTypeCode, int, Comm, Stream);
using ReduceFn = Result (*)(const void*, void*, size_t, DataTypeCode, RedOp, int, Comm, Stream);
using AllToAllFn = Result (*)(const void*, void*, size_t, DataTypeCode, Comm, Stream);
using SendFn = Result (*)(const void*, size_t, DataTypeCode, int, Comm, Stream);
using RecvFn = Result (*)(void*, size_t, DataTypeCode, int, Comm, Stream);
using GroupFn = Result (*)();
using CommQueryFn = Result (*)(Comm, int*);
using CommFn = Result (*)(Comm);
using GetVersionFn = Result (*)(int*);

// ncclDataType_t value -> DataType (ncclInt8 = 0 ... ncclFloat8e5m2 = 11).
DataType data_type(DataTypeCode code);
}  // namespace nccl_api

// The real functions. A member is null when the library lacks it (an older NCCL).
struct NcclApi {
  nccl_api::AllReduceFn all_reduce = nullptr;
  nccl_api::ReduceScatterFn reduce_scatter = nullptr;
  nccl_api::AllGatherFn all_gather = nullptr;
  nccl_api::BroadcastFn broadcast = nullptr;
  nccl_api::ReduceFn reduce = nullptr;
  nccl_api::AllToAllFn all_to_all = nullptr;
  nccl_api::SendFn send = nullptr;
  nccl_api::RecvFn recv = nullptr;
  nccl_api::GroupFn group_start = nullptr;
  nccl_api::GroupFn group_end = nullptr;
  nccl_api::CommQueryFn comm_count = nullptr;
  nccl_api::CommQueryFn comm_user_rank = nullptr;
  nccl_api::CommFn comm_destroy = nullptr;
  nccl_api::CommFn comm_abort = nullptr;
  nccl_api::GetVersionFn get_version = nullptr;

  static NcclApi resolve(const LoadedLibrary& lib);
};

// External correlation kind of NCCL calls: CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0.
inline constexpr uint32_t EXTERNAL_KIND_NCCL = 3;

class NcclWrapper {
 public:
  // `session` may be null: calls are then forwarded and not recorded. Records a Library record for
  // the NCCL found.
  NcclWrapper(TraceSession* session, const LoadedLibrary& lib);

  // The process's wrapper: the process session, and the libnccl found among the loaded objects (by
  // file name, else by the first object defining ncclAllReduce other than the tracer). Logs once
  // when none is found; the wrapped calls then return ncclSystemError.
  static NcclWrapper& instance();

  const NcclApi& api() const { return api_; }

  // Forwards `call` (the real function, already bound to its arguments) and records it.
  // `count` is as passed to the API; `root` is -1 for ops without one.
  template <class Call>
  nccl_api::Result collective(const char* name, CollectiveOp op, size_t count, nccl_api::DataTypeCode type, int root,
                              nccl_api::Comm comm, nccl_api::Stream stream, Call call) {
    const Started s = before_call();
    const nccl_api::Result r = call();
    after_call(s);
    record_collective(name, op, count, type, root, comm, stream, s);
    return r;
  }
  template <class Call>
  nccl_api::Result p2p(P2pDirection direction, size_t count, nccl_api::DataTypeCode type, int peer,
                       nccl_api::Comm comm, nccl_api::Stream stream, Call call) {
    const Started s = before_call();
    const nccl_api::Result r = call();
    after_call(s);
    record_p2p(direction, count, type, peer, comm, stream, s);
    return r;
  }
  nccl_api::Result group_start();
  nccl_api::Result group_end();
  // ncclCommDestroy / ncclCommAbort: forgets the cached size and rank of `comm`.
  nccl_api::Result comm_destroy(nccl_api::Comm comm, bool abort);

 private:
  struct Started {
    uint64_t enqueue_ns = 0;
    uint64_t correlation_id = 0;
    bool pushed = false;
  };
  struct CommInfo {
    int size = 0;
    int rank = 0;
  };
  Started before_call();
  void after_call(const Started& s);
  CommInfo comm_info(nccl_api::Comm comm);
  void record_collective(const char* name, CollectiveOp op, size_t count, nccl_api::DataTypeCode type, int root,
                         nccl_api::Comm comm, nccl_api::Stream stream, const Started& s);
  void record_p2p(P2pDirection direction, size_t count, nccl_api::DataTypeCode type, int peer, nccl_api::Comm comm,
                  nccl_api::Stream stream, const Started& s);

  TraceSession* session_;
  NcclApi api_;
  std::mutex comms_mutex_;
  std::unordered_map<nccl_api::Comm, CommInfo> comms_;
};

}  // namespace trainsim::tracer

#include "tracer/record/nccl_wrapper.hpp"

#include <cstdint>
#include <iterator>

namespace trainsim::tracer {
namespace {

// Group state of the calling thread (NCCL groups are per thread).
thread_local int group_depth = 0;
thread_local uint64_t group_correlation_id = 0;

template <class Fn>
Fn lookup(const LoadedLibrary& lib, const char* name) {
  return reinterpret_cast<Fn>(lib.symbol(name));
}

}  // namespace

DataType nccl_api::data_type(DataTypeCode code) {
  static constexpr DataType TYPES[] = {DataType::INT8,    DataType::UINT8,       DataType::INT32,
                                       DataType::UINT32,  DataType::INT64,       DataType::UINT64,
                                       DataType::FLOAT16, DataType::FLOAT32,     DataType::FLOAT64,
                                       DataType::BFLOAT16, DataType::FLOAT8_E4M3, DataType::FLOAT8_E5M2};
  return code >= 0 && code < static_cast<int>(std::size(TYPES)) ? TYPES[code] : DataType::UNKNOWN;
}

NcclApi NcclApi::resolve(const LoadedLibrary& lib) {
  NcclApi api;
  api.all_reduce = lookup<nccl_api::AllReduceFn>(lib, "ncclAllReduce");
  api.reduce_scatter = lookup<nccl_api::ReduceScatterFn>(lib, "ncclReduceScatter");
  api.all_gather = lookup<nccl_api::AllGatherFn>(lib, "ncclAllGather");
  api.broadcast = lookup<nccl_api::BroadcastFn>(lib, "ncclBroadcast");
  api.reduce = lookup<nccl_api::ReduceFn>(lib, "ncclReduce");
  api.all_to_all = lookup<nccl_api::AllToAllFn>(lib, "ncclAlltoAll");
  api.send = lookup<nccl_api::SendFn>(lib, "ncclSend");
  api.recv = lookup<nccl_api::RecvFn>(lib, "ncclRecv");
  api.group_start = lookup<nccl_api::GroupFn>(lib, "ncclGroupStart");
  api.group_end = lookup<nccl_api::GroupFn>(lib, "ncclGroupEnd");
  api.comm_count = lookup<nccl_api::CommQueryFn>(lib, "ncclCommCount");
  api.comm_user_rank = lookup<nccl_api::CommQueryFn>(lib, "ncclCommUserRank");
  api.comm_destroy = lookup<nccl_api::CommFn>(lib, "ncclCommDestroy");
  api.comm_abort = lookup<nccl_api::CommFn>(lib, "ncclCommAbort");
  api.get_version = lookup<nccl_api::GetVersionFn>(lib, "ncclGetVersion");
  return api;
}

NcclWrapper::NcclWrapper(TraceSession* session, const LoadedLibrary& lib)
    : session_(session), api_(NcclApi::resolve(lib)) {
  if (session_ == nullptr || !lib) return;
  int version = 0;
  if (api_.get_version != nullptr && api_.get_version(&version) != nccl_api::SUCCESS) version = 0;
  session_->record(LibraryInfo{"nccl", static_cast<uint32_t>(version), lib.path});
}

NcclWrapper& NcclWrapper::instance() {
  static NcclWrapper* wrapper = [] {
    LoadedLibrary lib = find_loaded_library(is_nccl_library);
    if (!lib) lib = find_library_defining("ncclAllReduce", reinterpret_cast<const void*>(&NcclWrapper::instance));
    TraceSession* session = process_session();
    if (!lib) {
      const std::string message = "nccl* wrapper: no loaded NCCL library found; wrapped calls fail";
      if (session != nullptr) session->report_error(message);
      else log_once("nccl-wrapper", message);
    }
    return new NcclWrapper(session, lib);
  }();
  return *wrapper;
}

NcclWrapper::Started NcclWrapper::before_call() {
  Started s;
  if (session_ == nullptr) return s;
  s.enqueue_ns = session_->now_ns();
  if (group_depth > 0) {
    s.correlation_id = group_correlation_id;  // launched by the group's end
    return s;
  }
  s.correlation_id = session_->next_correlation_id();
  if (const auto& hooks = session_->correlation_hooks(); hooks.push != nullptr) {
    hooks.push(EXTERNAL_KIND_NCCL, s.correlation_id);
    s.pushed = true;
  }
  return s;
}

void NcclWrapper::after_call(const Started& s) {
  if (s.pushed) session_->correlation_hooks().pop(EXTERNAL_KIND_NCCL);
}

nccl_api::Result NcclWrapper::group_start() {
  if (api_.group_start == nullptr) return nccl_api::SYSTEM_ERROR;
  if (group_depth++ == 0 && session_ != nullptr) group_correlation_id = session_->next_correlation_id();
  return api_.group_start();
}

nccl_api::Result NcclWrapper::group_end() {
  if (api_.group_end == nullptr) return nccl_api::SYSTEM_ERROR;
  if (group_depth > 0) --group_depth;
  const bool push = group_depth == 0 && session_ != nullptr && session_->correlation_hooks().push != nullptr;
  if (push) session_->correlation_hooks().push(EXTERNAL_KIND_NCCL, group_correlation_id);
  const nccl_api::Result r = api_.group_end();
  if (push) session_->correlation_hooks().pop(EXTERNAL_KIND_NCCL);
  return r;
}

nccl_api::Result NcclWrapper::comm_destroy(nccl_api::Comm comm, bool abort) {
  {
    std::lock_guard<std::mutex> lock(comms_mutex_);
    comms_.erase(comm);
  }
  const nccl_api::CommFn fn = abort ? api_.comm_abort : api_.comm_destroy;
  return fn == nullptr ? nccl_api::SYSTEM_ERROR : fn(comm);
}

NcclWrapper::CommInfo NcclWrapper::comm_info(nccl_api::Comm comm) {
  std::lock_guard<std::mutex> lock(comms_mutex_);
  const auto it = comms_.find(comm);
  if (it != comms_.end()) return it->second;
  CommInfo info;
  if (api_.comm_count == nullptr || api_.comm_count(comm, &info.size) != nccl_api::SUCCESS) info.size = 0;
  if (api_.comm_user_rank == nullptr || api_.comm_user_rank(comm, &info.rank) != nccl_api::SUCCESS) info.rank = -1;
  comms_.emplace(comm, info);
  return info;
}

void NcclWrapper::record_collective(const char* name, CollectiveOp op, size_t count, nccl_api::DataTypeCode type,
                                    int root, nccl_api::Comm comm, nccl_api::Stream stream, const Started& s) {
  if (session_ == nullptr) return;
  const CommInfo info = comm_info(comm);
  CollectiveEvent c;
  c.op = op;
  c.op_name = name;
  c.count = count;
  c.data_type = nccl_api::data_type(type);
  c.bytes = collective_bytes(op, count, c.data_type, info.size);
  c.root = root;
  c.comm.comm_size = info.size;
  c.comm.rank = info.rank;
  c.comm.stream = reinterpret_cast<uintptr_t>(stream);
  c.comm.enqueue_ns = s.enqueue_ns;
  c.comm.start_ns = s.enqueue_ns;
  c.comm.end_ns = session_->now_ns();
  c.comm.timing = Timing::ENQUEUE;
  c.comm.source = Source::NCCL_WRAPPER;
  c.comm.correlation_id = s.correlation_id;
  session_->record(c);
}

void NcclWrapper::record_p2p(P2pDirection direction, size_t count, nccl_api::DataTypeCode type, int peer,
                             nccl_api::Comm comm, nccl_api::Stream stream, const Started& s) {
  if (session_ == nullptr) return;
  const CommInfo info = comm_info(comm);
  P2pEvent p;
  p.direction = direction;
  p.peer = peer;
  p.count = count;
  p.data_type = nccl_api::data_type(type);
  p.bytes = count * data_type_size(p.data_type);
  p.comm.comm_size = info.size;
  p.comm.rank = info.rank;
  p.comm.stream = reinterpret_cast<uintptr_t>(stream);
  p.comm.enqueue_ns = s.enqueue_ns;
  p.comm.start_ns = s.enqueue_ns;
  p.comm.end_ns = session_->now_ns();
  p.comm.timing = Timing::ENQUEUE;
  p.comm.source = Source::NCCL_WRAPPER;
  p.comm.correlation_id = s.correlation_id;
  session_->record(p);
}

}  // namespace trainsim::tracer

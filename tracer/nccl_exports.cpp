// The nccl* functions that libtrainsim_tracer.so exports for LD_PRELOAD: each forwards to the real
// NCCL function (record/nccl_wrapper.hpp) and records the call. Plain C++ with our own declarations
// of the NCCL ABI, so that tests can drive these very functions against a fake libnccl.

#include "tracer/record/nccl_wrapper.hpp"

#define TRAINSIM_EXPORT extern "C" __attribute__((visibility("default")))

using trainsim::tracer::CollectiveOp;
using trainsim::tracer::NcclWrapper;
using trainsim::tracer::P2pDirection;
namespace api = trainsim::tracer::nccl_api;

TRAINSIM_EXPORT api::Result ncclAllReduce(const void* send, void* recv, size_t count, api::DataTypeCode type,
                                          api::RedOp op, api::Comm comm, api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().all_reduce == nullptr) return api::SYSTEM_ERROR;
  return w.collective("AllReduce", CollectiveOp::ALL_REDUCE, count, type, -1, comm, stream,
                      [&] { return w.api().all_reduce(send, recv, count, type, op, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclReduceScatter(const void* send, void* recv, size_t recv_count,
                                              api::DataTypeCode type, api::RedOp op, api::Comm comm,
                                              api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().reduce_scatter == nullptr) return api::SYSTEM_ERROR;
  return w.collective("ReduceScatter", CollectiveOp::REDUCE_SCATTER, recv_count, type, -1, comm, stream,
                      [&] { return w.api().reduce_scatter(send, recv, recv_count, type, op, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclAllGather(const void* send, void* recv, size_t send_count, api::DataTypeCode type,
                                          api::Comm comm, api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().all_gather == nullptr) return api::SYSTEM_ERROR;
  return w.collective("AllGather", CollectiveOp::ALL_GATHER, send_count, type, -1, comm, stream,
                      [&] { return w.api().all_gather(send, recv, send_count, type, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclBroadcast(const void* send, void* recv, size_t count, api::DataTypeCode type,
                                          int root, api::Comm comm, api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().broadcast == nullptr) return api::SYSTEM_ERROR;
  return w.collective("Broadcast", CollectiveOp::BROADCAST, count, type, root, comm, stream,
                      [&] { return w.api().broadcast(send, recv, count, type, root, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclReduce(const void* send, void* recv, size_t count, api::DataTypeCode type,
                                       api::RedOp op, int root, api::Comm comm, api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().reduce == nullptr) return api::SYSTEM_ERROR;
  return w.collective("Reduce", CollectiveOp::REDUCE, count, type, root, comm, stream,
                      [&] { return w.api().reduce(send, recv, count, type, op, root, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclAlltoAll(const void* send, void* recv, size_t count, api::DataTypeCode type,
                                         api::Comm comm, api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().all_to_all == nullptr) return api::SYSTEM_ERROR;
  return w.collective("AlltoAll", CollectiveOp::ALL_TO_ALL, count, type, -1, comm, stream,
                      [&] { return w.api().all_to_all(send, recv, count, type, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclSend(const void* send, size_t count, api::DataTypeCode type, int peer,
                                     api::Comm comm, api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().send == nullptr) return api::SYSTEM_ERROR;
  return w.p2p(P2pDirection::SEND, count, type, peer, comm, stream,
               [&] { return w.api().send(send, count, type, peer, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclRecv(void* recv, size_t count, api::DataTypeCode type, int peer, api::Comm comm,
                                     api::Stream stream) {
  NcclWrapper& w = NcclWrapper::instance();
  if (w.api().recv == nullptr) return api::SYSTEM_ERROR;
  return w.p2p(P2pDirection::RECV, count, type, peer, comm, stream,
               [&] { return w.api().recv(recv, count, type, peer, comm, stream); });
}

TRAINSIM_EXPORT api::Result ncclGroupStart() { return NcclWrapper::instance().group_start(); }
TRAINSIM_EXPORT api::Result ncclGroupEnd() { return NcclWrapper::instance().group_end(); }
TRAINSIM_EXPORT api::Result ncclCommDestroy(api::Comm comm) { return NcclWrapper::instance().comm_destroy(comm, false); }
TRAINSIM_EXPORT api::Result ncclCommAbort(api::Comm comm) { return NcclWrapper::instance().comm_destroy(comm, true); }

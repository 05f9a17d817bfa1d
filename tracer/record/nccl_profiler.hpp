#pragma once
// The NCCL profiler plugin's bookkeeping: turns NCCL's event callbacks (nccl_profiler_abi.hpp) into
// Collective and P2p records.
//
// NCCL starts a Coll (or P2p) event when the operation is enqueued and stops it as soon as it is
// enqueued: stopEvent does not mean the operation ran (ext-profiler/README.md, "Profiling of
// collective and p2p operations"). Its execution shows up in child events that arrive later, on
// NCCL's proxy thread: one KernelCh event per channel of the NCCL kernel, with GPU globaltimer start
// and stop, and ProxyOp events when the network is used. An operation is written once it was
// enqueued, every one of its channels (nChannels of the descriptor) has stopped, and no child is
// open. Operations that never get there (kernel channel events unsupported, or the process exits
// first) are written when their communicator is finalized, or by flush_open() at exit, with the
// best timing they have. Its time is the kernel channels' span when known (TIMING_KERNEL_CHANNEL),
// else the proxy operations' (TIMING_PROXY), else the enqueue call (TIMING_ENQUEUE).
//
// NCCL may still hand a written operation's handle to a late child, so written operations are kept
// (and such children ignored) until RETIRED_KEPT later operations have been written.
//
// Child events from another process (PXN: a proxy serving a remote rank) name a parent in that
// process's address space; they are recognised by their pid and ignored.
//
// Example (what NCCL does for one all-reduce on a communicator of 8 ranks):
//   NcclProfiler p(session);
//   p.init(&ctx, comm_id, &mask, "pg0", 1, 8, 3, nullptr);
//   p.start_event(ctx, &coll, &coll_descr);    // enqueue
//   p.stop_event(coll);                        // enqueued
//   p.start_event(ctx, &ch, &kernel_ch_descr); // parent: coll; channel start time
//   p.record_event_state(ch, STATE_KERNEL_CH_STOP, &args);
//   p.stop_event(ch);                          // last channel: the Collective record is written
//   p.finalize(ctx);

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "tracer/record/events.hpp"
#include "tracer/record/nccl_profiler_abi.hpp"
#include "tracer/record/session.hpp"

namespace trainsim::tracer {

class NcclProfiler {
 public:
  // REQUIRES: `session` outlives the profiler and every event it has open.
  explicit NcclProfiler(TraceSession& session);

  // The entry points of ncclProfiler_v5, with its signatures. They never fail once init succeeded.
  nccl_abi::Result init(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int n_nodes,
                        int n_ranks, int rank, nccl_abi::DebugLogger logger);
  nccl_abi::Result start_event(void* context, void** handle, nccl_abi::EventDescrV5* descr);
  nccl_abi::Result stop_event(void* handle);
  nccl_abi::Result record_event_state(void* handle, nccl_abi::EventState state, nccl_abi::EventStateArgsV5* args);
  nccl_abi::Result finalize(void* context);

  // The events the plugin asks NCCL for.
  static constexpr int ACTIVATION_MASK =
      nccl_abi::PROFILE_COLL | nccl_abi::PROFILE_P2P | nccl_abi::PROFILE_PROXY_OP | nccl_abi::PROFILE_KERNEL_CH;

  ~NcclProfiler();
  NcclProfiler(const NcclProfiler&) = delete;
  NcclProfiler& operator=(const NcclProfiler&) = delete;

  // Writes every operation not written yet, with the timing it has so far (at exit).
  void flush_open();
  // Operations started and not yet written.
  size_t open_operations() const;

  static constexpr size_t RETIRED_KEPT = 4096;

 private:
  struct Comm;
  struct Event;
  struct Operation;
  struct Child;

  // REQUIRES: op->mutex held. Writes `op` when it is complete (or `force`), then retires it.
  void write_if_done(Operation* op, bool force);
  void retire(Operation* op);
  void flush(const Comm* comm);

  TraceSession* session_;
  mutable std::mutex mutex_;
  std::unordered_set<Operation*> open_;
  std::deque<Operation*> retired_;
};

}  // namespace trainsim::tracer

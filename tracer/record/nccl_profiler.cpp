#include "tracer/record/nccl_profiler.hpp"

#include <algorithm>
#include <limits>
#include <unistd.h>

namespace trainsim::tracer {
namespace {

constexpr uint64_t NONE = std::numeric_limits<uint64_t>::max();

std::string str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

bool is_operation(uint64_t type) { return type == nccl_abi::PROFILE_COLL || type == nccl_abi::PROFILE_P2P; }

}  // namespace

struct NcclProfiler::Comm {
  uint64_t id = 0;
  std::string name;
  int n_ranks = 0;
  int rank = 0;
};

// Every handle given to NCCL starts with its event type, so stop_event knows what it holds.
struct NcclProfiler::Event {
  uint64_t type = 0;
};

struct NcclProfiler::Operation : Event {
  std::mutex mutex;                 // NCCL's user thread and proxy thread both report on it
  std::shared_ptr<const Comm> comm;
  CollectiveEvent collective;       // type == PROFILE_COLL
  P2pEvent p2p;                     // type == PROFILE_P2P
  bool enqueued = false;            // stopEvent seen
  bool written = false;
  int open_children = 0;
  int channels_expected = 0;
  int channels_done = 0;
  uint64_t enqueue_start = 0;
  uint64_t enqueue_end = 0;
  uint64_t proxy_start = NONE;
  uint64_t proxy_end = 0;
  uint64_t channel_start = NONE;
  uint64_t channel_end = 0;
};

struct NcclProfiler::Child : Event {
  Operation* parent = nullptr;
  uint64_t start = 0;
  uint64_t stop = 0;  // KernelCh: set by STATE_KERNEL_CH_STOP
};

NcclProfiler::NcclProfiler(TraceSession& session) : session_(&session) {}

NcclProfiler::~NcclProfiler() {
  flush_open();
  for (Operation* op : retired_) delete op;
}

nccl_abi::Result NcclProfiler::init(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name,
                                    int /*n_nodes*/, int n_ranks, int rank, nccl_abi::DebugLogger /*logger*/) {
  if (context == nullptr || activation_mask == nullptr) return nccl_abi::INTERNAL_ERROR;
  auto comm = std::make_shared<Comm>();
  comm->id = comm_id;
  comm->name = str(comm_name);
  comm->n_ranks = n_ranks;
  comm->rank = rank;
  *context = new std::shared_ptr<const Comm>(std::move(comm));
  *activation_mask = ACTIVATION_MASK;
  return nccl_abi::SUCCESS;
}

nccl_abi::Result NcclProfiler::start_event(void* context, void** handle, nccl_abi::EventDescrV5* d) {
  if (handle == nullptr) return nccl_abi::SUCCESS;
  *handle = nullptr;
  if (context == nullptr || d == nullptr) return nccl_abi::SUCCESS;
  const auto& comm = *static_cast<std::shared_ptr<const Comm>*>(context);

  if (is_operation(d->type)) {
    auto* op = new Operation();
    op->type = d->type;
    op->comm = comm;
    op->enqueue_start = session_->now_ns();
    CommTiming timing;
    timing.comm_hash = comm->id;
    timing.comm_name = comm->name;
    timing.comm_size = comm->n_ranks;
    timing.rank = d->rank;
    timing.source = Source::NCCL_PROFILER;
    if (d->type == nccl_abi::PROFILE_COLL) {
      CollectiveEvent& c = op->collective;
      c.op_name = str(d->coll.func);
      c.op = collective_op_from_name(c.op_name);
      c.count = d->coll.count;
      c.data_type = data_type_from_name(str(d->coll.datatype));
      c.bytes = collective_bytes(c.op, c.count, c.data_type, comm->n_ranks);
      c.root = c.op == CollectiveOp::BROADCAST || c.op == CollectiveOp::REDUCE ? d->coll.root : -1;
      c.seq_number = d->coll.seq_number;
      c.algorithm = str(d->coll.algo);
      c.protocol = str(d->coll.proto);
      timing.channels = d->coll.n_channels;
      c.comm = std::move(timing);
      op->channels_expected = d->coll.n_channels;
    } else {
      P2pEvent& p = op->p2p;
      const std::string func = str(d->p2p.func);
      p.direction = func == "Send" ? P2pDirection::SEND : func == "Recv" ? P2pDirection::RECV : P2pDirection::UNKNOWN;
      p.peer = d->p2p.peer;
      p.count = d->p2p.count;
      p.data_type = data_type_from_name(str(d->p2p.datatype));
      p.bytes = p.count * data_type_size(p.data_type);
      timing.channels = d->p2p.n_channels;
      p.comm = std::move(timing);
      op->channels_expected = d->p2p.n_channels;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_.insert(op);
    }
    *handle = static_cast<Event*>(op);
    return nccl_abi::SUCCESS;
  }

  if (d->type == nccl_abi::PROFILE_PROXY_OP || d->type == nccl_abi::PROFILE_KERNEL_CH) {
    // A proxy op of another process (PXN) names a parent in that process: not ours to touch.
    if (d->type == nccl_abi::PROFILE_PROXY_OP && d->proxy_op.pid != getpid()) return nccl_abi::SUCCESS;
    auto* parent_event = static_cast<Event*>(d->parent_obj);
    if (parent_event == nullptr || !is_operation(parent_event->type)) return nccl_abi::SUCCESS;
    auto* parent = static_cast<Operation*>(parent_event);
    std::lock_guard<std::mutex> lock(parent->mutex);
    if (parent->written) return nccl_abi::SUCCESS;  // too late to change its record
    auto* child = new Child();
    child->type = d->type;
    child->parent = parent;
    child->start = d->type == nccl_abi::PROFILE_KERNEL_CH ? d->kernel_ch.p_timer : session_->now_ns();
    ++parent->open_children;
    *handle = static_cast<Event*>(child);
  }
  return nccl_abi::SUCCESS;
}

nccl_abi::Result NcclProfiler::record_event_state(void* handle, nccl_abi::EventState state,
                                                  nccl_abi::EventStateArgsV5* args) {
  auto* event = static_cast<Event*>(handle);
  if (event == nullptr || args == nullptr) return nccl_abi::SUCCESS;
  if (event->type == nccl_abi::PROFILE_KERNEL_CH && state == nccl_abi::STATE_KERNEL_CH_STOP) {
    static_cast<Child*>(event)->stop = args->kernel_ch.p_timer;
  }
  return nccl_abi::SUCCESS;
}

nccl_abi::Result NcclProfiler::stop_event(void* handle) {
  auto* event = static_cast<Event*>(handle);
  if (event == nullptr) return nccl_abi::SUCCESS;
  if (is_operation(event->type)) {
    auto* op = static_cast<Operation*>(event);
    std::lock_guard<std::mutex> lock(op->mutex);
    op->enqueued = true;
    op->enqueue_end = session_->now_ns();
    write_if_done(op, false);
    return nccl_abi::SUCCESS;
  }
  auto* child = static_cast<Child*>(event);
  Operation* op = child->parent;
  {
    std::lock_guard<std::mutex> lock(op->mutex);
    if (child->type == nccl_abi::PROFILE_KERNEL_CH) {
      ++op->channels_done;
      if (child->start != 0 && child->stop >= child->start) {
        op->channel_start = std::min(op->channel_start, child->start);
        op->channel_end = std::max(op->channel_end, child->stop);
      }
    } else {
      op->proxy_start = std::min(op->proxy_start, child->start);
      op->proxy_end = std::max(op->proxy_end, session_->now_ns());
    }
    --op->open_children;
    write_if_done(op, false);
  }
  delete child;
  return nccl_abi::SUCCESS;
}

nccl_abi::Result NcclProfiler::finalize(void* context) {
  auto* comm = static_cast<std::shared_ptr<const Comm>*>(context);
  if (comm == nullptr) return nccl_abi::SUCCESS;
  flush(comm->get());
  delete comm;
  return nccl_abi::SUCCESS;
}

void NcclProfiler::flush_open() { flush(nullptr); }

size_t NcclProfiler::open_operations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_.size();
}

void NcclProfiler::flush(const Comm* comm) {
  std::vector<Operation*> ops;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Operation* op : open_) {
      if (comm == nullptr || op->comm.get() == comm) ops.push_back(op);
    }
  }
  for (Operation* op : ops) {
    std::lock_guard<std::mutex> lock(op->mutex);
    write_if_done(op, true);
  }
}

void NcclProfiler::write_if_done(Operation* op, bool force) {
  if (op->written) return;
  const bool done = op->enqueued && op->open_children == 0 && op->channels_expected > 0 &&
                    op->channels_done >= op->channels_expected;
  if (!done && !force) return;
  CommTiming timing = op->type == nccl_abi::PROFILE_COLL ? op->collective.comm : op->p2p.comm;
  timing.enqueue_ns = op->enqueue_start;
  if (op->channel_start != NONE) {
    timing.timing = Timing::KERNEL_CHANNEL;
    timing.start_ns = op->channel_start;
    timing.end_ns = op->channel_end;
  } else if (op->proxy_start != NONE) {
    timing.timing = Timing::PROXY;
    timing.start_ns = op->proxy_start;
    timing.end_ns = op->proxy_end;
  } else {
    timing.timing = Timing::ENQUEUE;
    timing.start_ns = op->enqueue_start;
    timing.end_ns = op->enqueued ? op->enqueue_end : op->enqueue_start;
  }
  if (op->type == nccl_abi::PROFILE_COLL) {
    op->collective.comm = std::move(timing);
    session_->record(op->collective);
  } else {
    op->p2p.comm = std::move(timing);
    session_->record(op->p2p);
  }
  op->written = true;
  retire(op);
}

void NcclProfiler::retire(Operation* op) {
  Operation* expired = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_.erase(op);
    retired_.push_back(op);
    if (retired_.size() > RETIRED_KEPT) {
      expired = retired_.front();
      retired_.pop_front();
    }
  }
  delete expired;
}

}  // namespace trainsim::tracer

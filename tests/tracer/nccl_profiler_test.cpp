// The NCCL profiler plugin driven as NCCL 2.28 drives a v5 plugin: init per communicator, then for
// each operation startEvent (Coll or P2p, parent: the group), stopEvent once enqueued, and child
// events (KernelCh with GPU timer start and a KernelChStop state, ProxyOp with ProxySteps) started
// and stopped later, possibly after the parent's stopEvent; finalize at communicator destruction.

#include "tracer/record/nccl_profiler.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include "tests/tracer/test_util.hpp"

namespace trainsim::tracer {
namespace {

using namespace nccl_abi;

uint64_t now = 0;
uint64_t clock_fn() { return now; }

class NcclProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("nccl-profiler");
    HeaderInfo h;
    h.rank = 0;
    h.hostname = "h";
    h.pid = 1;
    std::string error;
    session_ = TraceSession::open(dir_, h, clock_fn, error);
    ASSERT_TRUE(session_) << error;
    profiler_ = std::make_unique<NcclProfiler>(*session_);
    int mask = 0;
    ASSERT_EQ(profiler_->init(&context_, 0xabcdef, &mask, "tp_group", 1, 8, 3, nullptr), SUCCESS);
    EXPECT_EQ(mask, NcclProfiler::ACTIVATION_MASK);
    EXPECT_NE(mask & PROFILE_COLL, 0);
    EXPECT_NE(mask & PROFILE_KERNEL_CH, 0);
  }

  std::vector<trace::Record> finish() {
    EXPECT_EQ(profiler_->finalize(context_), SUCCESS);
    session_->close();
    return testing::read_only_trace(dir_).records;
  }

  void* start(EventDescrV5 d) {
    void* handle = nullptr;
    EXPECT_EQ(profiler_->start_event(context_, &handle, &d), SUCCESS);
    return handle;
  }

  static EventDescrV5 coll(const char* func, size_t count, const char* datatype, uint8_t channels) {
    EventDescrV5 d{};
    d.type = PROFILE_COLL;
    d.rank = 3;
    d.coll.seq_number = 41;
    d.coll.func = func;
    d.coll.count = count;
    d.coll.root = 0;
    d.coll.datatype = datatype;
    d.coll.n_channels = channels;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    return d;
  }
  static EventDescrV5 child(uint64_t type, void* parent) {
    EventDescrV5 d{};
    d.type = type;
    d.parent_obj = parent;
    d.rank = 3;
    return d;
  }

  std::string dir_;
  std::unique_ptr<TraceSession> session_;
  std::unique_ptr<NcclProfiler> profiler_;
  void* context_ = nullptr;
};

TEST_F(NcclProfilerTest, CollectiveTimedByItsKernelChannels) {
  now = 100;
  void* group = start(child(PROFILE_GROUP, nullptr));  // not requested: no handle
  EXPECT_EQ(group, nullptr);
  void* op = start(coll("AllReduce", 1 << 20, "ncclBfloat16", 2));
  now = 105;
  profiler_->stop_event(op);  // enqueued; the kernel has not run yet
  EXPECT_EQ(profiler_->open_operations(), 1u);

  void* channels[2];
  for (int c = 0; c < 2; ++c) {
    EventDescrV5 d = child(PROFILE_KERNEL_CH, op);
    d.kernel_ch.channel_id = static_cast<uint8_t>(c);
    d.kernel_ch.p_timer = 5000 + static_cast<uint64_t>(c) * 10;  // GPU globaltimer
    channels[c] = start(d);
    ASSERT_NE(channels[c], nullptr);
  }
  for (int c = 0; c < 2; ++c) {
    EventStateArgsV5 args{};
    args.kernel_ch.p_timer = 7000 + static_cast<uint64_t>(c) * 100;
    profiler_->record_event_state(channels[c], STATE_KERNEL_CH_STOP, &args);
    profiler_->stop_event(channels[c]);
  }
  EXPECT_EQ(profiler_->open_operations(), 0u);  // every channel stopped: written
  // A child NCCL reports after the record was written is ignored.
  EXPECT_EQ(start(child(PROFILE_KERNEL_CH, op)), nullptr);

  const std::vector<trace::Record> records = finish();
  ASSERT_EQ(records.size(), 2u);  // the collective and the final status
  const trace::Collective& c = records[0].collective();
  EXPECT_EQ(c.op(), trace::COLLECTIVE_OP_ALL_REDUCE);
  EXPECT_EQ(c.op_name(), "AllReduce");
  EXPECT_EQ(c.count(), 1u << 20);
  EXPECT_EQ(c.data_type(), trace::DATA_TYPE_BFLOAT16);
  EXPECT_EQ(c.bytes(), 2u << 20);
  EXPECT_EQ(c.comm_hash(), 0xabcdefu);
  EXPECT_EQ(c.comm_name(), "tp_group");
  EXPECT_EQ(c.comm_size(), 8);
  EXPECT_EQ(c.rank(), 3);
  EXPECT_EQ(c.root(), -1);  // all_reduce has none, whatever the descriptor says
  EXPECT_EQ(c.seq_number(), 41u);
  EXPECT_EQ(c.algorithm(), "RING");
  EXPECT_EQ(c.protocol(), "SIMPLE");
  EXPECT_EQ(c.channels(), 2u);
  EXPECT_EQ(c.source(), trace::SOURCE_NCCL_PROFILER);
  EXPECT_EQ(c.timing(), trace::TIMING_KERNEL_CHANNEL);
  EXPECT_EQ(c.start_ns(), 5000u);  // first channel start
  EXPECT_EQ(c.end_ns(), 7100u);    // last channel stop
  EXPECT_EQ(c.enqueue_ns(), 100u);
}

TEST_F(NcclProfilerTest, NetworkCollectiveTimedByProxyOpsWithSteps) {
  now = 10;
  void* op = start(coll("ReduceScatter", 1000, "ncclFloat32", 16));
  now = 12;
  profiler_->stop_event(op);
  for (int channel = 0; channel < 2; ++channel) {
    now = 20 + static_cast<uint64_t>(channel);
    EventDescrV5 d = child(PROFILE_PROXY_OP, op);
    d.proxy_op.pid = getpid();
    d.proxy_op.channel_id = static_cast<uint8_t>(channel);
    d.proxy_op.peer = 4;
    d.proxy_op.n_steps = 2;
    d.proxy_op.chunk_size = 1 << 19;
    d.proxy_op.is_send = 1;
    void* proxy = start(d);
    ASSERT_NE(proxy, nullptr);
    for (int step = 0; step < 2; ++step) {  // ProxyStep events are not requested; NCCL may send them
      EventDescrV5 s = child(PROFILE_PROXY_STEP, proxy);
      s.proxy_step.step = step;
      void* step_handle = start(s);
      EXPECT_EQ(step_handle, nullptr);
      EventStateArgsV5 args{};
      args.proxy_step.trans_size = 1 << 19;
      profiler_->record_event_state(step_handle, 9, &args);
      profiler_->stop_event(step_handle);
    }
    now = 50 + static_cast<uint64_t>(channel) * 10;
    profiler_->stop_event(proxy);
  }
  EXPECT_EQ(profiler_->open_operations(), 1u);  // no kernel channel reported: open until finalize
  const std::vector<trace::Record> records = finish();
  ASSERT_EQ(records.size(), 2u);
  const trace::Collective& c = records[0].collective();
  EXPECT_EQ(c.op(), trace::COLLECTIVE_OP_REDUCE_SCATTER);
  EXPECT_EQ(c.bytes(), 1000u * 4 * 8);  // count is per rank
  EXPECT_EQ(c.timing(), trace::TIMING_PROXY);
  EXPECT_EQ(c.start_ns(), 20u);
  EXPECT_EQ(c.end_ns(), 60u);
}

TEST_F(NcclProfilerTest, EnqueueOnlyP2pAndForeignProxyOps) {
  now = 1;
  EventDescrV5 send{};
  send.type = PROFILE_P2P;
  send.rank = 3;
  send.p2p.func = "Send";
  send.p2p.datatype = "ncclFloat16";
  send.p2p.count = 512;
  send.p2p.peer = 4;
  send.p2p.n_channels = 2;
  void* op = start(send);
  EventDescrV5 remote = child(PROFILE_PROXY_OP, op);
  remote.proxy_op.pid = getpid() + 1;  // PXN: a proxy of another process
  EXPECT_EQ(start(remote), nullptr);
  now = 3;
  profiler_->stop_event(op);

  const std::vector<trace::Record> records = finish();
  ASSERT_EQ(records.size(), 2u);
  const trace::P2p& p = records[0].p2p();
  EXPECT_EQ(p.direction(), trace::P2P_DIRECTION_SEND);
  EXPECT_EQ(p.peer(), 4);
  EXPECT_EQ(p.bytes(), 1024u);
  EXPECT_EQ(p.channels(), 2u);
  EXPECT_EQ(p.timing(), trace::TIMING_ENQUEUE);
  EXPECT_EQ(p.start_ns(), 1u);
  EXPECT_EQ(p.end_ns(), 3u);
}

TEST_F(NcclProfilerTest, ChannelsMayStartBeforeTheEnqueueStops) {
  now = 1;
  void* op = start(coll("Broadcast", 100, "ncclInt8", 1));
  EventDescrV5 d = child(PROFILE_KERNEL_CH, op);
  d.kernel_ch.p_timer = 40;
  void* channel = start(d);
  EventStateArgsV5 args{};
  args.kernel_ch.p_timer = 90;
  profiler_->record_event_state(channel, STATE_KERNEL_CH_STOP, &args);
  profiler_->stop_event(channel);
  EXPECT_EQ(profiler_->open_operations(), 1u);  // not enqueued yet
  now = 2;
  profiler_->stop_event(op);
  EXPECT_EQ(profiler_->open_operations(), 0u);
  const std::vector<trace::Record> records = finish();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].collective().root(), 0);
  EXPECT_EQ(records[0].collective().bytes(), 100u);
  EXPECT_EQ(records[0].collective().end_ns() - records[0].collective().start_ns(), 50u);
}

TEST_F(NcclProfilerTest, NullArgumentsAreHarmless) {
  EXPECT_EQ(profiler_->stop_event(nullptr), SUCCESS);
  EXPECT_EQ(profiler_->record_event_state(nullptr, STATE_KERNEL_CH_STOP, nullptr), SUCCESS);
  EXPECT_EQ(profiler_->start_event(context_, nullptr, nullptr), SUCCESS);
  void* handle = &handle;
  EXPECT_EQ(profiler_->start_event(context_, &handle, nullptr), SUCCESS);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(finish().size(), 1u);
}

}  // namespace
}  // namespace trainsim::tracer

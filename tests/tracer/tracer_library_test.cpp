// libtrainsim_tracer.so itself, loaded the way NCCL loads a profiler plugin (dlopen of the
// NCCL_PROFILER_PLUGIN path, then the ncclProfiler_v5 symbol) and driven through that table. A child
// process does it and exits normally, so that the library's exit handlers write the trace; the
// test reads what it wrote.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/tracer/test_util.hpp"
#include "tracer/record/nccl_profiler_abi.hpp"

namespace trainsim::tracer {
namespace {

using namespace nccl_abi;

// Runs in the child; returns the exit status.
int drive_plugin() {
  void* lib = dlopen(TRAINSIM_TRACER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 10;
  auto* table = static_cast<ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  if (table == nullptr || std::string(table->name) != "trainsim") return 11;
  void* context = nullptr;
  int mask = 0;
  if (table->init(&context, 42, &mask, "world", 1, 2, 1, nullptr) != SUCCESS) return 12;
  if ((mask & PROFILE_COLL) == 0) return 13;
  EventDescrV5 coll{};
  coll.type = PROFILE_COLL;
  coll.rank = 1;
  coll.coll.func = "AllGather";
  coll.coll.count = 1000;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.n_channels = 1;
  void* op = nullptr;
  table->start_event(context, &op, &coll);
  table->stop_event(op);
  EventDescrV5 channel{};
  channel.type = PROFILE_KERNEL_CH;
  channel.parent_obj = op;
  channel.kernel_ch.p_timer = 1000;
  void* ch = nullptr;
  table->start_event(context, &ch, &channel);
  EventStateArgsV5 args{};
  args.kernel_ch.p_timer = 3000;
  table->record_event_state(ch, STATE_KERNEL_CH_STOP, &args);
  table->stop_event(ch);
  table->finalize(context);
  return 0;
}

TEST(TracerLibrary, LoadsAsAnNcclProfilerPlugin) {
  const std::string dir = testing::temp_dir("tracer-library");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("TRAINSIM_TRACE_DIR", dir.c_str(), 1);
    setenv("RANK", "1", 1);
    std::exit(drive_plugin());
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const core::TraceFile file = testing::read_only_trace(dir);
  EXPECT_EQ(file.header.rank(), 1);
  EXPECT_EQ(file.header.producer(), trace::PRODUCER_TRACER);
  ASSERT_EQ(file.records.size(), 2u);
  const trace::Collective& c = file.records[0].collective();
  EXPECT_EQ(c.op(), trace::COLLECTIVE_OP_ALL_GATHER);
  EXPECT_EQ(c.bytes(), 8000u);
  EXPECT_EQ(c.comm_size(), 2);
  EXPECT_EQ(c.comm_hash(), 42u);
  EXPECT_EQ(c.timing(), trace::TIMING_KERNEL_CHANNEL);
  EXPECT_EQ(c.end_ns() - c.start_ns(), 2000u);
  EXPECT_TRUE(file.records[1].status().final());
}

}  // namespace
}  // namespace trainsim::tracer

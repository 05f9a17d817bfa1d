// The nccl* wrapper against a fake libnccl (tests/tracer/fake_nccl.cpp) loaded RTLD_LOCAL, as
// PyTorch loads the real one: the exported wrappers of tracer/nccl_exports.cpp (compiled into this
// test) must find it among the loaded objects, forward every call with its arguments and result,
// and record it in the process's trace session.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/tracer/test_util.hpp"
#include "tracer/record/library_lookup.hpp"
#include "tracer/record/nccl_wrapper.hpp"

namespace api = trainsim::tracer::nccl_api;

extern "C" {
api::Result ncclAllReduce(const void*, void*, size_t, api::DataTypeCode, api::RedOp, api::Comm, api::Stream);
api::Result ncclAllGather(const void*, void*, size_t, api::DataTypeCode, api::Comm, api::Stream);
api::Result ncclBroadcast(const void*, void*, size_t, api::DataTypeCode, int, api::Comm, api::Stream);
api::Result ncclSend(const void*, size_t, api::DataTypeCode, int, api::Comm, api::Stream);
api::Result ncclGroupStart();
api::Result ncclGroupEnd();
api::Result ncclCommDestroy(api::Comm);
}

namespace trainsim::tracer {
namespace {

constexpr int NCCL_BFLOAT16 = 9;
constexpr int NCCL_FLOAT32 = 7;

template <class Fn>
Fn fake(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

TEST(NcclWrapper, FindsTheLocallyLoadedLibraryForwardsAndRecords) {
  const std::string dir = testing::temp_dir("nccl-wrapper");
  setenv("TRAINSIM_TRACE_DIR", dir.c_str(), 1);
  setenv("RANK", "1", 1);
  void* handle = dlopen(TRAINSIM_FAKE_NCCL, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  // Local: invisible to the global scope, so RTLD_NEXT could not find it.
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "fake_nccl_calls"), nullptr);
  EXPECT_EQ(find_loaded_library(is_nccl_library).path, TRAINSIM_FAKE_NCCL);
  int own = 0;
  EXPECT_EQ(find_library_defining("fake_nccl_calls", &own).path, TRAINSIM_FAKE_NCCL);

  auto* comm = reinterpret_cast<api::Comm>(0x1000);
  auto* stream = reinterpret_cast<api::Stream>(0x2000);
  EXPECT_EQ(ncclGroupStart(), 0);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1024, NCCL_BFLOAT16, 0, comm, stream), 0);
  EXPECT_EQ(ncclAllGather(nullptr, nullptr, 256, NCCL_FLOAT32, comm, stream), 0);
  EXPECT_EQ(ncclGroupEnd(), 0);
  EXPECT_EQ(ncclBroadcast(nullptr, nullptr, 10, NCCL_FLOAT32, 2, comm, stream), 5);  // passed through
  EXPECT_EQ(ncclSend(nullptr, 77, NCCL_BFLOAT16, 3, comm, stream), 0);
  EXPECT_EQ(ncclCommDestroy(comm), 0);

  EXPECT_EQ(fake<int (*)()>(handle, "fake_nccl_calls")(), 4);
  EXPECT_EQ(fake<int (*)()>(handle, "fake_nccl_group_ends")(), 1);
  EXPECT_EQ(fake<size_t (*)()>(handle, "fake_nccl_last_count")(), 77u);
  EXPECT_EQ(fake<int (*)()>(handle, "fake_nccl_last_peer_or_root")(), 3);

  process_session()->close();
  const core::TraceFile file = testing::read_only_trace(dir);
  EXPECT_EQ(file.header.rank(), 1);
  ASSERT_EQ(file.records.size(), 6u);  // library, 3 collectives, 1 send, final status
  EXPECT_EQ(file.records[0].library().name(), "nccl");
  EXPECT_EQ(file.records[0].library().version(), 22809u);
  EXPECT_EQ(file.records[0].library().path(), TRAINSIM_FAKE_NCCL);

  const trace::Collective& all_reduce = file.records[1].collective();
  EXPECT_EQ(all_reduce.op(), trace::COLLECTIVE_OP_ALL_REDUCE);
  EXPECT_EQ(all_reduce.count(), 1024u);
  EXPECT_EQ(all_reduce.bytes(), 2048u);
  EXPECT_EQ(all_reduce.data_type(), trace::DATA_TYPE_BFLOAT16);
  EXPECT_EQ(all_reduce.comm_size(), 4);
  EXPECT_EQ(all_reduce.rank(), 1);
  EXPECT_EQ(all_reduce.stream(), 0x2000u);
  EXPECT_EQ(all_reduce.source(), trace::SOURCE_NCCL_WRAPPER);
  EXPECT_EQ(all_reduce.timing(), trace::TIMING_ENQUEUE);
  const trace::Collective& all_gather = file.records[2].collective();
  EXPECT_EQ(all_gather.op(), trace::COLLECTIVE_OP_ALL_GATHER);
  EXPECT_EQ(all_gather.bytes(), 256u * 4 * 4);  // send count per rank x 4 ranks
  // Calls of one group share the group's correlation id; other calls get their own.
  EXPECT_NE(all_reduce.correlation_id(), 0u);
  EXPECT_EQ(all_gather.correlation_id(), all_reduce.correlation_id());
  const trace::Collective& broadcast = file.records[3].collective();
  EXPECT_EQ(broadcast.root(), 2);
  EXPECT_NE(broadcast.correlation_id(), all_reduce.correlation_id());
  const trace::P2p& send = file.records[4].p2p();
  EXPECT_EQ(send.direction(), trace::P2P_DIRECTION_SEND);
  EXPECT_EQ(send.peer(), 3);
  EXPECT_EQ(send.bytes(), 154u);
  EXPECT_TRUE(file.records[5].status().final());
  dlclose(handle);
}

TEST(NcclWrapper, LibraryNames) {
  EXPECT_TRUE(is_nccl_library("libnccl.so"));
  EXPECT_TRUE(is_nccl_library("libnccl.so.2"));
  EXPECT_TRUE(is_nccl_library("libnccl.so.2.28.9"));
  EXPECT_FALSE(is_nccl_library("libnccl-net.so"));
  EXPECT_FALSE(is_nccl_library("libnccl-profiler.so"));
  EXPECT_TRUE(is_cublaslt_library("libcublasLt.so.13"));
  EXPECT_FALSE(is_cublas_library("libcublasLt.so.13"));
  EXPECT_TRUE(is_cublas_library("libcublas.so.13"));
  EXPECT_EQ(api::data_type(9), DataType::BFLOAT16);
  EXPECT_EQ(api::data_type(12), DataType::UNKNOWN);
}

}  // namespace
}  // namespace trainsim::tracer

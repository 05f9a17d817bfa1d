#pragma once
// Our declarations of the NCCL profiler plugin interface, version 5 (NCCL 2.28), written from
// NCCL's documentation of the interface (ext-profiler/README.md and the documented v5 struct in
// NCCL's ext-profiler). NCCL dlopens the library named by NCCL_PROFILER_PLUGIN and looks up the
// symbol "ncclProfiler_v5", a ProfilerV5 table. Layouts must match NCCL's C structs exactly; the
// static_asserts below pin the offsets that the tracer reads.

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace trainsim::tracer::nccl_abi {

// ncclResult_t: a C enum, passed as int.
using Result = int;
inline constexpr Result SUCCESS = 0;
inline constexpr Result SYSTEM_ERROR = 2;
inline constexpr Result INTERNAL_ERROR = 3;

// ncclDebugLogger_t
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event types (bit mask values of eActivationMask and of EventDescrV5::type).
enum EventType : uint64_t {
  PROFILE_GROUP = 1u << 0,
  PROFILE_COLL = 1u << 1,
  PROFILE_P2P = 1u << 2,
  PROFILE_PROXY_OP = 1u << 3,
  PROFILE_PROXY_STEP = 1u << 4,
  PROFILE_PROXY_CTRL = 1u << 5,
  PROFILE_KERNEL_CH = 1u << 6,
  PROFILE_NET_PLUGIN = 1u << 7,
  PROFILE_GROUP_API = 1u << 8,
  PROFILE_COLL_API = 1u << 9,
  PROFILE_P2P_API = 1u << 10,
  PROFILE_KERNEL_LAUNCH = 1u << 11,
};

// ncclProfilerEventState_v5_t values the tracer acts on.
using EventState = int;
inline constexpr EventState STATE_KERNEL_CH_STOP = 22;

struct EventDescrV5 {
  uint64_t type;      // one EventType
  void* parent_obj;   // handle of the parent event (for coll/p2p: the group)
  int rank;           // originating rank (in the communicator)
  union {
    struct {
      bool graph_captured;
      int group_depth;
    } group_api;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graph_captured;
    } coll_api;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graph_captured;
    } p2p_api;
    struct {
      void* stream;
    } kernel_launch;
    struct {
      uint64_t seq_number;
      const char* func;
      const void* send_buff;
      void* recv_buff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t n_channels;
      uint8_t n_warps;
      const char* algo;
      const char* proto;
      void* parent_group;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t n_channels;
      void* parent_group;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channel_id;
      int peer;
      int n_steps;
      int chunk_size;
      int is_send;
    } proxy_op;
    struct {
      int step;
    } proxy_step;
    struct {
      uint8_t channel_id;
      uint64_t p_timer;  // start, GPU globaltimer ns
    } kernel_ch;
    struct {
      int64_t id;
      void* data;
    } net_plugin;
  };
};

union EventStateArgsV5 {
  struct {
    size_t trans_size;
  } proxy_step;
  struct {
    int appended_proxy_ops;
  } proxy_ctrl;
  struct {
    void* data;
  } net_plugin;
  struct {
    uint64_t p_timer;  // stop, GPU globaltimer ns (STATE_KERNEL_CH_STOP)
  } kernel_ch;
};

struct ProfilerV5 {
  const char* name;
  Result (*init)(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int n_nodes,
                 int n_ranks, int rank, DebugLogger logger);
  Result (*start_event)(void* context, void** handle, EventDescrV5* descr);
  Result (*stop_event)(void* handle);
  Result (*record_event_state)(void* handle, EventState state, EventStateArgsV5* args);
  Result (*finalize)(void* context);
};

static_assert(offsetof(EventDescrV5, coll) == 24, "the event union follows type, parentObj and rank");
static_assert(sizeof(EventDescrV5) == 24 + 88, "ncclProfilerEventDescr_v5_t: the coll member is the largest");
static_assert(offsetof(EventDescrV5, kernel_ch.p_timer) == 32, "kernelCh.pTimer");
static_assert(sizeof(ProfilerV5) == 6 * sizeof(void*), "ncclProfiler_v5_t holds a name and five functions");

}  // namespace trainsim::tracer::nccl_abi

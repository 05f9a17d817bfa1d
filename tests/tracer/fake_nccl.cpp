// A stand-in for libnccl.so in the wrapper test: the nccl* functions the wrapper forwards to, with
// NCCL's C signatures (our declarations), counting calls and keeping the last arguments. The test
// loads it RTLD_LOCAL, as PyTorch loads the real one.

#include <cstddef>
#include <cstdint>

namespace {
int calls = 0;
int group_ends = 0;
size_t last_count = 0;
int last_datatype = -1;
int last_peer_or_root = -1;
}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT int fake_nccl_calls() { return calls; }
FAKE_EXPORT int fake_nccl_group_ends() { return group_ends; }
FAKE_EXPORT size_t fake_nccl_last_count() { return last_count; }
FAKE_EXPORT int fake_nccl_last_datatype() { return last_datatype; }
FAKE_EXPORT int fake_nccl_last_peer_or_root() { return last_peer_or_root; }

FAKE_EXPORT int ncclGetVersion(int* version) {
  *version = 22809;
  return 0;
}
FAKE_EXPORT int ncclCommCount(void*, int* count) {
  *count = 4;
  return 0;
}
FAKE_EXPORT int ncclCommUserRank(void*, int* rank) {
  *rank = 1;
  return 0;
}
FAKE_EXPORT int ncclAllReduce(const void*, void*, size_t count, int datatype, int, void*, void*) {
  ++calls;
  last_count = count;
  last_datatype = datatype;
  return 0;
}
FAKE_EXPORT int ncclAllGather(const void*, void*, size_t count, int datatype, void*, void*) {
  ++calls;
  last_count = count;
  last_datatype = datatype;
  return 0;
}
// Returns ncclInvalidUsage (5), so the test sees results passed through unchanged.
FAKE_EXPORT int ncclBroadcast(const void*, void*, size_t count, int datatype, int root, void*, void*) {
  ++calls;
  last_count = count;
  last_datatype = datatype;
  last_peer_or_root = root;
  return 5;
}
FAKE_EXPORT int ncclSend(const void*, size_t count, int datatype, int peer, void*, void*) {
  ++calls;
  last_count = count;
  last_datatype = datatype;
  last_peer_or_root = peer;
  return 0;
}
FAKE_EXPORT int ncclGroupStart() { return 0; }
FAKE_EXPORT int ncclGroupEnd() {
  ++group_ends;
  return 0;
}
FAKE_EXPORT int ncclCommDestroy(void*) { return 0; }

// The GPU emulator's kernels (spin_kernels.hpp).

#include "sim/cli/gpu/spin_kernels.hpp"

namespace trainsim::cli::gpu {
namespace {

__device__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stamp(unsigned long long* t0) { *t0 = global_timer(); }

__global__ void spin(const unsigned long long* t0, unsigned long long not_before_ns, long long cycles) {
  if (not_before_ns > 0) {
    const unsigned long long until = *t0 + not_before_ns;
    while (global_timer() < until) {
    }
  }
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

cudaError_t launch_stamp(cudaStream_t stream, unsigned long long* t0) {
  stamp<<<1, 1, 0, stream>>>(t0);
  return cudaGetLastError();
}

cudaError_t launch_spin(cudaStream_t stream, const unsigned long long* t0, uint64_t not_before_ns, uint64_t cycles) {
  spin<<<1, 1, 0, stream>>>(t0, not_before_ns, static_cast<long long>(cycles));
  return cudaGetLastError();
}

}  // namespace trainsim::cli::gpu

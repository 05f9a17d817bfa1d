#pragma once
// The kernels of the GPU emulator (emulate_gpu_module.cpp): plain launch functions, so that only
// spin_kernels.cu goes through nvcc.

#include <cstdint>
#include <cuda_runtime_api.h>

namespace trainsim::cli::gpu {

// Writes the GPU's global timer (nanoseconds, %globaltimer) to *t0: the iteration's start stamp.
cudaError_t launch_stamp(cudaStream_t stream, unsigned long long* t0);

// One thread that first spins until the global timer reaches *t0 + not_before_ns (skipped when
// not_before_ns is 0), then for `cycles` cycles of its SM's clock (clock64()).
cudaError_t launch_spin(cudaStream_t stream, const unsigned long long* t0, uint64_t not_before_ns, uint64_t cycles);

}  // namespace trainsim::cli::gpu

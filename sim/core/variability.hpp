#pragma once
// Large-scale variability: identical GPUs do not run at identical speed (manufacturing spread and
// power management; Sinha et al., "Not All GPUs Are Created Equal", SC22: 8% average and up to 22%
// performance variation across the GPUs of one cluster, outliers 1.5x slower than the median). A
// synchronous training job waits for its slowest rank at every synchronization, so with N ranks
// whose sustained speeds spread with relative standard deviation sigma, the job's compute runs at
// the pace of the expected slowest of N:
//   slowdown(N) = 1 + sigma x E[max of N standard normals]
// which grows like sqrt(2 ln N): MFU falls with scale although each GPU is as fast as before
// (cluster.gpu_speed_spread, docs/scenario.md).

namespace trainsim::core {

// E[max of n independent standard normal variables] (0 for n = 1), by numerical integration of
// x · n · phi(x) · Phi(x)^(n-1). Values: n = 2: 1/sqrt(pi) = 0.5642; 10: 1.5388; 100: 2.5076;
// 1000: 3.2414. REQUIRES: n >= 1.
double expected_max_of_normals(long long n);

// 1 + spread x expected_max_of_normals(ranks). REQUIRES: spread >= 0, ranks >= 1.
double straggler_slowdown(double spread, long long ranks);

}  // namespace trainsim::core

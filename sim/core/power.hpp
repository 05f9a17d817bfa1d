#pragma once
// Power: what a GPU draws by what it is doing, and what the rest of a cluster draws (hosts, NICs,
// switches, the facility's overhead). sim/plan/energy.hpp turns a simulated timeline into energy with
// these figures; docs/energy.md gives every default and its source.
//
// A GPU draws, while it is
//   GEMM-bound       computing on its tensor cores (GEMM, FlashAttention):  its limit (TDP, or the cap)
//   memory-bound     computing anything else (element-wise, norms, embedding, optimizer, unfused
//                    attention: HBM-bound kernels)                          idle + 0.65 x (TDP - idle)
//   communicating    only collectives, sends, receives are running           idle + 0.30 x (TDP - idle)
//   waiting          nothing runs (pipeline bubble, waiting for a peer, host copies or CPU work only)
//                                                                           idle
// each at most the limit, with idle = 0.17 x TDP: a GPU with a CUDA context open (clocks up), as every
// GPU of a running job is. Measured on one H200 (700 W; NVML's energy counter; scripts/gpu/power.py
// and power_check.sh, docs/gpu-runs.md, 2026-11-27):
//   - idle with a context open 119.9 W (0.17 of TDP; 78.2 W before any context);
//   - a spinning kernel (torch.cuda._sleep, one block: a GPU waiting on a peer) 120.9 W, and pinned
//     host-to-device copies at 55 GB/s 126.4 W: waiting draws idle;
//   - bf16 8192^3 GEMMs back to back 688.4 W (the 700 W limit holds the SM clock at 1470 MHz) and
//     FlashAttention 687.1 W: GEMM-bound draws the limit;
//   - memory-bound: 0.65 is what the 1.32 B and 356 M eager GPT steps drew in their element-wise
//     kernels (the step's energy less its GEMM and attention time at 688 W and its idle time at 120 W,
//     over its element-wise and copy time: 494 W and 499 W, shares 0.645 and 0.654; 0.66 and 0.70
//     with the loss's softmax kernels, which `trace summary` files under attention, counted as
//     memory-bound: good to about 0.03). Element-wise adds of 1 GiB tensors back to back (4.37 TB/s)
//     drew 665.8 W (0.94): a long HBM stream draws more than a training step's short kernels do.
// Communicating is trainsim's assumption (one GPU could not measure it): NCCL kernels occupy a few
// SMs and the links.
// A scenario overrides the figures in its GPU object ("tdp", "idle_power", "power_cap": read_gpu_power).
//
// Example:
//   GpuPower p = catalog_gpu_power("H100-SXM5-80GB");   // tdp 700 W, idle 119 W
//   p.draw_w(PowerActivity::COMMUNICATION);              // 119 + 0.3 x 581 = 293.3 W

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/core/json_reader.hpp"

namespace trainsim::core {

// What a GPU is doing at an instant, from the most power to the least.
enum class PowerActivity : uint8_t { GEMM_BOUND = 0, MEMORY_BOUND, COMMUNICATION, WAITING };
inline constexpr int POWER_ACTIVITY_COUNT = 4;
std::string_view to_string(PowerActivity a);  // "gemm_bound", "memory_bound", "communication", "waiting"

// The share of a GPU's dynamic range (TDP - idle) that each activity draws above idle (see above).
inline constexpr std::array<double, POWER_ACTIVITY_COUNT> ACTIVITY_POWER_SHARE = {1.0, 0.65, 0.30, 0.0};
// A GPU without a published idle figure idles at this share of its TDP (H200 measured, above).
inline constexpr double DEFAULT_IDLE_SHARE = 0.17;
// Dynamic power grows with the cube of the clock (P = C V^2 f with the voltage following the
// frequency, the usual DVFS approximation): under a power cap the tensor cores run at
// ((cap - idle) / (TDP - idle))^(1/3) of their clock; memory-bound work, held by HBM, does not slow.
inline constexpr double DVFS_EXPONENT = 3.0;

struct GpuPower {
  double tdp_w = 0;                   // the board's power limit (datasheet TDP / TBP); > 0
  double idle_w = 0;                  // powered, no work; in [0, tdp_w)
  std::optional<double> power_cap_w;  // a lower limit set by the operator (nvidia-smi -pl); in (idle_w, tdp_w]
  std::string source;                 // where the figures come from

  double limit_w() const { return power_cap_w ? *power_cap_w : tdp_w; }
  // The draw while doing `a`: idle + share x (TDP - idle), at most limit_w().
  double draw_w(PowerActivity a) const;
  // The tensor cores' clock under the cap over their clock at TDP (DVFS_EXPONENT); 1 without a cap.
  double clock_ratio() const;
};

// The catalog GPU's figures (TDP from the datasheets, validation/hardware-specs.json; idle at
// DEFAULT_IDLE_SHARE). A name outside the catalog (device.hpp gpu_catalog) gets a zero TDP: not known.
GpuPower catalog_gpu_power(std::string_view gpu_name);

// Reads a power figure: a number of watts or a string "700 W", "1.2 kW", "30 MW". false on anything else.
bool parse_watts(const Json& value, double& watts);
// "700 W", "1.2 kW", "24.1 MW": the figure with 4 significant digits in the largest unit that keeps
// it at or above 1.
std::string format_watts(double watts);

// The cluster's power besides its GPUs (`cluster.power`, docs/scenario.md), and what its energy costs.
//   pue                 facility power / IT power (cooling, power distribution); >= 1, default 1.1
//                       (Patterson et al. 2021, Table 4: 1.10 for the datacenter that trained GPT-3)
//   host_power          per node, everything but its GPUs and NICs (CPUs, DRAM, NVSwitches, fans,
//                       drives, power-supply losses) while the job runs; default "2600 W": an 8-GPU
//                       H100 HGX node measured at 8.4 kW at most while training (Latif et al. 2024,
//                       "Empirical Measurements of AI Training Power Demand on a GPU-Accelerated
//                       Node", arXiv 2412.08602) less 8 GPUs at 700 W and 8 NICs at 25 W
//   nic_power           per NIC of the node (cluster.network.nics_per_node); default "25 W" (a
//                       400 Gb/s ConnectX-7 adapter: order of 25 W, NVIDIA's adapter specifications)
//   switch_power        the network switches' power per NIC they serve; default "50 W": three switch
//                       ports per NIC in a two-level non-blocking fat tree, a 64-port 400 Gb/s switch
//                       at about 1.1 kW (NVIDIA Quantum-2 QM9700 class) is ~17 W per port
//   price_per_kwh       USD per kWh of facility energy; optional (no energy cost without it)
//   grid_gco2_per_kwh   grams of CO2-equivalent per kWh of the grid (location-based); optional
//                       (no tCO2eq without it)
// Each power is a number of watts or a string ("2.6 kW"); 0 leaves the part out.
struct ClusterPower {
  double pue = 1.1;
  double host_w = 2600;
  double nic_w = 25;
  double switch_w_per_nic = 50;
  std::optional<double> price_per_kwh;
  std::optional<double> grid_gco2_per_kwh;

  // Power of everything but the GPUs, at the wall socket (before PUE), for `nodes` nodes of `nics` NICs.
  double non_gpu_w(int nodes, int nics_per_node) const {
    return nodes * (host_w + nics_per_node * (nic_w + switch_w_per_nic));
  }
  // Reads the section, every problem into r's Diagnostics (negative power, PUE below 1, ...).
  static ClusterPower from_json(ObjectReader& r);
  Json to_json() const;
};

// Reads the GPU object's power keys (tdp, idle_power, power_cap) over `power` (the base's figures, or
// zeros), checking that idle < cap <= TDP; returns the keys given ("tdp 500 W, power_cap 400 W").
std::string read_gpu_power(ObjectReader& r, GpuPower& power);
// Writes the power keys that read_gpu_power reads back to `power` over `base` (the base's figures, or
// zeros for a GPU described from scratch): those that differ from what `base` would give.
void gpu_power_to_json(const GpuPower& power, const GpuPower& base, Json& gpu_object);

}  // namespace trainsim::core

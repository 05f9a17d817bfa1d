#include "sim/core/power.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace trainsim::core {
namespace {

// 1 MW per GPU, 100 MW per node part: far above any product; beyond them a figure is a typo.
constexpr double MAX_GPU_W = 1e6;
constexpr double MAX_PART_W = 1e8;
// PUE above 3 is no datacenter's (the Uptime Institute's surveys average 1.5-1.6).
constexpr double MAX_PUE = 3.0;
// 10 USD per kWh and 2,000 gCO2/kWh (lignite is ~1,100) bound the prices and grids on Earth.
constexpr double MAX_PRICE_PER_KWH = 10;
constexpr double MAX_GCO2_PER_KWH = 2000;

struct CatalogPower {
  std::string_view gpu;
  double tdp_w;
  const char* source;
};

// TDP: validation/hardware-specs.json (vendor datasheets) where it lists tdp_W; the others as noted.
constexpr CatalogPower CATALOG[] = {
    {"V100-SXM2-32GB", 300, "NVIDIA V100 datasheet: 300 W (SXM2)"},
    {"A100-SXM4-40GB", 400, "NVIDIA A100 datasheet: 400 W (SXM4)"},
    {"A100-SXM4-80GB", 400, "NVIDIA A100 datasheet: 400 W (SXM4)"},
    {"H100-SXM5-80GB", 700, "NVIDIA H100 datasheet: up to 700 W (SXM5)"},
    {"H800-SXM5-80GB", 700, "NVIDIA H800 datasheet: up to 700 W (SXM), as H100 SXM5"},
    {"H200-SXM-141GB", 700, "NVIDIA H200 datasheet: up to 700 W (SXM)"},
    {"B200", 1000, "NVIDIA HGX B200 specifications: up to 1,000 W per GPU"},
    {"GB200", 1200, "NVIDIA GB200 NVL72: 1,200 W per Blackwell GPU of a superchip (as commonly cited)"},
    {"L40S", 350, "NVIDIA L40S datasheet: 350 W"},
    {"MI300X", 750, "AMD Instinct MI300X data sheet: 750 W"},
};

double default_idle(double tdp_w) { return DEFAULT_IDLE_SHARE * tdp_w; }

// An optional power figure of `r`: nullopt when absent or malformed (the problem recorded).
std::optional<double> watts(ObjectReader& r, std::string_view key, double min, double max, std::string_view what) {
  const Json* v = r.raw(key);
  if (v == nullptr) return std::nullopt;
  double w = 0;
  if (!parse_watts(*v, w) || !(w >= min && w <= max)) {
    r.problem(key, fmt::format("expected {} from {} to {}, such as \"700 W\" or \"2.6 kW\", found {}", what,
                               format_watts(min), format_watts(max), describe_json(*v)));
    return std::nullopt;
  }
  return w;
}

// A plain number of `r` in [min, max]; nullopt when absent or out of range (the problem recorded).
std::optional<double> rate(ObjectReader& r, std::string_view key, double min, double max, std::string_view what) {
  const Json* v = r.raw(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number() || !(v->get<double>() >= min && v->get<double>() <= max)) {
    r.problem(key, fmt::format("expected {} from {} to {}, found {}", what, min, max, describe_json(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

// Exact: reads back to the same double.
std::string exact_watts(double w) { return fmt::format("{} W", w); }

}  // namespace

std::string_view to_string(PowerActivity a) {
  switch (a) {
    case PowerActivity::GEMM_BOUND: return "gemm_bound";
    case PowerActivity::MEMORY_BOUND: return "memory_bound";
    case PowerActivity::COMMUNICATION: return "communication";
    case PowerActivity::WAITING: return "waiting";
  }
  return "waiting";
}

double GpuPower::draw_w(PowerActivity a) const {
  const double share = ACTIVITY_POWER_SHARE[static_cast<size_t>(a)];
  return std::min(limit_w(), idle_w + share * (tdp_w - idle_w));
}

double GpuPower::clock_ratio() const {
  if (!power_cap_w || tdp_w <= idle_w) return 1.0;
  return std::pow((*power_cap_w - idle_w) / (tdp_w - idle_w), 1.0 / DVFS_EXPONENT);
}

GpuPower catalog_gpu_power(std::string_view gpu_name) {
  GpuPower p;
  for (const CatalogPower& c : CATALOG) {
    if (c.gpu != gpu_name) continue;
    p.tdp_w = c.tdp_w;
    p.idle_w = default_idle(c.tdp_w);
    p.source = fmt::format("{}; idle {} of TDP (measured on an H200 with a CUDA context open: docs/gpu-runs.md)", c.source,
                           DEFAULT_IDLE_SHARE);
  }
  return p;
}

bool parse_watts(const Json& value, double& watts) {
  if (value.is_number()) {
    watts = value.get<double>();
    return std::isfinite(watts);
  }
  if (!value.is_string()) return false;
  const std::string text = value.get<std::string>();
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number)) return false;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::vector<std::pair<std::string, double>> UNITS = {{"W", 1}, {"kW", 1e3}, {"MW", 1e6}};
  for (const auto& [name, scale] : UNITS) {
    if (unit == name) {
      watts = number * scale;
      return true;
    }
  }
  return false;
}

std::string format_watts(double watts) {
  if (std::abs(watts) >= 1e6) return fmt::format("{:.4g} MW", watts / 1e6);
  if (std::abs(watts) >= 1e3) return fmt::format("{:.4g} kW", watts / 1e3);
  return fmt::format("{:.4g} W", watts);
}

ClusterPower ClusterPower::from_json(ObjectReader& r) {
  ClusterPower p;
  p.pue = rate(r, "pue", 1.0, MAX_PUE, "a power usage effectiveness (facility / IT power)").value_or(p.pue);
  p.host_w = watts(r, "host_power", 0, MAX_PART_W, "a node's power besides its GPUs and NICs").value_or(p.host_w);
  p.nic_w = watts(r, "nic_power", 0, MAX_GPU_W, "a NIC's power").value_or(p.nic_w);
  p.switch_w_per_nic =
      watts(r, "switch_power", 0, MAX_GPU_W, "the switches' power per NIC they serve").value_or(p.switch_w_per_nic);
  p.price_per_kwh = rate(r, "price_per_kwh", 0, MAX_PRICE_PER_KWH, "a price in USD per kWh");
  p.grid_gco2_per_kwh = rate(r, "grid_gco2_per_kwh", 0, MAX_GCO2_PER_KWH, "a grid carbon intensity in gCO2eq per kWh");
  r.finish();
  return p;
}

Json ClusterPower::to_json() const {
  Json j;
  j["pue"] = pue;
  j["host_power"] = exact_watts(host_w);
  j["nic_power"] = exact_watts(nic_w);
  j["switch_power"] = exact_watts(switch_w_per_nic);
  if (price_per_kwh) j["price_per_kwh"] = *price_per_kwh;
  if (grid_gco2_per_kwh) j["grid_gco2_per_kwh"] = *grid_gco2_per_kwh;
  return j;
}

std::string read_gpu_power(ObjectReader& r, GpuPower& power) {
  std::vector<std::string> changed;
  if (auto tdp = watts(r, "tdp", 1, MAX_GPU_W, "the GPU's power limit (TDP)")) {
    power.tdp_w = *tdp;
    power.idle_w = default_idle(*tdp);
    changed.push_back(fmt::format("tdp {}", format_watts(*tdp)));
  }
  if (auto idle = watts(r, "idle_power", 0, MAX_GPU_W, "the GPU's idle power")) {
    if (power.tdp_w > 0 && *idle >= power.tdp_w) {
      r.problem("idle_power", fmt::format("expected an idle power below the GPU's TDP ({}), found {}",
                                          format_watts(power.tdp_w), format_watts(*idle)));
    } else {
      power.idle_w = *idle;
      changed.push_back(fmt::format("idle_power {}", format_watts(*idle)));
    }
  }
  if (auto cap = watts(r, "power_cap", 1, MAX_GPU_W, "a power cap")) {
    if (power.tdp_w <= 0) {
      r.problem("power_cap", "a power cap needs the GPU's \"tdp\" (the GPU is described without one)");
    } else if (*cap > power.tdp_w || *cap <= power.idle_w) {
      r.problem("power_cap", fmt::format("expected a power cap above the GPU's idle power ({}) and at most its TDP "
                                         "({}), found {}",
                                         format_watts(power.idle_w), format_watts(power.tdp_w), format_watts(*cap)));
    } else {
      power.power_cap_w = *cap;
      changed.push_back(fmt::format("power_cap {}", format_watts(*cap)));
    }
  }
  std::string out;
  for (const std::string& c : changed) out += (out.empty() ? "" : ", ") + c;
  return out;
}

void gpu_power_to_json(const GpuPower& power, const GpuPower& base, Json& gpu_object) {
  if (power.tdp_w <= 0) return;
  if (power.tdp_w != base.tdp_w) gpu_object["tdp"] = exact_watts(power.tdp_w);
  const double idle_given_tdp = power.tdp_w != base.tdp_w ? default_idle(power.tdp_w) : base.idle_w;
  if (power.idle_w != idle_given_tdp) gpu_object["idle_power"] = exact_watts(power.idle_w);
  if (power.power_cap_w) gpu_object["power_cap"] = exact_watts(*power.power_cap_w);
}

}  // namespace trainsim::core

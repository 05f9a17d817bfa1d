#include "calibrate/profile_fit.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "calibrate/accuracy.hpp"
#include "calibrate/linear_fit.hpp"
#include "calibrate/trace_summary.hpp"
#include "sim/core/error.hpp"

namespace trainsim::calibrate {
namespace {

using core::CollectiveOp;
using core::OpClass;
using core::Precision;

constexpr double NS = 1e-9;

struct Sample {
  double x = 0;  // FLOPs, bytes of traffic, or (for collectives) unused
  double t = 0;  // seconds
};

// The precision of operands of `type`; FP32 counts as TF32 when the compute type says so.
bool precision_of(trace::DataType type, const std::string& compute_type, Precision& out) {
  switch (type) {
    case trace::DATA_TYPE_BFLOAT16: out = Precision::BF16; return true;
    case trace::DATA_TYPE_FLOAT16: out = Precision::FP16; return true;
    case trace::DATA_TYPE_FLOAT8_E4M3:
    case trace::DATA_TYPE_FLOAT8_E5M2: out = Precision::FP8; return true;
    case trace::DATA_TYPE_FLOAT32:
      out = compute_type.find("TF32") != std::string::npos ? Precision::TF32 : Precision::FP32;
      return true;
    default: return false;
  }
}

// Kernel time per external id in one trace file: ExternalCorrelation records map an external id (a
// Gemm's correlation_id, an Operation's external_id) to the CUDA correlation ids of the kernels it
// launched, whose durations add up.
class KernelTimes {
 public:
  explicit KernelTimes(const core::TraceFile& f) {
    for (const trace::Record& r : f.records) {
      if (r.has_kernel() && r.kernel().end_ns() > r.kernel().start_ns()) {
        kernel_seconds_[r.kernel().correlation_id()] += static_cast<double>(r.kernel().end_ns() - r.kernel().start_ns()) * NS;
      } else if (r.has_external_correlation()) {
        correlations_[r.external_correlation().external_id()].push_back(r.external_correlation().correlation_id());
      }
    }
  }
  // 0 when the id launched no traced kernel.
  double seconds(uint64_t external_id) const {
    const auto ids = correlations_.find(external_id);
    if (ids == correlations_.end()) return 0;
    double t = 0;
    for (uint32_t id : ids->second) {
      if (auto k = kernel_seconds_.find(id); k != kernel_seconds_.end()) t += k->second;
    }
    return t;
  }

 private:
  std::unordered_map<uint32_t, double> kernel_seconds_;                 // by CUDA correlation id
  std::unordered_map<uint64_t, std::vector<uint32_t>> correlations_;   // external id -> CUDA ids
};

struct GemmSample {
  double flops = 0;
  double t = 0;
  double m = 0, n = 0, batch = 1;
};

// GEMM samples (FLOPs and shape, summed kernel time) by precision, over every trace; `untyped`
// counts the timed Gemm records whose operand type is unknown (left out: the rate depends on it).
std::map<Precision, std::vector<GemmSample>> gemm_samples(const TraceSet& traces, size_t& untyped) {
  std::map<Precision, std::vector<GemmSample>> out;
  untyped = 0;
  for (const core::TraceFile& f : traces.files()) {
    const KernelTimes times(f);
    for (const trace::Record& r : f.records) {
      if (!r.has_gemm()) continue;
      const trace::Gemm& g = r.gemm();
      Precision p;
      const double t = times.seconds(g.correlation_id());
      if (!precision_of(g.a_type(), g.compute_type(), p)) {
        untyped += t > 0 ? 1 : 0;
        continue;
      }
      const double batch = g.batch_count() == 0 ? 1.0 : static_cast<double>(g.batch_count());
      const double m = static_cast<double>(g.m()), n = static_cast<double>(g.n());
      const double flops = 2.0 * m * n * static_cast<double>(g.k()) * batch;
      if (t > 0 && flops > 0) out[p].push_back({flops, t, m, n, batch});
    }
  }
  return out;
}

// A sample whose HBM traffic alone, at the base profile's efficiency, takes this share of its time
// (less the kernel overhead) or more is memory-bound: the compute model times it by its bytes, so it
// says nothing about the FLOP rate.
constexpr double MEMORY_BOUND_SHARE = 0.9;

struct AttentionFilter {
  double seconds_per_byte = 0;  // 1 / (HBM x the base profile's flash_attention memory efficiency)
  double overhead = 0;
  size_t assumed_causal = 0;    // samples whose mask was assumed
  size_t memory_bound = 0;      // samples left out
};

// Operation samples of one kind: (executed FLOPs for attention, else bytes; summed kernel time), by
// precision. Attention samples pass `filter`, which leaves out memory-bound ones and counts.
std::map<Precision, std::vector<Sample>> operation_samples(const TraceSet& traces, trace::OperationKind kind,
                                                           AttentionFilter* filter = nullptr) {
  std::map<Precision, std::vector<Sample>> out;
  for (const core::TraceFile& f : traces.files()) {
    const KernelTimes times(f);
    for (const trace::Record& r : f.records) {
      if (!r.has_operation() || r.operation().kind() != kind) continue;
      const trace::Operation& op = r.operation();
      Precision p = Precision::BF16;
      if (!precision_of(op.data_type(), "", p) && kind == trace::OPERATION_KIND_ATTENTION) continue;
      const double t = times.seconds(op.external_id());
      const double x = kind == trace::OPERATION_KIND_ATTENTION ? op.executed_flops() : op.bytes();
      if (t <= 0 || x <= 0) continue;
      if (filter != nullptr) {
        if (op.bytes() * filter->seconds_per_byte >= MEMORY_BOUND_SHARE * (t - filter->overhead)) {
          ++filter->memory_bound;
          continue;
        }
        filter->assumed_causal += !op.causal_known();
      }
      out[p].push_back({x, t});
    }
  }
  return out;
}

std::vector<Sample> all_precisions(const std::map<Precision, std::vector<Sample>>& by_precision) {
  std::vector<Sample> out;
  for (const auto& [p, samples] : by_precision) out.insert(out.end(), samples.begin(), samples.end());
  return out;
}

// Device-side copies with known bytes: (HBM traffic, time).
std::vector<Sample> memory_samples(const TraceSet& traces) {
  std::vector<Sample> out;
  for (const core::TraceFile& f : traces.files()) {
    for (const trace::Record& r : f.records) {
      if (r.has_memcpy() && r.memcpy().kind() == trace::MEMCPY_KIND_DTOD && r.memcpy().bytes() > 0 &&
          r.memcpy().end_ns() > r.memcpy().start_ns()) {
        out.push_back({2.0 * static_cast<double>(r.memcpy().bytes()),
                       static_cast<double>(r.memcpy().end_ns() - r.memcpy().start_ns()) * NS});
      } else if (r.has_memset() && r.memset().bytes() > 0 && r.memset().end_ns() > r.memset().start_ns()) {
        out.push_back({static_cast<double>(r.memset().bytes()),
                       static_cast<double>(r.memset().end_ns() - r.memset().start_ns()) * NS});
      }
    }
  }
  return out;
}

size_t kernels_of(const TraceSet& traces, TimeCategory category) {
  size_t n = 0;
  for (const core::TraceFile& f : traces.files()) {
    for (const trace::Record& r : f.records) n += r.has_kernel() && categorize_kernel(r.kernel().name()) == category;
  }
  return n;
}

// One sample per collective call: the k-th call on a communicator is the same call on every member,
// and its shortest duration over the members is the one without waiting for late arrivals.
std::vector<CollectiveSample> traced_collectives(const TraceSet& traces) {
  std::map<std::pair<std::vector<int>, size_t>, CollectiveSample> calls;
  for (const TracedRank& r : traces.ranks()) {
    std::map<std::vector<int>, size_t> ordinal;
    for (const TracedCollective& c : r.collectives) {
      const size_t k = ordinal[c.group]++;
      if (c.group.size() < 2 || c.end_ns <= c.start_ns) continue;
      const core::Seconds t(static_cast<double>(c.end_ns - c.start_ns) * NS);
      auto [it, inserted] = calls.try_emplace(
          {c.group, k}, CollectiveSample{c.op, static_cast<int>(c.group.size()), core::Bytes(c.bytes), t});
      if (!inserted) it->second.time = std::min(it->second.time, t);
    }
  }
  std::vector<CollectiveSample> out;
  for (auto& [key, sample] : calls) {
    std::map<std::string, int> per_host;
    bool known = true;
    int busiest = 0;
    for (int rank : key.first) {
      known = known && traces.find(rank) != nullptr;
      busiest = std::max(busiest, ++per_host[traces.host_of(rank)]);
    }
    sample.scope = known ? collective_scope(per_host.size(), busiest) : CollectiveScope::UNKNOWN;
    out.push_back(sample);
  }
  return out;
}

using core::ring_steps;

// Fits t = c0 + c1·x; the category is left unfitted (with a note) when that is not possible.
LinearFit fit_affine(const std::vector<Sample>& samples, size_t min_samples, FitCategory& cat) {
  cat.samples = samples.size();
  if (samples.size() < min_samples) {
    cat.note = fmt::format("too few samples (< {}): defaults kept", min_samples);
    return {};
  }
  std::vector<std::vector<double>> x;
  std::vector<double> t;
  for (const Sample& s : samples) {
    x.push_back({1.0, s.x});
    t.push_back(s.t);
  }
  LinearFit fit = fit_linear(x, t);
  if (!fit.solved) cat.note = "all samples of one size: fixed and per-unit cost not separable; defaults kept";
  cat.fitted = fit.solved;
  cat.r_squared = fit.r_squared;
  cat.rms_relative_residual = fit.rms_relative_residual;
  cat.max_relative_residual = fit.max_relative_residual;
  return fit;
}

double clamp_efficiency(double e, std::string& note) {
  if (e <= 1.0) return e;
  note += fmt::format("; efficiency {:.4g} > 1 clamped to 1 (check the nominal figures)", e);
  return 1.0;
}

// The compute model's tensor-core time, t = (x + h) / (P·max·s) + overhead with x the FLOPs (GEMMs:
// divided by the shape's tile and wave utilization; FlashAttention: executed), is t = c0 + c1·x:
// max·s = 1 / (P·c1) and h = (c0 − overhead) / c1.
core::OpEfficiency tensor_core_efficiency(const LinearFit& fit, double peak, double scale, const FitOptions& o,
                                          core::OpEfficiency e, FitCategory& cat) {
  e.max_efficiency = clamp_efficiency(1.0 / (peak * scale * fit.coefficients[1]), cat.note);
  const double overhead = o.base.device.kernel_overhead.value();
  e.half_flops = std::max(0.0, (fit.coefficients[0] - overhead) / fit.coefficients[1]);
  if (fit.coefficients[0] < overhead) {
    cat.note += "; fixed cost below the profile's kernel overhead: half_flops clamped to 0";
  }
  return e;
}

void fit_gemm(const TraceSet& traces, const FitOptions& o, ProfileFit& out) {
  Precision best = Precision::BF16;
  size_t best_samples = 0;
  std::map<Precision, core::OpEfficiency> fitted;
  size_t untyped = 0;
  const auto by_precision = gemm_samples(traces, untyped);
  // GEMMs whose shapes are known but not their operand type (a Kineto trace whose GEMM ops lack
  // "Input type", with kernel names that name no type): the join is fine, the precision is missing.
  const std::string untyped_note =
      untyped == 0 ? std::string()
                   : fmt::format("{} GEMM kernel(s) join a Gemm record whose operand type is unknown (the Kineto "
                                 "trace's GEMM ops have \"Input Dims\" but no \"Input type\", and their kernel names "
                                 "name no type; record_shapes=True records both)",
                                 untyped);
  if (by_precision.empty()) {
    FitCategory cat;
    cat.name = "gemm";
    cat.samples = kernels_of(traces, TimeCategory::GEMM);
    cat.note = untyped > 0 ? fmt::format("not fitted: {}; defaults kept", untyped_note)
                           : "not fitted: no GEMM kernel joins a Gemm record (shapes come from the tracer's cuBLAS "
                             "wrappers, or from Kineto traces recorded with record_shapes=True); defaults kept";
    out.categories.push_back(cat);
    return;
  }
  // With tiles in the base profile, each GEMM's FLOPs are divided by its shape's tile and wave
  // utilization: the fit then finds the efficiency the compute model applies on top of them.
  const core::DeviceProfile& base = o.base.device;
  const bool shaped = o.gpu.sm_count > 0 && !base.gemm_tiles.empty();
  for (const auto& [precision, gemms] : by_precision) {
    FitCategory cat;
    cat.name = fmt::format("gemm {}", core::to_string(precision));
    const double peak = o.gpu.peak(precision).value();
    if (peak <= 0) {
      cat.samples = gemms.size();
      cat.note = fmt::format("{} has no dense {} peak in the catalog: not fitted", o.gpu.name, core::to_string(precision));
      out.categories.push_back(cat);
      continue;
    }
    std::vector<Sample> samples;
    double utilization = 0;
    for (const GemmSample& g : gemms) {
      const double u = shaped ? core::best_tile(g.m, g.n, g.batch, o.gpu.sm_count, base).utilization : 1.0;
      samples.push_back({g.flops / u, g.t});
      utilization += u;
    }
    const LinearFit fit = fit_affine(samples, o.min_samples, cat);
    if (fit.solved && fit.coefficients[1] <= 0) {
      cat.note = "time does not grow with FLOPs: defaults kept";
    } else if (fit.solved) {
      const core::OpEfficiency e = tensor_core_efficiency(fit, peak, 1.0, o, base.op(OpClass::GEMM), cat);
      cat.parameters = {{"max_efficiency", e.max_efficiency}, {"half_flops", e.half_flops}, {"peak_flops_per_s", peak},
                        {"mean_tile_utilization", utilization / static_cast<double>(gemms.size())}};
      fitted[precision] = e;
      if (samples.size() > best_samples) {
        best = precision;
        best_samples = samples.size();
      }
    }
    if (untyped > 0) cat.note += fmt::format("{}{} left out", cat.note.empty() ? "" : "; ", untyped_note);
    out.categories.push_back(cat);
  }
  if (best_samples == 0) return;
  out.profile.device.ops[static_cast<size_t>(OpClass::GEMM)] = fitted[best];
  // The other precisions keep their ratio to the fitted one. Fitted on FLOPs alone (no tiles in the
  // base profile), the efficiency already holds the traced shapes' quantization.
  core::DeviceProfile& dev = out.profile.device;
  const double fitted_scale = dev.gemm_precision_scale[static_cast<size_t>(best)];
  for (double& scale : dev.gemm_precision_scale) scale /= fitted_scale;
  for (auto& [key, source] : dev.sources) {
    if (key == "ops.gemm.max_efficiency") {
      source = fmt::format("fitted on traced {} GEMMs{} (trainsim calibrate)", core::to_string(best),
                           shaped ? " over their tile and wave utilization" : "");
    }
    if (key == "gemm_tiles" && !shaped) source = "none: the fitted efficiency already includes the traced shapes' quantization";
  }
  for (FitCategory& c : out.categories) {
    if (c.name == fmt::format("gemm {}", core::to_string(best))) {
      c.in_profile = true;
      c.note = fmt::format("sets device.ops.gemm (max_efficiency, half_flops{}){}",
                           shaped ? "; over each shape's tile and wave utilization" : "", c.note);
    } else if (c.fitted && c.note.empty()) {
      c.note = "reported only: the profile has one GEMM curve (the precision with the most samples)";
    }
  }
}

// FlashAttention: t = (executed FLOPs + h) / (P·max·s) + overhead, after the GEMM fit set the scales.
void fit_attention(const TraceSet& traces, const FitOptions& o, ProfileFit& out) {
  AttentionFilter filter;
  filter.seconds_per_byte =
      1.0 / (o.gpu.hbm_bandwidth.value() * o.base.device.op(OpClass::FLASH_ATTENTION).memory_efficiency);
  filter.overhead = o.base.device.kernel_overhead.value();
  const auto by_precision = operation_samples(traces, trace::OPERATION_KIND_ATTENTION, &filter);
  if (by_precision.empty()) {
    FitCategory k;
    k.name = "flash_attention";
    k.samples = kernels_of(traces, TimeCategory::ATTENTION);
    k.note = filter.memory_bound > 0
                 ? fmt::format("not fitted: all {} costed attention ops are memory-bound; defaults kept", filter.memory_bound)
                 : "not fitted: no attention kernel joins a costed attention op (Kineto traces recorded with "
                   "record_shapes=True give them); defaults kept";
    out.categories.push_back(k);
    return;
  }
  core::DeviceProfile& dev = out.profile.device;
  Precision best = Precision::BF16;
  size_t best_samples = 0;
  std::map<Precision, core::OpEfficiency> fitted;
  std::vector<size_t> indices;
  for (const auto& [precision, samples] : by_precision) {
    FitCategory cat;
    cat.name = fmt::format("flash_attention {}", core::to_string(precision));
    const double peak = o.gpu.peak(precision).value();
    const LinearFit fit = peak > 0 ? fit_affine(samples, o.min_samples, cat) : LinearFit{};
    if (peak <= 0) {
      cat.samples = samples.size();
      cat.note = fmt::format("{} has no dense {} peak in the catalog: not fitted", o.gpu.name, core::to_string(precision));
    } else if (fit.solved && fit.coefficients[1] <= 0) {
      cat.note = "time does not grow with FLOPs: defaults kept";
    } else if (fit.solved) {
      const double scale = dev.gemm_precision_scale[static_cast<size_t>(precision)];
      const core::OpEfficiency e =
          tensor_core_efficiency(fit, peak, scale, o, dev.op(OpClass::FLASH_ATTENTION), cat);
      cat.parameters = {{"max_efficiency", e.max_efficiency}, {"half_flops", e.half_flops}, {"peak_flops_per_s", peak}};
      fitted[precision] = e;
      if (samples.size() > best_samples) {
        best = precision;
        best_samples = samples.size();
      }
    }
    indices.push_back(out.categories.size());
    out.categories.push_back(cat);
  }
  if (best_samples == 0) return;
  dev.op(OpClass::FLASH_ATTENTION) = fitted[best];
  for (auto& [key, source] : dev.sources) {
    if (key == "ops.flash_attention.max_efficiency") {
      source = fmt::format("fitted on traced {} attention kernels (trainsim calibrate)", core::to_string(best));
    }
  }
  for (size_t i : indices) {
    FitCategory& c = out.categories[i];
    if (c.name == fmt::format("flash_attention {}", core::to_string(best))) {
      c.in_profile = true;
      c.note = fmt::format("sets device.ops.flash_attention (max_efficiency, half_flops){}{}{}", c.note,
                           filter.assumed_causal > 0
                               ? fmt::format("; {} sample(s) taken as causal (no is_causal in the trace)", filter.assumed_causal)
                               : "",
                           filter.memory_bound > 0
                               ? fmt::format("; {} memory-bound sample(s) left out (their HBM traffic takes >= {:.0f} % "
                                             "of their time)", filter.memory_bound, 100 * MEMORY_BOUND_SHARE)
                               : "");
    } else if (c.fitted && c.note.empty()) {
      c.note = "reported only: the profile has one attention curve (the precision with the most samples)";
    }
  }
}

// Memory-bound: t = bytes / (HBM·eff) + c0; the fitted efficiency goes to `classes` (none: the
// category is reported only).
FitCategory fit_bandwidth(const std::string& name, const std::vector<Sample>& samples, const FitOptions& o,
                          const std::vector<OpClass>& classes, const std::string& what, core::Profile& profile) {
  FitCategory cat;
  cat.name = name;
  const LinearFit fit = fit_affine(samples, o.min_samples, cat);
  if (fit.solved && fit.coefficients[1] <= 0) {
    cat.note = "time does not grow with bytes: defaults kept";
  } else if (fit.solved) {
    const double hbm = o.gpu.hbm_bandwidth.value();
    std::string note;
    const double eff = clamp_efficiency(1.0 / (hbm * fit.coefficients[1]), note);
    std::vector<std::string> names;
    for (OpClass c : classes) {
      profile.device.op(c).memory_efficiency = eff;
      names.emplace_back(core::to_string(c));
    }
    cat.parameters = {{"memory_efficiency", eff}, {"fixed_s", fit.coefficients[0]}, {"hbm_bytes_per_s", hbm}};
    cat.in_profile = !classes.empty();
    cat.note = classes.empty() ? "reported only: the costed ops' fits set every memory-bound class"
                               : fmt::format("sets memory_efficiency of {} ({}){}", fmt::join(names, ", "), what, note);
  }
  return cat;
}

void fit_memory(const TraceSet& traces, const FitOptions& o, ProfileFit& out) {
  // Costed ops set their own classes; device copies set the classes no op fit set.
  const std::vector<Sample> elementwise = all_precisions(operation_samples(traces, trace::OPERATION_KIND_ELEMENTWISE));
  const std::vector<Sample> norm = all_precisions(operation_samples(traces, trace::OPERATION_KIND_NORM));
  std::vector<FitCategory> by_op;
  if (!elementwise.empty()) {
    by_op.push_back(fit_bandwidth("elementwise", elementwise, o, {OpClass::ELEMENTWISE, OpClass::EMBEDDING, OpClass::OPTIMIZER},
                                  "pointwise ops' input and output bytes", out.profile));
  }
  if (!norm.empty()) by_op.push_back(fit_bandwidth("norm", norm, o, {OpClass::NORM}, "norm ops' bytes", out.profile));
  auto set_by_op = [&](const char* name) {
    return std::any_of(by_op.begin(), by_op.end(), [&](const FitCategory& c) { return c.name == name && c.in_profile; });
  };
  std::vector<OpClass> rest;
  for (OpClass c : {OpClass::ELEMENTWISE, OpClass::NORM, OpClass::EMBEDDING, OpClass::OPTIMIZER}) {
    if (!set_by_op(c == OpClass::NORM ? "norm" : "elementwise")) rest.push_back(c);
  }
  const std::vector<Sample> copies = memory_samples(traces);
  if (!rest.empty() || !copies.empty()) {
    out.categories.push_back(fit_bandwidth("memory", copies, o, rest, "d2d memcpy, memset", out.profile));
  }
  for (FitCategory& c : by_op) out.categories.push_back(std::move(c));
  if (elementwise.empty()) {
    FitCategory k;
    k.name = "elementwise";
    k.samples = kernels_of(traces, TimeCategory::ELEMENTWISE);
    k.note = "not fitted: no kernel joins a costed pointwise op (Kineto traces recorded with record_shapes=True give "
             "them); defaults kept";
    out.categories.push_back(k);
  }
}

// Fits t = a·steps + b·factor·S. `nominal` is the scope's bandwidth and hop latency.
FitCategory fit_collectives(const std::string& name, const std::vector<CollectiveSample>& samples, size_t min_samples,
                            double bandwidth, double hop_latency, core::LinkEfficiency& link) {
  FitCategory cat;
  cat.name = name;
  cat.samples = samples.size();
  if (samples.size() < min_samples) {
    cat.note = fmt::format("too few samples (< {}): defaults kept", min_samples);
    return cat;
  }
  std::vector<std::vector<double>> x;
  std::vector<double> t;
  for (const CollectiveSample& s : samples) {
    x.push_back({ring_steps(s.op, s.ranks), core::bus_bandwidth_factor(s.op, s.ranks) * s.bytes.value()});
    t.push_back(s.time.value());
  }
  const LinearFit fit = fit_linear(x, t);
  cat.fitted = fit.solved;
  cat.r_squared = fit.r_squared;
  cat.rms_relative_residual = fit.rms_relative_residual;
  cat.max_relative_residual = fit.max_relative_residual;
  if (!fit.solved) {
    cat.note = "latency and bandwidth terms not separable (one size per group size): defaults kept";
    return cat;
  }
  if (fit.coefficients[1] <= 0) {
    cat.note = "time does not grow with size: defaults kept";
    return cat;
  }
  link.bandwidth_efficiency = clamp_efficiency(1.0 / (bandwidth * fit.coefficients[1]), cat.note);
  const double step = fit.coefficients[0] - hop_latency;
  if (step < 0) cat.note += fmt::format("; per-step latency below the nominal hop latency: step_latency clamped to 0");
  link.step_latency = core::Seconds(std::max(0.0, step));
  cat.parameters = {{"bandwidth_efficiency", link.bandwidth_efficiency},
                    {"step_s", fit.coefficients[0]},
                    {"step_latency_s", link.step_latency.value()},
                    {"nominal_bytes_per_s", bandwidth}};
  return cat;
}

// The samples of one op (of one scope) at each (size, group size), in ascending order.
using SizeGroups = std::map<std::pair<double, int>, std::vector<double>>;

SizeGroups size_groups(const std::vector<CollectiveSample>& samples) {
  SizeGroups out;
  for (const CollectiveSample& s : samples) out[{s.bytes.value(), s.ranks}].push_back(s.time.value());
  return out;
}

size_t distinct_sizes(const SizeGroups& groups) {
  std::set<double> sizes;
  for (const auto& [key, times] : groups) {
    if (key.first > 0) sizes.insert(key.first);
  }
  return sizes.size();
}

// Below this share of the time the bandwidth term is not measurable (profile_fit.hpp).
constexpr double LATENCY_BOUND_SHARE = 0.02;
// A curve within this of the constant efficiency everywhere does not depend on the size.
constexpr double FLAT_CURVE_TOLERANCE = 0.02;

// "<scope> <op> curve": e(S) at each measured size given the scope's per-step latency `a`; sets
// link.by_size[op] when >= 2 points remain.
FitCategory fit_curve(const std::string& scope_name, CollectiveOp op, const std::vector<CollectiveSample>& samples,
                      double bandwidth, double a, core::LinkEfficiency& link) {
  FitCategory cat;
  cat.name = fmt::format("{} {} curve", scope_name, core::to_string(op));
  cat.samples = samples.size();
  std::map<double, std::vector<double>> by_size;  // size -> efficiency per group size
  size_t not_positive = 0;
  size_t latency_bound = 0;
  double latency_bound_below = 0;  // the largest latency-bound size
  size_t clamped = 0;
  double largest = 0;
  for (const auto& [key, times] : size_groups(samples)) {
    const auto [bytes, ranks] = key;
    if (bytes <= 0) continue;
    const double t = median(times);
    const double rest = t - ring_steps(op, ranks) * a;
    if (rest <= 0) {
      ++not_positive;
    } else if (rest < LATENCY_BOUND_SHARE * t) {
      ++latency_bound;
      latency_bound_below = std::max(latency_bound_below, bytes);
    } else {
      double e = core::bus_bandwidth_factor(op, ranks) * bytes / (bandwidth * rest);
      if (e > 1) {
        ++clamped;
        largest = std::max(largest, e);
        e = 1;
      }
      by_size[bytes].push_back(e);
    }
  }
  for (const auto& [bytes, efficiencies] : by_size) cat.curve.push_back({bytes, median(efficiencies)});

  std::string skipped;
  if (not_positive > 0) {
    skipped += fmt::format("; {} size(s) left out: time not above the latency term", not_positive);
  }
  if (latency_bound > 0) {
    skipped += fmt::format("; {} latency-bound size(s) up to {} left out (bandwidth term < {:.0f} % of the time)",
                           latency_bound, core::format_bytes(core::Bytes(latency_bound_below)),
                           100 * LATENCY_BOUND_SHARE);
  }
  if (clamped > 0) {
    skipped += fmt::format("; efficiency > 1 at {} size(s) (up to {:.4g}) clamped to 1 (check the nominal figures)",
                           clamped, largest);
  }
  if (cat.curve.size() < 2) {
    cat.note = fmt::format("no curve: {} size(s) with a measurable bandwidth term, 2 needed{}", cat.curve.size(),
                           skipped);
    cat.curve.clear();
    return cat;
  }
  link.by_size[static_cast<size_t>(op)] = cat.curve;

  // How well the profile (this latency, the interpolated curve) reproduces every sample of the op.
  double mean = 0;
  for (const CollectiveSample& s : samples) mean += s.time.value();
  mean /= static_cast<double>(samples.size());
  double ss_res = 0, ss_tot = 0, rel = 0;
  for (const CollectiveSample& s : samples) {
    const double predicted = ring_steps(op, s.ranks) * a + core::bus_bandwidth_factor(op, s.ranks) * s.bytes.value() /
                                                              (bandwidth * link.efficiency(op, s.bytes));
    const double t = s.time.value();
    ss_res += (predicted - t) * (predicted - t);
    ss_tot += (t - mean) * (t - mean);
    rel += (predicted - t) * (predicted - t) / (t * t);
    cat.max_relative_residual = std::max(cat.max_relative_residual, std::abs(predicted - t) / t);
  }
  cat.fitted = true;
  cat.in_profile = true;
  cat.r_squared = ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
  cat.rms_relative_residual = std::sqrt(rel / static_cast<double>(samples.size()));
  cat.parameters = {{"points", static_cast<double>(cat.curve.size())}, {"step_s", a}};
  const bool flat = std::all_of(cat.curve.begin(), cat.curve.end(), [&](const core::EfficiencyPoint& p) {
    return std::abs(p.efficiency / link.bandwidth_efficiency - 1.0) <= FLAT_CURVE_TOLERANCE;
  });
  cat.note = fmt::format("sets network.{}.by_size.{}{}{}", scope_name, core::to_string(op), skipped,
                         flat ? fmt::format("; efficiency does not vary with size (every point within {:.0f} % of the "
                                            "constant {:.4g}): the curve changes nothing",
                                            100 * FLAT_CURVE_TOLERANCE, link.bandwidth_efficiency)
                              : "");
  return cat;
}

void fit_network(const std::vector<CollectiveSample>& all, const FitOptions& o, ProfileFit& out) {
  std::map<CollectiveScope, std::vector<CollectiveSample>> samples;
  for (const CollectiveSample& s : all) samples[s.scope].push_back(s);
  for (CollectiveScope scope : {CollectiveScope::INTRA_NODE, CollectiveScope::INTER_NODE}) {
    const bool intra = scope == CollectiveScope::INTRA_NODE;
    const std::string scope_name(to_string(scope));
    const double bandwidth = (intra ? o.links.intra_bandwidth : o.links.inter_bandwidth).value();
    const double hop = (intra ? o.links.intra_latency : o.links.inter_latency).value();
    std::map<CollectiveOp, std::vector<CollectiveSample>> by_op;
    for (const CollectiveSample& s : samples[scope]) by_op[s.op].push_back(s);
    for (const auto& [op, of_op] : by_op) {
      core::LinkEfficiency unused;
      FitCategory cat = fit_collectives(fmt::format("{} {}", scope_name, core::to_string(op)), of_op, o.min_samples,
                                        bandwidth, hop, unused);
      if (cat.fitted && cat.note.empty()) cat.note = "reported only: the scope's joint fit sets the profile";
      out.categories.push_back(cat);
    }
    core::LinkEfficiency& link = intra ? out.profile.network.intra_node : out.profile.network.inter_node;
    core::LinkEfficiency fitted = link;
    FitCategory joint = fit_collectives(scope_name, samples[scope], o.min_samples, bandwidth, hop, fitted);
    if (!joint.parameters.empty()) {
      if (link.size_dependent()) {
        joint.note += "; the base profile's curves of this scope are dropped (they go with another latency)";
      }
      link = fitted;
      link.by_size = {};
      joint.in_profile = true;
      joint.note = fmt::format("sets network.{} (all ops){}", scope_name, joint.note);
    }

    std::vector<CollectiveOp> curved;
    for (const auto& [op, of_op] : by_op) {
      if (distinct_sizes(size_groups(of_op)) >= 2) curved.push_back(op);
    }
    if (!curved.empty() && joint.in_profile) {
      // Every measured time must exceed its latency term for the curves to reproduce it.
      double bound = std::numeric_limits<double>::infinity();
      for (const auto& [op, of_op] : by_op) {
        for (const auto& [key, times] : size_groups(of_op)) {
          bound = std::min(bound, median(times) / ring_steps(op, key.second));
        }
      }
      const double a = hop + link.step_latency.value();
      if (a > bound) {
        link.step_latency = core::Seconds(std::max(0.0, bound - hop));
        joint.note += fmt::format("; for the curves, per-step latency lowered from {} to {} (the smallest time per "
                                  "step over the sizes{}; the constant fit overestimates it when efficiency grows "
                                  "with size)",
                                  core::format_duration(core::Seconds(a)),
                                  core::format_duration(core::Seconds(hop) + link.step_latency),
                                  bound < hop ? ", but not below the nominal hop latency" : "");
        for (auto& [name, value] : joint.parameters) {
          if (name == "step_s") value = hop + link.step_latency.value();
          if (name == "step_latency_s") value = link.step_latency.value();
        }
      }
    }
    out.categories.push_back(joint);
    for (CollectiveOp op : curved) {
      if (joint.in_profile) {
        const double a = hop + link.step_latency.value();
        out.categories.push_back(fit_curve(scope_name, op, by_op[op], bandwidth, a, link));
      } else {
        FitCategory c;
        c.name = fmt::format("{} {} curve", scope_name, core::to_string(op));
        c.samples = by_op[op].size();
        c.note = "no curve: the scope's joint fit set no step latency to measure it against";
        out.categories.push_back(c);
      }
    }
  }
  for (CollectiveScope scope : {CollectiveScope::HIERARCHICAL, CollectiveScope::UNKNOWN}) {
    if (samples[scope].empty()) continue;
    FitCategory c;
    c.name = std::string(to_string(scope));
    c.samples = samples[scope].size();
    c.note = scope == CollectiveScope::HIERARCHICAL
                 ? "not fitted: communicators with several ranks on each of several hosts mix both scopes"
                 : "not fitted: some members have no trace, so their hosts are unknown";
    out.categories.push_back(c);
  }
}

}  // namespace

const core::GpuSpec* catalog_gpu_for(const std::string& device_name) {
  if (const core::GpuSpec* exact = core::find_gpu(device_name)) return exact;
  // Names the CUDA driver gives (cudaGetDeviceProperties, nvidia-smi) that contain no catalog name.
  static const std::pair<std::string_view, std::string_view> ALIASES[] = {
      {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},  // H100 SXM5
      {"NVIDIA H200", "H200-SXM-141GB"},            // H200 SXM
  };
  for (const auto& [driver_name, catalog_name] : ALIASES) {
    if (device_name == driver_name) return core::find_gpu(std::string(catalog_name));
  }
  const core::GpuSpec* best = nullptr;
  for (const core::GpuSpec& g : core::gpu_catalog()) {
    if (device_name.find(g.name) != std::string::npos && (best == nullptr || g.name.size() > best->name.size())) best = &g;
  }
  return best;
}

ProfileFit fit_profile(const FitInputs& inputs, const FitOptions& options) {
  TRAINSIM_CHECK(options.links.intra_bandwidth.value() > 0 && options.links.inter_bandwidth.value() > 0,
                 "nominal bandwidths are positive");
  ProfileFit out;
  out.profile = options.base;
  out.profile.device.source = "trainsim calibrate";
  out.profile.network.source = "trainsim calibrate";
  out.gpu = options.gpu.name;
  out.profile.device.fitted_on = core::FittedOn{options.gpu.name, "", "", ""};
  out.nccl_tests = inputs.nccl_tests;
  std::vector<CollectiveSample> collectives;
  if (inputs.traces != nullptr) {
    for (const core::TraceFile& f : inputs.traces->files()) out.traces.push_back(f.path);
    fit_gemm(*inputs.traces, options, out);
    fit_attention(*inputs.traces, options, out);
    fit_memory(*inputs.traces, options, out);
    collectives = traced_collectives(*inputs.traces);
  }
  collectives.insert(collectives.end(), inputs.collectives.begin(), inputs.collectives.end());
  fit_network(collectives, options, out);
  return out;
}

ProfileFit fit_profile(const TraceSet& traces, const FitOptions& options) {
  FitInputs inputs;
  inputs.traces = &traces;
  return fit_profile(inputs, options);
}

core::Json profile_fit_json(const ProfileFit& fit) {
  core::Json j = fit.profile.to_json();
  j["source"] = "trainsim calibrate";
  core::Json categories = core::Json::array();
  for (const FitCategory& c : fit.categories) {
    core::Json params = core::Json::object();
    for (const auto& [name, value] : c.parameters) params[name] = value;
    core::Json cat = {{"name", c.name}, {"samples", c.samples}, {"fitted", c.fitted}, {"in_profile", c.in_profile}};
    if (c.fitted) {
      cat["r_squared"] = c.r_squared;
      cat["rms_relative_residual"] = c.rms_relative_residual;
      cat["max_relative_residual"] = c.max_relative_residual;
    }
    cat["parameters"] = params;
    if (!c.curve.empty()) {
      core::Json points = core::Json::array();
      for (const core::EfficiencyPoint& p : c.curve) {
        points.push_back({{"size_bytes", p.size_bytes}, {"efficiency", p.efficiency}});
      }
      cat["curve"] = points;
    }
    cat["note"] = c.note;
    categories.push_back(cat);
  }
  j["fit"] = {{"gpu", fit.gpu}, {"traces", fit.traces}, {"nccl_tests", fit.nccl_tests}, {"categories", categories}};
  return j;
}

std::string format_fit_table(const ProfileFit& fit) {
  std::vector<std::string> sources;
  if (!fit.traces.empty() || fit.nccl_tests.empty()) sources.push_back(fmt::format("{} trace file(s)", fit.traces.size()));
  if (!fit.nccl_tests.empty()) sources.push_back(fmt::format("{} nccl-tests file(s)", fit.nccl_tests.size()));
  std::string s = fmt::format("calibration of {} from {}\n", fit.gpu, fmt::join(sources, " and "));
  s += fmt::format("{:<32} {:>8} {:>10} {:>10} {:>10}  {}\n", "category", "samples", "r_squared", "rms_rel", "max_rel",
                   "parameters / note");
  for (const FitCategory& c : fit.categories) {
    std::string params;
    for (const auto& [name, value] : c.parameters) params += fmt::format("{}={:.6g} ", name, value);
    if (!c.curve.empty()) {
      std::vector<std::string> points;
      for (const core::EfficiencyPoint& p : c.curve) {
        points.push_back(fmt::format("{}: {:.4f}", core::format_bytes(core::Bytes(p.size_bytes)), p.efficiency));
      }
      params += fmt::format("curve: {} ", fmt::join(points, ", "));
    }
    const std::string r2 = c.fitted ? fmt::format("{:.6f}", c.r_squared) : "-";
    const std::string rms = c.fitted ? fmt::format("{:.3e}", c.rms_relative_residual) : "-";
    const std::string max = c.fitted ? fmt::format("{:.3e}", c.max_relative_residual) : "-";
    s += fmt::format("{:<32} {:>8} {:>10} {:>10} {:>10}  {}{}{}\n", c.name, c.samples, r2, rms, max, params,
                     params.empty() ? "" : "| ", c.note);
  }
  return s;
}

}  // namespace trainsim::calibrate

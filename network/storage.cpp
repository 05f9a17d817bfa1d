#include "network/storage.hpp"

#include <cmath>
#include <fmt/format.h>

namespace trainsim::network {
namespace {

// The longest duration accepted: a century (an MTBF beyond it means "never fails": say so with a
// large value, not infinity).
constexpr double MAX_DURATION_S = 100.0 * 365.0 * 86400.0;
// The shortest node MTBF: a relaunch alone takes minutes (docs/resilience.md), so a node failing
// more often than once a minute never trains; 380,000 times the Llama 3 405B figure (6,335 h).
constexpr double MIN_NODE_MTBF_S = 60.0;

core::BytesPerSecond required_bandwidth(core::ObjectReader& r, const char* key, const char* what) {
  if (!r.has(key)) {
    r.problem(key, fmt::format("missing: {}, e.g. \"100 GB/s\" (a storage tier needs its bandwidths)", what));
    return core::BytesPerSecond(1e9);
  }
  const core::BytesPerSecond b = r.bandwidth(key, core::BytesPerSecond(1e9));
  if (b.value() <= 0) r.problem(key, fmt::format("must be positive, found {}", core::format_bandwidth(b)));
  return b.value() > 0 ? b : core::BytesPerSecond(1e9);
}

// A duration of any length (ObjectReader::duration takes latencies, at most 1 s). `positive`: 0 is
// refused too.
core::Seconds long_duration(core::ObjectReader& r, const char* key, core::Seconds fallback, bool positive) {
  const core::Json* v = r.raw(key);
  if (v == nullptr) return fallback;
  core::Seconds out;
  if (!v->is_string() || !core::parse_duration(v->get<std::string>(), out)) {
    r.problem(key, fmt::format("expected a duration such as \"6334.6 h\", \"10 min\" or \"30 s\", found {}",
                               core::describe_json(*v)));
    return fallback;
  }
  const double s = out.value();
  if (!std::isfinite(s) || s < 0 || (positive && s <= 0) || s > MAX_DURATION_S) {
    r.problem(key, fmt::format("expected a {} duration of at most 100 years, found {}",
                               positive ? "positive" : "non-negative", core::describe_json(*v)));
    return fallback;
  }
  return out;
}

}  // namespace

std::string format_long_duration(core::Seconds s) {
  const double v = s.value();
  if (v >= 3600) return fmt::format("{:.10g} h", v / 3600);
  if (v >= 60) return fmt::format("{:.10g} min", v / 60);
  return fmt::format("{:.10g} s", v);
}

StorageSpec read_storage(core::ObjectReader& r) {
  StorageSpec s;
  if (auto local = r.object("node_local")) {
    StorageTier t;
    t.write_bandwidth = required_bandwidth(*local, "write_bandwidth", "the node's drives' write bandwidth");
    t.read_bandwidth = required_bandwidth(*local, "read_bandwidth", "the node's drives' read bandwidth");
    local->finish();
    s.node_local = t;
  }
  if (auto pfs = r.object("parallel_fs")) {
    ParallelFs p;
    p.write_bandwidth = required_bandwidth(*pfs, "write_bandwidth", "the file system's aggregate write bandwidth");
    p.read_bandwidth = required_bandwidth(*pfs, "read_bandwidth", "the file system's aggregate read bandwidth");
    p.dedicated_network = pfs->choice("network", "compute", {"compute", "dedicated"}) == "dedicated";
    if (pfs->has("node_bandwidth")) {
      p.node_bandwidth = required_bandwidth(*pfs, "node_bandwidth", "one node's link to the file system");
    } else if (p.dedicated_network) {
      pfs->problem("node_bandwidth",
                   "missing: with \"network\": \"dedicated\" the node's storage NICs' bandwidth, e.g. \"50 GB/s\"");
    }
    pfs->finish();
    s.parallel_fs = p;
  }
  r.finish();
  return s;
}

ReliabilitySpec read_reliability(core::ObjectReader& r, int gpus_per_node) {
  ReliabilitySpec s;
  const bool has_mtbf = r.has("node_mtbf");
  // A node MTBF, given or derived from a rate, from MIN_NODE_MTBF_S to MAX_DURATION_S
  // (docs/hardening.md, "Rates, prices and probabilities"): beyond them the expected failures per
  // run are 0 or infinite and MTBF, goodput and time to train print as inf or 0%.
  const double max_rate = 3600.0 / (MIN_NODE_MTBF_S * gpus_per_node);
  const double min_rate = 3600.0 / (MAX_DURATION_S * gpus_per_node);
  if (const core::Json* v = r.raw("failures_per_gpu_hour")) {
    if (has_mtbf) {
      r.problem("failures_per_gpu_hour", "give either node_mtbf or failures_per_gpu_hour, not both");
    } else if (v->is_number() && v->get<double>() >= min_rate && v->get<double>() <= max_rate) {
      s.node_mtbf = core::Seconds(3600.0 / (v->get<double>() * gpus_per_node));
    } else {
      r.problem("failures_per_gpu_hour",
                fmt::format("expected a failure rate per GPU-hour from {:.3g} to {:.3g} (Llama 3 405B: 1.97e-5; the "
                            "bounds make a node MTBF of 100 years and of 1 min with {} GPUs per node), found {}",
                            min_rate, max_rate, gpus_per_node, core::describe_json(*v)));
    }
  }
  s.node_mtbf = long_duration(r, "node_mtbf", s.node_mtbf, true);
  if (has_mtbf && s.node_mtbf.value() < MIN_NODE_MTBF_S) {
    r.problem("node_mtbf", fmt::format("expected a node MTBF of at least 1 min (a node failing faster never "
                                       "finishes a restart), found {}",
                                       core::describe_json(*r.raw("node_mtbf"))));
    s.node_mtbf = ReliabilitySpec{}.node_mtbf;
  }
  s.restart = long_duration(r, "restart", s.restart, false);
  s.warmup = long_duration(r, "warmup", s.warmup, false);
  r.finish();
  return s;
}

core::Json to_json(const StorageSpec& s) {
  core::Json j = core::Json::object();
  if (s.node_local) {
    j["node_local"] = {{"write_bandwidth", core::format_bandwidth(s.node_local->write_bandwidth)},
                       {"read_bandwidth", core::format_bandwidth(s.node_local->read_bandwidth)}};
  }
  if (s.parallel_fs) {
    const ParallelFs& p = *s.parallel_fs;
    core::Json f = {{"write_bandwidth", core::format_bandwidth(p.write_bandwidth)},
                    {"read_bandwidth", core::format_bandwidth(p.read_bandwidth)},
                    {"network", p.dedicated_network ? "dedicated" : "compute"}};
    if (p.node_bandwidth) f["node_bandwidth"] = core::format_bandwidth(*p.node_bandwidth);
    j["parallel_fs"] = f;
  }
  return j;
}

core::Json to_json(const ReliabilitySpec& r) {
  return {{"node_mtbf", format_long_duration(r.node_mtbf)},
          {"restart", format_long_duration(r.restart)},
          {"warmup", format_long_duration(r.warmup)}};
}

}  // namespace trainsim::network

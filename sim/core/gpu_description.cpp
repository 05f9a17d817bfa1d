#include "sim/core/gpu_description.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace trainsim::core {
namespace {

constexpr int64_t MAX_SM_COUNT = 100000;

std::string catalog_list() {
  std::string out;
  for (const std::string& n : gpu_names()) out += fmt::format("{}\"{}\"", out.empty() ? "" : ", ", n);
  return out;
}

std::string unknown_gpu(const std::string& name, std::string_view expected) {
  const std::string hint = closest_match(name, gpu_names());
  return fmt::format("expected {}, found \"{}\"{}", expected, name,
                     hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint));
}

// A value that may be zero (an unsupported precision, no NVLink): the number 0 or a quantity string
// that parses to 0. nullopt otherwise (the caller reads it as a positive quantity).
template <class Q, class Parse>
std::optional<Q> zero_quantity(const Json& v, Parse parse) {
  if (v.is_number() && v.get<double>() == 0) return Q(0);
  Q q;
  if (v.is_string() && parse(v.get<std::string>(), q) && q.value() == 0) return Q(0);
  return std::nullopt;
}

// A quantity written so that it parses back to exactly `value` ("3.35 TB/s" where that is exact).
template <class Q, class Format, class Parse>
std::string exact(Q value, Format format, Parse parse, const char* base_unit) {
  const std::string readable = format(value);
  Q back;
  if (parse(readable, back) && back.value() == value.value()) return readable;
  return fmt::format("{:.17g} {}", value.value(), base_unit);
}

// Reads the object form. `described` figures start from the base's (or zeros without one).
class GpuObjectReader {
 public:
  explicit GpuObjectReader(ObjectReader& r) : r_(r) {}

  GpuChoice read() {
    GpuChoice c;
    c.described = true;
    if (r_.raw("base") != nullptr) {  // raw: "base" is a known key even when absent
      c.base = r_.string("base", "");
      if (const GpuSpec* base = find_gpu(c.base)) {
        c.spec = *base;
      } else {
        r_.problem("base", unknown_gpu(c.base, fmt::format("a GPU of the catalog ({})", catalog_list())));
      }
    }
    full_ = c.base.empty();
    read_name(c);
    read_peaks(c.spec);
    c.spec.hbm_capacity = required_bytes("hbm_capacity", "the GPU's memory, e.g. \"80 GiB\"", c.spec.hbm_capacity);
    c.spec.hbm_bandwidth = required_bandwidth("hbm_bandwidth", "its memory bandwidth, e.g. \"3.35 TB/s\"",
                                              c.spec.hbm_bandwidth, false);
    c.spec.nvlink_bandwidth = required_bandwidth(
        "nvlink_bandwidth", "its NVLink bandwidth per direction, e.g. \"450 GB/s\" (\"0 GB/s\": none)",
        c.spec.nvlink_bandwidth, true);
    c.spec.pcie_bandwidth = required_bandwidth("pcie_bandwidth", "its PCIe bandwidth per direction, e.g. \"63 GB/s\"",
                                               c.spec.pcie_bandwidth, false);
    if (!r_.has("sm_count") && full_) missing("sm_count", "its streaming multiprocessors, e.g. 132");
    c.spec.sm_count = static_cast<int>(r_.integer("sm_count", c.spec.sm_count, 1, MAX_SM_COUNT));
    if (r_.has("sm_count")) changed_.push_back(fmt::format("sm_count {}", c.spec.sm_count));
    c.spec.sparse_tensor_cores = r_.boolean("sparse_tensor_cores", c.spec.sparse_tensor_cores);
    if (r_.has("sparse_tensor_cores") && !full_) {
      changed_.push_back(fmt::format("sparse_tensor_cores {}", c.spec.sparse_tensor_cores));
    }
    c.spec.nvlink_sharp = r_.boolean("nvlink_sharp", c.spec.nvlink_sharp);
    if (r_.has("nvlink_sharp") && !full_) changed_.push_back(fmt::format("nvlink_sharp {}", c.spec.nvlink_sharp));
    read_label(c.spec);
    const std::string default_source =
        full_ ? "described in the scenario"
              : fmt::format("{}; changed in the scenario: {}", c.spec.source,
                            changed_.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(changed_, ", ")));
    c.spec.source = r_.string("source", default_source);
    r_.finish();
    return c;
  }

 private:
  void missing(std::string_view key, std::string_view what) {
    r_.problem(key, fmt::format("missing: {} (a GPU described without \"base\" gives every figure)", what));
  }

  void read_name(GpuChoice& c) {
    if (!r_.has("name")) {
      if (full_) {
        missing("name", "the GPU's name, e.g. \"X1-SXM-144GB\"");
      } else {
        c.spec.name = c.base + " (custom)";
      }
      return;
    }
    c.spec.name = r_.string("name", c.spec.name);
    if (c.spec.name.empty()) {
      r_.problem("name", "expected a non-empty name");
    } else if (find_gpu(c.spec.name) != nullptr) {
      r_.problem("name", fmt::format("\"{}\" is a catalog GPU: a described GPU takes another name ({})", c.spec.name,
                                     full_ ? fmt::format("or use \"gpu\": \"{}\"", c.spec.name)
                                           : "the catalog's figures stay under the catalog's name"));
    }
  }

  // A label only names the object in tables: it changes no figure (and is not part of the source).
  void read_label(GpuSpec& spec) {
    if (r_.raw("label") == nullptr) return;  // raw: a known key even when absent
    spec.label = r_.string("label", "");
    if (spec.label.empty() && r_.raw("label")->is_string()) r_.problem("label", "expected a non-empty short name for tables, e.g. \"H100 fast HBM\"");
  }

  void read_peaks(GpuSpec& spec) {
    std::optional<ObjectReader> peaks = r_.object("dense_peak");
    if (!peaks) {
      if (full_) missing("dense_peak", "the dense tensor-core rates by precision, e.g. {\"bf16\": \"989 TFLOP/s\"}");
      return;
    }
    const size_t before = peaks->diagnostics().size();
    for (int i = 0; i < PRECISION_COUNT; ++i) {
      const std::string precision(to_string(static_cast<Precision>(i)));
      const Json* v = peaks->raw(precision);
      if (v == nullptr) continue;
      FlopsPerSecond& rate = spec.dense_peak[static_cast<size_t>(i)];
      if (std::optional<FlopsPerSecond> zero = zero_quantity<FlopsPerSecond>(*v, parse_flops_rate)) {
        rate = *zero;
      } else {
        rate = peaks->flops_rate(precision, rate);
      }
      changed_.push_back(fmt::format("{} {}", precision, format_flops_rate(rate)));
    }
    peaks->finish();
    const bool any = std::any_of(spec.dense_peak.begin(), spec.dense_peak.end(),
                                 [](FlopsPerSecond f) { return f.value() > 0; });
    if (!any && peaks->diagnostics().size() == before) {
      r_.problem("dense_peak", "expected at least one positive rate (fp32, tf32, bf16, fp16, fp8), e.g. \"989 TFLOP/s\"");
    }
  }

  Bytes required_bytes(std::string_view key, std::string_view what, Bytes fallback) {
    if (!r_.has(key)) {
      if (full_) missing(key, what);
      return fallback;
    }
    const size_t before = r_.diagnostics().size();
    const Bytes b = r_.bytes(key, fallback);
    if (b.value() <= 0 && r_.diagnostics().size() == before) {
      r_.problem(key, fmt::format("must be positive, found {}", describe_json(*r_.raw(key))));
    }
    changed_.push_back(fmt::format("{} {}", key, format_bytes(b)));
    return b;
  }

  BytesPerSecond required_bandwidth(std::string_view key, std::string_view what, BytesPerSecond fallback,
                                    bool zero_allowed) {
    const Json* v = r_.raw(key);
    if (v == nullptr) {
      if (full_) missing(key, what);
      return fallback;
    }
    BytesPerSecond b = fallback;
    if (std::optional<BytesPerSecond> zero = zero_quantity<BytesPerSecond>(*v, parse_bandwidth)) {
      if (zero_allowed) {
        b = *zero;
      } else {
        r_.problem(key, fmt::format("must be positive, found {}", describe_json(*v)));
      }
    } else {
      b = r_.bandwidth(key, fallback);
    }
    changed_.push_back(fmt::format("{} {}", key, format_bandwidth(b)));
    return b;
  }

  ObjectReader& r_;
  bool full_ = true;
  std::vector<std::string> changed_;  // "hbm_bandwidth 6.7 TB/s", for the default source
};

}  // namespace

Json GpuChoice::to_json() const {
  if (!described) return spec.name;
  Json j = Json::object();
  if (!base.empty()) j["base"] = base;
  j["name"] = spec.name;
  Json peaks = Json::object();
  for (int i = 0; i < PRECISION_COUNT; ++i) {
    const FlopsPerSecond rate = spec.dense_peak[static_cast<size_t>(i)];
    peaks[std::string(to_string(static_cast<Precision>(i)))] =
        rate.value() == 0 ? std::string("0 TFLOP/s") : exact(rate, format_flops_rate, parse_flops_rate, "FLOP/s");
  }
  j["dense_peak"] = peaks;
  j["hbm_capacity"] = exact(spec.hbm_capacity, format_bytes, parse_bytes, "B");
  j["hbm_bandwidth"] = exact(spec.hbm_bandwidth, format_bandwidth, parse_bandwidth, "B/s");
  j["nvlink_bandwidth"] = spec.nvlink_bandwidth.value() == 0
                              ? std::string("0 GB/s")
                              : exact(spec.nvlink_bandwidth, format_bandwidth, parse_bandwidth, "B/s");
  j["pcie_bandwidth"] = exact(spec.pcie_bandwidth, format_bandwidth, parse_bandwidth, "B/s");
  j["sm_count"] = spec.sm_count;
  j["sparse_tensor_cores"] = spec.sparse_tensor_cores;
  j["nvlink_sharp"] = spec.nvlink_sharp;
  if (!spec.label.empty()) j["label"] = spec.label;
  j["source"] = spec.source;
  return j;
}

GpuChoice read_gpu(ObjectReader& r, std::string_view key, const std::string& fallback) {
  const GpuSpec* fallback_spec = find_gpu(fallback);
  TRAINSIM_CHECK(fallback_spec != nullptr, fmt::format("\"{}\" is a catalog GPU", fallback));
  GpuChoice standard{*fallback_spec, fallback_spec->name, false};
  const Json* v = r.raw(key);
  if (v == nullptr) return standard;
  const std::string expected = fmt::format("a GPU of the catalog ({}) or an object describing one", catalog_list());
  if (v->is_string()) {
    if (const GpuSpec* spec = find_gpu(v->get<std::string>())) return GpuChoice{*spec, spec->name, false};
    r.problem(key, unknown_gpu(v->get<std::string>(), expected));
    return standard;
  }
  if (!v->is_object()) {
    r.problem(key, fmt::format("expected {}, found {}", expected, describe_json(*v)));
    return standard;
  }
  const size_t before = r.diagnostics().size();
  ObjectReader object(*v, r.file(), r.pointer_of(key), r.diagnostics());
  GpuChoice described = GpuObjectReader(object).read();
  return r.diagnostics().size() == before ? described : standard;
}

}  // namespace trainsim::core

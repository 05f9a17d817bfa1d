#include "models/checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <vector>

#include "models/accounting.hpp"
#include "sim/core/error.hpp"

namespace trainsim::models {
namespace {

const std::vector<std::string>& mode_names() {
  static const std::vector<std::string> names = {"sync", "async", "multilevel"};
  return names;
}

const std::vector<std::string>& sharding_names() {
  static const std::vector<std::string> names = {"data-parallel", "model-parallel"};
  return names;
}

template <class E>
E from_name(const std::vector<std::string>& names, const std::string& name) {
  const auto it = std::find(names.begin(), names.end(), name);
  TRAINSIM_CHECK(it != names.end(), fmt::format("\"{}\" is not an allowed choice", name));
  return static_cast<E>(it - names.begin());
}

// The largest interval in steps accepted: 2^40, beyond any run's iteration count.
constexpr int64_t MAX_INTERVAL_STEPS = int64_t{1} << 40;

}  // namespace

std::string to_string(CheckpointMode m) { return mode_names()[static_cast<size_t>(m)]; }
std::string to_string(CheckpointSharding s) { return sharding_names()[static_cast<size_t>(s)]; }

CheckpointConfig CheckpointConfig::from_json(core::ObjectReader& r) {
  CheckpointConfig c;
  if (const core::Json* v = r.raw("interval")) {
    core::Seconds d;
    if (v->is_number_integer() && v->get<int64_t>() >= 1 && v->get<int64_t>() <= MAX_INTERVAL_STEPS) {
      c.interval = Interval::STEPS;
      c.steps = v->get<int64_t>();
    } else if (v->is_string() && v->get<std::string>() == "auto") {
      c.interval = Interval::AUTO;
    } else if (v->is_string() && core::parse_duration(v->get<std::string>(), d) && std::isfinite(d.value()) &&
               d.value() > 0) {
      c.interval = Interval::DURATION;
      c.duration = d;
    } else {
      r.problem("interval", fmt::format("expected a positive number of steps (an integer), a positive duration such "
                                        "as \"30 min\", or \"auto\" (Daly's optimum), found {}",
                                        core::describe_json(*v)));
    }
  }
  c.mode = from_name<CheckpointMode>(mode_names(), r.choice("mode", to_string(c.mode), mode_names()));
  c.sharding =
      from_name<CheckpointSharding>(sharding_names(), r.choice("sharding", to_string(c.sharding), sharding_names()));
  r.finish();
  return c;
}

core::Json CheckpointConfig::to_json() const {
  core::Json j;
  switch (interval) {
    case Interval::AUTO: j["interval"] = "auto"; break;
    case Interval::STEPS: j["interval"] = steps; break;
    case Interval::DURATION: j["interval"] = fmt::format("{:.10g} s", duration.value()); break;
  }
  j["mode"] = to_string(mode);
  j["sharding"] = to_string(sharding);
  return j;
}

CheckpointSize checkpoint_size(const ModelSpec& m, const TrainingConfig& t, const ParallelismConfig& p,
                               CheckpointSharding sharding, int gpus_per_node) {
  TRAINSIM_CHECK(gpus_per_node >= 1, "checkpoint_size: no GPU per node");
  CheckpointSize s;
  s.bytes_per_parameter = weight_bytes_per_parameter(t) + optimizer_bytes_per_parameter(t.precision);
  s.total = core::Bytes(static_cast<double>(m.parameter_count(t.sequence_length)) * s.bytes_per_parameter);
  const core::ParallelLayout layout(p.layout_sizes());
  const int world = layout.world_size();
  std::map<int, int> per_node;  // node -> writers on it
  for (int rank = 0; rank < world; ++rank) {
    if (sharding == CheckpointSharding::MODEL_PARALLEL && layout.coord(rank, core::Axis::DATA) != 0) continue;
    ++s.writers;
    ++per_node[rank / gpus_per_node];
  }
  s.per_writer = s.total / static_cast<double>(s.writers);
  s.writing_nodes = static_cast<int>(per_node.size());
  for (const auto& [node, count] : per_node) s.writers_per_node = std::max(s.writers_per_node, count);
  return s;
}

void add_checkpoint_traffic(core::Workload& w, CheckpointTraffic what, core::Bytes bytes) {
  TRAINSIM_CHECK(bytes.value() > 0, "add_checkpoint_traffic: no bytes");
  for (core::Program& prog : w.programs) {
    core::Task t;
    t.kind = core::TaskKind::COPY;
    t.phase = core::Phase::OPTIMIZER;
    t.bytes = bytes.value();
    t.name = w.intern(what == CheckpointTraffic::FLUSH ? "checkpoint flush"
                      : what == CheckpointTraffic::SNAPSHOT ? "checkpoint snapshot"
                                                            : "checkpoint write");
    if (what == CheckpointTraffic::FLUSH) {
      t.stream = core::Stream::STORAGE;
      t.copy = core::CopyDirection::HOST_TO_STORAGE;
      const uint32_t first = static_cast<uint32_t>(prog.tasks.size());
      prog.add(t);
      // Issued first: nothing of the iteration delays it.
      std::vector<uint32_t> order(prog.tasks.size());
      order[0] = first;
      std::iota(order.begin() + 1, order.end(), 0u);
      prog.reorder_tail(0, order);
      continue;
    }
    // After the last task of every stream, i.e. after the whole iteration of this rank.
    std::map<core::Stream, uint32_t> last;
    for (uint32_t i = 0; i < prog.tasks.size(); ++i) last[prog.tasks[i].stream] = i;
    std::vector<uint32_t> deps;
    for (const auto& [stream, index] : last) deps.push_back(index);
    t.stream = core::Stream::COPY_OUT;
    t.copy = what == CheckpointTraffic::SNAPSHOT ? core::CopyDirection::DEVICE_TO_HOST
                                                 : core::CopyDirection::DEVICE_TO_STORAGE;
    prog.add(t, deps);
  }
  w.validate();
}

}  // namespace trainsim::models

#include "sim/plan/stack_fit.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include <fmt/format.h>

#include "sim/engine/compute_model.hpp"
#include "sim/plan/prediction.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

using core::OpClass;

struct Group {
  const char* name;
  std::initializer_list<OpClass> classes;
};

const Group GROUPS[] = {
    {"gemm", {OpClass::GEMM}},
    {"attention", {OpClass::ATTENTION, OpClass::FLASH_ATTENTION}},
    {"elementwise", {OpClass::ELEMENTWISE}},
    {"norm", {OpClass::NORM}},
    {"embedding", {OpClass::EMBEDDING}},
    {"optimizer", {OpClass::OPTIMIZER}},
};

double sum_of(const std::array<double, core::OP_CLASS_COUNT>& by_class, const Group& g) {
  double s = 0;
  for (OpClass c : g.classes) s += by_class[static_cast<size_t>(c)];
  return s;
}

// Divides the efficiencies of the group's classes by `ratio`, keeping them <= 1; true when one was
// held at 1.
bool scale_group(core::DeviceProfile& d, const Group& g, double ratio) {
  bool clamped = false;
  for (OpClass c : g.classes) {
    core::OpEfficiency& e = d.op(c);
    for (double* v : {&e.max_efficiency, &e.memory_efficiency}) {
      const double scaled = *v / ratio;
      clamped = clamped || scaled > 1.0;
      *v = std::min(1.0, scaled);
    }
  }
  return clamped;
}

constexpr int MAX_ROUNDS = 40;
constexpr double TOLERANCE = 1e-6;

// Device seconds by class of rank 0's compute tasks in `w`, priced with `device`.
std::array<double, core::OP_CLASS_COUNT> class_seconds(const core::Workload& w, const core::GpuSpec& gpu,
                                                       const core::DeviceProfile& device) {
  const core::Program& program = w.programs[w.program_of_rank.at(0)];
  std::array<double, core::OP_CLASS_COUNT> out{};
  for (const core::Task& t : program.tasks) {
    if (t.kind != core::TaskKind::COMPUTE || t.stream == core::Stream::HOST) continue;
    out[static_cast<size_t>(t.op_class)] +=
        t.seconds > 0 ? t.seconds : engine::compute_time(t, w.precision, gpu, device).value();
  }
  return out;
}

}  // namespace

std::array<double, core::OP_CLASS_COUNT> workload_seconds(const Scenario& job) {
  return class_seconds(predict(job, "analytic").built.workload, job.cluster.gpu_spec, job.profile.device);
}

StackFit fit_stack(const Scenario& job, const calibrate::TracedWork& traced, double measured_s,
                   const std::string& run_name) {
  StackFit f;
  f.idle_s = traced.idle_s;
  f.measured_s = measured_s;
  Scenario s = job;
  s.profile.device.step_host_latency = core::Seconds(0);
  // The workload does not depend on the efficiencies fitted below: built once, priced each round.
  const Prediction kernel_fit = predict(s, "analytic");
  f.predicted_kernel_fit_s = kernel_fit.iteration_time_s();
  const core::Workload& workload = kernel_fit.built.workload;
  const core::GpuSpec& gpu = s.cluster.gpu_spec;
  const std::array<double, core::OP_CLASS_COUNT> before = class_seconds(workload, gpu, s.profile.device);
  std::vector<bool> clamped(std::size(GROUPS), false);
  for (const Group& g : GROUPS) {
    ClassGroupFit c;
    c.name = g.name;
    c.traced_s = sum_of(traced.seconds, g);
    c.workload_s = sum_of(before, g);
    c.fitted = c.traced_s > 0 && c.workload_s > 0;
    if (c.traced_s <= 0 && c.workload_s > 0) {
      c.note = "no kernel of this class named in the trace: the kernel fit stays";
    } else if (c.traced_s > 0 && c.workload_s <= 0) {
      c.note = fmt::format("{:.3f} ms traced per iteration that the workload has no task of", 1e3 * c.traced_s);
    }
    f.groups.push_back(c);
  }
  for (int round = 0; round < MAX_ROUNDS; ++round) {
    const std::array<double, core::OP_CLASS_COUNT> now = class_seconds(workload, gpu, s.profile.device);
    bool converged = true;
    for (size_t i = 0; i < std::size(GROUPS); ++i) {
      if (!f.groups[i].fitted) continue;
      const double ratio = f.groups[i].traced_s / sum_of(now, GROUPS[i]);
      if (std::abs(ratio - 1) <= TOLERANCE) continue;
      if (clamped[i] && ratio < 1) continue;  // already at the ceiling and still slower than traced
      converged = false;
      clamped[i] = scale_group(s.profile.device, GROUPS[i], ratio) || clamped[i];
    }
    if (converged) break;
  }
  const std::array<double, core::OP_CLASS_COUNT> after = class_seconds(workload, gpu, s.profile.device);
  for (size_t i = 0; i < std::size(GROUPS); ++i) {
    ClassGroupFit& c = f.groups[i];
    if (!c.fitted) continue;
    c.factor = sum_of(after, GROUPS[i]) / c.workload_s;
    if (clamped[i]) {
      c.note = fmt::format("traced faster than efficiency 1 allows: held at 1 ({:.3f} of {:.3f} ms)",
                           1e3 * sum_of(after, GROUPS[i]), 1e3 * c.traced_s);
    }
    s.profile.device.sources.emplace_back(
        fmt::format("stack_fit.{}", c.name),
        fmt::format("x{:.3f} of the kernel fit's time: {:.3f} ms traced per iteration against the workload's {:.3f} ms "
                    "(the traced run {})",
                    c.factor, 1e3 * c.traced_s, 1e3 * c.workload_s, run_name));
  }
  f.predicted_classes_s = predict(s, "analytic").iteration_time_s();
  f.step_host_latency_s = std::max(0.0, measured_s - f.predicted_classes_s);
  s.profile.device.step_host_latency = core::Seconds(f.step_host_latency_s);
  s.profile.device.sources.emplace_back(
      "step_host_latency",
      fmt::format("{:.3f} ms: the measured iteration {:.3f} ms less the fitted classes' {:.3f} ms (GPU idle traced: "
                  "{:.3f} ms per iteration; the traced run {})",
                  1e3 * f.step_host_latency_s, 1e3 * measured_s, 1e3 * f.predicted_classes_s, 1e3 * f.idle_s, run_name));
  f.predicted_s = predict(s, "analytic").iteration_time_s();
  f.device = s.profile.device;
  return f;
}

core::Json StackFit::to_json() const {
  core::Json groups_json = core::Json::array();
  for (const ClassGroupFit& g : groups) {
    groups_json.push_back({{"name", g.name},
                           {"traced_s", g.traced_s},
                           {"workload_s", g.workload_s},
                           {"factor", g.factor},
                           {"fitted", g.fitted},
                           {"note", g.note}});
  }
  return {{"groups", groups_json},
          {"idle_s", idle_s},
          {"measured_iteration_s", measured_s},
          {"predicted_kernel_fit_s", predicted_kernel_fit_s},
          {"predicted_classes_s", predicted_classes_s},
          {"step_host_latency_s", step_host_latency_s},
          {"predicted_iteration_s", predicted_s}};
}

std::string StackFit::text() const {
  std::string s = fmt::format(
      "stack fit (the traced job's work by class, traced against the workload with the kernel fit; ms per iteration):\n"
      "  {:<12} {:>9} {:>9} {:>8}\n",
      "class", "traced", "workload", "factor");
  for (const ClassGroupFit& g : groups) {
    s += fmt::format("  {:<12} {:>9.3f} {:>9.3f} {:>8}{}\n", g.name, 1e3 * g.traced_s, 1e3 * g.workload_s,
                     g.fitted ? fmt::format("x{:.3f}", g.factor) : std::string("-"),
                     g.note.empty() ? std::string() : fmt::format("  ({})", g.note));
  }
  s += fmt::format(
      "  step host latency {:.3f} ms (GPU idle traced {:.3f} ms); iteration: kernel fit {:.3f} ms, + classes {:.3f} ms, "
      "+ host {:.3f} ms, measured {:.3f} ms\n",
      1e3 * step_host_latency_s, 1e3 * idle_s, 1e3 * predicted_kernel_fit_s, 1e3 * predicted_classes_s, 1e3 * predicted_s,
      1e3 * measured_s);
  return s;
}

}  // namespace trainsim::plan

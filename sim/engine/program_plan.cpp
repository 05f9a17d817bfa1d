#include "sim/engine/program_plan.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/engine/compute_model.hpp"
#include "sim/engine/host_model.hpp"

namespace trainsim::engine {

ProgramPlan plan_program(const core::Program& program, const core::Workload& workload,
                         const network::ClusterConfig& cluster, const core::DeviceProfile& device) {
  const core::GpuSpec& gpu = cluster.gpu_spec;
  using core::TaskKind;
  const size_t n = program.tasks.size();
  TRAINSIM_CHECK(n < UINT32_MAX, fmt::format("{}: too many tasks", program.name));
  ProgramPlan plan;
  plan.stream_pos.resize(n);
  plan.seq.assign(n, 0);
  plan.port.assign(n, 0);
  plan.duration.assign(n, 0.0);
  plan.order.resize(n);

  std::array<uint32_t, core::STREAM_COUNT> count{};
  for (const core::Task& t : program.tasks) ++count[static_cast<size_t>(t.stream)];
  for (size_t s = 0; s < core::STREAM_COUNT; ++s) plan.stream_begin[s + 1] = plan.stream_begin[s] + count[s];

  std::array<uint32_t, core::STREAM_COUNT> filled{};
  std::vector<uint32_t> group_calls(workload.groups.size(), 0);
  std::vector<uint32_t> port_calls;
  for (uint32_t i = 0; i < n; ++i) {
    const core::Task& t = program.tasks[i];
    const size_t s = static_cast<size_t>(t.stream);
    plan.stream_pos[i] = filled[s];
    plan.order[plan.stream_begin[s] + filled[s]++] = i;
    switch (t.kind) {
      case TaskKind::COMPUTE:
        if (t.stream == core::Stream::HOST) {
          plan.duration[i] = host_compute_time(t, cluster).value();
        } else {
          plan.duration[i] = t.seconds > 0 ? t.seconds : compute_time(t, workload.precision, gpu, device).value();
        }
        break;
      case TaskKind::COPY:
        plan.duration[i] = t.seconds > 0 ? t.seconds : copy_time(core::Bytes(t.bytes), t.copy, cluster).value();
        break;
      case TaskKind::MEMORY:
        plan.memory_tasks.push_back(i);
        break;
      case TaskKind::COLLECTIVE:
        plan.seq[i] = group_calls[t.group]++;
        break;
      case TaskKind::SEND:
      case TaskKind::RECV: {
        const int size = workload.layout.size(t.peer_axis);
        const Port p{t.kind == TaskKind::SEND, t.peer_axis, ((t.peer_offset % size) + size) % size, t.tag};
        auto same = [&](const Port& q) {
          return q.send == p.send && q.axis == p.axis && q.offset == p.offset && q.tag == p.tag;
        };
        const auto it = std::find_if(plan.ports.begin(), plan.ports.end(), same);
        const size_t index = static_cast<size_t>(it - plan.ports.begin());
        if (it == plan.ports.end()) {
          TRAINSIM_CHECK(plan.ports.size() < UINT16_MAX, fmt::format("{}: too many peers", program.name));
          plan.ports.push_back(p);
          port_calls.push_back(0);
        }
        plan.port[i] = static_cast<uint16_t>(index);
        plan.seq[i] = port_calls[index]++;
        break;
      }
    }
  }
  for (size_t g = 0; g < group_calls.size(); ++g) {
    if (group_calls[g] > 0) plan.group_kinds.push_back(static_cast<uint16_t>(g));
  }
  return plan;
}

}  // namespace trainsim::engine

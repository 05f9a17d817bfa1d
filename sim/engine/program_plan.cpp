#include "sim/engine/program_plan.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/error.hpp"
#include "sim/engine/compute_model.hpp"
#include "sim/engine/host_model.hpp"

namespace trainsim::engine {
namespace {

constexpr size_t STREAMS = core::STREAM_COUNT;

// The executor's view of a ready pool: blocks by stream, queues, and the issue-order numbering of
// the group kinds that blocks of several queues call.
PoolPlan plan_pool(const core::Program& program, size_t group_count) {
  const core::ReadyPool& pool = program.pool;
  PoolPlan pp;
  pp.blocks = pool.blocks.size();
  std::vector<uint32_t> count(pp.blocks * STREAMS, 0);
  // Queues calling each group kind: bit q.
  std::vector<uint64_t> queues_of_group(group_count, 0);
  for (uint32_t i = pool.begin; i < pool.end; ++i) {
    const uint32_t b = pool.block(i);
    if (b == core::LOOSE_TASK) continue;
    const core::Task& t = program.tasks[i];
    ++count[b * STREAMS + static_cast<size_t>(t.stream)];
    TRAINSIM_CHECK(pool.blocks[b].queue < 64, fmt::format("{}: more than 64 queues in a ready pool", program.name));
    if (t.kind == core::TaskKind::COLLECTIVE) queues_of_group[t.group] |= uint64_t{1} << pool.blocks[b].queue;
  }
  pp.at.assign(pp.blocks * STREAMS + 1, 0);
  for (size_t k = 0; k < count.size(); ++k) pp.at[k + 1] = pp.at[k] + count[k];
  pp.tasks.resize(pp.at.back());
  std::vector<uint32_t> filled(pp.blocks * STREAMS, 0);
  for (uint32_t i = pool.begin; i < pool.end; ++i) {
    const uint32_t b = pool.block(i);
    if (b == core::LOOSE_TASK) continue;
    const size_t k = b * STREAMS + static_cast<size_t>(program.tasks[i].stream);
    pp.tasks[pp.at[k] + filled[k]++] = i;
  }
  pp.block_size.assign(pp.blocks, 0);
  pp.index_in_block.assign(pool.end - pool.begin, 0);
  for (uint32_t i = pool.begin; i < pool.end; ++i) {
    const uint32_t b = pool.block(i);
    if (b != core::LOOSE_TASK) pp.index_in_block[i - pool.begin] = pp.block_size[b]++;
  }
  for (uint32_t b = 0; b < pp.blocks; ++b) {
    const size_t q = pool.blocks[b].queue;
    if (pp.queues.size() <= q) pp.queues.resize(q + 1);
    pp.queues[q].push_back(b);
  }

  std::vector<uint32_t> shared_index(group_count, NO_INDEX);
  for (size_t g = 0; g < group_count; ++g) {
    if ((queues_of_group[g] & (queues_of_group[g] - 1)) == 0) continue;  // one queue or none
    shared_index[g] = static_cast<uint32_t>(pp.shared_groups.size());
    pp.shared_groups.push_back(static_cast<uint16_t>(g));
  }
  const size_t shared = pp.shared_groups.size();
  pp.calls.assign(pp.blocks * shared, 0);
  pp.calls_before.assign(shared, 0);
  pp.shared_of.assign(pool.end - pool.begin, NO_INDEX);
  pp.seq_in_block.assign(pool.end - pool.begin, 0);
  if (shared == 0) return pp;
  for (uint32_t i = 0; i < pool.begin; ++i) {
    const core::Task& t = program.tasks[i];
    if (t.kind == core::TaskKind::COLLECTIVE && shared_index[t.group] != NO_INDEX) ++pp.calls_before[shared_index[t.group]];
  }
  for (uint32_t i = pool.begin; i < pool.end; ++i) {
    const core::Task& t = program.tasks[i];
    const uint32_t b = pool.block(i);
    if (t.kind != core::TaskKind::COLLECTIVE || shared_index[t.group] == NO_INDEX) continue;
    TRAINSIM_CHECK(b != core::LOOSE_TASK,
                   fmt::format("{}: loose task {} calls a communicator that blocks of two queues call", program.name, i));
    const uint32_t k = shared_index[t.group];
    pp.shared_of[i - pool.begin] = k;
    pp.seq_in_block[i - pool.begin] = pp.calls[b * shared + k]++;
  }
  return pp;
}

}  // namespace

ProgramPlan plan_program(const core::Program& program, const core::Workload& workload,
                         const network::ClusterConfig& cluster, const core::DeviceProfile& device) {
  // A cluster of several GPU types prices each program on its own pool's GPU and profile.
  const core::GpuSpec& gpu = cluster.gpu_of_pool(program.node_pool);
  const core::DeviceProfile& pool_device =
      cluster.pools.empty() ? device : cluster.pools.at(program.node_pool).device;
  using core::TaskKind;
  const size_t n = program.tasks.size();
  TRAINSIM_CHECK(n < UINT32_MAX, fmt::format("{}: too many tasks", program.name));
  const core::ReadyPool& pool = program.pool;
  ProgramPlan plan;
  plan.lane.resize(n);
  plan.seq.assign(n, 0);
  plan.port.assign(n, 0);
  plan.duration.assign(n, 0.0);

  // Lanes: a task of a pool's block runs in the issue order (not in a lane's static order); a
  // loose one on its stream's second lane.
  std::array<uint32_t, LANE_COUNT> count{};
  for (uint32_t i = 0; i < n; ++i) {
    const size_t s = static_cast<size_t>(program.tasks[i].stream);
    const uint32_t b = pool.block(i);
    const bool in_pool = i >= pool.begin && i < pool.end && !pool.empty();
    if (in_pool && b != core::LOOSE_TASK) {
      ++plan.pool_tasks[s];
      plan.lane[i] = static_cast<uint8_t>(s);
      continue;
    }
    plan.lane[i] = static_cast<uint8_t>(in_pool ? STREAMS + s : s);
    if (!pool.empty() && i < pool.begin) ++plan.pool_at[s];
    ++count[plan.lane[i]];
  }
  for (size_t l = 0; l < LANE_COUNT; ++l) {
    plan.lane_begin[l + 1] = plan.lane_begin[l] + count[l];
    if (count[l] > 0 || (l < STREAMS && plan.pool_tasks[l] > 0)) plan.lanes.push_back(static_cast<uint8_t>(l));
  }
  plan.order.resize(plan.lane_begin[LANE_COUNT]);

  std::array<uint32_t, LANE_COUNT> filled{};
  std::vector<uint32_t> group_calls(workload.groups.size(), 0);
  std::vector<uint32_t> port_calls;
  for (uint32_t i = 0; i < n; ++i) {
    const core::Task& t = program.tasks[i];
    const bool in_block = !pool.empty() && pool.block(i) != core::LOOSE_TASK;
    if (!in_block) plan.order[plan.lane_begin[plan.lane[i]] + filled[plan.lane[i]]++] = i;
    switch (t.kind) {
      case TaskKind::COMPUTE:
        if (t.stream == core::Stream::HOST) {
          plan.duration[i] = host_compute_time(t, cluster).value();
        } else {
          plan.duration[i] = t.seconds > 0 ? t.seconds : compute_time(t, workload.precision, gpu, pool_device).value();
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
  if (!pool.empty()) plan.pool = plan_pool(program, workload.groups.size());
  return plan;
}

}  // namespace trainsim::engine

#include "sim/engine/gpu_emulation.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <tuple>

#include "sim/core/error.hpp"

namespace trainsim::engine {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Whether `order` runs every task after its stream predecessor and its dependencies.
bool respects_dependencies(const EmulationPlan& plan, const std::vector<uint32_t>& order) {
  std::vector<bool> issued(plan.tasks.size(), false);
  std::array<int64_t, core::STREAM_COUNT> last{};
  last.fill(-1);
  for (uint32_t i : order) {
    const EmulatedTask& e = plan.tasks[i];
    int64_t& prev = last[static_cast<size_t>(e.stream)];
    if (prev > static_cast<int64_t>(i)) return false;
    prev = i;
    for (uint32_t d : e.deps) {
      if (!issued[d]) return false;
    }
    issued[i] = true;
  }
  return true;
}

}  // namespace

CallSize collective_call_size(core::CollectiveOp op, uint64_t bytes, uint64_t ranks) {
  TRAINSIM_CHECK(ranks >= 1, "a collective has members");
  CallSize s;
  switch (op) {
    case core::CollectiveOp::ALL_REDUCE:
    case core::CollectiveOp::REDUCE:
    case core::CollectiveOp::BROADCAST:
      s.count = ceil_div(bytes, 4);
      s.send = s.recv = s.count;
      break;
    case core::CollectiveOp::ALL_GATHER:
      s.count = ceil_div(bytes, 4 * ranks);
      s.send = s.count;
      s.recv = s.count * ranks;
      break;
    case core::CollectiveOp::REDUCE_SCATTER:
      s.count = ceil_div(bytes, 4 * ranks);
      s.send = s.count * ranks;
      s.recv = s.count;
      break;
    case core::CollectiveOp::ALL_TO_ALL:
      s.count = ceil_div(bytes, 4 * ranks);
      s.send = s.recv = s.count * ranks;
      break;
  }
  return s;
}

CallSize p2p_call_size(uint64_t bytes) { return {bytes, bytes, bytes}; }

SpinCalibration fit_spin(const std::vector<TimedSpin>& samples) {
  // Least squares of seconds = a + b cycles; rate = 1 / b.
  const double n = static_cast<double>(samples.size());
  double sx = 0, sy = 0;
  for (const TimedSpin& t : samples) {
    sx += static_cast<double>(t.cycles);
    sy += t.seconds;
  }
  double sxx = 0, sxy = 0;
  for (const TimedSpin& t : samples) {
    const double dx = static_cast<double>(t.cycles) - sx / n;
    sxx += dx * dx;
    sxy += dx * (t.seconds - sy / n);
  }
  if (samples.size() < 2 || !(sxx > 0)) {
    throw core::InputError("--device gpu", "",
                           "the spin kernel's calibration needs timed spins of at least two lengths");
  }
  const double slope = sxy / sxx;
  if (!(slope > 0) || !std::isfinite(slope)) {
    throw core::InputError("--device gpu", "",
                           fmt::format("the spin kernel's calibration found no clock: its time does not grow with "
                                       "its cycles (slope {:g} s per cycle)",
                                       slope));
  }
  SpinCalibration c;
  c.cycles_per_second = 1 / slope;
  c.overhead_s = std::max(0.0, sy / n - slope * sx / n);
  return c;
}

uint64_t spin_cycles(const SpinCalibration& c, double seconds) {
  const double spin = seconds - c.overhead_s;
  if (!(spin > 0)) return 0;
  return static_cast<uint64_t>(std::llround(spin * c.cycles_per_second));
}

GpuEmulationPlan plan_gpu_emulation(const EmulationPlan& plan, const std::vector<double>& predicted_start) {
  TRAINSIM_CHECK(predicted_start.size() == plan.tasks.size(), "one predicted start per task");
  GpuEmulationPlan g;
  std::array<int, core::STREAM_COUNT> slot{};
  slot.fill(-1);
  slot[static_cast<size_t>(core::Stream::COMPUTE)] = 0;  // always one stream, to time the calibration on
  for (const EmulatedTask& e : plan.tasks) slot[static_cast<size_t>(e.stream)] = 0;
  for (int s = 0; s < core::STREAM_COUNT; ++s) {
    if (slot[static_cast<size_t>(s)] < 0) continue;
    slot[static_cast<size_t>(s)] = static_cast<int>(g.streams.size());
    g.streams.push_back(static_cast<core::Stream>(s));
  }
  g.send_bytes.assign(g.streams.size(), 0);
  g.recv_bytes.assign(g.streams.size(), 0);

  // Communicators: groups the rank runs calls on, then channels in their global order.
  std::vector<int> comm_of_group(plan.groups.size(), -1);
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const EmulatedGroup& group = plan.groups[i];
    if (group.color < 0) continue;
    comm_of_group[i] = static_cast<int>(g.comms.size());
    g.comms.push_back({group.ranks, group.key, static_cast<int>(i), 0});
  }
  std::vector<uint32_t> channels(plan.channels.size());
  std::iota(channels.begin(), channels.end(), 0u);
  auto key = [&](uint32_t c) {
    const EmulatedChannel& ch = plan.channels[c];
    return ch.send ? std::make_tuple(plan.rank, ch.peer, ch.tag) : std::make_tuple(ch.peer, plan.rank, ch.tag);
  };
  std::sort(channels.begin(), channels.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  std::vector<int> comm_of_channel(plan.channels.size(), -1);
  for (uint32_t c : channels) {
    const auto [sender, receiver, tag] = key(c);
    comm_of_channel[c] = static_cast<int>(g.comms.size());
    g.comms.push_back({{sender, receiver}, plan.channels[c].send ? 0 : 1, -1, tag});
  }

  // Issue order: predicted start, then communicator, then program order.
  std::vector<uint32_t> order;
  std::vector<int> comm_of_task(plan.tasks.size(), -1);
  for (uint32_t i = 0; i < plan.tasks.size(); ++i) {
    const EmulatedTask& e = plan.tasks[i];
    if (!e.modelled && e.kind == EmulatedKind::COLLECTIVE) comm_of_task[i] = comm_of_group[static_cast<size_t>(e.group)];
    if (!e.modelled && (e.kind == EmulatedKind::SEND || e.kind == EmulatedKind::RECV)) {
      comm_of_task[i] = comm_of_channel[e.channel];
    }
    order.push_back(i);
  }
  // A global key for a communicator, equal on all its members: its lowest rank, then its kind.
  auto comm_key = [&](uint32_t i) {
    const int c = comm_of_task[i];
    if (c < 0) return std::make_tuple(-1, -1, -1, -1);
    const GpuComm& comm = g.comms[static_cast<size_t>(c)];
    return std::make_tuple(comm.ranks.front(), comm.group, comm.ranks.back(), comm.tag);
  };
  std::vector<uint32_t> predicted = order;
  std::stable_sort(predicted.begin(), predicted.end(), [&](uint32_t a, uint32_t b) {
    if (predicted_start[a] != predicted_start[b]) return predicted_start[a] < predicted_start[b];
    return comm_key(a) < comm_key(b);
  });
  g.predicted_order = respects_dependencies(plan, predicted);
  if (g.predicted_order) order = std::move(predicted);

  for (uint32_t i : order) {
    const EmulatedTask& e = plan.tasks[i];
    GpuOp op;
    op.task = i;
    op.stream = static_cast<uint32_t>(slot[static_cast<size_t>(e.stream)]);
    for (uint32_t d : e.deps) {
      if (plan.tasks[d].stream != e.stream) op.waits.push_back(d);
    }
    op.not_before = e.not_before;
    op.seconds = e.seconds;
    op.op = e.op;
    if (e.kind == EmulatedKind::NOOP) {
      op.kind = GpuOpKind::NONE;
    } else if (e.kind == EmulatedKind::WAIT) {
      op.kind = GpuOpKind::SPIN;
    } else if (e.modelled) {
      op.kind = GpuOpKind::DELAY;
    } else {
      op.comm = comm_of_task[i];
      const GpuComm& comm = g.comms[static_cast<size_t>(op.comm)];
      if (e.kind == EmulatedKind::COLLECTIVE) {
        op.kind = GpuOpKind::COLLECTIVE;
        op.size = collective_call_size(e.op, e.bytes, comm.ranks.size());
      } else {
        op.kind = e.kind == EmulatedKind::SEND ? GpuOpKind::SEND : GpuOpKind::RECV;
        op.peer = 1 - comm.index;
        op.size = p2p_call_size(e.bytes);
      }
      const uint64_t unit = e.kind == EmulatedKind::COLLECTIVE ? 4 : 1;
      g.send_bytes[op.stream] = std::max(g.send_bytes[op.stream], op.size.send * unit);
      g.recv_bytes[op.stream] = std::max(g.recv_bytes[op.stream], op.size.recv * unit);
    }
    g.ops.push_back(std::move(op));
  }
  return g;
}

}  // namespace trainsim::engine

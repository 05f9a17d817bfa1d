// engine_benchmark [micro_batches] [--no-symmetry]: times the analytic backend on a synthetic
// GPT-like job (tp=8, dp=16, pp=8 on 128 nodes of 8 GPUs; 12 layers per stage; 1F1B; per layer and
// micro-batch two GEMMs each followed by a tensor-parallel all_reduce, forward and backward; a
// data-parallel gradient all_reduce per layer overlapped with the last backward) and prints the
// number of task executions, the wall time of Backend::run and executions per second.

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <string>

#include "sim/engine/backend.hpp"
#include "tests/engine/fixtures.hpp"

namespace {

using namespace trainsim;
using core::Axis;
using core::Phase;
using core::Stream;
using core::TaskKind;
using engine::testing::collective;
using engine::testing::compute;
using engine::testing::p2p;

constexpr int TP = 8, DP = 16, PP = 8, LAYERS = 12;
constexpr double ACTIVATION = 2048 * 12288 * 2;

void add_pass(core::Program& prog, int stage, int mb, bool forward, std::vector<uint32_t>& last_backward) {
  const bool receives = forward ? stage > 0 : stage < PP - 1;
  const bool sends = forward ? stage < PP - 1 : stage > 0;
  const Stream stream = forward ? Stream::PIPELINE_FORWARD : Stream::PIPELINE_BACKWARD;
  const int toward = forward ? 1 : -1;
  std::vector<uint32_t> deps;
  if (receives) deps.push_back(prog.add(p2p(TaskKind::RECV, Axis::PIPELINE, -toward, ACTIVATION, stream)));
  for (int layer = 0; layer < LAYERS; ++layer) {
    for (int gemm = 0; gemm < 2; ++gemm) {
      core::Task c = compute(forward ? 1e-3 : 2e-3, forward ? Phase::FORWARD : Phase::BACKWARD);
      c.layer = static_cast<uint16_t>(layer);
      c.micro_batch = static_cast<uint32_t>(mb);
      const uint32_t ci = prog.add(c, deps);
      deps = {prog.add(collective(core::CollectiveOp::ALL_REDUCE, 0, ACTIVATION, Stream::TENSOR_COMM), {ci})};
      if (!forward && gemm == 1) last_backward[static_cast<size_t>(layer)] = ci;
    }
  }
  if (sends) prog.add(p2p(TaskKind::SEND, Axis::PIPELINE, toward, ACTIVATION, stream), deps);
}

core::Workload synthetic_job(int m) {
  core::Workload w;
  w.layout = core::ParallelLayout({TP, 1, 1, DP, PP});
  w.groups = {{"tensor", Axis::TENSOR, {}, {}}, {"data", Axis::DATA, {}, {}}};
  for (int s = 0; s < PP; ++s) {
    core::Program prog;
    prog.name = fmt::format("stage {}", s);
    std::vector<uint32_t> last_backward(LAYERS, 0);
    const int warmup = std::min(PP - s - 1, m);
    int f = 0;
    int b = 0;
    for (; f < warmup; ++f) add_pass(prog, s, f, true, last_backward);
    while (f < m) {
      add_pass(prog, s, f++, true, last_backward);
      add_pass(prog, s, b++, false, last_backward);
    }
    while (b < m) add_pass(prog, s, b++, false, last_backward);
    for (int layer = LAYERS; layer-- > 0;) {
      prog.add(collective(core::CollectiveOp::ALL_REDUCE, 1, 4e8, Stream::DATA_COMM),
               {last_backward[static_cast<size_t>(layer)]});
    }
    w.programs.push_back(std::move(prog));
  }
  for (int r = 0; r < w.layout.world_size(); ++r) {
    w.program_of_rank.push_back(static_cast<uint32_t>(w.layout.coord(r, Axis::PIPELINE)));
  }
  w.symmetric_axes[static_cast<size_t>(Axis::TENSOR)] = true;
  w.symmetric_axes[static_cast<size_t>(Axis::DATA)] = true;
  w.validate();
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 1300;
  engine::SimulationOptions options;
  options.use_symmetry = !(argc > 2 && std::string(argv[2]) == "--no-symmetry");
  const core::Workload w = synthetic_job(m);
  const auto backend = engine::make_analytic_backend();
  const auto start = std::chrono::steady_clock::now();
  const engine::SimulationResult r =
      backend->run(w, engine::testing::make_cluster(128, 8, 300e9, 25e9, 2e-6), core::Profile{}, options);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("micro_batches {}  simulated_ranks {}  events {}  wall_s {:.3f}  events_per_s {:.3g}  iteration_s {:.4f}\n",
             m, r.simulated_ranks, r.events, wall, static_cast<double>(r.events) / wall, r.iteration_time.value());
  return 0;
}

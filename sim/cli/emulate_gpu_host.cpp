#include "sim/cli/emulate_gpu_host.hpp"

#include <chrono>
#include <dlfcn.h>
#include <filesystem>
#include <fmt/format.h>
#include <string>

#include "sim/cli/emulate_gpu.hpp"
#include "sim/core/error.hpp"

namespace trainsim::cli {
namespace {

uint64_t realtime_now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

core::InputError gpu_error(const std::string& message) { return core::InputError("--device gpu", "", message); }

#ifdef TRAINSIM_HAVE_GPU_MODULE
// The module's file: next to the executable (the build tree and an install keep them together).
std::string module_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return GPU_MODULE_FILE;
  return (exe.parent_path() / GPU_MODULE_FILE).string();
}
#endif

// The MPI side of the module's needs.
class MpiGpuHost final : public GpuHost {
 public:
  MpiGpuHost(const engine::EmulationSubset& subset, const engine::GpuEmulationPlan& gpu) : subset_(subset), gpu_(gpu) {}

  void set_communicators(const std::vector<MPI_Comm>* comms, MPI_Comm world) {
    comms_ = comms;
    world_ = world;
  }
  uint64_t barrier_ns() const { return barrier_ns_; }

  std::vector<uint64_t> calibrate(const std::vector<engine::TimedSpin>& samples) override {
    const engine::SpinCalibration c = engine::fit_spin(samples);
    std::vector<uint64_t> cycles;
    cycles.reserve(gpu_.ops.size());
    for (const engine::GpuOp& op : gpu_.ops) {
      const bool spins = op.kind == engine::GpuOpKind::SPIN || op.kind == engine::GpuOpKind::DELAY;
      cycles.push_back(spins ? engine::spin_cycles(c, op.seconds) : 0);
    }
    return cycles;
  }

  void share_id(size_t comm, void* id, size_t bytes) override {
    const engine::GpuComm& c = gpu_.comms[comm];
    const int n = static_cast<int>(bytes);
    if (c.group >= 0) {
      MPI_Bcast(id, n, MPI_BYTE, 0, (*comms_)[static_cast<size_t>(c.group)]);
    } else if (c.index == 0) {
      MPI_Send(id, n, MPI_BYTE, subset_.mpi_rank_of(c.ranks[1]), c.tag, world_);
    } else {
      MPI_Recv(id, n, MPI_BYTE, subset_.mpi_rank_of(c.ranks[0]), c.tag, world_, MPI_STATUS_IGNORE);
    }
  }

  void barrier() override {
    MPI_Barrier(MPI_COMM_WORLD);
    barrier_ns_ = realtime_now_ns();
  }

 private:
  const engine::EmulationSubset& subset_;
  const engine::GpuEmulationPlan& gpu_;
  const std::vector<MPI_Comm>* comms_ = nullptr;
  MPI_Comm world_ = MPI_COMM_NULL;
  uint64_t barrier_ns_ = 0;
};

}  // namespace

struct GpuEmulation::Impl {
  void* module = nullptr;
  void (*open)(GpuRun*) = nullptr;
  void (*run)(GpuRun*) = nullptr;
  void (*close)(GpuRun*) = nullptr;
  engine::GpuEmulationPlan plan;
  std::unique_ptr<MpiGpuHost> host;
  GpuRun state;
};

GpuEmulation::GpuEmulation() : impl_(std::make_unique<Impl>()) {}

GpuEmulation::~GpuEmulation() {
  if (impl_->close != nullptr && impl_->state.state != nullptr) impl_->close(&impl_->state);
  if (impl_->module != nullptr) dlclose(impl_->module);
}

void GpuEmulation::open(const EmulateArgs& args, const engine::EmulationPlan& plan,
                        const engine::EmulationSubset& subset, const engine::PredictedTimes& predicted, int local_rank) {
#ifndef TRAINSIM_HAVE_GPU_MODULE
  (void)args;
  (void)plan;
  (void)subset;
  (void)predicted;
  (void)local_rank;
  throw gpu_error(fmt::format("trainsim was built without the GPU emulator ({}): it needs the CUDA toolkit with nvcc "
                              "and NCCL when cmake configures (TRAINSIM_EMULATE_GPU, sim/cli/CMakeLists.txt); use "
                              "--device cpu",
                              GPU_MODULE_FILE));
#else
  Impl& m = *impl_;
  const std::string path = module_path();
  m.module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m.module == nullptr) {
    throw gpu_error(fmt::format("cannot load the GPU emulator {}: {}", path, dlerror()));
  }
  auto abi = reinterpret_cast<int (*)()>(dlsym(m.module, "trainsim_emulate_gpu_abi"));
  m.open = reinterpret_cast<void (*)(GpuRun*)>(dlsym(m.module, "trainsim_emulate_gpu_open"));
  m.run = reinterpret_cast<void (*)(GpuRun*)>(dlsym(m.module, "trainsim_emulate_gpu_run"));
  m.close = reinterpret_cast<void (*)(GpuRun*)>(dlsym(m.module, "trainsim_emulate_gpu_close"));
  if (abi == nullptr || m.open == nullptr || m.run == nullptr || m.close == nullptr || abi() != GPU_MODULE_ABI) {
    throw gpu_error(fmt::format("{} is not this trainsim's GPU emulator (another build?)", path));
  }
  std::vector<double> starts(plan.tasks.size());
  for (size_t i = 0; i < plan.tasks.size(); ++i) starts[i] = predicted.start(plan.rank, plan.tasks[i].task);
  m.plan = engine::plan_gpu_emulation(plan, starts);
  m.host = std::make_unique<MpiGpuHost>(subset, m.plan);
  m.state.plan = &m.plan;
  m.state.tasks = plan.tasks.size();
  m.state.iterations = args.iterations;
  m.state.local_rank = local_rank;
  m.state.rank = plan.rank;
  m.state.host = m.host.get();
  m.open(&m.state);
  if (m.state.code != 0) throw gpu_error(m.state.error);
#endif
}

double GpuEmulation::run(const std::vector<MPI_Comm>& comms, MPI_Comm world, std::vector<EmulatedSpan>& spans) {
  Impl& m = *impl_;
  TRAINSIM_CHECK(m.run != nullptr, "GpuEmulation::open succeeded first");
  m.host->set_communicators(&comms, world);
  m.run(&m.state);
  if (m.state.code != 0) throw gpu_error(m.state.error);
  const uint64_t base = m.host->barrier_ns();
  spans.assign(m.state.tasks, EmulatedSpan{});
  for (size_t i = 0; i < m.state.tasks; ++i) {
    spans[i] = {base + m.state.start_ns[i], base + m.state.end_ns[i]};
  }
  return m.state.iteration_s;
}

}  // namespace trainsim::cli

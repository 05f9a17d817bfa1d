#include "tests/calibrate/synthetic_trace.hpp"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "sim/core/workload.hpp"

namespace trainsim::calibrate::testing {
namespace {

constexpr int RANKS = 16;
constexpr int PER_NODE = 8;

uint64_t ns(double seconds) { return static_cast<uint64_t>(std::llround(seconds * 1e9)); }

struct RankWriter {
  core::TraceFile& file;
  uint64_t now = 0;       // ns
  uint32_t next_id = 1;

  trace::Record& add() {
    file.records.emplace_back();
    return file.records.back();
  }
  // A kernel of `seconds` on `stream` starting at `now` + gap; returns its correlation id.
  uint32_t kernel(const std::string& name, double seconds, double gap, uint32_t stream = 7) {
    const uint32_t id = next_id++;
    trace::Kernel* k = add().mutable_kernel();
    k->set_name(name);
    k->set_stream_id(stream);
    k->set_correlation_id(id);
    k->set_start_ns(now + ns(gap));
    k->set_end_ns(now + ns(gap) + ns(seconds));
    now = k->end_ns();
    return id;
  }
};

double ring_time(core::CollectiveOp op, int n, double bytes, double bandwidth, double alpha) {
  const double steps = (op == core::CollectiveOp::ALL_REDUCE ? 2.0 : 1.0) * (n - 1);
  return core::bus_bandwidth_factor(op, n) * bytes / bandwidth + steps * alpha;
}

trace::CollectiveOp traced_op(core::CollectiveOp op) {
  switch (op) {
    case core::CollectiveOp::ALL_GATHER: return trace::COLLECTIVE_OP_ALL_GATHER;
    case core::CollectiveOp::REDUCE_SCATTER: return trace::COLLECTIVE_OP_REDUCE_SCATTER;
    default: return trace::COLLECTIVE_OP_ALL_REDUCE;
  }
}

// One collective on stream `stream` from `start`; returns its end (ns).
uint64_t collective(RankWriter& w, core::CollectiveOp op, const std::vector<int>& group, double bytes, double seconds,
                    uint64_t start, uint64_t stream) {
  trace::Collective* c = w.add().mutable_collective();
  c->set_op(traced_op(op));
  c->set_bytes(static_cast<uint64_t>(bytes));
  c->set_comm_size(static_cast<int>(group.size()));
  for (int r : group) c->add_group_ranks(r);
  c->set_stream(stream);
  c->set_start_ns(start);
  c->set_end_ns(start + ns(seconds));
  c->set_timing(trace::TIMING_GPU_KERNEL);
  c->set_source(trace::SOURCE_KINETO);
  return c->end_ns();
}

void iteration(RankWriter& w, int rank, int64_t number, const SyntheticParameters& p) {
  const uint64_t begin = w.now;
  // GEMM sweep: F from 2*256^3 (~34 MFLOP, far below half) to 2*8192*8192*4096 (~550 GFLOP).
  const uint64_t dims[][3] = {{256, 256, 256},   {512, 512, 512},   {1024, 512, 1024},  {1024, 1024, 1024},
                              {2048, 1024, 2048}, {2048, 2048, 2048}, {4096, 2048, 1024}, {4096, 4096, 2048},
                              {8192, 2048, 4096}, {8192, 4096, 4096}, {8192, 8192, 2048}, {8192, 8192, 4096}};
  for (int i = 0; i < p.gemm_shapes; ++i) {
    const auto& d = dims[i % 12];
    const double flops = 2.0 * static_cast<double>(d[0] * d[1] * d[2]);
    const double eff = p.gemm_max_efficiency * flops / (flops + p.gemm_half_flops);
    const double noise = p.gemm_noise * (i % 2 == 0 ? 1.0 : -1.0);
    const double t = flops / (PEAK_BF16 * eff) + p.kernel_overhead_s;
    const uint32_t id = w.kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn", t * (1 + noise),
                                 p.gap_s);
    const uint64_t external = 1000000u + w.next_id;
    trace::Gemm* g = w.add().mutable_gemm();
    g->set_m(d[0]);
    g->set_n(d[1]);
    g->set_k(d[2]);
    g->set_a_type(trace::DATA_TYPE_BFLOAT16);
    g->set_b_type(trace::DATA_TYPE_BFLOAT16);
    g->set_c_type(trace::DATA_TYPE_BFLOAT16);
    g->set_batch_count(1);
    g->set_correlation_id(external);
    trace::ExternalCorrelation* x = w.add().mutable_external_correlation();
    x->set_external_id(external);
    x->set_correlation_id(id);
  }
  for (double mib : {1.0, 8.0, 64.0, 256.0}) {
    const double bytes = mib * 1024 * 1024;
    trace::Memcpy* m = w.add().mutable_memcpy();
    m->set_kind(trace::MEMCPY_KIND_DTOD);
    m->set_bytes(static_cast<uint64_t>(bytes));
    m->set_stream_id(7);
    m->set_start_ns(w.now + ns(p.gap_s));
    m->set_end_ns(m->start_ns() + ns(2 * bytes / (HBM * p.memory_efficiency)));
    trace::Memset* s = w.add().mutable_memset();
    s->set_bytes(static_cast<uint64_t>(bytes));
    s->set_stream_id(7);
    s->set_start_ns(m->end_ns() + ns(p.gap_s));
    s->set_end_ns(s->start_ns() + ns(bytes / (HBM * p.memory_efficiency)));
    w.now = s->end_ns();
  }

  // Collectives: intra-node on the node's ranks, then inter-node with the peer on the other node.
  std::vector<int> node;
  for (int r = 0; r < PER_NODE; ++r) node.push_back(rank / PER_NODE * PER_NODE + r);
  const std::vector<int> pair = {rank % PER_NODE, rank % PER_NODE + PER_NODE};
  const double a_intra = INTRA_HOP_S + p.intra_step_latency_s;
  const double a_inter = INTER_HOP_S + p.inter_step_latency_s;
  const double b_intra = NVLINK * p.intra_bandwidth_efficiency;
  const double b_inter = NIC_PER_GPU * p.inter_bandwidth_efficiency;
  uint64_t t = w.now + ns(p.gap_s);
  const uint64_t first = t;
  for (core::CollectiveOp op : {core::CollectiveOp::ALL_REDUCE, core::CollectiveOp::ALL_GATHER, core::CollectiveOp::REDUCE_SCATTER}) {
    for (double mib : {0.25, 4.0, 32.0, 128.0}) {
      const double bytes = mib * 1024 * 1024;
      t = collective(w, op, node, bytes, ring_time(op, PER_NODE, bytes, b_intra, a_intra), t, 20);
    }
  }
  for (double mib : {0.5, 8.0, 64.0, 256.0}) {
    const double bytes = mib * 1024 * 1024;
    t = collective(w, core::CollectiveOp::ALL_REDUCE, pair, bytes, ring_time(core::CollectiveOp::ALL_REDUCE, 2, bytes, b_inter, a_inter), t, 21);
  }
  // A kernel that overlaps the collectives (launched while the first one runs), and one that waits.
  w.now = first + ns(3e-6);
  w.kernel("vectorized_elementwise_kernel", 50e-6, 0);
  w.now = t;
  w.kernel("vectorized_elementwise_kernel", 20e-6, p.gap_s);
  trace::Marker* m = w.add().mutable_marker();
  m->set_name(fmt::format("ProfilerStep#{}", number));
  m->set_domain("user_annotation");
  m->set_iteration(number);
  m->set_start_ns(begin);
  m->set_end_ns(w.now);
}

}  // namespace

SyntheticRun make_synthetic_run(const SyntheticParameters& p) {
  SyntheticRun run;
  for (int rank = 0; rank < RANKS; ++rank) {
    core::TraceFile f;
    f.path = fmt::format("synthetic/rank{:02}.trace", rank);
    f.header.set_magic(core::TRACE_MAGIC);
    f.header.set_format_version(core::TRACE_FORMAT_VERSION);
    f.header.set_producer(trace::PRODUCER_UNKNOWN);
    f.header.set_world_size(RANKS);
    f.header.set_rank(rank);
    f.header.set_local_rank(rank % PER_NODE);
    f.header.set_hostname(fmt::format("node{}", rank / PER_NODE));
    f.header.add_devices()->set_name("NVIDIA A100-SXM4-80GB");
    RankWriter w{f, 1000000};
    for (int64_t i = 0; i < 3; ++i) {
      const uint64_t begin = w.now;
      iteration(w, rank, i, p);
      run.iteration_s = static_cast<double>(w.now - begin) * 1e-9;
      w.now += 100000;  // 100 us between iterations
    }
    run.ranks.push_back(std::move(f));
  }
  return run;
}

std::vector<std::string> write_synthetic_run(const SyntheticRun& run, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (const core::TraceFile& f : run.ranks) {
    const std::string path = (std::filesystem::path(dir) / std::filesystem::path(f.path).filename()).string();
    core::TraceWriter w(path, f.header);
    for (const trace::Record& r : f.records) w.append(r);
    w.flush();
    paths.push_back(path);
  }
  return paths;
}

}  // namespace trainsim::calibrate::testing

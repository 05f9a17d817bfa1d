// Chakra execution traces into the Workload IR (calibrate/chakra_workload.hpp): the hand-made fixture
// (tests/data/chakra/make_handmade.py, encoded from the public field numbers without protobuf), a
// replay whose time is known by hand, and every bad input the import refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

#include "calibrate/chakra_workload.hpp"
#include "network/cluster.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/backend.hpp"

namespace trainsim::calibrate {
namespace {

namespace chakra = core::chakra;
namespace fs = std::filesystem;

const std::string DATA = std::string(TRAINSIM_SOURCE_DIR) + "/tests/data/chakra/";

// A folder of its own per test (tests of several engineers run in parallel under /tmp).
class ChakraFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("trainsim-chakra-{}-{}", ::getpid(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(int rank, const std::vector<chakra::Node>& nodes, const chakra::GlobalMetadata& m = {}) {
    const std::string path = (dir_ / fmt::format("job.{}.et", rank)).string();
    core::ChakraWriter w(path, m);
    for (const chakra::Node& n : nodes) w.append(n);
    w.close();
    return path;
  }
  std::string prefix() const { return (dir_ / "job").string(); }

  // The message of the InputError that importing the folder throws ("" if none).
  std::string import_error() {
    try {
      build_chakra_workload(load_chakra_traces(prefix()), {});
    } catch (const core::InputError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

chakra::Node comp(uint64_t id, uint64_t micros, std::vector<uint64_t> deps = {}, bool cpu = false) {
  chakra::Node n;
  n.set_id(id);
  n.set_name(fmt::format("kernel {}", id));
  n.set_type(chakra::COMP_NODE);
  n.set_duration_micros(micros);
  for (uint64_t d : deps) n.add_data_deps(d);
  *n.add_attr() = core::bool_attr("is_cpu_op", cpu);
  return n;
}

chakra::Node coll(uint64_t id, int64_t type, std::vector<uint64_t> deps = {}, const std::string& pg = "") {
  chakra::Node n;
  n.set_id(id);
  n.set_name("collective");
  n.set_type(chakra::COMM_COLL_NODE);
  for (uint64_t d : deps) n.add_data_deps(d);
  *n.add_attr() = core::int64_attr("comm_type", type);
  *n.add_attr() = core::int64_attr("comm_size", 1024);
  if (!pg.empty()) *n.add_attr() = core::string_attr("pg_name", pg);
  return n;
}

network::ClusterConfig cluster_of(int gpus) {
  network::ClusterConfig c;
  c.gpu_spec = *core::find_gpu("A100-SXM4-80GB");
  c.nodes = 1;
  c.gpus_per_node = gpus;
  c.network.nics_per_node = gpus;
  return c;
}

TEST(ChakraWorkload, ReadsTheHandMadeFixture) {
  const std::vector<core::ChakraTrace> files = load_chakra_traces(DATA + "handmade");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].metadata.version(), "0.0.4");
  const ChakraWorkload w = build_chakra_workload(files, {});
  const core::Workload& wl = w.workload;
  EXPECT_FALSE(w.layout_from_files);
  EXPECT_EQ(wl.layout.world_size(), 2);
  EXPECT_EQ(wl.layout.size(core::Axis::DATA), 2);  // the one communicator, {0, 1}, is the slowest axis with collectives
  EXPECT_EQ(w.compute_tasks, 5u);
  EXPECT_EQ(w.collective_tasks, 2u);
  EXPECT_EQ(w.send_recv_tasks, 2u);
  EXPECT_EQ(w.untimed, 1u);
  EXPECT_EQ(w.skipped, 2u);  // the two process-group metadata nodes

  // Rank 0, in dependency order (= file order here): kernel, CPU operator, all-reduce, send, two kernels.
  const core::Program& r0 = wl.programs[0];
  ASSERT_EQ(r0.tasks.size(), 6u);
  EXPECT_DOUBLE_EQ(r0.tasks[0].seconds, 100e-6);
  EXPECT_EQ(r0.tasks[0].stream, core::Stream::COMPUTE);
  EXPECT_EQ(r0.tasks[0].dep_count, 0u);  // its only dependency was the metadata node
  EXPECT_EQ(r0.tasks[1].stream, core::Stream::HOST);  // is_cpu_op
  EXPECT_DOUBLE_EQ(r0.tasks[1].seconds, 30e-6);
  EXPECT_EQ(r0.tasks[2].kind, core::TaskKind::COLLECTIVE);
  EXPECT_EQ(r0.tasks[2].collective, core::CollectiveOp::ALL_REDUCE);
  EXPECT_DOUBLE_EQ(r0.tasks[2].bytes, 1 << 20);
  EXPECT_EQ(wl.groups[r0.tasks[2].group].ranks_of(wl.layout, 0), (std::vector<int>{0, 1}));
  EXPECT_EQ(r0.tasks[2].stream, core::Stream::DATA_COMM);
  EXPECT_EQ(r0.tasks[3].kind, core::TaskKind::SEND);
  EXPECT_EQ(wl.layout.peer(0, r0.tasks[3].peer_axis, r0.tasks[3].peer_offset), 1);
  EXPECT_EQ(r0.tasks[3].stream, core::Stream::PIPELINE_FORWARD);
  EXPECT_DOUBLE_EQ(r0.tasks[3].bytes, 4096);
  EXPECT_DOUBLE_EQ(r0.tasks[4].seconds, 0);  // priced by the compute model from its FLOPs and bytes
  EXPECT_DOUBLE_EQ(r0.tasks[4].flops, 1e12);
  EXPECT_DOUBLE_EQ(r0.tasks[4].bytes, 1e6);
  EXPECT_DOUBLE_EQ(r0.tasks[5].seconds, 1e-9);  // nothing to time it: 1 ns, as ASTRA-sim

  // Rank 1 lists its receive before the all-reduce it waits for: dependency order puts it after.
  const core::Program& r1 = wl.programs[1];
  ASSERT_EQ(r1.tasks.size(), 3u);
  EXPECT_EQ(r1.tasks[1].kind, core::TaskKind::COLLECTIVE);
  EXPECT_EQ(r1.tasks[2].kind, core::TaskKind::RECV);
  EXPECT_EQ(r1.tasks[2].stream, core::Stream::PIPELINE_FORWARD);  // from the lower rank
  EXPECT_EQ(r1.tasks[2].tag, r0.tasks[3].tag);

  // And it runs: the kernels before the all-reduce are on its critical path on both ranks.
  const engine::SimulationResult result =
      engine::make_analytic_backend()->run(wl, cluster_of(2), core::Profile{}, engine::SimulationOptions{});
  EXPECT_GT(result.iteration_time.value(), 100e-6);
}

// Three kernels in a chain beside a CPU operator: the iteration is the chain, 10 + 20 + 30 us, by hand.
TEST_F(ChakraFiles, ReplaysTimedKernelsToTheirSum) {
  write(0, {comp(1, 10), comp(2, 20, {1}), comp(3, 30, {2}), comp(4, 5, {1}, true)});
  const ChakraWorkload w = build_chakra_workload(load_chakra_traces(dir_.string()), {});
  engine::SimulationOptions o;
  o.use_symmetry = false;
  const engine::SimulationResult r = engine::make_analytic_backend()->run(w.workload, cluster_of(1), core::Profile{}, o);
  EXPECT_NEAR(r.iteration_time.value(), 60e-6, 1e-12);
}

TEST_F(ChakraFiles, ReadsTheCommGroupFileAndTheExactDuration) {
  chakra::Node c = coll(2, chakra::ALL_GATHER, {1}, "1");
  chakra::Node k = comp(1, 7);
  *k.add_attr() = core::double_attr(core::CHAKRA_ATTR_DURATION, 7.25e-6);
  write(0, {k, c});
  write(1, {k, c});
  const std::string groups = (dir_ / "groups.json").string();
  std::ofstream(groups) << R"({"1": [0, 1]})";
  const ChakraWorkload w = build_chakra_workload(load_chakra_traces(prefix()), ChakraOptions{groups});
  EXPECT_DOUBLE_EQ(w.workload.programs[1].tasks[0].seconds, 7.25e-6);  // trainsim.duration_s over duration_micros
  EXPECT_EQ(w.workload.programs[1].tasks[1].collective, core::CollectiveOp::ALL_GATHER);
}

TEST_F(ChakraFiles, RefusesATruncatedFile) {
  const std::string path = write(0, {comp(1, 10), comp(2, 20, {1})});
  fs::resize_file(path, fs::file_size(path) - 3);
  EXPECT_NE(import_error().find("truncated: the node message at byte"), std::string::npos) << import_error();
  EXPECT_NE(import_error().find("only"), std::string::npos);
}

TEST_F(ChakraFiles, RefusesALengthPrefixPastTheEnd) {
  const std::string path = write(0, {comp(1, 10)});
  std::ofstream(path, std::ios::app | std::ios::binary) << '\x80';  // a varint that continues past the end
  EXPECT_NE(import_error().find("the length prefix of the node message at byte"), std::string::npos) << import_error();
}

TEST_F(ChakraFiles, RefusesAHostileLength) {
  const std::string path = write(0, {comp(1, 10)});
  std::ofstream(path, std::ios::app | std::ios::binary) << std::string("\xff\xff\xff\xff\x7f", 5);  // 2^35 - 1 bytes
  EXPECT_NE(import_error().find("more than the 67108864 byte limit"), std::string::npos) << import_error();
}

// Sparse files: the sizes are refused from stat() before a byte is read.
TEST_F(ChakraFiles, RefusesFilesOverTheReplayBudget) {
  write(0, {comp(1, 10)});
  fs::resize_file(write(1, {comp(1, 10)}), CHAKRA_MAX_TOTAL_BYTES);
  EXPECT_NE(import_error().find("more than the 2147483648 byte limit of one replay (CHAKRA_MAX_TOTAL_BYTES)"), std::string::npos)
      << import_error();
}

TEST_F(ChakraFiles, RefusesAFileOverTheFileBudget) {
  const std::string path = write(0, {comp(1, 10)});
  fs::resize_file(path, core::CHAKRA_MAX_FILE_BYTES + 1);
  try {
    core::read_chakra_file(path);
    ADD_FAILURE() << "read";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 4294967296 byte limit of one rank's Chakra trace"), std::string::npos) << e.what();
  }
}

TEST_F(ChakraFiles, RefusesADependencyOnAMissingNode) {
  write(0, {comp(1, 10), comp(2, 20, {99})});
  EXPECT_NE(import_error().find("job.0.et: node 2 (kernel 2): depends on node 99 (data_deps), which the file does not hold"),
            std::string::npos)
      << import_error();
}

TEST_F(ChakraFiles, RefusesACycle) {
  write(0, {comp(1, 10, {3}), comp(2, 20, {1}), comp(3, 30, {2})});
  EXPECT_NE(import_error().find("the data dependencies form a cycle (node 1 -> node 3 -> node 2 -> node 1"), std::string::npos)
      << import_error();
}

TEST_F(ChakraFiles, RefusesADuplicateId) {
  write(0, {comp(1, 10), comp(1, 20)});
  EXPECT_NE(import_error().find("node 1 (kernel 1): the id is used twice (nodes 1 and 2 of the file)"), std::string::npos)
      << import_error();
}

TEST_F(ChakraFiles, RefusesAnUnknownCollective) {
  write(0, {coll(1, 42)});
  write(1, {coll(1, 42)});
  EXPECT_NE(import_error().find("node 1 (collective): comm_type 42 is not a collective of the Chakra schema (0-9)"), std::string::npos)
      << import_error();
}

TEST_F(ChakraFiles, RefusesAGather) {
  write(0, {coll(1, chakra::GATHER)});
  write(1, {coll(1, chakra::GATHER)});
  EXPECT_NE(import_error().find("comm_type 3 is GATHER: trainsim replays ALL_REDUCE"), std::string::npos) << import_error();
}

TEST_F(ChakraFiles, RefusesAnUndefinedProcessGroup) {
  write(0, {coll(1, chakra::ALL_REDUCE, {}, "5")});
  write(1, {coll(1, chakra::ALL_REDUCE, {}, "5")});
  EXPECT_NE(import_error().find("process group \"5\" (pg_name) is defined neither by a process_group:init metadata node"),
            std::string::npos)
      << import_error();
}

TEST_F(ChakraFiles, RefusesAMissingRank) {
  write(0, {comp(1, 10)});
  write(2, {comp(1, 10)});
  EXPECT_NE(import_error().find("job.1.et: rank 1 has no file: a replay needs one file per rank, from job.0.et to job.2.et (2 of 3 found)"),
            std::string::npos)
      << import_error();
}

TEST_F(ChakraFiles, RefusesANodeTypeItDoesNotModel) {
  chakra::Node n = comp(1, 10);
  n.set_type(static_cast<chakra::NodeType>(8));  // STORAGE_NODE in later schemas
  write(0, {n});
  EXPECT_NE(import_error().find("node type 8 is not one trainsim replays"), std::string::npos) << import_error();
}

TEST_F(ChakraFiles, RefusesAnEmptyFolder) {
  EXPECT_NE(import_error().find("neither a folder nor the prefix of Chakra traces: no job.<rank>.et in"), std::string::npos) << import_error();
}

}  // namespace
}  // namespace trainsim::calibrate

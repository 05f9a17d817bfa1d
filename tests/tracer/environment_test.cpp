#include "tracer/record/environment.hpp"

#include <gtest/gtest.h>

#include <map>

namespace trainsim::tracer {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(Environment, TorchrunVariables) {
  const RankInfo r = discover_rank(env_of({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "16"}}));
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 16);
}

TEST(Environment, OpenMpiAndSlurmVariables) {
  RankInfo r = discover_rank(env_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                     {"OMPI_COMM_WORLD_SIZE", "8"}}));
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 8);
  r = discover_rank(env_of({{"SLURM_PROCID", "12"}, {"SLURM_LOCALID", "4"}, {"SLURM_NTASKS", "32"}}));
  EXPECT_EQ(r.rank, 12);
  EXPECT_EQ(r.local_rank, 4);
  EXPECT_EQ(r.world_size, 32);
}

TEST(Environment, FirstValidVariableWins) {
  // torchrun's RANK before the MPI launcher's; a malformed value counts as unset.
  const RankInfo r = discover_rank(env_of({{"RANK", "x1"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"PMI_RANK", "9"}}));
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.local_rank, -1);
  EXPECT_EQ(discover_rank(env_of({})).world_size, -1);
}

TEST(Environment, Options) {
  EXPECT_EQ(read_options(env_of({})).dir, "trainsim-trace");
  EXPECT_FALSE(read_options(env_of({})).nvtx);
  const TracerOptions o = read_options(env_of({{"TRAINSIM_TRACE_DIR", "/tmp/t"}, {"TRAINSIM_TRACE_NVTX", "1"}}));
  EXPECT_EQ(o.dir, "/tmp/t");
  EXPECT_TRUE(o.nvtx);
}

TEST(Environment, WrappersAndApiRecords) {
  EXPECT_FALSE(read_options(env_of({})).wrappers);
  EXPECT_FALSE(read_options(env_of({})).all_api_records);
  // Set by hand: the preload decides.
  EXPECT_TRUE(read_options(env_of({{"LD_PRELOAD", "/x/libfoo.so:/opt/t/libtrainsim_tracer.so"}})).wrappers);
  EXPECT_FALSE(read_options(env_of({{"LD_PRELOAD", "/x/libfoo.so"}})).wrappers);
  // Set by `trainsim trace`: its variable wins over the preload.
  EXPECT_FALSE(read_options(env_of({{"TRAINSIM_TRACE_WRAPPERS", "0"}, {"LD_PRELOAD", "libtrainsim_tracer.so"}})).wrappers);
  EXPECT_TRUE(read_options(env_of({{"TRAINSIM_TRACE_WRAPPERS", "1"}})).wrappers);
  EXPECT_TRUE(read_options(env_of({{"TRAINSIM_TRACE_API", "all"}})).all_api_records);
  EXPECT_FALSE(read_options(env_of({{"TRAINSIM_TRACE_API", "launches"}})).all_api_records);
}

TEST(Environment, FileNames) {
  EXPECT_EQ(trace_file_name({3, 3, 8}, "node-a.cluster", 1234), "rank00003.node-a.cluster.1234.trace");
  EXPECT_EQ(trace_file_name({-1, -1, -1}, "my host/x", 7), "norank.my_host_x.7.trace");
  EXPECT_EQ(trace_file_name({0, 0, 1}, "", 1), "rank00000.localhost.1.trace");
}

}  // namespace
}  // namespace trainsim::tracer

#include "tracer/record/environment.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace trainsim::tracer {
namespace {

int32_t first_integer(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = env(name);
    if (value == nullptr || *value == '\0') continue;
    int32_t n = -1;
    const char* last = value + std::strlen(value);
    const auto [ptr, ec] = std::from_chars(value, last, n);
    if (ec == std::errc() && ptr == last && n >= 0) return n;
  }
  return -1;
}

}  // namespace

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

RankInfo discover_rank(const EnvLookup& env) {
  RankInfo r;
  r.rank = first_integer(env, {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                               "MV2_COMM_WORLD_RANK"});
  r.local_rank = first_integer(env, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                     "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"});
  r.world_size = first_integer(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                                     "MV2_COMM_WORLD_SIZE"});
  return r;
}

TracerOptions read_options(const EnvLookup& env) {
  TracerOptions o;
  if (const char* dir = env("TRAINSIM_TRACE_DIR"); dir != nullptr && *dir != '\0') o.dir = dir;
  if (const char* nvtx = env("TRAINSIM_TRACE_NVTX"); nvtx != nullptr) o.nvtx = std::strcmp(nvtx, "1") == 0;
  if (const char* w = env("TRAINSIM_TRACE_WRAPPERS"); w != nullptr && *w != '\0') {
    o.wrappers = std::strcmp(w, "1") == 0;
  } else if (const char* preload = env("LD_PRELOAD"); preload != nullptr) {
    o.wrappers = std::strstr(preload, "libtrainsim_tracer") != nullptr;
  }
  if (const char* api = env("TRAINSIM_TRACE_API"); api != nullptr) o.all_api_records = std::strcmp(api, "all") == 0;
  return o;
}

std::string trace_file_name(const RankInfo& rank, const std::string& hostname, uint32_t pid) {
  std::string host;
  for (char c : hostname) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    host.push_back(ok ? c : '_');
  }
  if (host.empty()) host = "localhost";
  char prefix[32];
  if (rank.rank >= 0) {
    std::snprintf(prefix, sizeof prefix, "rank%05d", static_cast<int>(rank.rank));
  } else {
    std::snprintf(prefix, sizeof prefix, "norank");
  }
  return std::string(prefix) + "." + host + "." + std::to_string(pid) + ".trace";
}

}  // namespace trainsim::tracer

#include "calibrate/measured_on.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace trainsim::calibrate {
namespace {

// NCCL 2.9.0's code: from there on the minor version takes two digits.
constexpr uint32_t NCCL_TWO_DIGIT_MINOR = 20900;

void add_distinct(std::vector<std::string>& seen, const std::string& v) {
  if (!v.empty() && std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
}

}  // namespace

std::string cuda_version_text(uint32_t code) {
  if (code == 0) return "";
  return fmt::format("{}.{}", code / 1000, (code % 1000) / 10);
}

std::string nccl_version_text(uint32_t code) {
  if (code == 0) return "";
  if (code >= NCCL_TWO_DIGIT_MINOR) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

core::FittedOn measured_on(const std::string& gpu, const TraceSet* traces, const std::vector<NcclTestsRun>& runs) {
  std::vector<std::string> cuda, nccl, framework;
  if (traces != nullptr) {
    for (const core::TraceFile& f : traces->files()) {
      add_distinct(cuda, cuda_version_text(f.header.cuda_runtime_version()));
      std::string file_nccl = nccl_version_text(f.header.nccl_version());
      for (const trace::Record& r : f.records) {
        if (!file_nccl.empty()) break;
        if (r.has_library() && r.library().name() == "nccl") file_nccl = nccl_version_text(r.library().version());
      }
      add_distinct(nccl, file_nccl);
      if (f.header.producer() == trace::PRODUCER_KINETO_IMPORT) add_distinct(framework, "pytorch");
    }
  }
  for (const NcclTestsRun& r : runs) add_distinct(nccl, nccl_version_text(r.nccl_version));
  return core::FittedOn{gpu, fmt::format("{}", fmt::join(cuda, " / ")), fmt::format("{}", fmt::join(nccl, " / ")),
                        fmt::format("{}", fmt::join(framework, " / "))};
}

}  // namespace trainsim::calibrate

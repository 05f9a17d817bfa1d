#pragma once
// Reading the standard output of nccl-tests' *_perf binaries (github.com/NVIDIA/nccl-tests:
// all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf,
// alltoall_perf) as collective measurements for `trainsim calibrate --nccl-tests`. What is read:
//
//   # nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602     (recent versions)
//   # Collective test starting: all_reduce_perf                              (recent versions)
//   # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) ...
//   #  Rank  0 Group  0 Pid  51234 on    gpu-a01 device  0 [0000:07:00] NVIDIA A100-SXM4-80GB
//   ...                                                        (one line per rank; old versions:
//                                                              no Group, bus id "[0x07]")
//   #       size         count      type   redop    root     time   algbw   busbw  #wrong     time ...
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us) ...
//            8             2     float     sum      -1    25.31    0.00    0.00       0    25.28 ...
//   # Out of bounds values : 0 OK
//
//  - Ranks: the "# Rank" lines; hosts: their host names. One host: INTRA_NODE; one rank per host:
//    INTER_NODE; several ranks on each of several hosts: HIERARCHICAL (counted, not fitted). A rank
//    listed twice (processes that did not form one communicator: nccl-tests built without MPI=1)
//    and ranks split into several groups (NCCL_TESTS_SPLIT: concurrent communicators) are errors.
//  - The collective: the program named by "# Collective test starting:" (or "concluded:"); an
//    `op` (calibrate --op) that contradicts it is an error. Older outputs do not name it: then `op`
//    when given, else the first row where it can tell: root >= 0 is broadcast (redop "none") or
//    reduce; root -1 with a reduction is all_reduce when count x type size = size and
//    reduce_scatter when that times the ranks is; root -1 without a reduction (all_gather or
//    alltoall) cannot be told apart, an error that asks for --op.
//  - Columns: found by name in the column header line (so extra columns, such as #bitdiff or
//    per-iteration statistics, are fine): size (B), and the out-of-place and in-place "time" (or
//    "cputime", us). A row is a line in the table whose first field is an integer. Its time is the
//    lower of its out-of-place and in-place times: the same collective, and the lower is the less
//    disturbed. Other lines (NCCL_DEBUG output, MPI warnings) are skipped.
//  - Sizes are nccl-tests' "size" column, the per-rank buffer, as the cost model counts them.
// One file may hold several runs (outputs concatenated): each "# nccl-tests version",
// "# Collective test starting" or "# nThread" line after a run's ranks or rows starts another.
// Problems throw core::InputError naming "FILE:LINE" (the file alone for what no line shows).
//
// Example:
//   for (const NcclTestsRun& run : load_nccl_tests("all_reduce_8xA100.txt")) {
//     std::vector<CollectiveSample> s = collective_samples(run);  // one per row
//   }

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/collective_sample.hpp"
#include "sim/core/workload.hpp"

namespace trainsim::calibrate {

struct NcclTestsRank {
  int rank = 0;
  int group = 0;
  std::string host;
  int device = 0;         // CUDA device index on the host
  std::string gpu;        // "NVIDIA A100-SXM4-80GB"
  size_t line = 0;
};

struct NcclTestsRow {
  size_t line = 0;
  core::Bytes size;                       // per-rank buffer
  uint64_t count = 0;                     // elements, as printed
  std::string type;                       // "float", ...; "" without the column
  std::string redop;                      // "sum", "none", ...; "" without the column
  int root = -1;                          // -1 without the column
  core::Seconds out_of_place;             // as printed (us -> s)
  core::Seconds in_place;
  core::Seconds time() const { return out_of_place < in_place ? out_of_place : in_place; }
};

struct NcclTestsRun {
  std::string file;
  size_t first_line = 0;                  // where the run's output starts
  std::string program;                    // "all_reduce_perf"; "" when the output does not say
  uint32_t nccl_version = 0;              // NCCL_VERSION_CODE of "nccl-library=N"; 0 when not printed
  core::CollectiveOp op = core::CollectiveOp::ALL_REDUCE;
  std::vector<NcclTestsRank> ranks;       // as listed (rank order)
  std::vector<NcclTestsRow> rows;         // as printed (ascending size)

  size_t hosts() const;
  int busiest_host() const;               // most ranks on one host
  CollectiveScope scope() const { return collective_scope(hosts(), busiest_host()); }
  std::string gpu() const;                // the first rank's device name
  std::string where() const;              // "FILE:LINE" of the run's first line
};

// The collective a *_perf program measures ("all_reduce_perf", "all_reduce_perf_mpi", or a path to
// either); nullopt for other programs (sendrecv_perf, scatter_perf, ...).
std::optional<core::CollectiveOp> nccl_tests_program_op(std::string_view program);

// Parses one output; `file` names it in errors. `op`: see above.
std::vector<NcclTestsRun> parse_nccl_tests(std::istream& in, const std::string& file,
                                           std::optional<core::CollectiveOp> op = std::nullopt);
// nccl-tests outputs are kilobytes (a full size sweep of one program is about 10 KB): a larger file
// is not one, and a stream is cut off here (core/text_file.hpp).
inline constexpr uintmax_t MAX_NCCL_TESTS_BYTES = uintmax_t{64} << 20;  // 64 MiB
// Reads the file `path`; throws core::InputError when it cannot be read, is above
// MAX_NCCL_TESTS_BYTES or holds binary data.
std::vector<NcclTestsRun> load_nccl_tests(const std::string& path, std::optional<core::CollectiveOp> op = std::nullopt);

// One sample per row: the run's op, ranks and scope, the row's size and time().
std::vector<CollectiveSample> collective_samples(const NcclTestsRun& run);

}  // namespace trainsim::calibrate

#pragma once
// The parallel layout that a run's communicators imply, for workloads built from traces
// (`trainsim replay` of trainsim traces, calibrate/replay_workload.hpp, and of Chakra execution traces,
// calibrate/chakra_workload.hpp).
//
// The communicators' rank sets must be arithmetic progressions. Sorted by stride, they give the
// parallel axes, fastest first; the slowest axis with collectives is DATA, faster ones are TENSOR,
// CONTEXT, EXPERT in order, and ranks no communicator spans form a slower PIPELINE axis. A
// communicator spanning several axes (e.g. the world) is one group kind over them.
//
// Example:
//   InferredLayout l = infer_layout({{{0, 1}, "rank0.trace"}, {{0, 2}, "rank0.trace"}}, 4);
//   core::GroupKind data = group_kind_of(l, {0, 2}, "rank0.trace");   // axis DATA

#include <string>
#include <vector>

#include "sim/core/workload.hpp"

namespace trainsim::calibrate {

// One communicator as a rank saw it: its members (ascending) and the file that names it (for errors).
struct CommunicatorRanks {
  std::vector<int> ranks;
  std::string file;
};

// One parallel axis found from the communicators: ranks i·stride + base, i < size.
struct FoundAxis {
  int stride = 1;
  int size = 1;
  bool has_collectives = false;
};

struct InferredLayout {
  core::ParallelLayout layout;
  std::vector<core::Axis> names;  // of the found axes, fastest first
  std::vector<FoundAxis> axes;
};

// Throws core::InputError (naming the communicator's file) when a communicator's ranks are not
// evenly spaced, or (naming `world_file`) when the communicators do not factor the world.
InferredLayout infer_layout(const std::vector<CommunicatorRanks>& communicators, int world,
                            const std::string& world_file);

// The group kind of a communicator: the consecutive found axes it spans. Throws core::InputError
// (naming `file`) when the ranks are not one group of the layout.
core::GroupKind group_kind_of(const InferredLayout& l, const std::vector<int>& group, const std::string& file);

}  // namespace trainsim::calibrate

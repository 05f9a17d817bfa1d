#pragma once
// The order in which a Chakra trace's nodes run (calibrate/chakra_workload.hpp): their data
// dependencies, ties in file order. Internal to calibrate.

#include <cstdint>
#include <vector>

#include "sim/core/chakra_io.hpp"

namespace trainsim::calibrate {

// The positions of the file's nodes in dependency order (data_deps; ties in file order), and each
// node's dependencies as positions.
struct Graph {
  std::vector<uint32_t> order;
  std::vector<std::vector<uint32_t>> deps;
};

// Throws core::InputError naming the file and the node for a duplicate id, a dependency on an id the
// file does not hold, or a cycle (listed).
Graph dependency_order(const core::ChakraTrace& t);

}  // namespace trainsim::calibrate

#include "calibrate/collective_sample.hpp"

#include "sim/core/error.hpp"

namespace trainsim::calibrate {

std::string_view to_string(CollectiveScope s) {
  switch (s) {
    case CollectiveScope::INTRA_NODE: return "intra_node";
    case CollectiveScope::INTER_NODE: return "inter_node";
    case CollectiveScope::HIERARCHICAL: return "hierarchical";
    case CollectiveScope::UNKNOWN: return "scope unknown";
  }
  return "?";
}

CollectiveScope collective_scope(size_t hosts, int busiest_host) {
  TRAINSIM_CHECK(hosts >= 1 && busiest_host >= 1, "a communicator has a member on some host");
  if (hosts == 1) return CollectiveScope::INTRA_NODE;
  return busiest_host == 1 ? CollectiveScope::INTER_NODE : CollectiveScope::HIERARCHICAL;
}

}  // namespace trainsim::calibrate

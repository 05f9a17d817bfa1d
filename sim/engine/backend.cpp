#include "sim/engine/backend.hpp"

namespace trainsim::engine {

core::Seconds Breakdown::exposed_comm_total() const {
  core::Seconds total;
  for (core::Seconds s : exposed_comm) total += s;
  return total;
}

}  // namespace trainsim::engine

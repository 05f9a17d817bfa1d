#include "sim/engine/backend.hpp"

namespace trainsim::engine {

core::Seconds Breakdown::exposed_comm_total() const {
  core::Seconds total;
  for (core::Seconds s : exposed_comm) total += s;
  return total;
}

std::string_view to_string(Fidelity f) {
  switch (f) {
    case Fidelity::STEP: return "step";
    case Fidelity::FLOW: return "flow";
    case Fidelity::ANALYTIC: return "analytic";
  }
  return "?";
}

bool parse_fidelity(std::string_view text, Fidelity& out) {
  for (Fidelity f : {Fidelity::STEP, Fidelity::FLOW, Fidelity::ANALYTIC}) {
    if (text == to_string(f)) {
      out = f;
      return true;
    }
  }
  return false;
}

std::string_view to_string(NodeSymmetry n) {
  switch (n) {
    case NodeSymmetry::OFF: return "off";
    case NodeSymmetry::EXACT: return "exact";
    case NodeSymmetry::APPROXIMATE: return "approximate";
  }
  return "?";
}

bool parse_node_symmetry(std::string_view text, NodeSymmetry& out) {
  for (NodeSymmetry n : {NodeSymmetry::OFF, NodeSymmetry::EXACT, NodeSymmetry::APPROXIMATE}) {
    if (text == to_string(n)) {
      out = n;
      return true;
    }
  }
  return false;
}

}  // namespace trainsim::engine

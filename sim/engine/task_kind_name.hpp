#pragma once
// Lower-case names of task kinds for messages and timelines ("compute", "collective", "send",
// "recv", "copy", "memory").

#include <string_view>

#include "sim/core/workload.hpp"

namespace trainsim::engine {

inline std::string_view kind_name(core::TaskKind k) {
  switch (k) {
    case core::TaskKind::COMPUTE: return "compute";
    case core::TaskKind::COLLECTIVE: return "collective";
    case core::TaskKind::SEND: return "send";
    case core::TaskKind::RECV: return "recv";
    case core::TaskKind::COPY: return "copy";
    case core::TaskKind::MEMORY: return "memory";
  }
  return "?";
}

}  // namespace trainsim::engine

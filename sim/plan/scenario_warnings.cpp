#include "sim/plan/scenario_warnings.hpp"

#include <algorithm>

namespace trainsim::plan {

void ScenarioWarnings::add(const std::vector<std::string>& warnings, const std::string& label) {
  for (const std::string& w : warnings) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == w; });
    if (it == entries_.end()) {
      entries_.emplace_back(w, std::vector<std::string>{});
      it = entries_.end() - 1;
    }
    if (std::find(it->second.begin(), it->second.end(), label) == it->second.end()) it->second.push_back(label);
  }
}

void ScenarioWarnings::add_report(const core::Json& report, const std::string& label) {
  if (!report.is_object() || !report.contains("warnings") || !report["warnings"].is_array()) return;
  std::vector<std::string> warnings;
  for (const core::Json& w : report["warnings"]) {
    if (w.is_string()) warnings.push_back(w.get<std::string>());
  }
  add(warnings, label);
}

void ScenarioWarnings::print(std::ostream& err, size_t runs) const {
  for (const auto& [text, labels] : entries_) {
    err << "warning: " << text;
    if (labels.size() < runs) {
      err << " (in: ";
      for (size_t i = 0; i < labels.size(); ++i) err << (i ? ", " : "") << labels[i];
      err << ")";
    }
    err << "\n";
  }
}

}  // namespace trainsim::plan

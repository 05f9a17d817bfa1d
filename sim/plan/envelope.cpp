#include "sim/plan/envelope.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace trainsim::plan {
namespace {

// How far apart two uses of a mechanism are: |ln(a / b)|, 0 for mechanisms without a scale.
double scale_distance(double a, double b) {
  if (a <= 0 || b <= 0) return 0;
  return std::abs(std::log(a / b));
}

std::string scale_text(const MechanismUse& u, double scale) {
  return u.scale_name == "GPUs" ? fmt::format("{:g} GPUs", scale) : fmt::format("{} {:g}", u.scale_name, scale);
}

EnvelopeLine judge(const BandSet& set, const MechanismUse& use) {
  EnvelopeLine line;
  line.use = use;
  double best = std::numeric_limits<double>::infinity();
  for (const BandCase& c : set.cases) {
    for (const MechanismUse& m : c.traits.mechanisms) {
      if (m.key != use.key) continue;
      const double d = scale_distance(m.scale, use.scale);
      if (d < best) {
        best = d;
        line.nearest_case = c.name;
        line.nearest_scale = m.scale;
        line.validated = use.scale <= 0 || similar_scale(m.scale, use.scale);
      }
    }
  }
  return line;
}

}  // namespace

std::string EnvelopeLine::verdict() const {
  if (nearest_case.empty()) return "no validation case uses it";
  const std::string at = use.scale > 0 && nearest_scale > 0 ? " at " + scale_text(use, nearest_scale) : "";
  if (validated) return fmt::format("validated: {}{}", nearest_case, at);
  return fmt::format("not at this scale: nearest {}{}", nearest_case, at);
}

bool Envelope::inside() const {
  return std::all_of(lines.begin(), lines.end(), [](const EnvelopeLine& l) { return l.validated; });
}

std::string Envelope::summary() const {
  if (inside()) {
    return fmt::format("inside the validated envelope: each of its {} mechanisms has a validation case at a similar "
                       "scale (within {:g}x)", lines.size(), SIMILAR_SCALE);
  }
  std::vector<std::string> outside;
  for (const EnvelopeLine& l : lines) {
    if (!l.validated) outside.push_back(fmt::format("{} ({})", l.use.description, l.verdict()));
  }
  std::string text = "outside the validated envelope: ";
  for (size_t i = 0; i < outside.size(); ++i) text += (i > 0 ? "; " : "") + outside[i];
  return text;
}

core::Json Envelope::to_json() const {
  core::Json mechanisms = core::Json::array();
  for (const EnvelopeLine& l : lines) {
    core::Json j = l.use.to_json();
    j["validated"] = l.validated;
    if (!l.nearest_case.empty()) j["nearest_case"] = l.nearest_case;
    if (l.nearest_scale > 0) j["nearest_scale"] = l.nearest_scale;
    j["verdict"] = l.verdict();
    mechanisms.push_back(j);
  }
  return {{"inside", inside()}, {"summary", summary()}, {"similar_scale", SIMILAR_SCALE}, {"mechanisms", mechanisms}};
}

Envelope envelope_of_report(const core::Json& report) {
  Envelope e;
  const core::Json* mechanisms = nullptr;
  if (report.contains("envelope") && report["envelope"].is_object() && report["envelope"].contains("mechanisms")) {
    mechanisms = &report["envelope"]["mechanisms"];
  }
  if (mechanisms == nullptr || !mechanisms->is_array()) {
    e.lines.push_back({{"unknown", 0, "", "the report's mechanisms (it has no envelope)"}, false, "", 0});
    return e;
  }
  // A report read back may have been edited: a value of the wrong type reads as absent.
  auto text = [](const core::Json& m, const char* key) {
    return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string();
  };
  auto number = [](const core::Json& m, const char* key) {
    return m.contains(key) && m[key].is_number() ? m[key].get<double>() : 0.0;
  };
  for (const core::Json& m : *mechanisms) {
    if (!m.is_object()) continue;
    EnvelopeLine l;
    l.use.key = text(m, "key");
    l.use.description = text(m, "description").empty() ? l.use.key : text(m, "description");
    l.use.scale = number(m, "scale");
    l.use.scale_name = text(m, "scale_name");
    l.validated = m.contains("validated") && m["validated"].is_boolean() && m["validated"].get<bool>();
    l.nearest_case = text(m, "nearest_case");
    l.nearest_scale = number(m, "nearest_scale");
    e.lines.push_back(l);
  }
  return e;
}

Envelope envelope_of(const BandSet& set, const CaseTraits& target) {
  Envelope e;
  for (const MechanismUse& use : target.mechanisms) e.lines.push_back(judge(set, use));
  return e;
}

}  // namespace trainsim::plan

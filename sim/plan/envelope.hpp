#pragma once
// The validated envelope: the mechanisms a prediction leans on (case_traits.hpp) and, for each,
// whether a validation case of the bands file uses it at a similar scale (within SIMILAR_SCALE).
// A prediction is inside the envelope when every one of its mechanisms is; outside, the summary
// names what is not and the nearest case that uses it.
//
// Example:
//   const plan::Envelope e = plan::envelope_of(plan::builtin_band_set(), plan::traits_of(scenario));
//   // e.inside(); e.summary(): "outside the validated envelope: FSDP (ZeRO-3) parameter gathers at
//   // DP 384 (nearest: llmfoundry-mpt-70b-... at DP 128)"

#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/case_traits.hpp"

namespace trainsim::plan {

struct EnvelopeLine {
  MechanismUse use;
  bool validated = false;    // a case uses it at a similar scale
  std::string nearest_case;  // the case that uses it nearest in scale; "" when none uses it
  double nearest_scale = 0;

  // "validated: megatron-sc21-t1-145.6B at DP 24", "not at this scale: nearest ... at DP 128",
  // "no validation case uses it".
  std::string verdict() const;
};

struct Envelope {
  std::vector<EnvelopeLine> lines;  // in the order of the prediction's mechanisms

  bool inside() const;
  // One line: "inside the validated envelope: ..." or "outside the validated envelope: ...".
  std::string summary() const;
  // {inside, summary, similar_scale, mechanisms: [{key, description, scale, scale_name, validated,
  // nearest_case, nearest_scale, verdict}]}; scale and nearest_* only where there is one (no null)
  core::Json to_json() const;
};

Envelope envelope_of(const BandSet& set, const CaseTraits& target);
// The envelope of a report ("envelope", as to_json() wrote it); a report without one (written before
// trainsim had envelopes) gets one line that is not validated and says so. REQUIRES: a report that
// passed check_report (compare.hpp); unexpected types read as not validated.
Envelope envelope_of_report(const core::Json& report);

}  // namespace trainsim::plan

#include "sim/plan/ranking_accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/plan/compare.hpp"
#include "sim/plan/search.hpp"

namespace trainsim::plan {
namespace {

// "#1-#4" for search's ranks, "a, b and c" for compare's labels.
std::string labels_text(const std::vector<RankedEntry>& entries, size_t count) {
  if (count == 0) return "";
  const bool ranks = std::all_of(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(count),
                                 [](const RankedEntry& e) { return e.label.starts_with("#"); });
  if (ranks) return count == 1 ? entries[0].label : fmt::format("{}-{}", entries[0].label, entries[count - 1].label);
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(entries[i].label);
  const std::string last = names.back();
  names.pop_back();
  return names.empty() ? last : fmt::format("{} and {}", fmt::join(names, ", "), last);
}

std::string band_percent(const Band& b) {
  return b.finite() ? fmt::format("+/-{:.1f}%", b.percent()) : std::string("no finite band");
}

// How far b is behind a, in percent of a, whichever way the objective goes.
double apart_pct(double a, double b) { return 100 * (std::exp(std::abs(std::log(b / a))) - 1); }

std::string tie_line(const RankingAccuracy& r) {
  const std::vector<RankedEntry>& e = r.entries;
  if (e.size() < 2) return "";
  if (r.tied >= 2) {
    return fmt::format("{} are indistinguishable at this accuracy: within each other's {:g}% error bands ({} for {})",
                       labels_text(e, r.tied), 100 * BAND_COVERAGE, band_percent(e[0].band), e[0].label);
  }
  const double gap = std::abs(std::log(e[1].value / e[0].value));
  if (gap > e[0].band.relative && gap > e[1].band.relative) {
    return fmt::format("{} is ahead of {} by more than their {:g}% error bands ({:.1f}% apart; {} and {})", e[0].label,
                       e[1].label, 100 * BAND_COVERAGE, apart_pct(e[0].value, e[1].value), band_percent(e[0].band),
                       band_percent(e[1].band));
  }
  // Outside the narrower band only (the tie needs both: indistinguishable): say which, so that a
  // wide band (an unvalidated stack) is not read as a clear lead.
  const bool first_wider = e[0].band.relative >= e[1].band.relative;
  const RankedEntry& narrow = first_wider ? e[1] : e[0];
  const RankedEntry& wide = first_wider ? e[0] : e[1];
  return fmt::format("{} is ahead of {} by more than {}'s {:g}% error band but within {}'s ({:.1f}% apart; {} and {})",
                     e[0].label, e[1].label, narrow.label, 100 * BAND_COVERAGE, wide.label,
                     apart_pct(e[0].value, e[1].value), band_percent(e[0].band), band_percent(e[1].band));
}

}  // namespace

bool indistinguishable(double a, const Band& qa, double b, const Band& qb) {
  if (!(a > 0) || !(b > 0)) return a == b;
  return std::abs(std::log(a / b)) <= std::min(qa.relative, qb.relative);
}

RankingAccuracy judge_ranking(std::vector<RankedEntry> entries) {
  RankingAccuracy r;
  r.entries = std::move(entries);
  const std::vector<RankedEntry>& e = r.entries;
  r.tied = e.empty() ? 0 : 1;
  for (size_t i = 1; i < e.size(); ++i) {
    bool all = true;
    for (size_t k = 0; k < i && all; ++k) all = indistinguishable(e[k].value, e[k].band, e[i].value, e[i].band);
    if (!all) break;
    r.tied = i + 1;
  }
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i].envelope.inside()) {
      r.best_inside = i;
      break;
    }
  }
  return r;
}

std::vector<std::string> RankingAccuracy::lines() const {
  std::vector<std::string> out;
  if (const std::string tie = tie_line(*this); !tie.empty()) out.push_back(tie);
  for (const RankedEntry& e : entries) {
    if (!e.envelope.inside()) out.push_back(fmt::format("{} is {}", e.label, e.envelope.summary()));
  }
  if (!entries.empty() && !entries[0].envelope.inside()) {
    out.push_back(best_inside ? fmt::format("{}'s advantage rests on mechanisms outside the validated envelope; the best "
                                            "inside it is {} ({:.1f}% behind)",
                                            entries[0].label, entries[*best_inside].label,
                                            apart_pct(entries[0].value, entries[*best_inside].value))
                              : std::string("none of these is inside the validated envelope"));
  }
  return out;
}

core::Json RankingAccuracy::to_json() const {
  core::Json j{{"tied", tied}, {"summary", tie_line(*this)}, {"lines", lines()}};
  if (best_inside) j["best_inside_envelope"] = entries[*best_inside].label;
  return j;
}

RankingAccuracy search_accuracy(const Search& search, const SearchResult& result, size_t count, const BandSet& set) {
  std::vector<RankedEntry> entries;
  for (size_t i = 0; i < std::min(count, result.ranked.size()); ++i) {
    const Evaluated& e = result.ranked[i];
    const CaseTraits t = traits_of(search.scenario_of(e.layout));
    entries.push_back({search.objective_of(e), band_for(set, t, Residual::TIME), envelope_of(set, t), fmt::format("#{}", i + 1)});
  }
  return judge_ranking(std::move(entries));
}

RankingAccuracy compare_accuracy(const CompareResult& result) {
  std::vector<RankedEntry> entries;
  for (const Configuration& c : result.configurations) {
    if (!c.ok()) continue;
    RankedEntry e;
    e.value = c.report.value("iteration_time_s", 0.0);
    const core::Json::json_pointer q("/bands/time/relative");
    if (c.report.contains(q) && c.report.at(q).is_number()) e.band.relative = c.report.at(q).get<double>();
    e.envelope = envelope_of_report(c.report);
    e.label = c.label;
    entries.push_back(std::move(e));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const RankedEntry& a, const RankedEntry& b) { return a.value < b.value; });
  return judge_ranking(std::move(entries));
}

}  // namespace trainsim::plan

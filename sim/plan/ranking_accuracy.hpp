#pragma once
// Rankings that respect the error bands (`search`, `compare`): which of the best layouts are within
// each other's bands, so that their order means nothing at this accuracy, and which lean on
// mechanisms no validation case covers (outside the validated envelope).
//
// Two entries are indistinguishable when each one's value lies inside the other's band:
// |ln(a / b)| <= min(q_a, q_b) (bands.hpp: the band of x is [x e^-q, x e^q]; objectives are
// iteration times, throughputs, MFU, costs: each a constant times the iteration time or its inverse,
// so one relative band fits them all). An entry without a finite band is indistinguishable from any.
//
// Example:
//   const plan::RankingAccuracy a = plan::judge_ranking({{14.40, b1, e1, "#1"}, {14.41, b2, e2, "#2"}});
//   // a.tied == 2: "#1-#2 are indistinguishable at this accuracy (...)"

#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/envelope.hpp"

namespace trainsim::plan {

class Search;
struct SearchResult;
struct CompareResult;

struct RankedEntry {
  double value = 0;   // the objective, best first (either direction)
  Band band;
  Envelope envelope;
  std::string label;  // "#1", or a configuration's label
};

struct RankingAccuracy {
  std::vector<RankedEntry> entries;
  size_t tied = 0;                     // entries[0 .. tied) are indistinguishable from each other
  std::optional<size_t> best_inside;   // the first entry inside the validated envelope

  // The lines search and compare print: the tie, then each entry outside the envelope with why,
  // and where the best is outside it, the best one inside.
  std::vector<std::string> lines() const;
  // {tied, summary (the tie's line), lines, best_inside_envelope (its label; absent when none is)}
  core::Json to_json() const;
};

// Whether a and b (values with their bands) are within each other's bands.
bool indistinguishable(double a, const Band& qa, double b, const Band& qb);

// REQUIRES: entries best first. tied: the longest prefix whose entries are pairwise
// indistinguishable.
RankingAccuracy judge_ranking(std::vector<RankedEntry> entries);

// The first `count` ranked layouts of a search, each with its band and envelope from `set`.
RankingAccuracy search_accuracy(const Search& search, const SearchResult& result, size_t count, const BandSet& set);
// The configurations of a comparison that ran, fastest iteration first, each with the band and
// envelope its report carries (a report without them: no finite band, not validated).
RankingAccuracy compare_accuracy(const CompareResult& result);

}  // namespace trainsim::plan

#pragma once
// Prices per GPU type (--price H100=2.5,A100=1.3 on search, compare and sweep): one price list
// ranks or compares several GPU types at their own prices, where cluster.price_per_gpu_hour gives
// one price per scenario.
//
// Example:
//   const PriceList prices = parse_prices({"H100=2.5", "A100=1.3"}, "--price");
//   prices.for_gpu("H100-SXM5-80GB", "--price");  // 2.5
//   apply_prices(scenario, prices, "--price");     // scenario.cluster.price_per_gpu_hour = its GPU's

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {

// Prices per GPU type (--price H100=2.5,A100=1.3 on search, compare and sweep). A name matches a GPU
// whose name it is, or whose name begins with it and a '-' or ' ' ("H100" for "H100-SXM5-80GB" and
// "H100-SXM5-80GB (custom)").
struct PriceList {
  std::vector<std::pair<std::string, double>> prices;  // as given, USD per GPU-hour
  bool empty() const { return prices.empty(); }
  // The price of `gpu`; InputError naming `flag` when two names match it.
  std::optional<double> for_gpu(const std::string& gpu, const std::string& flag) const;
  // InputError naming `flag` for a name that matches none of `gpus` (a typo prices nothing).
  void check_used(const std::vector<std::string>& gpus, const std::string& flag) const;
  core::Json to_json() const;  // {"H100": 2.5, ...}
};
// Reads "NAME=USD" entries (USD from 0.001 to 1000, cluster.price_per_gpu_hour's range); InputError
// naming `flag` for a malformed entry or a name given twice.
PriceList parse_prices(const std::vector<std::string>& entries, const std::string& flag);

// The scenario's cluster.price_per_gpu_hour set to its GPU's price in `prices` when one matches;
// unchanged otherwise.
void apply_prices(Scenario& s, const PriceList& prices, const std::string& flag);

}  // namespace trainsim::plan

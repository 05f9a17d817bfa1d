#include "sim/plan/prices.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/error.hpp"

namespace trainsim::plan {

namespace {
// Whether price name `name` prices GPU `gpu` (PriceList).
bool price_matches(const std::string& name, const std::string& gpu) {
  return gpu == name ||
         (gpu.size() > name.size() && gpu.compare(0, name.size(), name) == 0 && (gpu[name.size()] == '-' || gpu[name.size()] == ' '));
}
}  // namespace

std::optional<double> PriceList::for_gpu(const std::string& gpu, const std::string& flag) const {
  std::optional<std::pair<std::string, double>> found;
  for (const auto& [name, usd] : prices) {
    if (!price_matches(name, gpu)) continue;
    if (found) {
      throw core::InputError(flag, "", fmt::format("\"{}\" and \"{}\" both price the GPU {}: give one", found->first, name, gpu));
    }
    found = {name, usd};
  }
  if (!found) return std::nullopt;
  return found->second;
}

void PriceList::check_used(const std::vector<std::string>& gpus, const std::string& flag) const {
  for (const auto& [name, usd] : prices) {
    if (std::none_of(gpus.begin(), gpus.end(), [&](const std::string& g) { return price_matches(name, g); })) {
      std::string list;
      for (const std::string& g : gpus) list += fmt::format("{}{}", list.empty() ? "" : ", ", g);
      throw core::InputError(flag, "", fmt::format("\"{}\" prices none of the GPUs here ({}): expected a GPU name or "
                                                   "the part of one before a '-' (\"H100\" for H100-SXM5-80GB)",
                                                   name, list));
    }
  }
}

core::Json PriceList::to_json() const {
  core::Json j = core::Json::object();
  for (const auto& [name, usd] : prices) j[name] = usd;
  return j;
}

PriceList parse_prices(const std::vector<std::string>& entries, const std::string& flag) {
  PriceList list;
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    size_t used = 0;
    double usd = 0;
    if (eq != std::string::npos && eq > 0) {
      try {
        usd = std::stod(e.substr(eq + 1), &used);
      } catch (const std::exception&) {
        used = 0;
      }
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || eq + 1 + used != e.size()) {
      throw core::InputError(flag, "", fmt::format("expected NAME=USD per GPU-hour (\"H100=2.5\"), found \"{}\"", e));
    }
    // cluster.price_per_gpu_hour's range (network/cluster.hpp).
    if (!(usd >= 0.001 && usd <= 1000)) {
      throw core::InputError(flag, "", fmt::format("expected USD per GPU-hour from 0.001 to 1000 for {}, found {}",
                                                   e.substr(0, eq), e.substr(eq + 1)));
    }
    const std::string name = e.substr(0, eq);
    for (const auto& [given, v] : list.prices) {
      if (given == name) throw core::InputError(flag, "", fmt::format("a price for \"{}\" is given twice", name));
    }
    list.prices.emplace_back(name, usd);
  }
  return list;
}

void apply_prices(Scenario& s, const PriceList& prices, const std::string& flag) {
  if (const std::optional<double> price = prices.for_gpu(s.cluster.gpu, flag)) s.cluster.price_per_gpu_hour = *price;
}

}  // namespace trainsim::plan

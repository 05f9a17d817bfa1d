#pragma once
// Error bands: how far a prediction may be from what the job will measure, judged by how far
// trainsim was from measured runs like it (docs/validation.md, "Error bands").
//
// The validation cases (validation/*/) are predicted with the analytic backend and each case's
// residuals are kept in a bands file, validation/bands.json (`trainsim validate DIRS --backend
// analytic --write-bands FILE`; the shipped one is built into the binary, builtin_band_set()).
//   residual    r = ln(predicted / measured) for the case's judged figure when it is a time figure
//               (iteration_time_s, or model_tflops_per_gpu, tokens_per_s, mfu,
//               hardware_tflops_per_gpu inverted: for one job each is inversely proportional to its
//               iteration time), and for peak_memory_gib wherever the case measures it
//   similarity  a prediction's group is the narrowest of SimilarityLevel's groups of cases whose
//               band is finite:
//                 1 same stack, GPU generation and parallelism mix, GPU count within SIMILAR_SCALE
//                 2 same stack and GPU generation
//                 3 same stack
//                 4 same GPU generation
//                 5 every case
//   band        split-conformal: q = the ceil((n + 1) x coverage)-th smallest |r| of the group's n
//               residuals, infinite when that rank exceeds n (fewer than 4 cases at 80%: the next,
//               wider group is tried). The band of a figure x is [x e^-q, x e^q]. Were the residuals
//               exchangeable, it would hold the measured value with probability >= coverage (Vovk,
//               Gammerman and Shafer 2005; Lei et al., JASA 2018); the finite-sample rank is what
//               widens the band where few cases are close.
// Iteration time, throughput, TFLOP/s per GPU, MFU/HFU, time to train and cost share the time
// residuals (each is a constant times the iteration time or its inverse); peak memory has its own.
//
// Example:
//   const plan::BandSet& set = plan::builtin_band_set();
//   const plan::Band b = plan::time_band(set, plan::traits_of(scenario));
//   // b.finite(): the iteration time lies in [b.low(t), b.high(t)] for 80% of cases like it

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/case_traits.hpp"

namespace trainsim::plan {

struct ValidateResult;  // validate.hpp

inline constexpr double BAND_COVERAGE = 0.8;

// One validation case's record in a bands file.
struct BandCase {
  std::string name;
  std::string file;
  CaseTraits traits;
  std::optional<double> time_residual;    // ln(predicted / measured) of the iteration time
  std::string time_figure;                // the measured figure it comes from ("tokens_per_s", ...)
  std::optional<double> memory_residual;  // ln(predicted / measured) of peak memory
};

struct BandSet {
  std::string source;   // where it was read from: "validation/bands.json (built in)" or a file
  std::string backend = "analytic";  // the backend that predicted the cases
  double coverage = BAND_COVERAGE;
  std::vector<BandCase> cases;
};

enum class Residual { TIME, MEMORY };

struct Band {
  double relative = std::numeric_limits<double>::infinity();  // q: the figure x lies in [x e^-q, x e^q]
  int level = 0;                   // 1-5 (see the top of this file); 0 with a finite band: from the
                                   // iterations of a calibrated profile's own run (calibration_run.hpp);
                                   // 0 otherwise: no finite band
  std::string group;               // the group in words: "stack megatron, ampere GPUs, TP+PP+DP, 384-6144 GPUs"
  std::vector<std::string> cases;  // the group's cases (a calibrated run: one entry per measured iteration)

  bool finite() const { return std::isfinite(relative); }
  double low(double x) const { return x * std::exp(-relative); }
  double high(double x) const { return x * std::exp(relative); }
  // The half-width in percent of the figure, rounded up: "+/-6%" reads e^q - 1.
  double percent() const { return 100 * (std::exp(relative) - 1); }
};

// Whether case traits `c` belong to `target`'s group at similarity `level` (1-5, the rule above).
bool in_similarity_group(const CaseTraits& c, const CaseTraits& target, int level);
// The group of `target` at `level` in words ("stack megatron, ampere GPUs, TP+PP+DP, 96-1536 GPUs").
std::string similarity_group_text(const CaseTraits& target, int level);

// The conformal rank quantile of |residuals| at `coverage`: the ceil((n + 1) coverage)-th smallest
// absolute value, or infinity when that rank exceeds n (or n is 0). REQUIRES: 0 < coverage < 1.
double conformal_quantile(std::vector<double> residuals, double coverage);

// The band of `target` from `set`'s residuals of `kind`, leaving out the case named `leave_out`
// ("" leaves none out). Band::level 0 when even every case together is too few.
Band band_for(const BandSet& set, const CaseTraits& target, Residual kind, const std::string& leave_out = "");

// The held-out check: each case with a residual of `kind` gets the band computed without it and is
// inside when |its residual| <= the band's q.
struct HeldOutCase {
  std::string name;
  double residual = 0;
  Band band;
  bool inside = false;
};
struct HeldOutCheck {
  std::vector<HeldOutCase> cases;  // those with a finite band
  size_t inside = 0;
  double coverage() const { return cases.empty() ? 0.0 : double(inside) / double(cases.size()); }
};
HeldOutCheck held_out_check(const BandSet& set, Residual kind);

// The records of a validation's compared cases (cases that could not run are left out). A case's
// time residual comes from its judged figure when that is a time figure; a case judged on peak
// memory gives only a memory residual (its throughputs were judged unfit to compare).
BandSet band_set_from(const ValidateResult& result, const std::string& backend);
// Cases of `extra` replace those of `base` with the same name, the rest are appended: a user's own
// cases tighten the bands near them.
BandSet merge_band_sets(const BandSet& base, const BandSet& extra);

// The bands file ("schema": "trainsim.bands/1"): coverage, backend, rule, held_out {time, memory: each
// {cases, inside, coverage, per_case: [{name, residual, band, level, group_cases, inside}]}} (what
// held_out_check gives; informative, not read back) and cases (BandCase).
core::Json band_set_json(const BandSet& set);
// Reads a bands file; InputError naming the file and pointer for anything malformed.
BandSet read_band_set(const core::Json& doc, const std::string& file);
BandSet load_band_set(const std::string& path);
// validation/bands.json as it was when trainsim was built.
const BandSet& builtin_band_set();
// The bands a prediction uses: the built-in ones, with the cases of a user's bands file (--bands;
// empty: none) merged in (merge_band_sets). InputError naming the file for a bad one.
BandSet band_set_with(const std::string& user_file);

}  // namespace trainsim::plan

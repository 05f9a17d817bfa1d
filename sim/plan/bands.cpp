#include "sim/plan/bands.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

#include "sim/plan/builtin_bands.hpp"
#include "sim/plan/validate.hpp"

namespace trainsim::plan {
namespace {

constexpr const char* SCHEMA = "trainsim.bands/1";
constexpr int WIDEST_LEVEL = 5;

bool is_time_figure(const std::string& metric) { return metric != "peak_memory_gib"; }

const std::optional<double>& residual_of(const BandCase& c, Residual kind) {
  return kind == Residual::TIME ? c.time_residual : c.memory_residual;
}

core::Json held_out_json(const BandSet& set, Residual kind) {
  const HeldOutCheck h = held_out_check(set, kind);
  core::Json per_case = core::Json::array();
  for (const HeldOutCase& c : h.cases) {
    per_case.push_back({{"name", c.name}, {"residual", c.residual}, {"band", c.band.relative}, {"level", c.band.level},
                        {"group_cases", c.band.cases.size()}, {"inside", c.inside}});
  }
  return {{"cases", h.cases.size()}, {"inside", h.inside}, {"coverage", h.coverage()}, {"per_case", per_case}};
}

}  // namespace

// Whether `c` belongs to `target`'s group at `level` (bands.hpp: the similarity rule).
bool in_similarity_group(const CaseTraits& c, const CaseTraits& target, int level) {
  switch (level) {
    case 1: return c.stack == target.stack && c.generation == target.generation && c.mix == target.mix &&
                   similar_scale(c.gpus, target.gpus);
    case 2: return c.stack == target.stack && c.generation == target.generation;
    case 3: return c.stack == target.stack;
    case 4: return c.generation == target.generation;
    default: return true;
  }
}

std::string similarity_group_text(const CaseTraits& t, int level) {
  switch (level) {
    case 1: return fmt::format("stack {}, {} GPUs, {}, {:g}-{:g} GPUs", t.stack, t.generation, t.mix,
                               std::max(1.0, std::ceil(t.gpus / SIMILAR_SCALE)), t.gpus * SIMILAR_SCALE);
    case 2: return fmt::format("stack {}, {} GPUs", t.stack, t.generation);
    case 3: return fmt::format("stack {}", t.stack);
    case 4: return fmt::format("{} GPUs", t.generation);
    default: return "every validation case";
  }
}

double conformal_quantile(std::vector<double> residuals, double coverage) {
  TRAINSIM_CHECK(coverage > 0 && coverage < 1, fmt::format("coverage {} is not in (0, 1)", coverage));
  const size_t n = residuals.size();
  // ceil((n + 1) coverage), computed so that an exact product (e.g. 5 x 0.8) is not pushed up by rounding.
  const size_t rank = static_cast<size_t>(std::ceil((static_cast<double>(n) + 1) * coverage - 1e-9));
  if (n == 0 || rank > n) return std::numeric_limits<double>::infinity();
  for (double& r : residuals) r = std::abs(r);
  std::nth_element(residuals.begin(), residuals.begin() + static_cast<std::ptrdiff_t>(rank - 1), residuals.end());
  return residuals[rank - 1];
}

Band band_for(const BandSet& set, const CaseTraits& target, Residual kind, const std::string& leave_out) {
  for (int level = 1; level <= WIDEST_LEVEL; ++level) {
    Band b;
    std::vector<double> residuals;
    for (const BandCase& c : set.cases) {
      const std::optional<double>& r = residual_of(c, kind);
      if (!r || (!leave_out.empty() && c.name == leave_out) || !in_similarity_group(c.traits, target, level)) continue;
      residuals.push_back(*r);
      b.cases.push_back(c.name);
    }
    b.relative = conformal_quantile(residuals, set.coverage);
    if (b.finite()) {
      b.level = level;
      b.group = similarity_group_text(target, level);
      return b;
    }
  }
  return Band{};
}

HeldOutCheck held_out_check(const BandSet& set, Residual kind) {
  HeldOutCheck h;
  for (const BandCase& c : set.cases) {
    const std::optional<double>& r = residual_of(c, kind);
    if (!r) continue;
    HeldOutCase held{c.name, *r, band_for(set, c.traits, kind, c.name), false};
    if (!held.band.finite()) continue;
    held.inside = std::abs(*r) <= held.band.relative;
    h.inside += held.inside ? 1 : 0;
    h.cases.push_back(std::move(held));
  }
  return h;
}

BandSet band_set_from(const ValidateResult& result, const std::string& backend) {
  BandSet set;
  set.backend = backend.empty() ? "the cases' own" : backend;
  for (const ValidationCase& c : result.cases) {
    if (c.outcome != CaseOutcome::COMPARED || !c.traits) continue;
    BandCase b;
    b.name = c.name;
    b.file = c.file;
    b.traits = *c.traits;
    const ComparedFigure& judged = c.judged();
    if (is_time_figure(judged.metric)) {
      const double r = std::log(judged.predicted / judged.measured);
      // A throughput predicted high is an iteration time predicted low.
      b.time_residual = judged.metric == "iteration_time_s" ? r : -r;
      b.time_figure = judged.metric;
    }
    for (const ComparedFigure& f : c.figures) {
      if (!is_time_figure(f.metric)) b.memory_residual = std::log(f.predicted / f.measured);
    }
    if (b.time_residual || b.memory_residual) set.cases.push_back(std::move(b));
  }
  return set;
}

BandSet merge_band_sets(const BandSet& base, const BandSet& extra) {
  BandSet out = base;
  out.source = base.source.empty() ? extra.source : fmt::format("{} + {}", base.source, extra.source);
  for (const BandCase& e : extra.cases) {
    auto same = std::find_if(out.cases.begin(), out.cases.end(), [&](const BandCase& c) { return c.name == e.name; });
    if (same != out.cases.end()) {
      *same = e;
    } else {
      out.cases.push_back(e);
    }
  }
  return out;
}

core::Json band_set_json(const BandSet& set) {
  core::Json j;
  j["schema"] = SCHEMA;
  j["coverage"] = set.coverage;
  j["backend"] = set.backend;
  j["rule"] =
      "residual r = ln(predicted / measured) (time: the judged figure, throughputs inverted; memory: peak_memory_gib); "
      "band q = the ceil((n+1) x coverage)-th smallest |r| of the narrowest group with a finite q: 1 same stack, GPU "
      "generation, parallelism mix and GPUs within 4x; 2 same stack and generation; 3 same stack; 4 same generation; "
      "5 every case. Figure x: [x e^-q, x e^q] (docs/validation.md, Error bands)";
  j["held_out"] = {{"time", held_out_json(set, Residual::TIME)}, {"memory", held_out_json(set, Residual::MEMORY)}};
  core::Json cases = core::Json::array();
  for (const BandCase& c : set.cases) {
    core::Json cj{{"name", c.name}, {"file", c.file}, {"traits", c.traits.to_json()}};
    if (c.time_residual) {
      cj["time_residual"] = *c.time_residual;
      cj["time_figure"] = c.time_figure;
    }
    if (c.memory_residual) cj["memory_residual"] = *c.memory_residual;
    cases.push_back(cj);
  }
  j["cases"] = cases;
  return j;
}

BandSet read_band_set(const core::Json& doc, const std::string& file) {
  core::Diagnostics diag;
  core::ObjectReader r(doc, file, "", diag);
  BandSet set;
  set.source = file;
  const std::string schema = r.string("schema", "");
  if (schema != SCHEMA) {
    r.problem("schema", fmt::format("expected \"{}\" (a file written by `trainsim validate --write-bands`), found \"{}\"",
                                    SCHEMA, schema));
  }
  set.coverage = r.number("coverage", BAND_COVERAGE, 0.01, 0.99);
  set.backend = r.string("backend", set.backend);
  r.string("rule", "");
  r.raw("held_out");
  const core::Json* cases = r.raw("cases");
  if (cases == nullptr || !cases->is_array()) {
    r.problem("cases", fmt::format("expected an array of validation case records, found {}",
                                   cases == nullptr ? std::string("nothing") : core::describe_json(*cases)));
  } else {
    for (size_t i = 0; i < cases->size(); ++i) {
      core::ObjectReader c((*cases)[i], file, core::append_pointer("/cases", i), diag);
      BandCase b;
      b.name = c.required_string("name").value_or("");
      b.file = c.string("file", "");
      if (std::optional<core::ObjectReader> t = c.object("traits")) {
        b.traits = CaseTraits::from_json(*t);
        t->finish();
      } else {
        c.problem("traits", "missing: each case records its traits (stack, generation, mix, gpus, mechanisms)");
      }
      if (c.has("time_residual")) b.time_residual = c.number("time_residual", 0, -10, 10);
      b.time_figure = c.string("time_figure", "");
      if (c.has("memory_residual")) b.memory_residual = c.number("memory_residual", 0, -10, 10);
      c.finish();
      set.cases.push_back(std::move(b));
    }
  }
  r.finish();
  diag.throw_if_any();
  return set;
}

BandSet load_band_set(const std::string& path) { return read_band_set(core::load_json_file(path), path); }

BandSet band_set_with(const std::string& user_file) {
  return user_file.empty() ? builtin_band_set() : merge_band_sets(builtin_band_set(), load_band_set(user_file));
}

const BandSet& builtin_band_set() {
  static const BandSet set = [] {
    const std::string_view text = builtin_bands_text();
    if (text.empty()) {
      BandSet none;
      none.source = "none (validation/bands.json was missing when trainsim was built)";
      return none;
    }
    BandSet s = read_band_set(core::parse_json_text(std::string(text), "validation/bands.json"), "validation/bands.json");
    s.source = "validation/bands.json (built in)";
    return s;
  }();
  return set;
}

}  // namespace trainsim::plan

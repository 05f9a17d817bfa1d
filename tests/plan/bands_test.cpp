// Error bands and the validated envelope (sim/plan/bands.hpp, envelope.hpp), on hand-made residuals
// whose quantiles and held-out coverage are worked out by hand in each test.

#include <gtest/gtest.h>

#include <cmath>

#include "sim/core/error.hpp"
#include "sim/plan/bands.hpp"
#include "sim/plan/envelope.hpp"
#include "sim/plan/ranking_accuracy.hpp"
#include "sim/plan/scenario.hpp"

namespace trainsim::plan {
namespace {

CaseTraits traits(const std::string& stack, const std::string& generation, const std::string& mix, int gpus) {
  CaseTraits t;
  t.stack = stack;
  t.generation = generation;
  t.mix = mix;
  t.gpus = gpus;
  return t;
}

BandCase time_case(const std::string& name, const CaseTraits& t, double residual) {
  BandCase c;
  c.name = name;
  c.traits = t;
  c.time_residual = residual;
  c.time_figure = "iteration_time_s";
  return c;
}

TEST(Bands, ConformalQuantileIsTheCeilOfNPlusOneTimesCoverageThSmallestAbsoluteResidual) {
  // n = 9 at 80%: rank ceil(10 x 0.8) = 8; |r| sorted 0.01..0.09, the 8th is 0.08.
  EXPECT_DOUBLE_EQ(conformal_quantile({0.01, -0.02, 0.03, -0.04, 0.05, -0.06, 0.07, -0.08, 0.09}, 0.8), 0.08);
  // n = 4: rank ceil(5 x 0.8) = 4, the largest (the exact product must not round up to 5).
  EXPECT_DOUBLE_EQ(conformal_quantile({-0.10, 0.02, 0.03, 0.01}, 0.8), 0.10);
  // n = 3: rank ceil(4 x 0.8) = 4 > 3: no finite band from three cases.
  EXPECT_TRUE(std::isinf(conformal_quantile({0.01, 0.02, 0.03}, 0.8)));
  EXPECT_TRUE(std::isinf(conformal_quantile({}, 0.8)));
  // n = 19 at 90%: rank ceil(20 x 0.9) = 18.
  std::vector<double> r;
  for (int i = 1; i <= 19; ++i) r.push_back(i % 2 ? i / 100.0 : -i / 100.0);
  EXPECT_DOUBLE_EQ(conformal_quantile(r, 0.9), 0.18);
}

TEST(Bands, TheNarrowestGroupWithAFiniteBandIsTaken) {
  const CaseTraits target = traits("megatron", "ampere", "TP+PP+DP", 512);
  BandSet set;
  // Level 1 (same stack, generation, mix, GPUs within 4x): two cases, too few.
  set.cases.push_back(time_case("close-a", traits("megatron", "ampere", "TP+PP+DP", 256), 0.01));
  set.cases.push_back(time_case("close-b", traits("megatron", "ampere", "TP+PP+DP", 1024), -0.02));
  // Same stack and generation, another mix or scale: level 2 has 5 cases, rank ceil(6 x 0.8) = 5.
  set.cases.push_back(time_case("far-scale", traits("megatron", "ampere", "TP+PP+DP", 8), 0.04));
  set.cases.push_back(time_case("tp-only", traits("megatron", "ampere", "TP", 8), -0.06));
  set.cases.push_back(time_case("tp-dp", traits("megatron", "ampere", "TP+DP", 64), 0.03));
  // Another stack: outside level 2.
  set.cases.push_back(time_case("composer", traits("composer", "ampere", "FSDP", 64), 0.30));
  const Band b = band_for(set, target, Residual::TIME);
  ASSERT_TRUE(b.finite());
  EXPECT_EQ(b.level, 2);
  EXPECT_DOUBLE_EQ(b.relative, 0.06);
  EXPECT_EQ(b.cases.size(), 5u);
  EXPECT_NEAR(b.low(10.0), 10.0 * std::exp(-0.06), 1e-12);
  EXPECT_NEAR(b.high(10.0), 10.0 * std::exp(0.06), 1e-12);
  // Leaving one of the five out leaves four: rank ceil(5 x 0.8) = 4, the largest of the rest.
  const Band without = band_for(set, target, Residual::TIME, "tp-only");
  EXPECT_EQ(without.level, 2);
  EXPECT_DOUBLE_EQ(without.relative, 0.04);
  // A torchtitan job has no case of its stack: the generation's 6 cases (rank ceil(7 x 0.8) = 6).
  const Band other = band_for(set, traits("torchtitan", "ampere", "FSDP", 64), Residual::TIME);
  EXPECT_EQ(other.level, 4);
  EXPECT_DOUBLE_EQ(other.relative, 0.30);
  // No memory residual anywhere: no band.
  EXPECT_FALSE(band_for(set, target, Residual::MEMORY).finite());
}

TEST(Bands, HeldOutCoverageCountsTheCasesInsideTheBandOfTheOthers) {
  // Six alike cases. Left out, each has five others: rank ceil(6 x 0.8) = 5, the others' largest
  // |r|. 0.01-0.05 are inside (the others hold 0.20); 0.20 is outside (the others' largest is 0.05).
  BandSet set;
  const CaseTraits t = traits("megatron", "hopper", "TP+PP+DP", 512);
  const double residuals[] = {0.01, -0.02, 0.03, -0.04, 0.05, 0.20};
  for (int i = 0; i < 6; ++i) set.cases.push_back(time_case("case-" + std::to_string(i), t, residuals[i]));
  const HeldOutCheck h = held_out_check(set, Residual::TIME);
  ASSERT_EQ(h.cases.size(), 6u);
  EXPECT_EQ(h.inside, 5u);
  EXPECT_DOUBLE_EQ(h.coverage(), 5.0 / 6.0);
  EXPECT_FALSE(h.cases[5].inside);
  EXPECT_DOUBLE_EQ(h.cases[5].band.relative, 0.05);
  EXPECT_DOUBLE_EQ(h.cases[0].band.relative, 0.20);
}

TEST(Bands, TheShippedBandsHoldEightyPercentOfTheHeldOutCasesWithinTenPoints) {
  const BandSet set = load_band_set(std::string(TRAINSIM_SOURCE_DIR) + "/validation/bands.json");
  const HeldOutCheck h = held_out_check(set, Residual::TIME);
  ASSERT_GE(h.cases.size(), 20u);
  EXPECT_GE(h.coverage(), 0.70);
  EXPECT_LE(h.coverage(), 0.90);
}

TEST(Bands, AFileRoundTripsAndABadOneNamesItsField) {
  BandSet set;
  set.backend = "analytic";
  CaseTraits t = traits("composer", "ampere", "FSDP", 64);
  t.mechanisms.push_back({"fsdp", 64, "DP", "FSDP (ZeRO-3) parameter gathers at DP 64"});
  BandCase c = time_case("mpt", t, -0.125);
  c.memory_residual = 0.0625;
  set.cases.push_back(c);
  const BandSet back = read_band_set(band_set_json(set), "bands.json");
  ASSERT_EQ(back.cases.size(), 1u);
  EXPECT_EQ(back.cases[0].traits.mix, "FSDP");
  EXPECT_EQ(back.cases[0].traits.mechanisms.at(0).key, "fsdp");
  EXPECT_DOUBLE_EQ(*back.cases[0].time_residual, -0.125);
  EXPECT_DOUBLE_EQ(*back.cases[0].memory_residual, 0.0625);

  core::Json bad = band_set_json(set);
  bad["cases"][0]["time_residual"] = "large";
  try {
    read_band_set(bad, "mine.json");
    FAIL() << "a string residual was accepted";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mine.json: /cases/0/time_residual"), std::string::npos) << e.what();
  }
}

TEST(Envelope, AMechanismIsValidatedByACaseUsingItWithinFourTimesTheScale) {
  BandSet set;
  CaseTraits fsdp = traits("composer", "ampere", "FSDP", 128);
  fsdp.mechanisms.push_back({"fsdp", 128, "DP", "FSDP (ZeRO-3) parameter gathers at DP 128"});
  set.cases.push_back(time_case("mpt-128", fsdp, 0.02));
  CaseTraits small = fsdp;
  small.mechanisms[0].scale = 8;
  set.cases.push_back(time_case("mpt-8", small, 0.02));

  CaseTraits target = traits("composer", "ampere", "FSDP", 384);
  target.mechanisms.push_back({"fsdp", 384, "DP", "FSDP (ZeRO-3) parameter gathers at DP 384"});
  const Envelope near = envelope_of(set, target);
  ASSERT_EQ(near.lines.size(), 1u);
  EXPECT_TRUE(near.inside());  // 384 / 128 = 3 <= 4
  EXPECT_EQ(near.lines[0].nearest_case, "mpt-128");
  EXPECT_EQ(near.lines[0].verdict(), "validated: mpt-128 at DP 128");

  target.mechanisms[0] = {"fsdp", 1024, "DP", "FSDP (ZeRO-3) parameter gathers at DP 1024"};
  target.mechanisms.push_back({"nvls", 0, "", "NVLS (NVLink SHARP) collectives inside the node"});
  const Envelope far = envelope_of(set, target);
  EXPECT_FALSE(far.inside());  // 1024 / 128 = 8 > 4; no case uses NVLS
  EXPECT_EQ(far.lines[0].verdict(), "not at this scale: nearest mpt-128 at DP 128");
  EXPECT_EQ(far.lines[1].verdict(), "no validation case uses it");
  EXPECT_EQ(far.summary(),
            "outside the validated envelope: FSDP (ZeRO-3) parameter gathers at DP 1024 (not at this scale: nearest "
            "mpt-128 at DP 128); NVLS (NVLink SHARP) collectives inside the node (no validation case uses it)");
}

TEST(CaseTraits, ASc21CaseIsMegatronOnAmpereWithItsThreeAxes) {
  const Scenario s = load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/validation/training/megatron-sc21-t1-145.6B.json");
  const CaseTraits t = traits_of(s);
  EXPECT_EQ(t.stack, "megatron");
  EXPECT_EQ(t.generation, "ampere");
  EXPECT_EQ(t.mix, "TP+PP+DP");
  EXPECT_EQ(t.gpus, 1536);
  auto find = [&t](const std::string& key) {
    for (const MechanismUse& m : t.mechanisms) {
      if (m.key == key) return m.scale;
    }
    return -1.0;
  };
  EXPECT_EQ(find("tensor"), 8);
  EXPECT_EQ(find("data"), 1536 / (8 * 8));
  EXPECT_EQ(find("stack:megatron"), 1536);
  EXPECT_EQ(find("fsdp"), -1);
  EXPECT_EQ(gpu_generation("H200-SXM-141GB"), "hopper");
  EXPECT_EQ(gpu_generation("my-gpu"), "other");
}

}  // namespace
}  // namespace trainsim::plan

namespace trainsim::plan {
namespace {

Band band_of(double relative) {
  Band b;
  b.relative = relative;
  b.level = 1;
  return b;
}

Envelope envelope_with(bool validated, const std::string& what) {
  Envelope e;
  EnvelopeLine l;
  l.use = {"fsdp", 384, "DP", what};
  l.validated = validated;
  l.nearest_case = validated ? "case" : "";
  e.lines.push_back(l);
  return e;
}

TEST(Ranking, TwoLayoutsATenthOfAPercentApartAreTied) {
  const double q = std::log(1.05);  // +/-5%
  const RankingAccuracy a = judge_ranking({{10.00, band_of(q), envelope_with(true, "a"), "#1"},
                                           {10.01, band_of(q), envelope_with(true, "b"), "#2"},
                                           {12.00, band_of(q), envelope_with(true, "c"), "#3"}});
  EXPECT_EQ(a.tied, 2u);  // ln(10.01 / 10) = 0.001 <= 0.049; ln(12 / 10) = 0.18 > 0.049
  ASSERT_FALSE(a.lines().empty());
  EXPECT_EQ(a.lines()[0], "#1-#2 are indistinguishable at this accuracy: within each other's 80% error bands (+/-5.0% for #1)");
  EXPECT_EQ(a.best_inside, std::optional<size_t>(0));
}

TEST(Ranking, TheNarrowerBandDecidesAndAnUnvalidatedLeaderIsFlagged) {
  // 4% apart: inside #2's +/-5% band but not #1's +/-2%: not within each other's bands.
  const RankingAccuracy a = judge_ranking({{100, band_of(std::log(1.02)), envelope_with(false, "FSDP gathers at DP 1024"), "#1"},
                                           {104, band_of(std::log(1.05)), envelope_with(true, "b"), "#2"}});
  EXPECT_EQ(a.tied, 1u);
  const std::vector<std::string> lines = a.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "#1 is ahead of #2 by more than #1's 80% error band but within #2's (4.0% apart; +/-2.0% and +/-5.0%)");
  EXPECT_EQ(lines[1], "#1 is outside the validated envelope: FSDP gathers at DP 1024 (no validation case uses it)");
  EXPECT_EQ(lines[2], "#1's advantage rests on mechanisms outside the validated envelope; the best inside it is #2 (4.0% behind)");
}

TEST(Ranking, ALeadBeyondBothBandsSaysSo) {
  // 10% apart: ln(1.1) = 0.095 > ln(1.02) and > ln(1.05).
  const RankingAccuracy a = judge_ranking({{100, band_of(std::log(1.02)), envelope_with(true, "a"), "#1"},
                                           {110, band_of(std::log(1.05)), envelope_with(true, "b"), "#2"}});
  EXPECT_EQ(a.tied, 1u);
  ASSERT_FALSE(a.lines().empty());
  EXPECT_EQ(a.lines()[0], "#1 is ahead of #2 by more than their 80% error bands (10.0% apart; +/-2.0% and +/-5.0%)");
}

}  // namespace
}  // namespace trainsim::plan

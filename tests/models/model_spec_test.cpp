#include "models/model_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace trainsim::models {
namespace {

const ModelSpec& catalog(const std::string& name) {
  const ModelSpec* m = find_model(name);
  EXPECT_NE(m, nullptr) << name;
  return *m;
}

ModelSpec parse(const std::string& text, core::Diagnostics& diag) {
  return ModelSpec::from_json(core::parse_json_text(text, "s.json"), "s.json", "/model", diag);
}

TEST(ModelCatalog, Gpt3_175bMatchesThePaperFormula) {
  // Narayanan et al. 2021, Eq. 2 counts 12·l·h² weights per layer; with biases and layer norms a GPT
  // layer holds 12·h² + 13·h, plus V·h word and s·h position embeddings and the final norm's 2·h.
  const ModelSpec& m = catalog("gpt3-175b");
  const int64_t l = 96, h = 12288, V = 51200, s = 2048;
  const int64_t expected = 12 * l * h * h + 13 * l * h + V * h + s * h + 2 * h;
  EXPECT_EQ(m.parameter_count(s), expected);
  // Brown et al. 2020, Table 2.1: 175.0B.
  EXPECT_NEAR(static_cast<double>(m.parameter_count(s)) / 175e9, 1.0, 0.005);
}

TEST(ModelCatalog, Llama3CountsMatchThePublishedSizes) {
  // Llama Team 2024, Table 3 names the models 8B / 70B / 405B; the released checkpoints hold
  // 8.03e9, 70.6e9 and 405.9e9 parameters (Hugging Face model cards).
  EXPECT_NEAR(static_cast<double>(catalog("llama3-8b").parameter_count(8192)) / 8.03e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(catalog("llama3-70b").parameter_count(8192)) / 70.6e9, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(catalog("llama3-405b").parameter_count(8192)) / 405.9e9, 1.0, 0.01);
  // Exact: the safetensors index of meta-llama/Meta-Llama-3-8B and -70B.
  EXPECT_EQ(catalog("llama3-8b").parameter_count(8192), 8030261248);
  EXPECT_EQ(catalog("llama3-70b").parameter_count(8192), 70553706496);
}

TEST(ModelCatalog, BloomIncludesItsEmbeddingNorm) {
  // bigscience/bloom's checkpoint: 176,247,271,424 parameters (ALiBi: no position table).
  EXPECT_EQ(catalog("bloom-176b").parameter_count(2048), 176247271424);
}

TEST(ModelCatalog, EveryEntryIsConsistentAndCited) {
  for (const ModelSpec& m : model_catalog()) {
    EXPECT_EQ(m.hidden % m.heads, 0) << m.name;
    EXPECT_EQ(m.heads % m.kv_heads, 0) << m.name;
    EXPECT_FALSE(m.source.empty()) << m.name;
  }
  EXPECT_EQ(catalog("megatron-1t").layers, 128);
  EXPECT_EQ(catalog("mt-nlg-530b").hidden, 20480);
  EXPECT_EQ(catalog("gpt3-13b").hidden, 5120);
}

TEST(ModelSpecJson, CatalogNameAndDidYouMean) {
  core::Diagnostics diag;
  EXPECT_EQ(parse(R"("gpt3-175b")", diag).layers, 96);
  EXPECT_TRUE(diag.empty());
  parse(R"("gpt-3-175b")", diag);
  ASSERT_EQ(diag.size(), 1u);
  EXPECT_EQ(diag.problems()[0].to_string(), "s.json: /model: unknown model \"gpt-3-175b\" (did you mean \"gpt3-175b\"?)");
  parse("12", diag);
  ASSERT_EQ(diag.size(), 2u);
  EXPECT_EQ(diag.problems()[1].to_string(), "s.json: /model: expected a catalog model name or an object, found 12");
}

TEST(ModelSpecJson, BaseWithOverrides) {
  core::Diagnostics diag;
  const ModelSpec m = parse(R"({"base": "gpt3-175b", "layers": 48})", diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(m.layers, 48);
  EXPECT_EQ(m.hidden, 12288);
  EXPECT_EQ(m.name, "gpt3-175b (modified)");
  // A wider GQA base keeps its kv_heads; a GPT base follows the new heads and the 4h rule.
  const ModelSpec llama = parse(R"({"base": "llama3-8b", "heads": 16})", diag);
  EXPECT_EQ(llama.kv_heads, 8);
  const ModelSpec gpt = parse(R"({"base": "gpt3-125m", "hidden": 1024, "heads": 16})", diag);
  EXPECT_EQ(gpt.kv_heads, 16);
  EXPECT_EQ(gpt.ffn_hidden, 4096);
  EXPECT_TRUE(diag.empty());
}

TEST(ModelSpecJson, FullSpecDefaultsAndRoundTrip) {
  core::Diagnostics diag;
  const ModelSpec m = parse(
      R"({"family": "transformer", "layers": 4, "hidden": 512, "heads": 8, "vocab": 1000, "activation": "swiglu"})", diag);
  ASSERT_TRUE(diag.empty());
  EXPECT_EQ(m.name, "custom");
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.ffn_hidden, 2048);
  EXPECT_EQ(m.activation, Activation::SWIGLU);
  const ModelSpec again = ModelSpec::from_json(m.to_json(), "x", "/model", diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(again.to_json(), m.to_json());
  EXPECT_EQ(catalog("llama3-70b").to_json(),
            ModelSpec::from_json(catalog("llama3-70b").to_json(), "x", "/model", diag).to_json());
}

TEST(ModelSpecJson, ReportsEveryProblem) {
  core::Diagnostics diag;
  parse(R"({"family": "transformer", "layers": 4, "hidden": 500, "heads": 8, "kv_heads": 3,
            "vocab": 1000, "experts": 2, "top_k": 4, "activaton": "gelu"})",
        diag);
  std::vector<std::string> got;
  for (const core::InputProblem& p : diag.problems()) got.push_back(p.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "s.json: /model/activaton: unknown key \"activaton\" (did you mean \"activation\"?)",
                     "s.json: /model/heads: heads (8) must divide hidden (500) unless head_dim is given",
                     "s.json: /model/kv_heads: kv_heads (3) must divide heads (8)",
                     "s.json: /model/top_k: top_k (4) must not exceed experts (2)"}));
  diag = {};
  parse(R"({"family": "transformer", "hidden": 512})", diag);
  got.clear();
  for (const core::InputProblem& p : diag.problems()) got.push_back(p.to_string());
  EXPECT_EQ(got, (std::vector<std::string>{"s.json: /model/layers: missing required integer",
                                           "s.json: /model/heads: missing required integer",
                                           "s.json: /model/vocab: missing required integer"}));
}

}  // namespace
}  // namespace trainsim::models

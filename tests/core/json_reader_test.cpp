#include "sim/core/json_reader.hpp"

#include <gtest/gtest.h>

namespace trainsim::core {
namespace {

TEST(JsonReader, CommentsAreAllowed) {
  const Json j = parse_json_text("{ // a comment\n \"a\": 1 /* another */ }", "x.json");
  EXPECT_EQ(j["a"], 1);
}

TEST(JsonReader, SyntaxErrorNamesFileAndLine) {
  try {
    parse_json_text("{\n \"a\": 1,\n \"b\": }", "bad.json");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  }
}

TEST(JsonReader, UnknownKeySuggestsClosest) {
  const Json j = parse_json_text(R"({"tensr": 8, "pipeline": 2})", "s.json");
  Diagnostics diag;
  ObjectReader r(j, "s.json", "/parallelism", diag);
  r.integer("tensor", 1, 1);
  r.integer("pipeline", 1, 1);
  r.finish();
  ASSERT_EQ(diag.size(), 1u);
  EXPECT_EQ(diag.problems()[0].to_string(),
            "s.json: /parallelism/tensr: unknown key \"tensr\" (did you mean \"tensor\"?)");
}

TEST(JsonReader, CollectsEveryProblemWithPointers) {
  const Json j = parse_json_text(R"({"n": "eight", "bw": "200 Gb", "mode": "fulll", "x": 0})", "s.json");
  Diagnostics diag;
  ObjectReader r(j, "s.json", "", diag);
  EXPECT_EQ(r.integer("n", 3, 1), 3);
  r.bandwidth("bw", BytesPerSecond(1));
  r.choice("mode", "none", {"none", "selective", "full"});
  r.integer("x", 1, 1);
  r.finish();
  ASSERT_EQ(diag.size(), 4u);
  EXPECT_EQ(diag.problems()[0].to_string(), "s.json: /n: expected an integer, found \"eight\"");
  EXPECT_EQ(diag.problems()[1].pointer, "/bw");
  EXPECT_NE(diag.problems()[1].message.find("200 Gb/s"), std::string::npos);
  EXPECT_EQ(diag.problems()[2].to_string(),
            "s.json: /mode: expected one of \"none\", \"selective\" or \"full\", found \"fulll\" (did you mean \"full\"?)");
  EXPECT_EQ(diag.problems()[3].to_string(), "s.json: /x: expected an integer >= 1, found 0");
}

TEST(JsonReader, PointerEscaping) {
  EXPECT_EQ(append_pointer("/a", "b/c~d"), "/a/b~1c~0d");
  EXPECT_EQ(append_pointer("/a", size_t{3}), "/a/3");
}

TEST(JsonReader, MissingFileIsAnInputError) {
  EXPECT_THROW(load_json_file("/nonexistent/trainsim.json"), InputError);
}

}  // namespace
}  // namespace trainsim::core

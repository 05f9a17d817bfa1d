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

// `null` is never "absent": every accessor refuses it with its own "expected" (docs/hardening.md).
TEST(JsonReader, NullIsRefusedByEveryAccessor) {
  const Json j = parse_json_text(R"({"i": null, "ri": null, "n": null, "b": null, "s": null, "c": null,
                                     "q": null, "o": null, "a": null, "sa": null})",
                                 "s.json");
  Diagnostics diag;
  ObjectReader r(j, "s.json", "/x", diag);
  EXPECT_EQ(r.integer("i", 7, 1), 7);
  EXPECT_FALSE(r.required_integer("ri", 1).has_value());
  EXPECT_EQ(r.number("n", 0.5, 0, 1), 0.5);
  EXPECT_TRUE(r.boolean("b", true));
  EXPECT_EQ(r.string("s", "d"), "d");
  EXPECT_EQ(r.choice("c", "a", {"a", "b"}), "a");
  EXPECT_EQ(r.bytes("q", Bytes(1)).value(), 1);
  EXPECT_TRUE(r.object("o").has_value());  // read as an empty object after its problem
  EXPECT_TRUE(r.integer_array("a", 0, 9).empty());
  EXPECT_TRUE(r.string_array("sa").empty());
  r.finish();
  std::vector<std::string> messages;
  for (const InputProblem& p : diag.problems()) messages.push_back(p.to_string());
  ASSERT_EQ(messages.size(), 10u) << testing::PrintToString(messages);
  EXPECT_EQ(messages[0], "s.json: /x/i: expected an integer, found null");
  EXPECT_EQ(messages[1], "s.json: /x/ri: expected an integer, found null");
  EXPECT_EQ(messages[2], "s.json: /x/n: expected a number, found null");
  EXPECT_EQ(messages[3], "s.json: /x/b: expected true or false, found null");
  EXPECT_EQ(messages[4], "s.json: /x/s: expected a string, found null");
  EXPECT_EQ(messages[5], "s.json: /x/c: expected one of \"a\" or \"b\", found null");
  EXPECT_EQ(messages[7], "s.json: /x/o: expected an object, found null");
  EXPECT_EQ(messages[8], "s.json: /x/a: expected an array of integers, found null");
  EXPECT_EQ(messages[9], "s.json: /x/sa: expected an array of strings, found null");
}

// Integers beyond int64 are echoed as written, never wrapped to a negative number.
TEST(JsonReader, HugeIntegersAreNotSignFlipped) {
  const Json j = parse_json_text(R"({"i": 18446744073709551615, "a": [18446744073709551615], "f": 1e300})", "s.json");
  Diagnostics diag;
  ObjectReader r(j, "s.json", "", diag);
  EXPECT_EQ(r.integer("i", 1, 1, 100), 1);
  EXPECT_TRUE(r.integer_array("a", 1, 100).empty());
  EXPECT_EQ(r.integer("f", 1, 1), 1);
  ASSERT_EQ(diag.size(), 3u);
  EXPECT_EQ(diag.problems()[0].message, "expected an integer in [1, 100], found 18446744073709551615");
  EXPECT_EQ(diag.problems()[1].message, "expected an integer in [1, 100], found 18446744073709551615");
  EXPECT_EQ(diag.problems()[2].message, "expected an integer >= 1, found 1e+300");
  EXPECT_EQ(exact_integer(Json(-5)), -5);
  EXPECT_EQ(exact_integer(Json(4.0)), 4);
  EXPECT_FALSE(exact_integer(Json(9223372036854775808.0)).has_value());
  EXPECT_FALSE(exact_integer(Json(0.5)).has_value());
}

// A long value is echoed cut to MAX_ECHO_CHARS with its length, not whole.
TEST(JsonReader, LongValuesAreTruncatedInMessages) {
  const Json j = {{"mode", std::string(200000, 'x')}};
  Diagnostics diag;
  ObjectReader r(j, "s.json", "", diag);
  r.choice("mode", "a", {"a", "b"});
  ASSERT_EQ(diag.size(), 1u);
  const std::string& m = diag.problems()[0].message;
  EXPECT_LT(m.size(), 200u) << m;
  EXPECT_NE(m.find("... (200002 characters)"), std::string::npos) << m;
  EXPECT_EQ(truncate_echo("short"), "short");
}

TEST(JsonReader, MissingFileIsAnInputError) {
  EXPECT_THROW(load_json_file("/nonexistent/trainsim.json"), InputError);
}

}  // namespace
}  // namespace trainsim::core

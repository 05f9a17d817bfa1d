#include "sim/report/svg.hpp"

#include <gtest/gtest.h>

namespace trainsim::report {
namespace {

TEST(XmlEscape, EscapesMarkupAndDropsControlCharacters) {
  EXPECT_EQ(xml_escape(R"(a<b & "c" > 'd')"), "a&lt;b &amp; &quot;c&quot; &gt; &#39;d&#39;");
  EXPECT_EQ(xml_escape(std::string("x\x01y\tz")), "x y\tz");
  EXPECT_EQ(xml_escape("tokens/s"), "tokens/s");
}

TEST(SvgDocument, EscapesTextAttributesAndTooltips) {
  SvgDocument svg(100, 50);
  svg.text(10, 20, "<script>&", text_style("middle", 12, "a\"b"));
  svg.rect(1, 2, 3, 4, "#fff", "bar", "p < q");
  const std::string s = svg.str(true);
  EXPECT_EQ(s.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(s.find("&lt;script&gt;&amp;</text>"), std::string::npos);
  EXPECT_NE(s.find("class=\"a&quot;b\""), std::string::npos);
  EXPECT_NE(s.find("<title>p &lt; q</title></rect>"), std::string::npos);
  EXPECT_EQ(s.find("<script>"), std::string::npos);
  EXPECT_EQ(s.substr(s.size() - 7), "</svg>\n");
  // Inline form: no XML declaration.
  EXPECT_EQ(svg.str().rfind("<svg ", 0), 0u);
}

TEST(SvgDocument, NumbersHaveAtMostTwoDecimals) {
  SvgDocument svg(10, 10);
  svg.circle(1.0 / 3.0, 2.5, 4, "red");
  EXPECT_NE(svg.str().find(R"(cx="0.33" cy="2.5" r="4")"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::report

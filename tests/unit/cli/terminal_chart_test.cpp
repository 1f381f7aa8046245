// The terminal chart of `kb history`: bar heights follow the values, the range labels show the
// extremes, the ASCII form has no multibyte characters, long series keep their newest points.
#include "cli/terminal_chart.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace kb::cli {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(TerminalChart, AsciiBarsRiseWithTheValues) {
  ChartOptions o;
  o.ascii = true;
  o.height = 4;
  const std::vector<std::string> lines = lines_of(render_terminal_chart({1.0, 2.0, 3.0}, o));
  ASSERT_EQ(lines.size(), 5u);  // 4 rows + the axis
  EXPECT_NE(lines[0].find("3"), std::string::npos);  // max label on the top row
  EXPECT_NE(lines[3].find("1"), std::string::npos);  // min label on the bottom row
  // Top row: only the largest value reaches it; bottom row: every bar has something.
  EXPECT_EQ(lines[0].substr(lines[0].size() - 3), "  #");
  EXPECT_EQ(lines[3].substr(lines[3].size() - 3).find(' '), std::string::npos);
  for (char c : render_terminal_chart({1.0, 2.0}, o)) EXPECT_LT(static_cast<unsigned char>(c), 128);
}

TEST(TerminalChart, UnicodeUsesBlockElementsAndFlatSeriesDraw) {
  ChartOptions o;
  const std::string chart = render_terminal_chart({1.0, 1.0, 1.0}, o);
  EXPECT_NE(chart.find("▁"), std::string::npos);
  EXPECT_EQ(render_terminal_chart({}, o), "");
}

TEST(TerminalChart, KeepsTheNewestColumns) {
  ChartOptions o;
  o.ascii = true;
  o.max_columns = 5;
  o.height = 2;
  std::vector<double> values(50, 1.0);
  values.back() = 9.0;
  const std::vector<std::string> lines = lines_of(render_terminal_chart(values, o));
  EXPECT_EQ(lines[0].size(), 12u + 2u + 5u);
  EXPECT_EQ(lines[0].back(), '#');
}

}  // namespace
}  // namespace kb::cli

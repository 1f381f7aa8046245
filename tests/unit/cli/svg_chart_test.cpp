// The history chart (cli/svg_chart.h): the y-axis always spans the series median ±5% and states
// its unit; one circle per point, flagged points marked; nothing external.
#include "cli/svg_chart.h"

#include <gtest/gtest.h>

#include <string>

namespace kb::cli {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SvgChart, AxisIncludesAFivePercentBandAroundTheSeriesMedianOfAFlatSeries) {
  const std::vector<ChartPoint> flat = {{"a", 10.0, 9.99, 10.01, false},
                                        {"b", 10.01, 10.0, 10.02, false},
                                        {"c", 9.99, 9.98, 10.0, false}};
  const ChartRange r = history_chart_range(flat, 0.05);
  EXPECT_DOUBLE_EQ(r.series_median, 10.0);
  EXPECT_LE(r.low, 9.5);
  EXPECT_GE(r.high, 10.5);
}

TEST(SvgChart, AxisStillCoversPointsOutsideTheBand) {
  const std::vector<ChartPoint> step = {
      {"a", 10, 9.9, 10.1, false}, {"b", 10, 9.9, 10.1, false}, {"c", 13, 12.8, 13.4, true}};
  const ChartRange r = history_chart_range(step, 0.05);
  EXPECT_DOUBLE_EQ(r.low, 9.5);
  EXPECT_DOUBLE_EQ(r.high, 13.4);
}

TEST(SvgChart, StatesItsUnitAndDrawsOneCirclePerPoint) {
  const std::vector<ChartPoint> points = {
      {"a", 1, 1, 1, false}, {"b", 2, 1.9, 2.1, true}, {"<c>", 1.5, 1.4, 1.6, false}};
  const std::string svg = render_history_chart(points);
  EXPECT_NE(svg.find(">median (ms)</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle class=\"pt"), 3u);
  EXPECT_EQ(count(svg, "<circle class=\"pt flagged\""), 1u);
  EXPECT_NE(svg.find("class=\"median-band\""), std::string::npos);
  EXPECT_NE(svg.find("&lt;c&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<c>"), std::string::npos);
  EXPECT_EQ(svg.find("http"), std::string::npos);
}

TEST(SvgChart, EmptySeriesSaysSo) {
  EXPECT_NE(render_history_chart({}).find("no history"), std::string::npos);
}

}  // namespace
}  // namespace kb::cli

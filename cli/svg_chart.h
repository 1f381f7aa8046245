// The history chart as inline SVG, one renderer for `kb report`'s page and the dashboard's
// problem page (coordinator/dashboard.h): per point its median with the 95% interval of the median
// as a band, flagged points in red, and a y-axis that states its unit and always includes a
// ±band (5% by default) around the series median, drawn as a grey band, so that a flat series
// does not fill the chart with noise and a 3% step reads as smaller than the band.
//
// The SVG has no script and no external reference. Points are <circle class="pt"> (flagged ones
// also class "flagged"), one per ChartPoint, so a DOM check can count them.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace kb::cli {

struct ChartPoint {
  std::string label;  // short commit SHA or run
  double median_ms = 0, low_ms = 0, high_ms = 0;
  bool flagged = false;
};

struct HistoryChartOptions {
  int width = 360, height = 120;
  std::string unit = "ms";    // written on the y-axis
  double median_band = 0.05;  // the axis includes series median × (1 ± median_band)
};

// The y-axis range [low, high]: every point's interval and the median band.
struct ChartRange {
  double low = 0, high = 0, series_median = 0;
};
ChartRange history_chart_range(const std::vector<ChartPoint>& points, double median_band);

std::string render_history_chart(const std::vector<ChartPoint>& points,
                                 const HistoryChartOptions& options = {});

}  // namespace kb::cli

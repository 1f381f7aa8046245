#include "cli/svg_chart.h"

#include <algorithm>
#include <cstdio>

#include "cli/report_html.h"
#include "common/statistics.h"

namespace kb::cli {
namespace {

std::string text_at(double x, double y, const std::string& text, const std::string& extra = "") {
  return "<text x=\"" + format_number("%.1f", x) + "\" y=\"" + format_number("%.1f", y) + "\"" +
         extra + ">" + html_escape(text) + "</text>";
}

}  // namespace

ChartRange history_chart_range(const std::vector<ChartPoint>& points, double median_band) {
  ChartRange r;
  if (points.empty()) return r;
  std::vector<double> medians;
  for (const ChartPoint& p : points) medians.push_back(p.median_ms);
  r.series_median = summarize(medians).median;
  r.low = r.series_median * (1 - median_band);
  r.high = r.series_median * (1 + median_band);
  for (const ChartPoint& p : points) {
    r.low = std::min({r.low, p.low_ms, p.median_ms});
    r.high = std::max({r.high, p.high_ms, p.median_ms});
  }
  if (r.high - r.low < 1e-12) r.high = r.low + 1e-9;  // a zero median: keep the scale finite
  return r;
}

std::string render_history_chart(const std::vector<ChartPoint>& points,
                                 const HistoryChartOptions& o) {
  const double w = o.width, h = o.height, left = 58, right = 8, top = 8, bottom = 20;
  std::string out = "<svg class=\"history\" width=\"" + std::to_string(o.width) + "\" height=\"" +
                    std::to_string(o.height) + "\" role=\"img\">";
  if (points.empty()) return out + text_at(left, h / 2, "no history") + "</svg>";
  const ChartRange range = history_chart_range(points, o.median_band);
  const size_t n = points.size();
  auto x = [&](size_t i) { return left + (n == 1 ? 0.5 : i / double(n - 1)) * (w - left - right); };
  auto y = [&](double v) {
    return top + (range.high - v) / (range.high - range.low) * (h - top - bottom);
  };
  const double band_top = y(range.series_median * (1 + o.median_band));
  const double band_bottom = y(range.series_median * (1 - o.median_band));
  out += "<rect class=\"median-band\" x=\"" + format_number("%.1f", left) + "\" y=\"" +
         format_number("%.1f", band_top) + "\" width=\"" + format_number("%.1f", w - left - right) +
         "\" height=\"" + format_number("%.1f", band_bottom - band_top) +
         "\" fill=\"#8a94a6\" fill-opacity=\"0.14\"><title>" + "series median " +
         format_number("%.4g ", range.series_median) + html_escape(o.unit) + " ±" +
         format_number("%.0f%%", o.median_band * 100) + "</title></rect>";
  out += "<line class=\"median\" x1=\"" + format_number("%.1f", left) + "\" x2=\"" +
         format_number("%.1f", w - right) + "\" y1=\"" +
         format_number("%.1f", y(range.series_median)) + "\" y2=\"" +
         format_number("%.1f", y(range.series_median)) +
         "\" stroke=\"#8a94a6\" stroke-dasharray=\"3,2\"/>";
  std::string band_up, band_down, line;
  for (size_t i = 0; i < n; ++i) {
    band_up += format_number("%.1f,", x(i)) + format_number("%.1f ", y(points[i].high_ms));
    band_down =
        format_number("%.1f,", x(i)) + format_number("%.1f ", y(points[i].low_ms)) + band_down;
    line += format_number("%.1f,", x(i)) + format_number("%.1f ", y(points[i].median_ms));
  }
  out += "<polygon class=\"ci-band\" points=\"" + band_up + band_down +
         "\" fill=\"#3b7dd8\" fill-opacity=\"0.18\"/><polyline points=\"" + line +
         "\" fill=\"none\" stroke=\"#3b7dd8\" stroke-width=\"1.5\"/>";
  for (size_t i = 0; i < n; ++i) {
    const ChartPoint& p = points[i];
    out += "<circle class=\"pt" + std::string(p.flagged ? " flagged" : "") + "\" cx=\"" +
           format_number("%.1f", x(i)) + "\" cy=\"" + format_number("%.1f", y(p.median_ms)) +
           "\" r=\"" + (p.flagged ? "4" : "2") + "\" fill=\"" +
           (p.flagged ? "#b3261e" : "#3b7dd8") + "\"><title>" + html_escape(p.label) + ": " +
           format_number("%.4g ", p.median_ms) + html_escape(o.unit) + "</title></circle>";
  }
  out += "<line x1=\"" + format_number("%.1f", left) + "\" x2=\"" + format_number("%.1f", left) +
         "\" y1=\"" + format_number("%.1f", top) + "\" y2=\"" + format_number("%.1f", h - bottom) +
         "\" stroke=\"#445\"/>";
  out += text_at(left - 4, top + 8, format_number("%.4g", range.high), " text-anchor=\"end\"");
  out += text_at(left - 4, y(range.series_median) + 3, format_number("%.4g", range.series_median),
                 " text-anchor=\"end\"");
  out += text_at(left - 4, h - bottom, format_number("%.4g", range.low), " text-anchor=\"end\"");
  out += text_at(10, (top + h - bottom) / 2, "median (" + o.unit + ")",
                 " class=\"unit\" transform=\"rotate(-90 10 " +
                     format_number("%.1f", (top + h - bottom) / 2) + ")\"");
  out += text_at(left, h - 4, points.front().label) +
         text_at(w - right, h - 4, points.back().label, " text-anchor=\"end\"");
  return out + "</svg>";
}

}  // namespace kb::cli

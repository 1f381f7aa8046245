#include "cli/terminal_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kb::cli {
namespace {

// Eighths of a cell, 1..7; 0 and 8 are blank and full.
const char* const kUnicodeEighths[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

std::string cell(int eighths, bool ascii) {
  eighths = std::clamp(eighths, 0, 8);
  if (ascii) return eighths >= 8 ? "#" : eighths >= 4 ? ":" : eighths > 0 ? "." : " ";
  return kUnicodeEighths[eighths];
}

std::string label(double v, const std::string& unit) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%9.4g %-2s", v, unit.c_str());
  return buf;
}

}  // namespace

std::string render_terminal_chart(const std::vector<double>& all, const ChartOptions& options) {
  if (all.empty()) return "";
  const size_t skip = all.size() > static_cast<size_t>(options.max_columns)
                          ? all.size() - static_cast<size_t>(options.max_columns)
                          : 0;
  const std::vector<double> values(all.begin() + static_cast<std::ptrdiff_t>(skip), all.end());
  double lo = *std::min_element(values.begin(), values.end());
  double hi = *std::max_element(values.begin(), values.end());
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    lo -= 0.01 * std::fabs(lo);
    hi += 0.01 * std::fabs(hi);
    if (hi == lo) hi = lo + 1;
  }
  const int height = std::max(options.height, 2);
  std::string out;
  for (int row = height - 1; row >= 0; --row) {
    if (row == height - 1) {
      out += label(hi, options.unit);
    } else if (row == 0) {
      out += label(lo, options.unit);
    } else {
      out += std::string(12, ' ');
    }
    out += options.ascii ? " |" : " ┤";
    for (double v : values) {
      // The bar's height in eighths of a row; the lowest value still shows a sliver.
      const int total = 1 + static_cast<int>(std::lround((v - lo) / (hi - lo) * (height * 8 - 1)));
      out += cell(total - row * 8, options.ascii);
    }
    out += "\n";
  }
  out += std::string(12, ' ') + (options.ascii ? " +" : " └") ;
  for (size_t i = 0; i < values.size(); ++i) out += options.ascii ? "-" : "─";
  out += "\n";
  return out;
}

}  // namespace kb::cli

// A small chart of a series for the terminal (`kb history`): one column per point, oldest on the
// left, drawn as bars in Unicode block elements (eighth-height steps) or in ASCII ('#' and ':'),
// with the value range on the left. The vertical axis spans [min, max] of the values, widened by
// 1% of their level when they are all equal, so that a flat series draws as a low bar.
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <vector>

namespace kb::cli {

struct ChartOptions {
  int height = 8;       // rows
  int max_columns = 100;  // older points beyond this are left out
  bool ascii = false;
  std::string unit = "ms";
};

// "" when `values` is empty. Lines end with '\n'.
std::string render_terminal_chart(const std::vector<double>& values, const ChartOptions& options);

}  // namespace kb::cli

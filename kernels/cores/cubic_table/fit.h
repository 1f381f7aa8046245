// Host half of the cubic table (kernels/cores/cubic_table/table.cuh): fits a smooth function f on
// [0, last / inv_step] with one cubic per segment of width 1 / inv_step, segment i centred at
// i / inv_step, and evaluates the table the way the device does (the same fp32 steps), so that
// the table's error is a plain CPU test.
//
// Fit: per segment, least squares in double on 65 points of its part of [0, end] (segment 0
// starts at 0, the last ends at end), with p(0) = f(centre) exact (so f(0) is exact, e.g.
// sigmoid(gelu(0)) = 1/2). A least-squares cubic is within a few % of the minimax one on a
// segment this narrow; the table's error is measured, not assumed (cubic_table_test.cpp).
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace kb::custom::cubic_table {

using Segment = std::array<float, 4>;  // (c0, c1, c2, c3) of c0 + c1 x + c2 x^2 + c3 x^3

// The cubics of f on segments 0..last (last + 1 of them) of width 1 / inv_step.
inline std::vector<Segment> fit(const std::function<double(double)>& f, int inv_step, int last) {
  const double step = 1.0 / inv_step, end = static_cast<double>(last) / inv_step;
  std::vector<Segment> table;
  for (int i = 0; i <= last; ++i) {
    const double centre = i * step, lo = std::max(centre - step / 2, 0.0);
    const double hi = std::min(centre + step / 2, end), half = step / 2, f0 = f(centre);
    // Normal equations for d1..d3 of f0 + d1 u + d2 u^2 + d3 u^3, u = x / half in [-1, 1].
    double a[3][4] = {};
    constexpr int kPoints = 65;
    for (int k = 0; k < kPoints; ++k) {
      const double x = lo + (hi - lo) * k / (kPoints - 1), u = (x - centre) / half;
      const double pw[3] = {u, u * u, u * u * u}, rhs = f(x) - f0;
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) a[r][c] += pw[r] * pw[c];
        a[r][3] += pw[r] * rhs;
      }
    }
    for (int p = 0; p < 3; ++p)  // Gauss-Jordan; the Gram matrix is positive definite
      for (int r = 0; r < 3; ++r) {
        if (r == p) continue;
        const double m = a[r][p] / a[p][p];
        for (int c = p; c < 4; ++c) a[r][c] -= m * a[p][c];
      }
    table.push_back({static_cast<float>(f0), static_cast<float>(a[0][3] / a[0][0] / half),
                     static_cast<float>(a[1][3] / a[1][1] / (half * half)),
                     static_cast<float>(a[2][3] / a[2][2] / (half * half * half))});
  }
  return table;
}

// The device's evaluation (table.cuh) in the same fp32 steps: r in [0, last / inv_step].
inline float evaluate(const std::vector<Segment>& table, int inv_step, float r) {
  const float t = std::fmaf(r, static_cast<float>(inv_step), 12582912.0f);  // 1.5 * 2^23
  int32_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  const Segment& c = table[static_cast<size_t>(bits - 0x4B400000)];
  const float x = std::fmaf(t - 12582912.0f, -1.0f / static_cast<float>(inv_step), r);
  return std::fmaf(std::fmaf(std::fmaf(c[3], x, c[2]), x, c[1]), x, c[0]);
}

}  // namespace kb::custom::cubic_table

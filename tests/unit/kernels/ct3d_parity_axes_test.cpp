// kernels/cores/conv_transpose3d_tf32x3/parity_axes.h, on the host: the phase tables of the 3-D
// transposed-conv planners (L1_070, L1_073) against the definition of a transposed convolution,
// output o = i s - p + t d for input i and tap t, over every small geometry: each output's (input,
// tap) pairs from the tables are exactly the definition's, q spans exactly the outputs, and each
// class enumerates the product of its axes' taps once.
#include "kernels/cores/conv_transpose3d_tf32x3/parity_axes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kb::custom::ct3d_parity {
namespace {

struct Geometry {
  int64_t stride, pad, dilation, kernel, in, out;
  std::string name() const {
    return "s" + std::to_string(stride) + " p" + std::to_string(pad) + " d" +
           std::to_string(dilation) + " k" + std::to_string(kernel) + " in" + std::to_string(in) +
           " out" + std::to_string(out);
  }
};

using Pairs = std::set<std::pair<int64_t, int64_t>>;  // (input i, tap t)

Pairs by_definition(const Geometry& g, int64_t o) {
  Pairs pairs;
  for (int64_t i = 0; i < g.in; ++i)
    for (int64_t t = 0; t < g.kernel; ++t)
      if (i * g.stride - g.pad + t * g.dilation == o) pairs.insert({i, t});
  return pairs;
}

Pairs by_tables(const ParityAxis& ax, int64_t o) {
  const int64_t q = (o + ax.pad) / ax.stride;
  const int r = static_cast<int>((o + ax.pad) % ax.stride);
  Pairs pairs;
  for (int k = 0; k < ax.taps[r]; ++k) {
    const int64_t i = q - ax.j[r][k];
    if (i >= 0 && i < ax.in) pairs.insert({i, ax.t[r][k]});
  }
  return pairs;
}

int64_t most_taps_on_a_phase(const Geometry& g) {
  std::vector<int64_t> taps(static_cast<size_t>(g.stride), 0);
  for (int64_t t = 0; t < g.kernel; ++t) ++taps[static_cast<size_t>(t * g.dilation % g.stride)];
  return *std::max_element(taps.begin(), taps.end());
}

// Every geometry with stride 1-2, dilation 1-3, kernel 1-6, padding below the kernel's reach,
// output padding below the stride, inputs 1-3 and 7 (PyTorch's output size).
std::vector<Geometry> small_geometries() {
  std::vector<Geometry> all;
  for (int64_t s = 1; s <= 2; ++s)
    for (int64_t d = 1; d <= 3; ++d)
      for (int64_t k = 1; k <= 6; ++k)
        for (int64_t p = 0; p <= (k - 1) * d; ++p)
          for (int64_t op = 0; op < s; ++op)
            for (int64_t in : {1, 2, 3, 7}) {
              const int64_t out = (in - 1) * s - 2 * p + d * (k - 1) + op + 1;
              if (out >= 1) all.push_back({s, p, d, k, in, out});
            }
  return all;
}

TEST(Ct3dParityAxes, EveryOutputGetsExactlyItsInputsAndTaps) {
  int checked = 0, refused = 0;
  for (const Geometry& g : small_geometries()) {
    ParityAxis ax;
    const Status s = fill_parity_axis(g.stride, g.pad, g.dilation, g.kernel, g.in, g.out, ax);
    if (most_taps_on_a_phase(g) > kMaxJ) {
      EXPECT_FALSE(s.is_ok()) << g.name();
      EXPECT_EQ(s.message(), "more than 3 taps per axis and phase") << g.name();
      ++refused;
      continue;
    }
    ASSERT_TRUE(s.is_ok()) << g.name() << ": " << s.message();
    for (int64_t o = 0; o < g.out; ++o) {
      ASSERT_EQ(by_tables(ax, o), by_definition(g, o)) << g.name() << " o " << o;
      const int64_t q = (o + g.pad) / g.stride;
      ASSERT_GE(q, ax.q_lo) << g.name() << " o " << o;
      ASSERT_LT(q, ax.q_lo + ax.q_count) << g.name() << " o " << o;
    }
    // Every q of the range reaches an output in some phase (no empty rows of the GEMM's M).
    for (int64_t q = ax.q_lo; q < ax.q_lo + ax.q_count; ++q) {
      bool reaches = false;
      for (int64_t r = 0; r < g.stride; ++r) {
        const int64_t o = q * g.stride + r - g.pad;
        reaches = reaches || (o >= 0 && o < g.out);
      }
      EXPECT_TRUE(reaches) << g.name() << " q " << q;
    }
    ++checked;
  }
  EXPECT_GT(checked, 500);
  EXPECT_GT(refused, 10) << checked;
}

TEST(Ct3dParityAxes, RefusesWhatTheTablesCannotHold) {
  ParityAxis ax;
  EXPECT_EQ(fill_parity_axis(3, 1, 1, 3, 8, 22, ax).message(), "stride above 2");
  EXPECT_EQ(fill_parity_axis(1, 0, 1, 4, 8, 11, ax).message(),
            "more than 3 taps per axis and phase");
  EXPECT_EQ(fill_parity_axis(2, 1, 1, 3, int64_t{1} << 20, (int64_t{1} << 21) - 1, ax).message(),
            "large sizes");
  EXPECT_TRUE(fill_parity_axis(2, 1, 1, 3, 32, 63, ax).is_ok());  // L1_073's axis
}

// A class's taps are the product of its phases' taps, each (i_d, i_h, i_w) once, w fastest.
TEST(Ct3dParityAxes, EachClassEnumeratesTheProductOfItsAxesTaps) {
  ParityClasses<ParityAxis> p;
  // Stride 2 everywhere, and the two phases of each axis with different tap counts (2 / 1, 3 / 2,
  // 2 / 1), so that a class mapped to the wrong phase has the wrong count.
  const Geometry axes[kAxes] = {{2, 1, 1, 3, 5, 9}, {2, 2, 1, 5, 6, 11}, {2, 1, 1, 3, 4, 7}};
  for (int a = 0; a < kAxes; ++a) {
    const Geometry& g = axes[a];
    ASSERT_TRUE(
        fill_parity_axis(g.stride, g.pad, g.dilation, g.kernel, g.in, g.out, p.ax[a]).is_ok());
  }
  EXPECT_EQ(p.in_plane(), 5 * 6 * 4);
  EXPECT_EQ(p.out_plane(), 9 * 11 * 7);
  const int classes = p.ax[0].stride * p.ax[1].stride * p.ax[2].stride;
  int taps = 0;
  for (int cls = 0; cls < classes; ++cls) {
    const int r[kAxes] = {p.phase(cls, 0), p.phase(cls, 1), p.phase(cls, 2)};
    EXPECT_EQ((r[0] * p.ax[1].stride + r[1]) * p.ax[2].stride + r[2], cls);
    const int expected = p.ax[0].taps[r[0]] * p.ax[1].taps[r[1]] * p.ax[2].taps[r[2]];
    ASSERT_EQ(p.class_taps(cls), expected) << "class " << cls;
    std::set<std::vector<int>> seen;
    for (int ti = 0; ti < p.class_taps(cls); ++ti) {
      int i[kAxes];
      p.tap_of(cls, ti, i);
      for (int a = 0; a < kAxes; ++a) {
        ASSERT_GE(i[a], 0);
        ASSERT_LT(i[a], p.ax[a].taps[r[a]]) << "class " << cls << " tap " << ti;
      }
      if (ti > 0) {
        int prev[kAxes];
        p.tap_of(cls, ti - 1, prev);
        EXPECT_TRUE(i[2] == prev[2] + 1 || i[2] == 0) << "w fastest";
      }
      seen.insert({i[0], i[1], i[2]});
    }
    EXPECT_EQ(static_cast<int>(seen.size()), expected) << "class " << cls;
    taps += expected;
  }
  // Every (t_d, t_h, t_w) of the kernel lands in exactly one class.
  EXPECT_EQ(taps, 3 * 5 * 3);
}

// plan_parity_axes, as the planners call it: per axis of a geometry of arrays, the planner's
// plan_axis fills ax; k and classes follow; the first failing axis stops it with its status.
struct Layer {
  int64_t stride[kAxes], padding[kAxes], dilation[kAxes], kernel[kAxes], in[kAxes], out[kAxes];
};
struct PlanOf : ParityClasses<ParityAxis> {
  int k[kAxes] = {1, 1, 1};
  int classes = 1;
};
Result<ParityAxis> planner_axis(const Layer& g, int a) {
  ParityAxis ax;
  const Status s = fill_parity_axis_of(g, a, ax);
  if (!s.is_ok()) return Status::failed_precondition("planner: " + s.message());
  return ax;
}

TEST(Ct3dParityAxes, PlanParityAxesFillsEveryAxisOrStopsAtTheFirstRefusal) {
  const Layer g{{2, 1, 2}, {1, 0, 1}, {1, 1, 1}, {3, 3, 4}, {5, 6, 4}, {9, 8, 8}};
  PlanOf p;
  ASSERT_TRUE(plan_parity_axes(g, planner_axis, p).is_ok());
  for (int a = 0; a < kAxes; ++a) {
    ParityAxis direct;
    ASSERT_TRUE(fill_parity_axis(g.stride[a], g.padding[a], g.dilation[a], g.kernel[a], g.in[a],
                                 g.out[a], direct)
                    .is_ok());
    EXPECT_EQ(p.ax[a].q_lo, direct.q_lo) << a;
    EXPECT_EQ(p.ax[a].q_count, direct.q_count) << a;
    EXPECT_EQ(p.ax[a].taps[0], direct.taps[0]) << a;
    EXPECT_EQ(p.ax[a].taps[1], direct.taps[1]) << a;
    EXPECT_EQ(p.k[a], g.kernel[a]);
  }
  EXPECT_EQ(p.classes, 2 * 1 * 2);
  EXPECT_EQ(p.out_plane(), 9 * 8 * 8);

  Layer bad = g;
  bad.stride[1] = 3;
  PlanOf q;
  EXPECT_EQ(plan_parity_axes(bad, planner_axis, q).message(), "planner: stride above 2");
}

}  // namespace
}  // namespace kb::custom::ct3d_parity

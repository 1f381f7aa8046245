// The phase decomposition of a 3-D transposed convolution, shared by its two tensor-core planners
// (parity_gather3d.cuh's per-tap gather, patch_plan3d.cuh's patch GEMM) and written for a host
// compiler too, so that tests/unit/kernels/ct3d_parity_axes_test.cpp checks it against the
// definition without a GPU.
//
// Per axis (stride s <= 2, padding p, dilation d, kernel K): write o + p = q*s + r (phase r < s).
// Tap t with t*d = j*s + r lands on phase r at input i = q - j, so
//   y[.., q*s + r - p] = sum over the taps of phase r of x[.., q - j(tap)] * w[.., t(tap)],
// and q runs over [q_lo, q_lo + q_count): every q that reaches the output in some phase. A class
// c = (r_d, r_h, r_w) (w fastest) takes the taps T_d(r_d) x T_h(r_h) x T_w(r_w).
//
// Thread safety: plain data and pure functions.
#pragma once

#include <cstdint>

#include "common/host_device.h"
#include "common/status.h"

namespace kb::custom::ct3d_parity {

constexpr int kAxes = 3;
constexpr int kMaxStride = 2;  // phases per axis the tables hold
constexpr int kMaxJ = 3;       // taps per axis and phase
constexpr int kMaxClasses = kMaxStride * kMaxStride * kMaxStride;
constexpr int kMaxClassTaps = kMaxJ * kMaxJ * kMaxJ;

// One axis's tables. A planner that keeps more per axis declares these fields first in its own
// Axis (patch_plan3d.cuh): an Axis derived from this one made nvcc load the kernels' parameters
// differently (L1_070's PTX not identical), so the fields are listed there again.
struct ParityAxis {
  int stride = 1, pad = 0, in = 1, out = 1;
  int q_lo = 0, q_count = 1;      // q in [q_lo, q_lo + q_count) reaches the output
  int taps[kMaxStride] = {};      // taps of phase r
  int j[kMaxStride][kMaxJ] = {};  // input offset of tap i of phase r
  int t[kMaxStride][kMaxJ] = {};  // kernel index of tap i of phase r
};

// Fills one axis's tables into ax (a ParityAxis, or a planner's axis that has its fields), or
// returns failed_precondition saying why the tables cannot hold it (a stride above 2, more than 3
// taps on a phase, sizes of 2^20 or more).
template <class Axis>
Status fill_parity_axis(int64_t stride, int64_t pad, int64_t dilation, int64_t kernel, int64_t in,
                        int64_t out, Axis& ax) {
  if (stride > kMaxStride) return Status::failed_precondition("stride above 2");
  constexpr int64_t kLimit = int64_t{1} << 20;
  if (in >= kLimit || out >= kLimit || pad >= kLimit || kernel * dilation >= kLimit)
    return Status::failed_precondition("large sizes");
  ax.stride = static_cast<int>(stride), ax.pad = static_cast<int>(pad);
  ax.in = static_cast<int>(in), ax.out = static_cast<int>(out);
  ax.q_lo = static_cast<int>(pad / stride);
  ax.q_count = static_cast<int>((out - 1 + pad) / stride - pad / stride + 1);
  for (int r = 0; r < kMaxStride; ++r) ax.taps[r] = 0;
  for (int64_t t = 0; t < kernel; ++t) {
    const int r = static_cast<int>(t * dilation % stride);
    if (ax.taps[r] == kMaxJ)
      return Status::failed_precondition("more than 3 taps per axis and phase");
    ax.j[r][ax.taps[r]] = static_cast<int>(t * dilation / stride);
    ax.t[r][ax.taps[r]++] = static_cast<int>(t);
  }
  return Status::ok();
}

// fill_parity_axis for axis a of g (a transposed-conv geometry: stride, padding, dilation,
// kernel, in and out per axis).
template <class Geometry, class Axis>
Status fill_parity_axis_of(const Geometry& g, int a, Axis& ax) {
  return fill_parity_axis(g.stride[a], g.padding[a], g.dilation[a], g.kernel[a], g.in[a], g.out[a],
                          ax);
}

// A planner's per-axis fields of its Plan (ax, k and classes, declared by each Plan): ax[a] from
// the planner's plan_axis(g, a) (a Result of its Axis), k[a] = g.kernel[a], classes the product
// of the strides (p.classes starts at 1); or the first axis's failure.
template <class Plan, class Geometry, class PlanAxis>
Status plan_parity_axes(const Geometry& g, PlanAxis plan_axis, Plan& p) {
  for (int a = 0; a < kAxes; ++a) {
    auto ax = plan_axis(g, a);
    if (!ax.is_ok()) return ax.status();
    p.ax[a] = ax.value();
    p.k[a] = static_cast<int>(g.kernel[a]);
    p.classes *= p.ax[a].stride;
  }
  return Status::ok();
}

// The classes of three axes (d, h, w) of a planner's Axis type (a ParityAxis, or one with its
// fields); each planner's Plan derives from this, so that its axes come first.
template <class Axis>
struct ParityClasses {
  Axis ax[kAxes];  // d, h, w

  KB_HD int64_t in_plane() const { return int64_t{ax[0].in} * ax[1].in * ax[2].in; }
  KB_HD int64_t out_plane() const { return int64_t{ax[0].out} * ax[1].out * ax[2].out; }
  KB_HD int phase(int cls, int a) const {  // class = (r_d, r_h, r_w), w fastest
    if (a == 2) return cls % ax[2].stride;
    if (a == 1) return cls / ax[2].stride % ax[1].stride;
    return cls / (ax[2].stride * ax[1].stride);
  }
  KB_HD int class_taps(int cls) const {
    return ax[0].taps[phase(cls, 0)] * ax[1].taps[phase(cls, 1)] * ax[2].taps[phase(cls, 2)];
  }
  // Tap ti of class cls, split per axis: i[a] indexes Axis::j / Axis::t of the class's phase.
  KB_HD void tap_of(int cls, int ti, int (&i)[kAxes]) const {
    const int nw = ax[2].taps[phase(cls, 2)], nh = ax[1].taps[phase(cls, 1)];
    i[2] = ti % nw, i[1] = ti / nw % nh, i[0] = ti / (nw * nh);
  }
};

}  // namespace kb::custom::ct3d_parity

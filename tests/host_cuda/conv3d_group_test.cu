// kernels/cores/conv3d_direct/direct.cuh's channel-group kernel (narrow output rows and the
// narrow kernel's layers of 4 or more channels), run on the host: the kernel's own pieces
// (group_weight, group_position, group_sums, store_group) called for every channel group and
// output position of the grid conv3d_group_kernel would launch, against the golden model's
// convolution (kernels/cpu/ops.h); and the plan rule that picks the kernel. Small integer values
// keep every fp32 sum exact, so the output must match exactly; every output is written once (the
// tensor starts as NaN), by the channel its epilogue was asked for.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/cpu/ops.h"
#include "tests/host_cuda/conv3d_geometry.h"

namespace kb::custom::conv3d_direct {
namespace {

// Adds 1000 x the channel: a store under another channel's epilogue shows.
struct ChannelMark {
  struct Channel {
    float mark;
    __host__ __device__ float operator()(float v) const { return v + mark; }
  };
  __host__ __device__ Channel channel(int co) const { return {1000.f * static_cast<float>(co)}; }
};

template <int KD, int KH, int KW>
void check(const Conv3dGeometry& g) {
  ASSERT_TRUE((fits_tile<KD, KH, KW>(g))) << name(g);
  ASSERT_TRUE(conv3d_group_fits(g)) << name(g);
  constexpr int kTaps = KD * KH * KW;
  const int64_t x_size = g.batch * g.cin * g.in[0] * g.in[1] * g.in[2];
  const int ctaps = static_cast<int>(g.cin) * kTaps;
  std::vector<float> x(static_cast<size_t>(x_size)), w(static_cast<size_t>(g.cout) * ctaps);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 7 % 9) - 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3);
  const int64_t y_size = g.batch * g.cout * g.out[0] * g.out[1] * g.out[2];
  std::vector<float> y(static_cast<size_t>(y_size), NAN);
  const NarrowParams p = narrow_params(g, x.data(), w.data(), y.data());

  // The shared memory of a block (16-byte aligned: float4 loads), as conv3d_group_kernel stages it.
  ASSERT_EQ(group_smem_bytes(g), sizeof(float) * ctaps * kGroupCo) << name(g);
  std::vector<float4> smem(static_cast<size_t>(ctaps) * kGroupCo / 4);
  float* ws = reinterpret_cast<float*>(smem.data());
  const int groups = (p.cout + kGroupCo - 1) / kGroupCo;
  const int64_t positions = g.batch * g.out[0] * g.out[1] * g.out[2];
  for (int group = 0; group < groups; ++group) {  // blockIdx.y
    for (int e = 0; e < ctaps * kGroupCo; ++e) ws[e] = group_weight(p.w, p.cout, ctaps, group, e);
    for (int64_t e = 0; e < positions; ++e) {  // every thread of every blockIdx.x
      const GroupPosition q = group_position(p, e, true);
      const GroupPosition q64 = group_position(p, e, false);
      ASSERT_TRUE(q.n == q64.n && q.od == q64.od && q.oh == q64.oh && q.ow == q64.ow) << e;
      float acc[kGroupCo];
      group_sums<KD, KH, KW>(p, ws, q, acc);
      store_group(p, ChannelMark{}, group, q, acc);
    }
  }
  // The golden model's convolution (kernels/cpu/ops.h), in double, plus the channel marks.
  const HostTensor<double> want = golden_conv(g, x, w);
  ASSERT_EQ(want.data.size(), y.size()) << name(g);
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  for (size_t at = 0; at < y.size(); ++at) {
    const int64_t co = static_cast<int64_t>(at) / plane % g.cout;
    ASSERT_EQ(y[at], static_cast<float>(want.data[at] + 1000.0 * co))
        << name(g) << " output " << at;
  }
}

// L1_054's kernel (3 x 3 x 3) and L1_060's (3 x 5 x 7): padding on every axis (taps clamped on
// both sides, rows and planes wholly outside), input rows narrower than the kernel, C_out of one
// partial group (5), of a whole and a partial one (13), and L1_054's sweep shape at batch 2 (7
// groups, no padding: the fast path).
TEST(Conv3dGroup, TheKernelsPiecesComputeTheConvolution) {
  check<3, 3, 3>(geometry(2, 2, 13, {5, 6, 9}, {3, 3, 3}, {1, 1, 1}));
  check<3, 3, 3>(geometry(1, 3, 5, {4, 5, 2}, {3, 3, 3}, {0, 2, 2}));
  check<3, 3, 3>(geometry(2, 2, 54, {47, 15, 13}, {3, 3, 3}, {0, 0, 0}));
  check<3, 5, 7>(geometry(1, 2, 9, {3, 6, 8}, {3, 5, 7}, {1, 2, 3}));
  check<3, 5, 7>(geometry(1, 1, 16, {4, 7, 9}, {3, 5, 7}, {0, 0, 0}));
}

bool grouped(const Conv3dGeometry& g) {
  return conv3d_group_is_faster(g);
}

// The plan: L1_054's sweep shape (W' 11: the tiles' 64 columns 17% busy) takes the group kernel;
// the full presets of L1_054, L1_060 (W' 62, 58) and L2_007 keep the tiles; one output channel
// and C_out 3 keep the narrow kernel; weights past 47 KB cannot run it.
TEST(Conv3dGroup, PlanRule) {
  const Conv3dGeometry l1054_sweep = geometry(10, 2, 54, {47, 15, 13}, {3, 3, 3}, {0, 0, 0});
  EXPECT_TRUE((fits_tile<3, 3, 3>(l1054_sweep)));
  EXPECT_FALSE(conv3d_narrow_is_faster(l1054_sweep));
  EXPECT_TRUE(grouped(l1054_sweep));
  EXPECT_EQ(group_smem_bytes(l1054_sweep), 1728u);

  EXPECT_FALSE(grouped(geometry(16, 3, 64, {64, 64, 64}, {3, 3, 3}, {0, 0, 0})));  // L1_054
  EXPECT_FALSE(grouped(geometry(16, 3, 64, {64, 64, 64}, {3, 5, 7}, {0, 0, 0})));  // L1_060
  EXPECT_FALSE(grouped(geometry(64, 8, 32, {32, 64, 64}, {3, 3, 3}, {0, 0, 0})));  // L2_007

  // W' at the bound: 31 columns take the group kernel, 32 the tiles (a layer too big for narrow).
  EXPECT_TRUE(grouped(geometry(16, 3, 64, {64, 64, 33}, {3, 3, 3}, {0, 0, 0})));
  EXPECT_FALSE(grouped(geometry(16, 3, 64, {64, 64, 34}, {3, 3, 3}, {0, 0, 0})));

  // The narrow kernel's layers: 4 or more channels go to the group kernel, even at a wide W',
  // while its threads number kGroupMinThreads (8 x 8 x 8 x 64 positions, one group: 32,768).
  const Conv3dGeometry small = geometry(8, 1, 4, {10, 10, 66}, {3, 3, 3}, {0, 0, 0});
  EXPECT_TRUE(conv3d_narrow_is_faster(small));
  EXPECT_TRUE(grouped(small));
  EXPECT_FALSE(grouped(geometry(8, 1, 4, {10, 10, 65}, {3, 3, 3}, {0, 0, 0})));  // 32,256
  EXPECT_FALSE(grouped(geometry(1, 1, 4, {3, 3, 66}, {3, 3, 3}, {0, 0, 0})));
  EXPECT_FALSE(grouped(geometry(8, 1, 3, {10, 10, 66}, {3, 3, 3}, {0, 0, 0})));
  EXPECT_FALSE(grouped(geometry(2, 3, 1, {9, 10, 11}, {3, 3, 3}, {0, 0, 0})));

  // Weights: C_in x taps x 8 floats in 47 KB. 3 x 5 x 7: C_in 14 (47,040 bytes) fits, 15 not.
  EXPECT_TRUE(grouped(geometry(16, 14, 32, {8, 16, 20}, {3, 5, 7}, {0, 0, 0})));
  EXPECT_FALSE(grouped(geometry(16, 15, 32, {8, 16, 20}, {3, 5, 7}, {0, 0, 0})));
  EXPECT_FALSE(conv3d_group_fits(geometry(4, 15, 32, {8, 16, 20}, {3, 5, 7}, {0, 0, 0})));

  // L1_060's sweep shape (9,108 threads), which the FMA tile's too-few-tasks fallback reaches:
  // the narrow kernel (H100: 0.045 ms against the group kernel's 0.060).
  const Conv3dGeometry l1060_sweep = geometry(1, 9, 31, {5, 27, 39}, {3, 5, 7}, {0, 0, 0});
  EXPECT_TRUE(conv3d_group_fits(l1060_sweep));
  EXPECT_FALSE(conv3d_group_fills(l1060_sweep));
  EXPECT_FALSE(grouped(l1060_sweep));
}

}  // namespace
}  // namespace kb::custom::conv3d_direct

// kernels/cores/conv_transpose_gather/plane_gather.cuh, the plane gather (L1_070's layers of few
// output channels), run on the host block by block as plane_gather_kernel runs: each round's
// staging by every thread, then each busy thread's accumulation, the groups' sums parked and
// folded, against the golden model's transposed convolution (kernels/cpu/ops.h). The data are
// small integers, so every fp32 sum is exact and must equal the golden double sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cores/conv_transpose_gather/plane_gather.cuh"
#include "tests/host_cuda/transposed_layer.h"

namespace kb::custom::gather {
namespace {

using namespace host_test;  // transposed_layer.h: Layer, geometry, name, golden, ...

Layer stride1_layer(int64_t batch, int64_t c_in, int64_t c_out, int64_t d, int64_t h, int64_t w,
                    int64_t pad = 0) {
  Layer l;
  l.rank = 3, l.batch = batch, l.c_in = c_in, l.c_out = c_out;
  const int64_t in[kSpatial] = {d, h, w};
  for (int a = 0; a < kSpatial; ++a) l.in[a] = in[a], l.kernel[a] = 3, l.padding[a] = pad;
  return l;
}

// y as plane_gather_kernel<kCo, kPlanes> computes it: every block's row table, then its rounds
// (plane_stage by each thread into the round's buffer, then plane_accumulate by each busy thread
// of a group with a channel), then plane_park and plane_fold_store; shared memory starts as NaN
// (a staged float never copied poisons the sums it enters) and so does y (an output never stored
// stays NaN).
template <int kCo>
std::vector<float> planed(const PlaneGatherPlan& p, const ConvTransposeGeometry& g,
                          const std::vector<float>& x, const std::vector<float>& w) {
  constexpr int kPlanes = plane_thread_planes(kCo);
  std::vector<float> y(static_cast<size_t>(g.output_numel()),
                       std::numeric_limits<float>::quiet_NaN());
  struct Acc {
    PlaneAcc<kCo, kPlanes> v = {};
  };
  const int rounds = (p.cin + p.split - 1) / p.split;
  for (int64_t block = 0; block < p.blocks; ++block) {
    std::vector<float> smem(p.smem_bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
    std::vector<PlaneRow> table(static_cast<size_t>(p.staged_rows()));
    const PlaneTile tile = plane_tile(p, block);
    for (int t = 0; t < kPlaneThreads; ++t)
      plane_row_table(p, tile, t, kPlaneThreads, table.data());
    std::vector<Acc> acc(kPlaneThreads);
    for (int k = 0; k < rounds; ++k) {
      float* buffer = smem.data() + (k % kPlaneStages) * p.buffer_floats;
      for (int t = 0; t < kPlaneThreads; ++t)
        plane_stage<kCo>(x.data(), w.data(), p, tile, table.data(), k * p.split, t, buffer);
      for (int t = 0; t < kPlaneThreads; ++t) {
        const PlaneLane l = plane_lane(p, t);
        if (l.busy && k * p.split + l.group < p.cin)
          plane_accumulate<kCo, kPlanes>(p, l, buffer, acc[static_cast<size_t>(t)].v);
      }
    }
    for (int t = 0; t < kPlaneThreads; ++t)
      if (p.split > 1)
        plane_park<kCo, kPlanes>(p, plane_lane(p, t), acc[static_cast<size_t>(t)].v, smem.data());
    for (int t = 0; t < kPlaneThreads; ++t)
      plane_fold_store<kCo, kPlanes>(p, tile, plane_lane(p, t), acc[static_cast<size_t>(t)].v,
                                     smem.data(), y.data());
  }
  return y;
}

std::vector<float> planed(const PlaneGatherPlan& p, const ConvTransposeGeometry& g,
                          const std::vector<float>& x, const std::vector<float>& w) {
  switch (p.co_block) {
    case 1:
      return planed<1>(p, g, x, w);
    case 2:
      return planed<2>(p, g, x, w);
    default:
      return planed<4>(p, g, x, w);
  }
}

// Integer data in [-3, 3]: every partial sum is exact in fp32.
std::vector<float> small_integers(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = static_cast<float>(pick(rng));
  return v;
}

// Checks every output of layer l at `sms` multiprocessors (which sets the split) against the
// golden model; returns the plan for the caller's own checks.
PlaneGatherPlan expect_golden(const Layer& l, int sms, std::mt19937& rng) {
  const ConvTransposeGeometry g = geometry(l);
  const Result<PlaneGatherPlan> plan = plan_plane_gather(g, sms);
  EXPECT_TRUE(plan.is_ok()) << name(l) << ": " << plan.status().message();
  if (!plan.is_ok()) return {};
  const PlaneGatherPlan& p = plan.value();
  EXPECT_LE(p.smem_bytes, kPlaneMaxSmem) << name(l);
  const std::vector<float> x = small_integers(rng, l.batch * l.c_in * l.in[0] * l.in[1] * l.in[2]);
  const std::vector<float> w = small_integers(rng, l.c_in * l.c_out * 27);
  const std::vector<double> want = golden(l, x, w);
  const std::vector<float> got = planed(p, g, x, w);
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (static_cast<double>(got[i]) != want[i] && ++bad <= 3) {
      ADD_FAILURE() << name(l) << " split " << p.split << " kCo " << p.co_block << " tile "
                    << p.tile[0] << "x" << p.tile[1] << "x" << p.tile[2] << ": y[" << i
                    << "] = " << got[i] << ", golden " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << name(l);
  return p;
}

TEST(PlaneGather, RandomLayersMatchTheGoldenModelAtEverySplit) {
  std::mt19937 rng(20261205);
  const auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 120; ++i) {
    const int64_t pad = pick(0, 2), least = std::max<int64_t>(2 * pad - 1, 1);  // an output >= 1
    const Layer l = stride1_layer(pick(1, 3), pick(1, 19), pick(1, 8), pick(least, 7),
                                  pick(least, 13), pick(least, 23), pad);
    // 1 SM keeps the split at 1; 1,000 drives it as far as the channels allow.
    for (const int sms : {1, 132, 1000}) expect_golden(l, sms, rng);
  }
}

// Rows longer than a group's threads (the row cut into tiles), one row group of one column, the
// layers the path was built for, and the most channel groups.
TEST(PlaneGather, WideRowsNarrowRowsAndTheSweepLayers) {
  std::mt19937 rng(7);
  expect_golden(stride1_layer(1, 3, 2, 2, 3, 300), 132, rng);
  expect_golden(stride1_layer(1, 9, 5, 2, 2, 70), 1000, rng);
  expect_golden(stride1_layer(2, 4, 3, 3, 40, 1), 132, rng);
  expect_golden(stride1_layer(8, 41, 1, 41, 5, 9), 132, rng);
  const PlaneGatherPlan few = expect_golden(stride1_layer(1, 35, 3, 5, 21, 5), 132, rng);
  EXPECT_EQ(few.co_block, 4);
  // A single sample of many channels: the most groups (8 threads each), 2 rounds and a fold.
  const PlaneGatherPlan groups = expect_golden(stride1_layer(1, 37, 2, 3, 5, 9), 1000, rng);
  EXPECT_EQ(groups.split, kPlaneMaxSplit);
}

// The most shared-memory wavefronts a quarter-warp (8 consecutive threads) takes for a 16-byte
// read of the staged rows: the most distinct 16-byte addresses its busy threads read within one
// bank quad (32 banks = 8 quads of 16 bytes; one wavefront per distinct address a quad serves).
int max_wavefronts(const PlaneGatherPlan& p) {
  int most = 0;
  for (int q = 0; q < kPlaneThreads; q += 8) {
    std::vector<int> units[8];
    for (int t = q; t < q + 8; ++t) {
      const PlaneLane l = plane_lane(p, t);
      if (!l.busy) continue;
      const int unit = plane_lane_offset(p, l, p.planes) / 4;
      std::vector<int>& quad = units[unit % 8];
      if (std::find(quad.begin(), quad.end(), unit) == quad.end()) quad.push_back(unit);
    }
    for (const std::vector<int>& quad : units) most = std::max(most, static_cast<int>(quad.size()));
  }
  return most;
}

// Plans whose quarter-warps may span two planes with no padding to separate them (plane_skews:
// 2 planes a thread, lw lh odd).
bool odd_plane_pairs(const PlaneGatherPlan& p) {
  return p.planes == 2 && p.lanes[0] > 1 && p.lanes[1] * p.lanes[2] % 2 == 1;
}

// The plan's arithmetic at sizes the emulation cannot reach: the busy threads fit their group and
// a staged row fits the threads (one column each), the tiles cover each axis without a tile past
// it, the blocks are the product of the tiles, and shared memory holds the stages, the row table
// and the parked sums within kPlaneMaxSmem.
TEST(PlaneGather, PlansCoverEveryOutputWithinTheirLimits) {
  std::mt19937 rng(33);
  const auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 600; ++i) {
    const int64_t pad = pick(0, 2), least = std::max<int64_t>(2 * pad - 1, 1);
    const int64_t top = pick(0, 3) == 0 ? 600 : 40;  // some long axes
    const Layer l = stride1_layer(pick(1, 64), pick(1, 512), pick(1, 8), pick(least, top),
                                  pick(least, top), pick(least, top), pad);
    const ConvTransposeGeometry g = geometry(l);
    for (const int sms : {1, 132, 1000}) {
      const Result<PlaneGatherPlan> plan = plan_plane_gather(g, sms);
      ASSERT_TRUE(plan.is_ok()) << name(l) << ": " << plan.status().message();
      const PlaneGatherPlan& p = plan.value();
      const std::string at = name(l) + " at " + std::to_string(sms) + " SMs";
      EXPECT_EQ(p.busy, p.lanes[0] * p.lanes[1] * p.lanes[2]) << at;
      EXPECT_LE(p.busy, p.group_threads) << at;
      EXPECT_EQ(p.split * p.group_threads, kPlaneThreads) << at;
      EXPECT_LE(p.split, p.cin) << at;
      EXPECT_LE(p.staged[2], kPlaneThreads) << at;
      EXPECT_GE(p.copy_rows * p.staged[2], kPlaneThreads - p.staged[2] + 1) << at;
      EXPECT_EQ(p.staged[2] % 4, 0) << at;  // 16-byte rows
      EXPECT_EQ(p.tile[0], p.lanes[0] * plane_thread_planes(p.co_block)) << at;
      EXPECT_EQ(p.tile[1], p.lanes[1] * kPlaneRows) << at;
      EXPECT_EQ(p.tile[2], p.lanes[2] * kPlaneCols) << at;
      int64_t blocks = int64_t{p.batch} * p.co_blocks;
      for (int a = 0; a < kSpatial; ++a) {
        EXPECT_GE(int64_t{p.tile[a]} * p.tiles[a], p.out[a]) << at << " axis " << a;
        EXPECT_LT(int64_t{p.tile[a]} * (p.tiles[a] - 1), p.out[a]) << at << " axis " << a;
        blocks *= p.tiles[a];
      }
      EXPECT_EQ(p.blocks, blocks) << at;
      EXPECT_LE(p.smem_bytes, kPlaneMaxSmem) << at;
      EXPECT_GE(p.smem_bytes,
                sizeof(float) * (size_t{kPlaneStages} * p.split *
                                     (p.stage_stride + size_t{kPlaneTapCount} * p.co_block) +
                                 2 * static_cast<size_t>(p.staged_rows())))
          << at;
      EXPECT_GE(p.smem_bytes, sizeof(float) * (p.split - 1) * p.group_threads * p.co_block *
                                  plane_thread_planes(p.co_block) * kPlaneRows * kPlaneCols)
          << at;
      // The staged layout: 16-byte rows and planes, rows apart by their pitch, planes that hold
      // their rows, and a quarter-warp's reads in distinct bank quads.
      EXPECT_EQ(p.row_skew % 4, 0) << at;
      EXPECT_EQ(p.plane_stride % 4, 0) << at;
      EXPECT_GE(p.plane_stride, p.row_start(0, p.staged[1] - 1) + p.staged[2]) << at;
      EXPECT_EQ(p.stage_stride, p.staged[0] * p.plane_stride) << at;
      EXPECT_LE(max_wavefronts(p), odd_plane_pairs(p) ? 2 : 1) << at;
    }
  }
}

// The tile the cost picks at the layer the path was built for (N 8, 48 -> 1, 64^3: the sweep's
// 0.24x): busy threads with register blocks of 2 planes, no more than 1.5 staged floats per
// output (the one-plane tiles of session 33 staged 3.6).
TEST(PlaneGather, TheLargeLayerGetsADeepTile) {
  const Result<PlaneGatherPlan> plan =
      plan_plane_gather(geometry(stride1_layer(8, 48, 1, 64, 64, 64, 1)), 132);
  ASSERT_TRUE(plan.is_ok());
  const PlaneGatherPlan& p = plan.value();
  EXPECT_EQ(p.planes, 2);
  EXPECT_GE(p.busy * p.split, kPlaneThreads * 3 / 4);
  const double outputs = static_cast<double>(p.tile[0]) * p.tile[1] * p.tile[2];
  EXPECT_LE(p.stage_stride / outputs, 1.5) << p.tile[0] << "x" << p.tile[1] << "x" << p.tile[2];
}

TEST(PlaneGather, TakesOnlyStride1ThreeTapLayersOfFewOutputs) {
  const ConvTransposeGeometry fits = geometry(stride1_layer(2, 16, 8, 5, 5, 5));
  EXPECT_TRUE(plan_plane_gather(fits, 132).is_ok());
  ConvTransposeGeometry g = fits;
  g.out_channels = 9;
  EXPECT_FALSE(plan_plane_gather(g, 132).is_ok());
  g = geometry([] {
    Layer l = stride1_layer(2, 16, 8, 5, 5, 5);
    l.stride[1] = 2;
    return l;
  }());
  EXPECT_FALSE(plan_plane_gather(g, 132).is_ok());
  g = geometry([] {
    Layer l = stride1_layer(2, 16, 8, 5, 5, 5);
    l.kernel[2] = 4;
    return l;
  }());
  EXPECT_FALSE(plan_plane_gather(g, 132).is_ok());
  g = fits;
  g.groups = 2;
  EXPECT_FALSE(plan_plane_gather(g, 132).is_ok());
}

}  // namespace
}  // namespace kb::custom::gather

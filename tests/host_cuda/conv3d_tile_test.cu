// kernels/cores/conv3d_direct/direct.cuh's FMA tile (L1_054, L1_060 and L2_007 at C_out <= 16
// or 32), run on the host: the kernel's own pieces (make_tile_params, tile_coord,
// transposed_weight, stage_weights, stage_input, compute_task, store_task) called for every
// block, thread, warp task and lane of the grid the kernel would launch, against the golden
// model's convolution (kernels/cpu/ops.h). Small integer values keep every fp32 sum exact, so the
// output must match exactly; every output is written once (the tensor starts as NaN).
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

template <int KD, int KH, int KW>
void check(const Conv3dGeometry& g) {
  ASSERT_TRUE((fits_tile<KD, KH, KW>(g))) << name(g);
  using S = TileShape<KD, KH, KW>;
  TileParams p = make_tile_params<KD, KH, KW>(g);
  const int64_t x_size = g.batch * g.cin * g.in[0] * g.in[1] * g.in[2];
  const int ctaps = static_cast<int>(g.cin) * S::kTaps;
  std::vector<float> x(static_cast<size_t>(x_size)), w(static_cast<size_t>(g.cout) * ctaps);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 7 % 9) - 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3);
  // The transposed weights as the kernel's prep pass writes them (16-byte aligned: float4 loads).
  std::vector<float4> wt_storage((static_cast<size_t>(ctaps) * p.cout_pad + 3) / 4);
  float* wt = reinterpret_cast<float*>(wt_storage.data());
  for (int e = 0; e < ctaps * p.cout_pad; ++e)
    wt[e] = transposed_weight(w.data(), p.cout, p.cout_pad, ctaps, e);
  const int64_t y_size = g.batch * g.cout * g.out[0] * g.out[1] * g.out[2];
  std::vector<float> y(static_cast<size_t>(y_size), NAN);
  p.x = x.data(), p.w = wt, p.y = y.data();

  std::vector<float4> smem((S::weight_floats(p) + S::x_floats(p) + 3) / 4 + 1);
  float* ws = reinterpret_cast<float*>(smem.data());
  float* xs = ws + S::weight_floats(p);
  const int64_t blocks = int64_t{p.batch} * p.out_d * p.h_tiles * p.w_tiles * p.co_blocks;
  const auto stage = [&](TileCoord t, int c0, int channels) {
    for (int tid = 0; tid < kThreads; ++tid)
      stage_weights<KD, KH, KW>(p, ws, t, c0, channels, tid, kThreads);
    for (int warp = 0; warp < kWarps; ++warp)
      for (int lane = 0; lane < kWarp; ++lane)
        stage_input<KD, KH, KW>(p, xs, t, c0, channels, warp, lane, kWarps);
  };
  for (int64_t block = 0; block < blocks; ++block) {  // as conv3d_tile_kernel, thread by thread
    const TileCoord t = tile_coord(p, block, S::co_block(p));
    if (p.cin_chunk >= p.cin) {
      stage(t, 0, p.cin);
      for (int warp = 0; warp < kWarps; ++warp)
        for (int task = warp; task < p.co_groups * p.row_groups; task += kWarps) {
          const int cg = task % p.co_groups, rg = task / p.co_groups;
          if (t.co0 + cg * kCoThread >= p.cout || t.h0 + rg * kRowsThread >= p.out_h) continue;
          for (int lane = 0; lane < kWarp; ++lane) {
            TaskAcc acc;
            zero_task(acc);
            compute_task<KD, KH, KW>(p, ws, xs, cg, rg, lane, p.cin, acc);
            store_task(p, NoEpilogue{}, t, cg, rg, lane, acc);
          }
        }
      continue;
    }
    // Chunks: one task per warp, its lanes' accumulators carried across the chunks.
    ASSERT_LE(p.co_groups * p.row_groups, kWarps) << name(g);
    std::vector<TaskAcc> acc(kThreads);
    for (TaskAcc& a : acc) zero_task(a);
    const auto live = [&](int warp) {
      return warp < p.co_groups * p.row_groups && t.co0 + warp % p.co_groups * kCoThread < p.cout &&
             t.h0 + warp / p.co_groups * kRowsThread < p.out_h;
    };
    for (int c0 = 0; c0 < p.cin; c0 += p.cin_chunk) {
      const int channels = std::min(p.cin_chunk, p.cin - c0);
      stage(t, c0, channels);
      for (int warp = 0; warp < kWarps; ++warp)
        for (int lane = 0; live(warp) && lane < kWarp; ++lane)
          compute_task<KD, KH, KW>(p, ws, xs, warp % p.co_groups, warp / p.co_groups, lane,
                                   channels, acc[warp * kWarp + lane]);
    }
    for (int warp = 0; warp < kWarps; ++warp)
      for (int lane = 0; live(warp) && lane < kWarp; ++lane)
        store_task(p, NoEpilogue{}, t, warp % p.co_groups, warp / p.co_groups, lane,
                   acc[warp * kWarp + lane]);
  }
  // The golden model's convolution (kernels/cpu/ops.h), in double.
  const HostTensor<double> want = golden_conv(g, x, w);
  ASSERT_EQ(want.data.size(), y.size()) << name(g);
  for (size_t at = 0; at < y.size(); ++at)
    ASSERT_EQ(y[at], static_cast<float>(want.data[at])) << name(g) << " output " << at;
}

// L1_054's kernel (3 x 3 x 3) and L1_060's (3 x 5 x 7): C_out not a multiple of 8, W' over one
// 64-column tile, odd rows, padding on some axes, batch 1 and 2.
TEST(Conv3dTile, TheKernelsPiecesComputeTheConvolution) {
  check<3, 3, 3>(geometry(2, 3, 13, {4, 7, 70}, {3, 3, 3}, {0, 0, 0}));
  check<3, 3, 3>(geometry(1, 5, 9, {3, 9, 11}, {3, 3, 3}, {1, 0, 2}));
  check<3, 5, 7>(geometry(1, 2, 5, {3, 6, 67}, {3, 5, 7}, {0, 1, 0}));
}

// Channel blocks of 3 and 5 groups of 8 channels, in a layer of several blocks (72 channels): the
// weight staging's 16-byte pieces per row (6, 10) do not divide the block's 256 threads, so its
// (row, piece) walk wraps, and the transposed weights' rows hold other blocks' channels beside.
TEST(Conv3dTile, ChannelBlocksWhosePiecesDoNotDivideTheThreads) {
  const Conv3dGeometry g3 = geometry(1, 2, 72, {3, 9, 9}, {3, 3, 3}, {0, 0, 0});
  const Conv3dGeometry g5 = geometry(1, 2, 72, {3, 5, 9}, {3, 3, 3}, {0, 0, 0});
  const TileParams p3 = make_tile_params<3, 3, 3>(g3), p5 = make_tile_params<3, 3, 3>(g5);
  EXPECT_TRUE(p3.co_groups == 3 && p3.co_blocks == 3) << p3.co_groups << " x " << p3.co_blocks;
  EXPECT_TRUE(p5.co_groups == 5 && p5.co_blocks == 2) << p5.co_groups << " x " << p5.co_blocks;
  check<3, 3, 3>(g3);
  check<3, 3, 3>(g5);
}

// More input channels than shared memory holds at once (C_in 23 for 3 x 3 x 3, 14 for 3 x 5 x 7):
// chunks of input channels, the last one partial, each warp's task carried across them.
TEST(Conv3dTile, InputChannelsInChunks) {
  const Conv3dGeometry g27 = geometry(1, 23, 20, {3, 6, 66}, {3, 3, 3}, {0, 1, 0});
  const Conv3dGeometry g105 = geometry(2, 14, 11, {3, 6, 70}, {3, 5, 7}, {0, 0, 0});
  const TileParams p27 = make_tile_params<3, 3, 3>(g27), p105 = make_tile_params<3, 5, 7>(g105);
  EXPECT_TRUE(p27.cin_chunk < 23 && 23 % p27.cin_chunk != 0) << p27.cin_chunk;
  EXPECT_TRUE(p105.cin_chunk < 14 && 14 % p105.cin_chunk != 0) << p105.cin_chunk;
  check<3, 3, 3>(g27);
  check<3, 5, 7>(g105);
}

}  // namespace
}  // namespace kb::custom::conv3d_direct

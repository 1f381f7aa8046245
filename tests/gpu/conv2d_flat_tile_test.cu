// kernels/cores/conv2d_tf32x3/flat_fma.cuh on the device: conv2d_flat_kernel at both tile shapes,
// through launch_flat with the raw sum as its epilogue, against the golden model in double
// (kernels/cpu/ops.h), y poisoned with NaN first so that an output never stored fails. The layers
// reach what no problem's preset does (every conv2d problem is unpadded, stride 1, K < 4,096):
// padding, strides, dilation, a tap table too large for shared memory, pixel tiles straddling
// images of one to a few pixels. (tests/host_cuda/conv2d_flat_tile_test.cu runs the same data
// flow on the host.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cores/conv2d_tf32x3/conv2d_core.cuh"
#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_compare.h"

namespace kb {
namespace {

using custom::conv2d_tf32x3::ConvArgs;
using custom::conv2d_tf32x3::ConvGeometry;
namespace flat = custom::conv2d_tf32x3::flat;

// The raw sum: the part of the epilogue contract (epilogue.cuh) the flat tile reads, which keeps
// no statistics and promotes no sums.
struct RawSum {
  struct Row {};
  __device__ Row row(int) const { return {}; }
  __device__ float operator()(const Row&, float conv) const { return conv; }
};

struct FlatLayer {
  int n, c_in, c_out, h, w, k, stride, pad, dil;
};

std::string layer_name(const FlatLayer& l) {
  return "N" + std::to_string(l.n) + " " + std::to_string(l.c_in) + "->" + std::to_string(l.c_out) +
         " " + std::to_string(l.h) + "x" + std::to_string(l.w) + " k" + std::to_string(l.k) + " s" +
         std::to_string(l.stride) + " p" + std::to_string(l.pad) + " d" + std::to_string(l.dil);
}

TEST(Conv2dFlatTileGpu, MatchesTheGoldenModelAtBothTileShapes) {
  const FlatLayer layers[] = {
      {53, 62, 63, 77, 3, 3, 1, 0, 1},  // L2_017's thin planes (75 pixels an image)
      {7, 13, 37, 11, 14, 3, 1, 1, 1},  // padding 1
      {5, 9, 70, 15, 13, 3, 2, 2, 1},   // stride 2, padding 2, two channel tiles
      {3, 11, 19, 17, 16, 3, 1, 2, 2},  // dilation 2
      {40, 5, 9, 3, 3, 3, 1, 0, 1},     // one pixel an image
      {9, 600, 12, 5, 6, 3, 1, 0, 1},   // K 5,400: the tap table in global memory
      {4, 200, 33, 6, 5, 3, 1, 1, 1},   // padded, K 1,800: 3 x 1,824 ints, global memory
      {11, 3, 128, 9, 10, 1, 1, 0, 1},  // 1 x 1, K 3
  };
  std::mt19937 rng(50);
  for (const FlatLayer& l : layers) {
    ConvGeometry g;
    g.n = l.n, g.c_in = l.c_in, g.c_out = l.c_out, g.h = l.h, g.w = l.w, g.kh = l.k, g.kw = l.k;
    g.sh = g.sw = l.stride, g.ph = g.pw = l.pad, g.dh = g.dw = l.dil;
    g.ho = (l.h + 2 * l.pad - l.dil * (l.k - 1) - 1) / l.stride + 1;
    g.wo = (l.w + 2 * l.pad - l.dil * (l.k - 1) - 1) / l.stride + 1;
    const Shape xs{l.n, l.c_in, l.h, l.w}, ws{l.c_out, l.c_in, l.k, l.k},
        ys{l.n, l.c_out, g.ho, g.wo};
    const HostTensor<float> x = test::random_tensor(xs, rng), w = test::random_tensor(ws, rng);
    HostTensor<double> xd(xs), wd(ws);
    for (size_t i = 0; i < x.data.size(); ++i) xd.data[i] = x.data[i];
    for (size_t i = 0; i < w.data.size(); ++i) wd.data[i] = w.data[i];
    cpu::ConvParams cp;
    cp.stride = {l.stride, l.stride}, cp.padding = {l.pad, l.pad}, cp.dilation = {l.dil, l.dil};
    cp.output_padding = {0, 0};
    const HostTensor<double> want = cpu::conv<double>(xd, wd, nullptr, cp);
    test::GpuTensor xg(xs), wg(ws), yg(ys);
    test::upload(x, xg.view);
    test::upload(w, wg.view);
    const std::vector<int> table = custom::conv2d_tf32x3::build_tap_table(g);
    int* taps = nullptr;
    ASSERT_EQ(cudaMalloc(&taps, table.size() * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(taps, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice),
              cudaSuccess);
    for (const flat::FlatTile tile : {flat::FlatTile::k64x32, flat::FlatTile::k32x64}) {
      ConvArgs a = custom::conv2d_tf32x3::conv_args(g, taps, tile);
      a.x = xg.view.data, a.w = wg.view.data, a.y = yg.view.data;
      ASSERT_EQ(cudaMemset(yg.view.data, 0xff, yg.view.numel() * sizeof(float)), cudaSuccess);
      ASSERT_EQ(flat::launch_flat(a, tile, g.padded(), RawSum{}, nullptr), cudaSuccess)
          << layer_name(l);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << layer_name(l);
      EXPECT_TRUE(test::all_close(test::download(yg.view), want))
          << layer_name(l) << ", tile " << flat::flat_tile_channels(tile) << " x "
          << flat::flat_tile_pixels(tile) << (a.table_in_smem ? "" : ", table in global memory");
    }
    ASSERT_EQ(cudaFree(taps), cudaSuccess);
  }
}

}  // namespace
}  // namespace kb

// kernels/cores/conv_transpose_gather/plane_gather.cuh on the device: plane_gather_kernel at
// every instance (1, 2 and 4 channels a block) and at the splits that 1 SM, this GPU's SMs and
// 1,000 SMs plan, against the golden model in double (kernels/cpu/ops.h), with y poisoned with
// NaN first so that an output never stored fails. The layers: the sweep's misses the path was
// built for, rows cut into tiles, one-column rows, paddings 1 and 2, and L1_070's presets of few
// output channels. (tests/host_cuda/plane_gather_test.cu runs the same steps on the host, exact.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cores/conv_transpose_gather/plane_gather.cuh"
#include "kernels/cpu/ops.h"
#include "tests/gpu/gpu_compare.h"

namespace kb {
namespace {

using custom::gather::ConvTransposeGeometry;
using custom::gather::PlaneGatherPlan;

struct PlaneLayer {
  int64_t batch, c_in, c_out, in[3], pad;
};

std::string layer_name(const PlaneLayer& l) {
  return "N" + std::to_string(l.batch) + " " + std::to_string(l.c_in) + "->" +
         std::to_string(l.c_out) + " " + std::to_string(l.in[0]) + "x" + std::to_string(l.in[1]) +
         "x" + std::to_string(l.in[2]) + " p" + std::to_string(l.pad);
}

TEST(PlaneGatherGpu, MatchesTheGoldenModelAtEveryInstanceAndSplit) {
  const PlaneLayer layers[] = {
      {8, 41, 1, {41, 5, 9}, 0},
      {2, 35, 3, {9, 29, 5}, 0},
      {1, 20, 8, {4, 6, 300}, 0},
      {2, 5, 3, {3, 5, 7}, 0},
      {1, 5, 3, {3, 5, 7}, 0},
      {2, 16, 8, {13, 17, 19}, 0},
      {1, 24, 4, {20, 20, 20}, 0},
      {3, 7, 2, {5, 40, 1}, 0},
      {2, 11, 6, {6, 9, 33}, 1},
      {1, 9, 5, {7, 8, 70}, 2},
      {4, 3, 1, {9, 11, 13}, 1},
      {1, 64, 7, {3, 4, 5}, 0},
      // Deep tiles of many rounds (both staging buffers in turn), rows of several tiles.
      {2, 48, 1, {33, 40, 70}, 1},
      {1, 30, 2, {20, 37, 45}, 1},
      {1, 21, 4, {19, 23, 130}, 0},
  };
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  std::mt19937 rng(33);
  for (const PlaneLayer& l : layers) {
    ConvTransposeGeometry g;
    g.rank = 3, g.batch = l.batch, g.in_channels = l.c_in, g.out_channels = l.c_out;
    Shape xs{l.batch, l.c_in}, ws{l.c_in, l.c_out}, ys{l.batch, l.c_out};
    cpu::ConvParams cp;
    for (int a = 0; a < 3; ++a) {
      g.in[a] = l.in[a], g.kernel[a] = 3, g.padding[a] = l.pad;
      g.out[a] = l.in[a] + 2 - 2 * l.pad;
      xs.push_back(l.in[a]), ws.push_back(3), ys.push_back(g.out[a]);
      cp.stride.push_back(1), cp.padding.push_back(l.pad), cp.dilation.push_back(1);
      cp.output_padding.push_back(0);
    }
    const HostTensor<float> x = test::random_tensor(xs, rng), w = test::random_tensor(ws, rng);
    HostTensor<double> xd(xs), wd(ws);
    for (size_t i = 0; i < x.data.size(); ++i) xd.data[i] = x.data[i];
    for (size_t i = 0; i < w.data.size(); ++i) wd.data[i] = w.data[i];
    const HostTensor<double> want = cpu::conv_transpose<double>(xd, wd, nullptr, cp);
    test::GpuTensor xg(xs), wg(ws), yg(ys);
    test::upload(x, xg.view);
    test::upload(w, wg.view);
    for (const int planned_sms : {1, sms, 1000}) {
      const Result<PlaneGatherPlan> plan = custom::gather::plan_plane_gather(g, planned_sms);
      ASSERT_TRUE(plan.is_ok()) << layer_name(l) << ": " << plan.status().message();
      const Status prepared = custom::gather::prepare_plane_gather(plan.value());
      ASSERT_TRUE(prepared.is_ok()) << layer_name(l) << ": " << prepared.message();
      ASSERT_EQ(cudaMemset(yg.view.data, 0xff, yg.view.numel() * sizeof(float)), cudaSuccess);
      const Status launched = custom::gather::launch_plane_gather(xg.view.data, wg.view.data,
                                                                  yg.view.data, plan.value(), 0);
      ASSERT_TRUE(launched.is_ok()) << layer_name(l) << ": " << launched.message();
      EXPECT_TRUE(test::all_close(test::download(yg.view), want))
          << layer_name(l) << " at split " << plan.value().split << ", " << plan.value().co_block
          << " channels a block";
    }
  }
}

}  // namespace
}  // namespace kb

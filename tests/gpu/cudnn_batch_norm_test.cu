// CudnnBatchNorm (kernels/eager/cudnn_batch_norm.h) against the golden model's training-mode
// batch norm (double): |gpu - cpu| <= 1e-4 + 1e-4 |cpu| for every element, over 3-, 4- and 5-D
// inputs, batch 1, odd sizes, inputs offset from zero, and repeated calls (the running buffers
// change between calls; the output must not).
#include <gtest/gtest.h>

#include <random>

#include "kernels/cpu/ops.h"
#include "kernels/eager/cudnn_batch_norm.h"
#include "tests/gpu/gpu_compare.h"

namespace kb {
namespace {

using test::all_close;
using test::download;
using test::GpuTensor;
using test::random_tensor;
using test::upload;

TEST(CudnnBatchNorm, MatchesGoldenOnEveryRankAndOnRepeatedCalls) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::mt19937 rng(20261201);
  for (const Shape& shape : {Shape{4, 8, 9, 11}, Shape{2, 3, 300, 300}, Shape{5, 6, 17},
                             Shape{1, 4, 3, 5, 7}, Shape{3, 2, 1, 1}}) {
    ASSERT_TRUE(CudnnBatchNorm::applies(shape, 1e-5));
    const HostTensor<float> x = random_tensor(shape, rng, 2, 6);
    const HostTensor<float> w = random_tensor({shape[1]}, rng, 0.5f, 2);
    const HostTensor<float> b = random_tensor({shape[1]}, rng);
    GpuTensor gx(shape), gw({shape[1]}), gb({shape[1]}), out(shape);
    upload(x, gx.view);
    upload(w, gw.view);
    upload(b, gb.view);
    CudnnBatchNorm bn;
    const Status planned = bn.setup(shape, 1e-5);
    ASSERT_TRUE(planned.is_ok()) << planned.message();
    const HostTensor<double> expected = cpu::batch_norm_train(
        cpu::cast<double>(x), cpu::cast<double>(w), cpu::cast<double>(b), 1e-5);
    for (int call = 0; call < 2; ++call) {
      const Status ran = bn.run(gx.view.data, gw.view.data, gb.view.data, out.view.data, stream);
      ASSERT_TRUE(ran.is_ok()) << ran.message();
      EXPECT_TRUE(all_close(download(out.view), expected))
          << "batch_norm x " << shape_to_string(shape) << ", call " << call;
    }
  }
  cudaStreamDestroy(stream);
}

TEST(CudnnBatchNorm, LeavesToTheEagerKernelWhatPyTorchDoes) {
  EXPECT_FALSE(CudnnBatchNorm::applies({16, 5}, 1e-5));                   // rank 2
  EXPECT_FALSE(CudnnBatchNorm::applies({880802, 2, 1, 1}, 1e-5));         // batch over the bound
  EXPECT_FALSE(CudnnBatchNorm::applies({4, 2, 1 << 15, 1 << 15}, 1e-5));  // >= 2^31 elements
}

}  // namespace
}  // namespace kb

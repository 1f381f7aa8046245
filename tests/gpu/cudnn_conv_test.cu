// CudnnConv (kernels/eager/cudnn_conv.h) against the golden-model convolutions
// (kernels/cpu/ops.h, in double): forward and transposed, 1-D to 3-D, strides, padding,
// dilation, groups, output_padding, odd sizes, batch 1, with and without bias. Each case is a
// one-node problem spec parsed from YAML, as the references see their layers.
// The Huge* tests cross INT_MAX elements (PyTorch's batch split) and need about 20 GB of free
// device memory; they skip otherwise.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "common/spec_loader.h"
#include "kernels/cpu/ops.h"
#include "kernels/eager/cudnn_conv.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/support/assert_ok.h"

namespace kb {
namespace {

using test::all_close;
using test::download;
using test::GpuTensor;
using test::random_tensor;
using test::upload;

struct ConvCase {
  std::string name;
  bool transposed = false;
  int64_t batch = 2, c_in = 4, c_out = 4;
  Shape spatial, kernel;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool bias = true;
};

std::string list(const std::vector<int64_t>& v) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
  return out.str();
}

Shape weight_shape(const ConvCase& c) {
  Shape w = c.transposed ? Shape{c.c_in, c.c_out / c.groups} : Shape{c.c_out, c.c_in / c.groups};
  w.insert(w.end(), c.kernel.begin(), c.kernel.end());
  return w;
}

// A minimal one-node problem: dims [N] only, every other size literal.
std::string spec_yaml(const ConvCase& c) {
  Shape x{c.c_in};
  x.insert(x.end(), c.spatial.begin(), c.spatial.end());
  std::string x_shape = list(x);
  x_shape.insert(1, "N, ");
  std::ostringstream y;
  y << "id: L1_999\nname: " << c.name
    << "\nlevel: 1\nfamily: " << (c.transposed ? "conv_transpose" : "conv") << "\ndims: [N]\n"
    << "presets:\n  full: {N: " << c.batch << "}\n  small: {N: " << c.batch << "}\n"
    << "inputs:\n  - {name: x, shape: " << x_shape << ", generator: uniform}\n"
    << "parameters:\n  - {name: conv.weight, shape: " << list(weight_shape(c))
    << ", init: kaiming_uniform}\n";
  if (c.bias) {
    y << "  - {name: conv.bias, shape: [" << c.c_out
      << "], init: fan_in_uniform, fan_in_of: conv.weight}\n";
  }
  y << "graph:\n  - {name: conv, op: " << (c.transposed ? "conv_transpose" : "conv")
    << ", in: [x, conv.weight" << (c.bias ? ", conv.bias" : "")
    << "], out: out, stride: " << list(c.stride) << ", padding: " << list(c.padding)
    << ", dilation: " << list(c.dilation);
  if (c.transposed) y << ", output_padding: " << list(c.output_padding);
  y << ", groups: " << c.groups << "}\noutput: out\n";
  return y.str();
}

Result<ProblemInstance> instance_of(const ConvCase& c) {
  auto spec = parse_problem_spec(spec_yaml(c), "cudnn_conv_test:" + c.name);
  if (!spec.is_ok()) return spec.status();
  return ProblemInstance::create(spec.value(), "small");
}

class CudnnConvTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess); }
  void TearDown() override { cudaStreamDestroy(stream_); }

  void check(const ConvCase& c);

  cudaStream_t stream_ = nullptr;
  std::mt19937 rng_{77};
};

void CudnnConvTest::check(const ConvCase& c) {
  SCOPED_TRACE(c.name);
  Result<ProblemInstance> inst = instance_of(c);
  ASSERT_TRUE(inst.is_ok()) << inst.status().message() << "\n" << spec_yaml(c);
  const ProblemInstance& p = inst.value();
  const HostTensor<float> x = random_tensor(p.shape_of("x"), rng_);
  const HostTensor<float> w = random_tensor(p.shape_of("conv.weight"), rng_);
  const HostTensor<float> b = random_tensor({c.c_out}, rng_);
  GpuTensor gx(x.shape), gw(w.shape), gb(b.shape), gy(p.output_shape());
  upload(x, gx.view);
  upload(w, gw.view);
  upload(b, gb.view);
  CudnnConv conv;
  KB_ASSERT_OK(conv.setup(p, "conv", stream_));
  KB_ASSERT_OK(
      conv.run(gx.view.data, gw.view.data, c.bias ? gb.view.data : nullptr, gy.view.data, stream_));
  const HostTensor<double> bias = cpu::cast<double>(b);
  const cpu::ConvParams cp = cpu::conv_params(p, "conv");
  const HostTensor<double> want =
      c.transposed
          ? cpu::conv_transpose(cpu::cast<double>(x), cpu::cast<double>(w),
                                c.bias ? &bias : nullptr, cp)
          : cpu::conv(cpu::cast<double>(x), cpu::cast<double>(w), c.bias ? &bias : nullptr, cp);
  const ::testing::AssertionResult close = all_close(download(gy.view), want);
  std::printf("  %-28s %-52s %s\n", c.name.c_str(), conv.algorithm_name().c_str(),
              close ? "ok" : "MISMATCH");
  EXPECT_TRUE(close) << c.name << ": y " << shape_to_string(want.shape) << ", algorithm "
                     << conv.algorithm_name();
}

TEST_F(CudnnConvTest, ForwardMatchesGolden) {
  // clang-format off
  const ConvCase cases[] = {
      // name, transposed, N, C_in, C_out, spatial, kernel, stride, padding, dilation,
      // output_padding, groups, bias
      {"2d_basic", false, 2, 3, 8, {16,16}, {3,3}, {1,1}, {0,0}, {1,1}, {}, 1, true},
      {"2d_strided_padded_odd", false, 2, 5, 6, {17,13}, {3,5}, {2,2}, {1,2}, {1,1}, {}, 1, false},
      {"2d_dilated_grouped", false, 2, 8, 12, {15,14}, {3,3}, {1,2}, {2,2}, {2,2}, {}, 4, true},
      {"2d_depthwise", false, 2, 6, 6, {9,9}, {3,3}, {1,1}, {1,1}, {1,1}, {}, 6, false},
      {"2d_1x1", false, 3, 16, 8, {7,5}, {1,1}, {1,1}, {0,0}, {1,1}, {}, 1, true},
      {"2d_larger", false, 4, 16, 32, {64,64}, {3,3}, {1,1}, {1,1}, {1,1}, {}, 1, true},
      {"1d", false, 3, 4, 6, {37}, {5}, {2}, {1}, {2}, {}, 1, true},
      {"1d_batch1", false, 1, 2, 3, {8}, {3}, {1}, {0}, {1}, {}, 1, false},
      {"3d_batch1", false, 1, 3, 4, {7,9,11}, {3,3,3}, {1,2,2}, {1,1,1}, {1,1,1}, {}, 1, true},
      {"3d_asym", false, 2, 3, 5, {8,10,12}, {3,5,7}, {1,1,1}, {0,0,0}, {1,1,1}, {}, 1, false},
  };
  // clang-format on
  std::printf("forward convolutions (case, algorithm):\n");
  for (const ConvCase& c : cases) check(c);
}

TEST_F(CudnnConvTest, TransposedMatchesGolden) {
  // clang-format off
  const ConvCase cases[] = {
      // name, transposed, N, C_in, C_out, spatial, kernel, stride, padding, dilation,
      // output_padding, groups, bias
      {"T2d_output_padding", true, 2, 6, 4, {9,7}, {4,4}, {2,2}, {1,1}, {1,1}, {1,1}, 1, true},
      {"T2d_grouped_dilated", true, 2, 8, 12, {7,11}, {3,5}, {2,3}, {1,2}, {2,1}, {0,0}, 4, false},
      {"T2d_stride5_dilated", true, 2, 4, 6, {5,6}, {3,3}, {5,5}, {1,1}, {2,2}, {0,0}, 1, false},
      {"T2d_stride3_outpad2", true, 1, 3, 5, {6,5}, {3,2}, {3,3}, {0,1}, {1,1}, {2,1}, 1, true},
      {"T2d_plain", true, 2, 5, 3, {8,8}, {3,3}, {1,1}, {0,0}, {1,1}, {0,0}, 1, true},
      {"T1d_dilated", true, 2, 4, 6, {51}, {3}, {2}, {1}, {2}, {0}, 1, false},
      {"T3d_outpad", true, 1, 4, 3, {5,6,7}, {3,3,3}, {2,2,2}, {1,1,1}, {1,1,1}, {1,0,1}, 1, true},
      {"T3d_group", true, 2, 4, 6, {4,5,3}, {2,3,3}, {2,1,2}, {0,1,1}, {1,1,1}, {0,0,1}, 2, false},
  };
  // clang-format on
  std::printf("transposed convolutions (case, algorithm):\n");
  for (const ConvCase& c : cases) check(c);
}

// output_padding >= stride is legal in PyTorch when smaller than the dilation, but then dx is
// larger than the conv geometry of dy allows; CudnnConv reports it instead of running.
TEST_F(CudnnConvTest, OutputPaddingBeyondStrideIsReported) {
  const ConvCase c{"convT_outpad_ge_stride",
                   true,
                   2,
                   3,
                   4,
                   {6, 6},
                   {3, 3},
                   {1, 1},
                   {1, 1},
                   {2, 2},
                   {1, 1},
                   1,
                   false};
  Result<ProblemInstance> inst = instance_of(c);
  ASSERT_TRUE(inst.is_ok()) << inst.status().message();
  CudnnConv conv;
  const Status s = conv.setup(inst.value(), "conv", stream_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.to_string();
}

TEST_F(CudnnConvTest, RejectsOtherNodes) {
  const ConvCase c{"conv", false, 1, 1, 1, {4, 4}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {}, 1, false};
  Result<ProblemInstance> inst = instance_of(c);
  ASSERT_TRUE(inst.is_ok()) << inst.status().message();
  CudnnConv conv;
  EXPECT_EQ(conv.setup(inst.value(), "no_such_node", stream_).code(), StatusCode::kNotFound);
}

// ---- Beyond INT_MAX elements: the batch split ----

bool has_free_memory(double gigabytes) {
  size_t free_bytes = 0, total = 0;
  return cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && free_bytes > gigabytes * 1e9;
}

// A 1x1 single-channel conv is y = w * x + b elementwise, so the split run is checked exactly
// against the host; the batch does not divide into PyTorch's chunks, so the last chunk is smaller.
void check_huge_pointwise(const ConvCase& c, cudaStream_t stream) {
  Result<ProblemInstance> inst = instance_of(c);
  ASSERT_TRUE(inst.is_ok()) << inst.status().message();
  const Shape shape = inst.value().shape_of("x");
  HostTensor<float> x(shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data[i] = static_cast<float>((static_cast<uint64_t>(i) * 2654435761u) % 1000) / 1000 - 0.5f;
  GpuTensor gx(shape), gw({1, 1, 1, 1}), gb({1}), gy(inst.value().output_shape());
  upload(x, gx.view);
  const float w = 1.7f, b = -0.25f;
  ASSERT_EQ(cudaMemcpy(gw.view.data, &w, sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(gb.view.data, &b, sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  CudnnConv conv;
  KB_ASSERT_OK(conv.setup(inst.value(), "conv", stream));
  KB_ASSERT_OK(conv.run(gx.view.data, gw.view.data, gb.view.data, gy.view.data, stream));
  const HostTensor<float> got = download(gy.view);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double want = static_cast<double>(w) * x.data[i] + b;
    if (std::fabs(got.data[i] - want) > 1e-5 && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0) << c.name << " (" << conv.algorithm_name() << "): first wrong element at "
                    << first << " of " << shape_to_string(got.shape);
}

TEST_F(CudnnConvTest, HugeForwardSplitsTheBatch) {
  if (!has_free_memory(20)) GTEST_SKIP() << "needs about 20 GB of free device memory";
  // 23 x 10^8 elements; chunks of 2 samples (256M / 10^8), the last of 1.
  check_huge_pointwise(
      {"huge_conv", false, 23, 1, 1, {10000, 10000}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {}, 1, true},
      stream_);
}

TEST_F(CudnnConvTest, HugeTransposedSplitsTheBatch) {
  if (!has_free_memory(20)) GTEST_SKIP() << "needs about 20 GB of free device memory";
  // 45 x 5.0e7 elements; chunks of 2 samples (128M / 5.0e7), the last of 1.
  check_huge_pointwise({"huge_conv_transpose",
                        true,
                        45,
                        1,
                        1,
                        {7072, 7072},
                        {1, 1},
                        {1, 1},
                        {0, 0},
                        {1, 1},
                        {0, 0},
                        1,
                        true},
                       stream_);
}

}  // namespace
}  // namespace kb

// Tests of the golden-model ops (kernels/cpu/ops.h): hand-computed cases, an independent naive
// convolution, and identities that hold for any correct implementation (the conv /
// conv_transpose adjoint, grouped conv == per-group convs, normalized slices with zero mean and
// unit variance), so that a bug in an op cannot hide behind a test written the same way.
#include "kernels/cpu/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

namespace kb::cpu {
namespace {

using Tensor = HostTensor<double>;

// A typed null: a bare nullptr does not deduce conv's T.
const Tensor* const kNoBias = nullptr;

Tensor make(Shape shape, std::vector<double> values) {
  Tensor t(std::move(shape));
  EXPECT_EQ(t.data.size(), values.size());
  t.data = std::move(values);
  return t;
}

HostTensor<float> random_float(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  HostTensor<float> t(shape);
  for (float& v : t.data) v = dist(rng);
  return t;
}

Tensor random(const Shape& shape, std::mt19937& rng) {
  return cast<double>(random_float(shape, rng));
}

double inner(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  return std::inner_product(a.data.begin(), a.data.end(), b.data.begin(), 0.0);
}

void expect_near(const Tensor& actual, const Tensor& expected, double tol) {
  ASSERT_EQ(actual.shape, expected.shape);
  for (size_t i = 0; i < actual.data.size(); ++i) {
    ASSERT_NEAR(actual.data[i], expected.data[i], tol) << "at flat index " << i;
  }
}

ConvParams params(std::vector<int64_t> stride, std::vector<int64_t> padding,
                  std::vector<int64_t> dilation, int64_t groups = 1,
                  std::vector<int64_t> output_padding = {}) {
  ConvParams cp{std::move(stride), std::move(padding), std::move(dilation),
                std::move(output_padding), groups};
  if (cp.output_padding.empty()) cp.output_padding.assign(cp.stride.size(), 0);
  return cp;
}

// Channels [first, last) of an (N, C, ...) tensor, or rows [first, last) of dim 0 when dim0.
Tensor slice(const Tensor& t, int64_t first, int64_t last, bool dim0 = false) {
  const int64_t outer = dim0 ? 1 : t.shape[0];
  const int64_t dim = dim0 ? t.shape[0] : t.shape[1];
  const int64_t inner = t.numel() / (outer * dim);
  Shape shape = t.shape;
  shape[dim0 ? 0 : 1] = last - first;
  Tensor out(shape);
  auto dst = out.data.begin();
  for (int64_t o = 0; o < outer; ++o) {
    const auto src = t.data.begin() + (o * dim + first) * inner;
    dst = std::copy(src, src + (last - first) * inner, dst);
  }
  return out;
}

// Concatenates (N, C_i, ...) tensors along the channels.
Tensor concat_channels(const std::vector<Tensor>& parts) {
  Shape shape = parts[0].shape;
  shape[1] = 0;
  for (const Tensor& p : parts) shape[1] += p.shape[1];
  Tensor out(shape);
  const int64_t inner = out.numel() / (shape[0] * shape[1]);
  auto dst = out.data.begin();
  for (int64_t n = 0; n < shape[0]; ++n) {
    for (const Tensor& p : parts) {
      const auto src = p.data.begin() + n * p.shape[1] * inner;
      dst = std::copy(src, src + p.shape[1] * inner, dst);
    }
  }
  return out;
}

// The textbook 3-D convolution, one output element at a time, written independently of ops.cpp.
Tensor naive_conv3d(const Tensor& x, const Tensor& w, const Tensor& b, const ConvParams& cp) {
  const int64_t n_ = x.shape[0], o_ = w.shape[0], cg = w.shape[1];
  const int64_t og = o_ / cp.groups;
  Shape out{n_, o_};
  for (int a = 0; a < 3; ++a) {
    const int64_t span = cp.dilation[a] * (w.shape[2 + a] - 1) + 1;
    out.push_back((x.shape[2 + a] + 2 * cp.padding[a] - span) / cp.stride[a] + 1);
  }
  Tensor y(out);
  const auto at = [](const Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, int64_t i4) {
    return t.data[(((i0 * t.shape[1] + i1) * t.shape[2] + i2) * t.shape[3] + i3) * t.shape[4] + i4];
  };
  size_t idx = 0;
  for (int64_t n = 0; n < n_; ++n)
    for (int64_t o = 0; o < o_; ++o)
      for (int64_t d = 0; d < out[2]; ++d)
        for (int64_t h = 0; h < out[3]; ++h)
          for (int64_t ww = 0; ww < out[4]; ++ww) {
            double acc = b.data[o];
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t kd = 0; kd < w.shape[2]; ++kd)
                for (int64_t kh = 0; kh < w.shape[3]; ++kh)
                  for (int64_t kw = 0; kw < w.shape[4]; ++kw) {
                    const int64_t id = d * cp.stride[0] - cp.padding[0] + kd * cp.dilation[0];
                    const int64_t ih = h * cp.stride[1] - cp.padding[1] + kh * cp.dilation[1];
                    const int64_t iw = ww * cp.stride[2] - cp.padding[2] + kw * cp.dilation[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= x.shape[2] || ih >= x.shape[3] ||
                        iw >= x.shape[4])
                      continue;
                    acc += at(w, o, ci, kd, kh, kw) * at(x, n, (o / og) * cg + ci, id, ih, iw);
                  }
            y.data[idx++] = acc;
          }
  return y;
}

// ---- Convolution ----

TEST(CpuOps, Conv1dByHand) {
  const Tensor x = make({1, 1, 5}, {1, 2, 3, 4, 5});
  const Tensor w = make({1, 1, 3}, {1, 0, -1});
  const Tensor b = make({1}, {0.5});
  expect_near(conv(x, w, &b, params({1}, {0}, {1})), make({1, 1, 3}, {-1.5, -1.5, -1.5}), 1e-15);
  // Padded x = [0 1 2 3 4 5 0]; windows start at 0, 2, 4.
  expect_near(conv(x, w, kNoBias, params({2}, {1}, {1})), make({1, 1, 3}, {-2, -2, 4}), 1e-15);
  // Dilation 2 spans x[0], x[2], x[4].
  expect_near(conv(x, w, kNoBias, params({1}, {0}, {2})), make({1, 1, 1}, {-4}), 1e-15);
}

TEST(CpuOps, Conv2dByHandSumsOverInputChannels) {
  Tensor x({1, 2, 3, 3});
  std::iota(x.data.begin(), x.data.begin() + 9, 1.0);  // channel 0: 1..9
  std::fill(x.data.begin() + 9, x.data.end(), 1.0);    // channel 1: ones
  // Channel 0 picks the window's top-left element, channel 1 sums its four ones.
  const Tensor w = make({1, 2, 2, 2}, {1, 0, 0, 0, 1, 1, 1, 1});
  expect_near(conv(x, w, kNoBias, params({1, 1}, {0, 0}, {1, 1})), make({1, 1, 2, 2}, {5, 6, 8, 9}),
              1e-15);
}

TEST(CpuOps, ConvTranspose1dByHand) {
  const Tensor x = make({1, 1, 2}, {1, 2});
  const Tensor w = make({1, 1, 3}, {1, 10, 100});
  // y[2i + k] += x[i] * w[k].
  expect_near(conv_transpose(x, w, kNoBias, params({2}, {0}, {1})),
              make({1, 1, 5}, {1, 10, 102, 20, 200}), 1e-15);
  // Padding crops one element from each end.
  expect_near(conv_transpose(x, w, kNoBias, params({2}, {1}, {1})), make({1, 1, 3}, {10, 102, 20}),
              1e-15);
  // output_padding adds one element at the end that no tap reaches: only the bias.
  const Tensor b = make({1}, {0.5});
  expect_near(conv_transpose(x, w, &b, params({2}, {0}, {1}, 1, {1})),
              make({1, 1, 6}, {1.5, 10.5, 102.5, 20.5, 200.5, 0.5}), 1e-15);
}

TEST(CpuOps, Conv3dMatchesNaiveLoop) {
  std::mt19937 rng(1);
  const Tensor x = random({2, 4, 5, 6, 7}, rng);
  const Tensor w = random({6, 2, 2, 3, 2}, rng);
  const Tensor b = random({6}, rng);
  const ConvParams cp = params({1, 2, 3}, {1, 0, 2}, {2, 1, 2}, /*groups=*/2);
  expect_near(conv(x, w, &b, cp), naive_conv3d(x, w, b, cp), 1e-13);
}

TEST(CpuOps, Conv1dAnd2dEqualConv3dWithUnitLeadingDims) {
  std::mt19937 rng(2);
  const Tensor x = random({2, 3, 11}, rng), w = random({4, 3, 3}, rng), b = random({4}, rng);
  const Tensor y1 = conv(x, w, &b, params({2}, {1}, {2}));
  const Tensor y3 = conv(reshape(x, {2, 3, 1, 1, 11}), reshape(w, {4, 3, 1, 1, 3}), &b,
                         params({1, 1, 2}, {0, 0, 1}, {1, 1, 2}));
  expect_near(reshape(y3, y1.shape), y1, 1e-14);
  const Tensor x2 = random({1, 3, 6, 5}, rng), w2 = random({2, 3, 2, 3}, rng);
  const Tensor y2 = conv(x2, w2, kNoBias, params({2, 1}, {1, 2}, {1, 2}));
  const Tensor y2_as_3d = conv(reshape(x2, {1, 3, 1, 6, 5}), reshape(w2, {2, 3, 1, 2, 3}), kNoBias,
                               params({1, 2, 1}, {0, 1, 2}, {1, 1, 2}));
  expect_near(reshape(y2_as_3d, y2.shape), y2, 1e-14);
}

TEST(CpuOps, ConvWithIdentityKernelReturnsInput) {
  std::mt19937 rng(3);
  const Tensor x = random({2, 5, 4, 3, 6}, rng);
  Tensor w({5, 5, 1, 1, 1});
  for (int64_t c = 0; c < 5; ++c) w.data[c * 5 + c] = 1.0;
  expect_near(conv(x, w, kNoBias, params({1, 1, 1}, {0, 0, 0}, {1, 1, 1})), x, 0.0);
}

TEST(CpuOps, GroupedConvEqualsConcatenatedPerGroupConvs) {
  std::mt19937 rng(4);
  const int64_t groups = 3;
  const Tensor x = random({2, 6, 7, 8}, rng), w = random({9, 2, 3, 2}, rng), b = random({9}, rng);
  const Tensor grouped = conv(x, w, &b, params({2, 1}, {1, 1}, {1, 2}, groups));
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < groups; ++g) {
    const Tensor bg = slice(b, 3 * g, 3 * g + 3, /*dim0=*/true);
    parts.push_back(conv(slice(x, 2 * g, 2 * g + 2), slice(w, 3 * g, 3 * g + 3, /*dim0=*/true), &bg,
                         params({2, 1}, {1, 1}, {1, 2})));
  }
  expect_near(grouped, concat_channels(parts), 1e-14);
}

// <conv(x, w), y> == <x, conv_transpose(y, w)>: conv_transpose is conv's adjoint, which checks
// it independently of any hand-written transposed loop.
void check_adjoint(const Shape& x_shape, const Shape& w_shape, const ConvParams& cp,
                   std::mt19937& rng) {
  const Tensor x = random(x_shape, rng), w = random(w_shape, rng);
  const Tensor cx = conv(x, w, kNoBias, cp);
  const Tensor y = random(cx.shape, rng);
  ConvParams back = cp;  // output_padding restores the input sizes that stride floors away
  for (size_t a = 0; a < cp.stride.size(); ++a) {
    const int64_t span = cp.dilation[a] * (w_shape[2 + a] - 1) + 1;
    back.output_padding[a] = (x_shape[2 + a] + 2 * cp.padding[a] - span) % cp.stride[a];
  }
  const Tensor ty = conv_transpose(y, w, kNoBias, back);
  ASSERT_EQ(ty.shape, x.shape);
  EXPECT_NEAR(inner(cx, y), inner(x, ty), 1e-11);
}

TEST(CpuOps, ConvTransposeIsAdjointOfConv) {
  std::mt19937 rng(5);
  check_adjoint({2, 4, 13}, {6, 2, 3}, params({2}, {1}, {2}, 2), rng);
  check_adjoint({1, 3, 9, 10}, {4, 3, 3, 2}, params({3, 2}, {1, 0}, {1, 2}), rng);
  check_adjoint({2, 4, 8, 7}, {4, 1, 3, 3}, params({1, 1}, {1, 1}, {1, 1}, 4), rng);  // depthwise
  check_adjoint({1, 6, 5, 6, 7}, {3, 2, 2, 3, 2}, params({2, 1, 3}, {1, 1, 0}, {2, 1, 1}, 3), rng);
  for (int trial = 0; trial < 10; ++trial) {  // random 2-D configurations
    std::uniform_int_distribution<int64_t> small(1, 3);
    const int64_t groups = small(rng), k = small(rng), s = small(rng), d = small(rng);
    const int64_t p = small(rng) - 1;
    const int64_t size = d * (k - 1) + 1 + small(rng) * 3;
    check_adjoint({2, 2 * groups, size, size + 1}, {3 * groups, 2, k, k + 1},
                  params({s, s + 1}, {p, p}, {d, 1}, groups), rng);
  }
}

TEST(CpuOps, ConvTransposeOutputSizeWithOutputPadding) {
  std::mt19937 rng(6);
  const Tensor x = random({1, 2, 5, 7}, rng), w = random({2, 3, 3, 3}, rng);
  const Tensor b = random({3}, rng);
  const Tensor y = conv_transpose(x, w, &b, params({2, 3}, {1, 0}, {1, 2}, 1, {1, 2}));
  // (S - 1)*stride - 2*padding + dilation*(K - 1) + output_padding + 1
  EXPECT_EQ(y.shape, (Shape{1, 3, 4 * 2 - 2 + 2 + 1 + 1, 6 * 3 + 4 + 2 + 1}));
  // output_padding only appends positions: the ones both outputs share agree.
  const Tensor y0 = conv_transpose(x, w, &b, params({2, 3}, {1, 0}, {1, 2}));
  ASSERT_EQ(y0.shape, (Shape{1, 3, 9, 23}));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t h = 0; h < 9; ++h)
      for (int64_t ww = 0; ww < 23; ++ww)
        ASSERT_EQ(y.data[(c * 10 + h) * 25 + ww], y0.data[(c * 9 + h) * 23 + ww]);
}

TEST(CpuOps, ConvTransposeGroupedEqualsPerGroup) {
  std::mt19937 rng(7);
  const Tensor x = random({2, 4, 5, 6}, rng), w = random({4, 3, 3, 2}, rng);
  const Tensor b = random({6}, rng);
  const Tensor grouped = conv_transpose(x, w, &b, params({2, 2}, {1, 0}, {1, 1}, 2, {1, 0}));
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < 2; ++g) {
    const Tensor bg = slice(b, 3 * g, 3 * g + 3, /*dim0=*/true);
    parts.push_back(conv_transpose(slice(x, 2 * g, 2 * g + 2),
                                   slice(w, 2 * g, 2 * g + 2, /*dim0=*/true), &bg,
                                   params({2, 2}, {1, 0}, {1, 1}, 1, {1, 0})));
  }
  expect_near(grouped, concat_channels(parts), 1e-14);
}

TEST(CpuOpsDeathTest, ConvAbortsOnChannelMismatch) {
  const Tensor x({1, 4, 5}), w({2, 3, 3});
  EXPECT_DEATH(conv(x, w, kNoBias, params({1}, {0}, {1})), "weight does not match");
}

// ---- Elementwise, pooling, reductions ----

TEST(CpuOps, BroadcastingAddAndMul) {
  const Tensor a = make({2, 3, 1}, {1, 2, 3, 4, 5, 6});
  const Tensor b = make({3, 2}, {10, 20, 30, 40, 50, 60});
  const Tensor sum = add(a, b);
  ASSERT_EQ(sum.shape, (Shape{2, 3, 2}));
  expect_near(sum, make({2, 3, 2}, {11, 21, 32, 42, 53, 63, 14, 24, 35, 45, 56, 66}), 0.0);
  const Tensor scale = make({2, 1, 1}, {2, -1});  // a per-channel parameter such as (C, 1, 1)
  expect_near(mul(a, scale), make({2, 3, 1}, {2, 4, 6, -4, -5, -6}), 0.0);
}

TEST(CpuOps, MaxPoolPadsWithMinusInfinity) {
  const Tensor x = make({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  expect_near(max_pool(x, {2, 2}, {2, 2}, {0, 0}), make({1, 1, 2, 2}, {6, 8, 14, 16}), 0.0);
  Tensor negative({1, 1, 2, 2});
  std::fill(negative.data.begin(), negative.data.end(), -1.0);
  // Zero padding would make every window's max 0.
  expect_near(max_pool(negative, {2, 2}, {1, 1}, {1, 1}), make({1, 1, 3, 3}, std::vector(9, -1.0)),
              0.0);
}

TEST(CpuOps, AvgPoolCountsPaddingAndFloors) {
  Tensor ones({1, 1, 2, 2});
  std::fill(ones.data.begin(), ones.data.end(), 1.0);
  expect_near(avg_pool(ones, {2, 2}, {1, 1}, {1, 1}),
              make({1, 1, 3, 3}, {0.25, 0.5, 0.25, 0.5, 1, 0.5, 0.25, 0.5, 0.25}), 1e-15);
  const Tensor x = make({1, 1, 5}, {1, 2, 3, 4, 100});  // floor mode drops the last element
  expect_near(avg_pool(x, {2}, {2}, {0}), make({1, 1, 2}, {1.5, 3.5}), 1e-15);
}

TEST(CpuOps, MeanOverDimsWithAndWithoutKeepdim) {
  Tensor x({2, 3, 2, 2});
  std::iota(x.data.begin(), x.data.end(), 0.0);
  const Tensor kept = mean(x, {-1, -2}, /*keepdim=*/true);
  ASSERT_EQ(kept.shape, (Shape{2, 3, 1, 1}));
  for (int64_t p = 0; p < 6; ++p) EXPECT_DOUBLE_EQ(kept.data[p], 4 * p + 1.5);
  const Tensor dropped = mean(x, {0, 2}, /*keepdim=*/false);
  ASSERT_EQ(dropped.shape, (Shape{3, 2}));
  EXPECT_DOUBLE_EQ(dropped.data[0], (0 + 2 + 12 + 14) / 4.0);   // c 0, w 0
  EXPECT_DOUBLE_EQ(dropped.data[5], (9 + 11 + 21 + 23) / 4.0);  // c 2, w 1
}

TEST(CpuOps, BmmByHand) {
  const Tensor a = make({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 0, 2});
  const Tensor b = make({2, 3, 2}, {1, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6});
  expect_near(bmm(a, b), make({2, 2, 2}, {4, 5, 10, 11, 1, 2, 10, 12}), 0.0);
}

TEST(CpuOps, LinearIsXTimesWeightTransposedPlusBias) {
  const Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor w = make({2, 3}, {1, 0, 1, 0, 1, 0});  // out 0 = x0 + x2, out 1 = x1
  const Tensor b = make({2}, {10, 20});
  expect_near(linear(x, w, &b), make({2, 2}, {14, 22, 20, 25}), 0.0);
  expect_near(linear(x, w, static_cast<const Tensor*>(nullptr)), make({2, 2}, {4, 2, 10, 5}), 0.0);
}

TEST(CpuOps, SubIsAMinusBBroadcast) {
  const Tensor a = make({2, 2}, {5, 6, 7, 8});
  expect_near(sub(a, make({2}, {1, 2})), make({2, 2}, {4, 4, 6, 6}), 0.0);
}

// ---- Normalization ----

// Mean and biased variance of `count` elements starting at `first`, `stride` apart.
std::pair<double, double> stats(const Tensor& t, int64_t first, int64_t count, int64_t stride) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < count; ++i) sum += t.data[first + i * stride];
  const double m = sum / count;
  for (int64_t i = 0; i < count; ++i) sq += std::pow(t.data[first + i * stride] - m, 2);
  return {m, sq / count};
}

Tensor filled(const Shape& shape, double value) {
  Tensor t(shape);
  std::fill(t.data.begin(), t.data.end(), value);
  return t;
}

TEST(CpuOps, BatchNormNormalizesEachChannelOverBatchAndSpace) {
  std::mt19937 rng(8);
  Tensor x = random({3, 4, 5, 2}, rng);
  for (double& v : x.data) v = 7 + 3 * v;  // |mean| >> std, where one-pass variance would suffer
  const Tensor y = batch_norm_train(x, filled({4}, 1), filled({4}, 0), 0.0);
  for (int64_t c = 0; c < 4; ++c) {
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < 3; ++n) {
      const auto [m, v] = stats(y, (n * 4 + c) * 10, 10, 1);
      sum += m;
      sq += v + m * m;
    }
    EXPECT_NEAR(sum / 3, 0.0, 1e-13);
    EXPECT_NEAR(sq / 3, 1.0, 1e-12);
  }
  const Tensor weight = make({4}, {1, 2, 3, 4}), bias = make({4}, {0, 1, 0, 1});
  const Tensor affine = batch_norm_train(x, weight, bias, 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 10) % 4;
    ASSERT_NEAR(affine.data[i], y.data[i] * weight.data[c] + bias.data[c], 1e-14);
  }
  // A constant channel has zero deviation, so it maps to its bias whatever eps is.
  expect_near(batch_norm_train(filled({2, 1, 3}, 5.0), filled({1}, 2), filled({1}, -3), 1e-5),
              filled({2, 1, 3}, -3.0), 0.0);
}

TEST(CpuOps, InstanceNormByHandAndPerPlaneStats) {
  // One plane [1, 3]: mean 2, biased variance 1; eps sits inside the sqrt.
  const double r = 1 / std::sqrt(1 + 1e-5);
  expect_near(instance_norm(make({1, 1, 2}, {1, 3}), 1e-5), make({1, 1, 2}, {-r, r}), 1e-15);
  std::mt19937 rng(9);
  const Tensor y = instance_norm(random({2, 3, 4, 5}, rng), 0.0);
  for (int64_t p = 0; p < 6; ++p) {
    const auto [m, v] = stats(y, p * 20, 20, 1);
    EXPECT_NEAR(m, 0.0, 1e-14);
    EXPECT_NEAR(v, 1.0, 1e-13);
  }
}

TEST(CpuOps, GroupNormNormalizesEachGroupThenAppliesChannelAffine) {
  std::mt19937 rng(10);
  const Tensor x = random({2, 6, 3, 2}, rng);  // 3 groups of 2 channels x 6 positions
  const Tensor y = group_norm(x, 3, filled({6}, 1), filled({6}, 0), 0.0);
  for (int64_t block = 0; block < 6; ++block) {
    const auto [m, v] = stats(y, block * 12, 12, 1);
    EXPECT_NEAR(m, 0.0, 1e-14);
    EXPECT_NEAR(v, 1.0, 1e-13);
  }
  const Tensor weight = make({6}, {1, 2, 3, 4, 5, 6}), bias = make({6}, {0, 1, 0, 1, 0, 1});
  const Tensor affine = group_norm(x, 3, weight, bias, 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 6) % 6;
    ASSERT_NEAR(affine.data[i], y.data[i] * weight.data[c] + bias.data[c], 1e-14);
  }
}

TEST(CpuOps, LayerNormNormalizesTrailingDimsOfWeightShape) {
  std::mt19937 rng(11);
  const Tensor x = random({2, 3, 4, 5}, rng);
  const Tensor y = layer_norm(x, filled({4, 5}, 1), filled({4, 5}, 0), 0.0);
  for (int64_t row = 0; row < 6; ++row) {
    const auto [m, v] = stats(y, row * 20, 20, 1);
    EXPECT_NEAR(m, 0.0, 1e-14);
    EXPECT_NEAR(v, 1.0, 1e-13);
  }
  // L2_034: LayerNorm(64) on (N, C, D, H, W) normalizes over W only, affine per W position.
  const Tensor weight = make({5}, {1, 2, 3, 4, 5}), bias = make({5}, {5, 4, 3, 2, 1});
  const Tensor last = layer_norm(x, weight, bias, 0.0);
  for (int64_t row = 0; row < 24; ++row) {
    Tensor plain(Shape{5});
    for (int64_t i = 0; i < 5; ++i)
      plain.data[i] = (last.data[row * 5 + i] - bias.data[i]) / weight.data[i];
    const auto [m, v] = stats(plain, 0, 5, 1);
    EXPECT_NEAR(m, 0.0, 1e-13);
    EXPECT_NEAR(v, 1.0, 1e-12);
  }
}

// ---- Softmax, shuffle, loss, views ----

TEST(CpuOps, SoftmaxSumsToOneAlongDimAndIgnoresShift) {
  std::mt19937 rng(12);
  const Tensor x = random({2, 5, 3, 4}, rng);
  const Tensor y = softmax(x, 1);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t pos = 0; pos < 12; ++pos) {
      EXPECT_NEAR(stats(y, n * 60 + pos, 5, 12).first * 5, 1.0, 1e-15);
    }
  }
  // Max subtraction: huge logits neither overflow nor change the result.
  Tensor shifted = x;
  for (double& v : shifted.data) v += 1000;
  expect_near(softmax(shifted, -3), y, 1e-12);
  expect_near(softmax(make({1, 2}, {0, std::log(3.0)}), -1), make({1, 2}, {0.25, 0.75}), 1e-15);
}

TEST(CpuOps, ChannelShuffleMapsLikePyTorch) {
  Tensor x({2, 12, 1, 2});
  for (int64_t i = 0; i < x.numel(); ++i) x.data[i] = static_cast<double>((i / 2) % 12);
  const Tensor y = channel_shuffle(x, 3);
  const std::vector<double> expected = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.data[i], expected[(i / 2) % 12]) << i;
}

TEST(CpuOps, KlDivBatchmeanByHand) {
  const Tensor p = make({2, 2}, {0.5, 0.5, 0.25, 0.75});
  const Tensor target = make({2, 2}, {1.0, 0.0, 0.5, 0.5});
  const Tensor y = kl_div_batchmean(map(p, [](double v) { return std::log(v); }), target);
  EXPECT_TRUE(y.shape.empty());
  ASSERT_EQ(y.data.size(), 1u);
  // Row 0: 1*(log 1 - log .5) + 0 (0*log 0 = 0); row 1: .5*log(.5/.25) + .5*log(.5/.75);
  // divided by the 2 rows, not the 4 elements.
  const double expected = (std::log(2.0) + 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3)) / 2;
  EXPECT_NEAR(y.data[0], expected, 1e-15);
}

TEST(CpuOps, PermuteAndReshapeRoundTrip) {
  Tensor x({2, 3, 4});
  std::iota(x.data.begin(), x.data.end(), 0.0);
  const Tensor y = permute(x, {2, 0, 1});
  ASSERT_EQ(y.shape, (Shape{4, 2, 3}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k)
        ASSERT_EQ(y.data[(k * 2 + i) * 3 + j], x.data[(i * 3 + j) * 4 + k]);
  expect_near(permute(y, {1, 2, 0}), x, 0.0);
  // L3_031: x.view(B, C, HW).permute(2, 0, 1) and back.
  const Tensor tokens = permute(reshape(x, {2, 3, 4}), {-1, 0, 1});
  expect_near(reshape(permute(tokens, {1, 2, 0}), {2, 3, 2, 2}), reshape(x, {2, 3, 2, 2}), 0.0);
}

// ---- Attention ----

// nn.MultiheadAttention written out per (l, n, head) with scalar loops; scores are scaled after
// the dot product rather than q before it (equal in exact arithmetic).
Tensor naive_mha(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w_in,
                 const Tensor& b_in, const Tensor& w_out, const Tensor& b_out, int64_t heads) {
  const int64_t L = q.shape[0], S = k.shape[0], N = q.shape[1], E = q.shape[2], hd = E / heads;
  const auto project = [&](const Tensor& t, int64_t len, int64_t part) {
    Tensor out(Shape{len, N, E});
    for (int64_t r = 0; r < len * N; ++r)
      for (int64_t o = 0; o < E; ++o) {
        double acc = b_in.data[part * E + o];
        for (int64_t i = 0; i < E; ++i)
          acc += w_in.data[(part * E + o) * E + i] * t.data[r * E + i];
        out.data[r * E + o] = acc;
      }
    return out;
  };
  const Tensor qp = project(q, L, 0), kp = project(k, S, 1), vp = project(v, S, 2);
  Tensor heads_out(q.shape);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> e(S);
        double total = 0;
        for (int64_t s = 0; s < S; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d)
            dot += qp.data[(l * N + n) * E + h * hd + d] * kp.data[(s * N + n) * E + h * hd + d];
          total += e[s] = std::exp(dot / std::sqrt(double(hd)));
        }
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t s = 0; s < S; ++s)
            acc += e[s] / total * vp.data[(s * N + n) * E + h * hd + d];
          heads_out.data[(l * N + n) * E + h * hd + d] = acc;
        }
      }
  Tensor y(q.shape);
  for (int64_t r = 0; r < L * N; ++r)
    for (int64_t o = 0; o < E; ++o) {
      double acc = b_out.data[o];
      for (int64_t i = 0; i < E; ++i) acc += w_out.data[o * E + i] * heads_out.data[r * E + i];
      y.data[r * E + o] = acc;
    }
  return y;
}

void check_mha(int64_t L, int64_t S, int64_t N, int64_t E, int64_t heads, std::mt19937& rng) {
  const Tensor q = random({L, N, E}, rng), k = random({S, N, E}, rng), v = random({S, N, E}, rng);
  const Tensor w_in = random({3 * E, E}, rng), b_in = random({3 * E}, rng);
  const Tensor w_out = random({E, E}, rng), b_out = random({E}, rng);
  expect_near(multihead_attention(q, k, v, w_in, b_in, w_out, b_out, heads),
              naive_mha(q, k, v, w_in, b_in, w_out, b_out, heads), 1e-13);
}

TEST(CpuOps, MultiheadAttentionMatchesHandWrittenLoop) {
  std::mt19937 rng(13);
  check_mha(/*L=*/2, /*S=*/3, /*N=*/1, /*E=*/2, /*heads=*/1, rng);
  check_mha(4, 3, 2, 6, 3, rng);  // heads and batch entries must not mix
}

TEST(CpuOps, MultiheadAttentionWithOneKeyReturnsProjectedValue) {
  // Softmax over a single key is 1, so the output is out_proj(v_proj(v)) whatever q and k are.
  const Tensor q = make({1, 1, 1}, {3}), k = make({1, 1, 1}, {-2}), v = make({1, 1, 1}, {5});
  const Tensor w_in = make({3, 1}, {7, 11, 2}), b_in = make({3}, {1, 1, 0.5});
  const Tensor w_out = make({1, 1}, {3}), b_out = make({1}, {-1});
  expect_near(multihead_attention(q, k, v, w_in, b_in, w_out, b_out, 1),
              make({1, 1, 1}, {3 * (2 * 5 + 0.5) - 1}), 1e-15);
}

// ---- float and double instantiations ----

// The same pipeline of every op in float and in double: an op that differs between the
// instantiations (or loses precision in float) shows up as a difference well above fp32 rounding.
template <typename T>
HostTensor<T> pipeline(const std::vector<HostTensor<float>>& in) {
  const HostTensor<T> x = cast<T>(in[0]), w = cast<T>(in[1]), b = cast<T>(in[2]),
                      g = cast<T>(in[3]);
  const HostTensor<T> w_in = cast<T>(in[4]), b_in = cast<T>(in[5]), w_out = cast<T>(in[6]);
  HostTensor<T> y = conv(x, w, &b, params({1, 2}, {1, 0}, {2, 1}, 2));      // (2, 4, 4, 2)
  y = conv_transpose(y, w, &b, params({2, 1}, {1, 1}, {1, 2}, 2, {1, 0}));  // (2, 4, 8, 4)
  y = group_norm(batch_norm_train(y, g, b, 1e-5), 2, g, b, 1e-5);
  y = softmax(instance_norm(max_pool(y, {2, 2}, {1, 2}, {1, 0}), 1e-5), 1);  // (2, 4, 9, 2)
  y = avg_pool(channel_shuffle(y, 2), {2, 1}, {2, 1}, {0, 0});               // (2, 4, 4, 2)
  const HostTensor<T> tokens = permute(reshape(y, {2, 4, 8}), {2, 0, 1});    // (8, 2, 4)
  y = multihead_attention(tokens, tokens, tokens, w_in, b_in, w_out, b, 2);
  return layer_norm(add(mul(y, y), y), g, b, 1e-5);
}

TEST(CpuOps, FloatAndDoubleInstantiationsAgree) {
  std::mt19937 rng(14);
  std::vector<HostTensor<float>> in;
  for (const Shape& s : {Shape{2, 4, 6, 5}, Shape{4, 2, 3, 3}, Shape{4}, Shape{4}, Shape{12, 4},
                         Shape{12}, Shape{4, 4}}) {
    in.push_back(random_float(s, rng));
  }
  const HostTensor<double> yd = pipeline<double>(in);
  const HostTensor<float> yf = pipeline<float>(in);
  ASSERT_EQ(yd.shape, (Shape{8, 2, 4}));
  ASSERT_EQ(yf.shape, yd.shape);
  for (size_t i = 0; i < yd.data.size(); ++i) ASSERT_NEAR(yf.data[i], yd.data[i], 1e-5) << i;
  const HostTensor<float> pf = cast<float>(in[4]);
  const HostTensor<float> loss = kl_div_batchmean(softmax(pf, -1), softmax(pf, 0));
  const HostTensor<double> pd = cast<double>(in[4]);
  EXPECT_NEAR(loss.data[0], kl_div_batchmean(softmax(pd, -1), softmax(pd, 0)).data[0], 1e-6);
}

}  // namespace
}  // namespace kb::cpu

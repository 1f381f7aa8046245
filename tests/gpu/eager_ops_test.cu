// The eager ops (kernels/eager/eager_ops.h) against the golden-model ops (kernels/cpu/ops.h, in
// double) on random inputs: |gpu - cpu| <= 1e-4 + 1e-4 |cpu| for every element. Shapes cover
// each kernel path (vectorized and scalar tails, warp and block rows, chunked reductions),
// odd sizes and batch 1. The Huge* tests cross 2^31 elements (64-bit index paths) and need about
// 20 GB of device memory; they skip when it is not free (--gtest_filter=-*Huge* leaves them out).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "kernels/cpu/ops.h"
#include "kernels/eager/eager_ops.h"
#include "tests/gpu/gpu_compare.h"
#include "tests/support/assert_ok.h"

namespace kb::eager {
namespace {

using test::all_close;
using test::download;
using test::GpuTensor;
using test::random_tensor;
using test::upload;
using Golden = HostTensor<double>;

class EagerOpsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess); }
  void TearDown() override { cudaStreamDestroy(stream_); }

  std::unique_ptr<GpuTensor> to_gpu(const HostTensor<float>& host) {
    auto t = std::make_unique<GpuTensor>(host.shape);
    upload(host, t->view);
    return t;
  }
  HostTensor<float> random(const Shape& shape, float lo = -1.0f, float hi = 1.0f) {
    return random_tensor(shape, rng_, lo, hi);
  }

  cudaStream_t stream_ = nullptr;
  std::mt19937 rng_{20240611};
};

Golden golden(const HostTensor<float>& t) {
  return cpu::cast<double>(t);
}

// ---- Unary ----

struct UnaryCase {
  const char* name;
  Unary op;
  float a, b;
  float lo, hi;  // input range
  double (*golden)(double v, double a, double b);
};

const UnaryCase kUnaryCases[] = {
    {"relu", Unary::kRelu, 0, 0, -2, 2, [](double v, double, double) { return cpu::relu(v); }},
    {"sigmoid", Unary::kSigmoid, 0, 0, -9, 9,
     [](double v, double, double) { return cpu::sigmoid(v); }},
    {"tanh", Unary::kTanh, 0, 0, -4, 4, [](double v, double, double) { return std::tanh(v); }},
    {"gelu", Unary::kGeluErf, 0, 0, -5, 5,
     [](double v, double, double) { return cpu::gelu_erf(v); }},
    {"swish", Unary::kSwish, 0, 0, -8, 8, [](double v, double, double) { return cpu::swish(v); }},
    {"hardswish", Unary::kHardswish, 0, 0, -5, 5,
     [](double v, double, double) { return cpu::hardswish(v); }},
    {"log", Unary::kLog, 0, 0, 0.01f, 3, [](double v, double, double) { return std::log(v); }},
    {"leaky_relu", Unary::kLeakyRelu, 0.01f, 0, -2, 2,
     [](double v, double a, double) { return cpu::leaky_relu(v, a); }},
    {"hardtanh", Unary::kHardtanh, -1, 1, -3, 3,
     [](double v, double a, double b) { return cpu::hardtanh(v, a, b); }},
    {"add_scalar", Unary::kAddScalar, 0.5f, 0, -2, 2,
     [](double v, double a, double) { return v + a; }},
    {"mul_scalar", Unary::kMulScalar, 2.5f, 0, -2, 2,
     [](double v, double a, double) { return v * a; }},
    {"div_scalar", Unary::kDivScalar, 3.0f, 0, -2, 2,
     [](double v, double a, double) { return v / a; }},
    {"min_scalar", Unary::kMinScalar, 0.25f, 0, -2, 2,
     [](double v, double a, double) { return std::min(v, a); }},
};

// n: vectorized body plus a scalar tail; offset 1 makes the pointers unaligned (scalar kernel).
TEST_F(EagerOpsTest, UnaryMatchesGolden) {
  for (const UnaryCase& c : kUnaryCases) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{100003}}) {
      for (int64_t offset : {0, 1}) {
        const HostTensor<float> x = random({n}, c.lo, c.hi);
        GpuTensor buffer({n + offset}), out({n + offset});
        upload(x, DeviceTensor{buffer.view.data + offset, {n}});
        KB_ASSERT_OK(
            unary(c.op, buffer.view.data + offset, out.view.data + offset, n, stream_, c.a, c.b));
        const HostTensor<float> got = download(DeviceTensor{out.view.data + offset, {n}});
        Golden want(Shape{n});
        for (int64_t i = 0; i < n; ++i) want.data[i] = c.golden(x.data[i], c.a, c.b);
        EXPECT_TRUE(all_close(got, want)) << c.name << ", n " << n << ", offset " << offset;
      }
    }
  }
}

TEST_F(EagerOpsTest, UnaryInPlace) {
  const HostTensor<float> x = random({4099});
  auto t = to_gpu(x);
  KB_ASSERT_OK(unary(Unary::kRelu, t->view.data, t->view.data, x.numel(), stream_));
  EXPECT_TRUE(all_close(download(t->view), cpu::map(golden(x), cpu::relu<double>))) << "relu_";
}

// ---- Binary ----

void check_binary(std::mt19937& rng, cudaStream_t stream, Binary op, const Shape& sa,
                  const Shape& sb, const Shape& so) {
  const HostTensor<float> a = random_tensor(sa, rng), b = random_tensor(sb, rng);
  GpuTensor ga(sa), gb(sb), out(so);
  upload(a, ga.view);
  upload(b, gb.view);
  const Status s = binary(op, ga.view, gb.view, out.view, stream);
  ASSERT_TRUE(s.is_ok()) << s.message();
  const Golden want =
      op == Binary::kAdd ? cpu::add(golden(a), golden(b)) : cpu::mul(golden(a), golden(b));
  EXPECT_TRUE(all_close(download(out.view), want))
      << (op == Binary::kAdd ? "add " : "mul ") << shape_to_string(sa) << " with "
      << shape_to_string(sb);
}

TEST_F(EagerOpsTest, BinaryBroadcastsLikeNumPy) {
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {
      {{2, 3, 17, 19}, {2, 3, 17, 19}, {2, 3, 17, 19}},  // same shape, vectorized + tail
      {{4, 6, 5, 7}, {6, 1, 1}, {4, 6, 5, 7}},           // per-channel bias
      {{1, 6, 5, 7}, {1, 6, 1, 1}, {1, 6, 5, 7}},        // batch 1
      {{2, 3, 4, 5, 6}, {3, 1, 1, 1}, {2, 3, 4, 5, 6}},  // 3-D spatial
      {{4, 1, 5}, {1, 3, 1}, {4, 3, 5}},                 // both operands broadcast
      {{3, 4, 5}, {5}, {3, 4, 5}},                       // lower rank
      {{3, 4, 5}, {}, {3, 4, 5}},                        // 0-d scalar
      {{7}, {1}, {7}},
  };
  for (const Case& c : cases) {
    check_binary(rng_, stream_, Binary::kAdd, c.a, c.b, c.out);
    check_binary(rng_, stream_, Binary::kMul, c.b, c.a, c.out);
  }
}

TEST_F(EagerOpsTest, BinaryInPlaceAdd) {
  const HostTensor<float> a = random({3, 8, 9, 11}), b = random({3, 8, 9, 11});
  auto ga = to_gpu(a), gb = to_gpu(b);
  KB_ASSERT_OK(binary(Binary::kAdd, ga->view, gb->view, ga->view, stream_));
  EXPECT_TRUE(all_close(download(ga->view), cpu::add(golden(a), golden(b)))) << "out += b";
}

// linear's bias as addmm takes it: copied into every row of the output before the GEMM.
TEST_F(EagerOpsTest, BroadcastRowsRepeatsTheVectorInEveryRow) {
  const HostTensor<float> bias = random({37});
  auto gb = to_gpu(bias);
  GpuTensor out(Shape{5, 37});
  KB_ASSERT_OK(broadcast_rows(gb->view.data, 37, out.view.data, 5, stream_));
  const HostTensor<float> got = download(out.view);
  for (size_t i = 0; i < got.data.size(); ++i) ASSERT_EQ(got.data[i], bias.data[i % 37]) << i;
}

TEST_F(EagerOpsTest, BinaryRejectsShapesThatDoNotBroadcast) {
  GpuTensor a({3, 4}), b({5}), out({3, 4});
  EXPECT_FALSE(binary(Binary::kAdd, a.view, b.view, out.view, stream_).is_ok());
}

// ---- Pooling ----

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, stride, padding;
};

TEST_F(EagerOpsTest, PoolsMatchGolden) {
  const PoolCase cases[] = {
      {{2, 3, 17, 15}, {2, 2}, {2, 2}, {0, 0}},             // L2_010's MaxPool2d(2, 2), odd sizes
      {{1, 2, 16, 16}, {3, 3}, {2, 2}, {1, 1}},             // padded, overlapping, batch 1
      {{2, 3, 9, 13}, {3, 2}, {1, 3}, {1, 0}},              // asymmetric
      {{2, 4, 23}, {4}, {3}, {2}},                          // 1-D
      {{2, 3, 7, 9, 11}, {2, 3, 2}, {2, 2, 3}, {1, 1, 0}},  // 3-D
      {{3, 5, 32, 32}, {2, 2}, {}, {}},                     // stride and padding default
  };
  for (const PoolCase& c : cases) {
    const HostTensor<float> x = random(c.x, -3, 3);
    auto gx = to_gpu(x);
    for (bool average : {false, true}) {
      const Golden want = average ? cpu::avg_pool(golden(x), c.kernel, c.stride, c.padding)
                                  : cpu::max_pool(golden(x), c.kernel, c.stride, c.padding);
      GpuTensor out(want.shape);
      KB_ASSERT_OK(average ? avg_pool(gx->view, c.kernel, c.stride, c.padding, out.view, stream_)
                           : max_pool(gx->view, c.kernel, c.stride, c.padding, out.view, stream_));
      EXPECT_TRUE(all_close(download(out.view), want))
          << (average ? "avg_pool" : "max_pool") << " x " << shape_to_string(c.x);
    }
  }
}

// ---- Mean ----

TEST_F(EagerOpsTest, MeanTrailingMatchesGolden) {
  struct Case {
    Shape x;
    int count;
  };
  const Case cases[] = {
      {{3, 5, 7}, 1},       // short rows: a warp each
      {{2, 3, 17, 19}, 2},  // L2_010's mean over (H, W)
      {{2, 3, 64, 65}, 2},  // rows longer than a warp's share: a block each
      {{2, 1 << 20}, 1},    // two long rows: chunked, second pass
      {{1, 1, 3, 3}, 3},    // batch 1
      {{5, 4}, 2},          // everything: one row
  };
  for (const Case& c : cases) {
    const HostTensor<float> x = random(c.x, -1, 3);
    std::vector<int64_t> dims;
    for (int d = 0; d < c.count; ++d) dims.push_back(-1 - d);
    const Golden want = cpu::mean(golden(x), dims, /*keepdim=*/false);
    auto gx = to_gpu(x);
    GpuTensor out(want.shape);
    KB_ASSERT_OK(mean_trailing(gx->view, c.count, out.view, stream_));
    EXPECT_TRUE(all_close(download(out.view), want))
        << "mean of x " << shape_to_string(c.x) << " over " << c.count << " trailing dims";
  }
}

// ---- Normalization ----

// Inputs offset from zero, so that a variance computed as E[x^2] - E[x]^2 would fail.
TEST_F(EagerOpsTest, BatchNormMatchesGolden) {
  for (const Shape& shape : {Shape{4, 8, 9, 11}, Shape{2, 3, 300, 300}, Shape{16, 5},
                             Shape{1, 4, 3, 5, 7}, Shape{3, 2, 1, 1}}) {
    const HostTensor<float> x = random(shape, 2, 6);
    const HostTensor<float> w = random({shape[1]}, 0.5f, 2), b = random({shape[1]});
    auto gx = to_gpu(x), gw = to_gpu(w), gb = to_gpu(b);
    GpuTensor out(shape);
    KB_ASSERT_OK(
        batch_norm_train(gx->view, gw->view.data, gb->view.data, 1e-5f, out.view, stream_));
    EXPECT_TRUE(
        all_close(download(out.view), cpu::batch_norm_train(golden(x), golden(w), golden(b), 1e-5)))
        << "batch_norm x " << shape_to_string(shape);
  }
}

TEST_F(EagerOpsTest, InstanceNormMatchesGolden) {
  for (const Shape& shape : {Shape{2, 3, 7, 9}, Shape{2, 2, 100, 100}, Shape{1, 1, 300, 300},
                             Shape{2, 3, 4, 5, 6}, Shape{3, 4, 33}}) {
    const HostTensor<float> x = random(shape, -1, 5);
    auto gx = to_gpu(x);
    GpuTensor out(shape);
    KB_ASSERT_OK(instance_norm(gx->view, 1e-5f, out.view, stream_));
    EXPECT_TRUE(all_close(download(out.view), cpu::instance_norm(golden(x), 1e-5)))
        << "instance_norm x " << shape_to_string(shape);
  }
}

TEST_F(EagerOpsTest, GroupNormMatchesGolden) {
  struct Case {
    Shape x;
    int64_t groups;
  };
  const Case cases[] = {{{2, 6, 5, 7}, 3},
                        {{2, 8, 64, 64}, 2},
                        {{2, 4, 3, 5, 7}, 2},
                        {{1, 16, 31, 63}, 4},
                        {{3, 6, 1, 1}, 6}};
  for (const Case& c : cases) {
    const HostTensor<float> x = random(c.x, 0, 1);
    const HostTensor<float> w = random({c.x[1]}, 0.5f, 2), b = random({c.x[1]});
    auto gx = to_gpu(x), gw = to_gpu(w), gb = to_gpu(b);
    GpuTensor out(c.x);
    KB_ASSERT_OK(
        group_norm(gx->view, c.groups, gw->view.data, gb->view.data, 1e-5f, out.view, stream_));
    EXPECT_TRUE(all_close(download(out.view),
                          cpu::group_norm(golden(x), c.groups, golden(w), golden(b), 1e-5)))
        << "group_norm x " << shape_to_string(c.x) << ", " << c.groups << " groups";
  }
}

TEST_F(EagerOpsTest, LayerNormMatchesGolden) {
  struct Case {
    Shape x, normalized;
  };
  const Case cases[] = {{{5, 7, 64}, {64}},
                        {{4, 3, 5, 6}, {5, 6}},
                        {{3, 5000}, {5000}},
                        {{2, 3, 7, 9}, {3, 7, 9}},
                        {{1, 128}, {128}}};
  for (const Case& c : cases) {
    const HostTensor<float> x = random(c.x, -2, 4);
    const HostTensor<float> w = random(c.normalized, 0.5f, 2), b = random(c.normalized);
    auto gx = to_gpu(x), gw = to_gpu(w), gb = to_gpu(b);
    GpuTensor out(c.x);
    KB_ASSERT_OK(
        layer_norm(gx->view, w.numel(), gw->view.data, gb->view.data, 1e-5f, out.view, stream_));
    EXPECT_TRUE(
        all_close(download(out.view), cpu::layer_norm(golden(x), golden(w), golden(b), 1e-5)))
        << "layer_norm x " << shape_to_string(c.x) << " over " << shape_to_string(c.normalized);
  }
}

// ---- Softmax, shuffle, permute ----

TEST_F(EagerOpsTest, SoftmaxMatchesGolden) {
  struct Case {
    Shape x;
    int dim;
  };
  const Case cases[] = {{{6, 33}, 1},           // last dim, warp rows
                        {{3, 5000}, 1},         // last dim, float4 block rows
                        {{2, 16384}, 1},        // L3_031's rows: 1,024 threads
                        {{2, 32768}, 1},        // longer rows, 1,024 threads
                        {{2, 5001}, 1},         // not a multiple of 4: scalar block rows
                        {{1, 40000}, 1},        // long, float4 rows
                        {{2, 7, 5, 3}, 1},      // channels (L2_091): columns
                        {{4, 3, 2}, 0},         // first dim
                        {{1, 12, 13, 15}, 1}};  // batch 1
  for (const Case& c : cases) {
    const HostTensor<float> x = random(c.x, -6, 6);
    auto gx = to_gpu(x);
    GpuTensor out(c.x);
    KB_ASSERT_OK(softmax(gx->view, c.dim, out.view, stream_));
    EXPECT_TRUE(all_close(download(out.view), cpu::softmax(golden(x), c.dim)))
        << "softmax x " << shape_to_string(c.x) << " dim " << c.dim;
  }
}

TEST_F(EagerOpsTest, ChannelShuffleMatchesGolden) {
  struct Case {
    Shape x;
    int64_t groups;
  };
  const Case cases[] = {{{2, 6, 3, 5}, 3}, {{3, 8, 7}, 4}, {{1, 12, 8, 8}, 3}, {{2, 5, 4, 4}, 1}};
  for (const Case& c : cases) {
    const HostTensor<float> x = random(c.x);
    auto gx = to_gpu(x);
    GpuTensor out(c.x);
    KB_ASSERT_OK(channel_shuffle(gx->view, c.groups, out.view, stream_));
    EXPECT_TRUE(all_close(download(out.view), cpu::channel_shuffle(golden(x), c.groups)))
        << "channel_shuffle x " << shape_to_string(c.x) << ", " << c.groups << " groups";
  }
}

TEST_F(EagerOpsTest, PermuteMatchesGolden) {
  struct Case {
    Shape x;
    std::vector<int> dims;
  };
  const Case cases[] = {{{2, 3, 4, 5}, {0, 2, 3, 1}}, {{2, 3, 4, 5}, {3, 1, 0, 2}},
                        {{2, 128, 64}, {2, 0, 1}},  // L3_031: (N, C, L) -> (L, N, C)
                        {{64, 2, 128}, {1, 2, 0}},  // and back
                        {{3, 1, 5}, {1, 0, 2}},       {{7}, {0}}};
  for (const Case& c : cases) {
    const HostTensor<float> x = random(c.x);
    const Golden want = cpu::permute(golden(x), std::vector<int64_t>(c.dims.begin(), c.dims.end()));
    auto gx = to_gpu(x);
    GpuTensor out(want.shape);
    KB_ASSERT_OK(permute(gx->view, c.dims, out.view, stream_));
    EXPECT_TRUE(all_close(download(out.view), want)) << "permute x " << shape_to_string(c.x);
  }
}

// ---- KL divergence ----

// Rows of softmax(U[0, 1) * scale), like the problem's inputs.
HostTensor<float> softmax_rows(const Shape& shape, std::mt19937& rng, float scale) {
  HostTensor<float> t = random_tensor(shape, rng, 0.0f, scale);
  const int64_t len = shape.back();
  for (int64_t r = 0; r < t.numel() / len; ++r) {
    float* row = t.data.data() + r * len;
    double max = row[0], sum = 0;
    for (int64_t j = 0; j < len; ++j) max = std::max<double>(max, row[j]);
    for (int64_t j = 0; j < len; ++j) sum += std::exp(row[j] - max);
    for (int64_t j = 0; j < len; ++j) row[j] = static_cast<float>(std::exp(row[j] - max) / sum);
  }
  return t;
}

void check_kl_div(const HostTensor<float>& log_input, const HostTensor<float>& target,
                  cudaStream_t stream) {
  GpuTensor li(log_input.shape), t(target.shape), out(Shape{});
  upload(log_input, li.view);
  upload(target, t.view);
  const Status s = kl_div_batchmean(li.view, t.view, out.view.data, stream);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(
      all_close(download(out.view), cpu::kl_div_batchmean(golden(log_input), golden(target))))
      << "kl_div over " << shape_to_string(log_input.shape);
}

TEST_F(EagerOpsTest, KlDivSmallWithZeroTargets) {
  HostTensor<float> target = softmax_rows({3, 5}, rng_, 1.0f);
  target.data[2] = 0.0f;  // xlogy(0, 0) = 0
  target.data[9] = 0.0f;
  HostTensor<float> log_input = softmax_rows({3, 5}, rng_, 1.0f);
  for (float& v : log_input.data) v = std::log(v);
  check_kl_div(log_input, target, stream_);
}

// About 16.8M elements: the accuracy of the two-pass reduction at scale.
TEST_F(EagerOpsTest, KlDivLarge) {
  const HostTensor<float> target = softmax_rows({4096, 4096}, rng_, 1.0f);
  HostTensor<float> log_input = softmax_rows({4096, 4096}, rng_, 1.0f);
  for (float& v : log_input.data) v = std::log(v);
  check_kl_div(log_input, target, stream_);
}

// ---- Beyond 2^31 elements: the 64-bit index paths ----

constexpr int64_t kHuge = (int64_t{1} << 31) + 6;

bool has_free_memory(double gigabytes) {
  size_t free_bytes = 0, total = 0;
  return cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && free_bytes > gigabytes * 1e9;
}

TEST_F(EagerOpsTest, HugeBroadcastAdd) {
  if (!has_free_memory(18.5)) GTEST_SKIP() << "needs about 18 GB of free device memory";
  const Shape shape{2, kHuge / 2};
  HostTensor<float> a(shape), b(Shape{2, 1});
  for (int64_t i = 0; i < a.numel(); ++i) a.data[i] = static_cast<float>(i % 1021);
  b.data = {0.5f, 10000.5f};
  auto ga = to_gpu(a), gb = to_gpu(b);
  GpuTensor out(shape);
  KB_ASSERT_OK(binary(Binary::kAdd, ga->view, gb->view, out.view, stream_));
  const HostTensor<float> got = download(out.view);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (got.data[i] != a.data[i] + b.data[i / shape[1]] && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0) << "first wrong element at flat index " << first;
}

TEST_F(EagerOpsTest, HugePermute) {
  if (!has_free_memory(18.5)) GTEST_SKIP() << "needs about 18 GB of free device memory";
  const Shape shape{2, kHuge / 2};
  HostTensor<float> x(shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data[i] = static_cast<float>(i % 4093);
  auto gx = to_gpu(x);
  GpuTensor out({shape[1], 2});
  KB_ASSERT_OK(permute(gx->view, {1, 0}, out.view, stream_));
  const HostTensor<float> got = download(out.view);
  int64_t bad = 0, first = -1;
  for (int64_t j = 0; j < shape[1]; ++j) {
    for (int64_t r = 0; r < 2; ++r) {
      if (got.data[j * 2 + r] != x.data[r * shape[1] + j] && bad++ == 0) first = j * 2 + r;
    }
  }
  EXPECT_EQ(bad, 0) << "first wrong element at flat index " << first;
}

// Each group alternates +1 and -1 (mean 0, variance 1), so the output is known exactly:
// x * rsqrt(1 + eps) * weight[c] + bias[c].
TEST_F(EagerOpsTest, HugeGroupNorm) {
  if (!has_free_memory(18.5)) GTEST_SKIP() << "needs about 18 GB of free device memory";
  const Shape shape{1, 4, kHuge / 4};
  HostTensor<float> x(shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data[i] = i % 2 == 0 ? 1.0f : -1.0f;
  const HostTensor<float> w = [] {
    HostTensor<float> t(Shape{4});
    t.data = {1, 2, 3, 4};
    return t;
  }();
  const HostTensor<float> b = [] {
    HostTensor<float> t(Shape{4});
    t.data = {10, 20, 30, 40};
    return t;
  }();
  auto gx = to_gpu(x), gw = to_gpu(w), gb = to_gpu(b);
  GpuTensor out(shape);
  KB_ASSERT_OK(group_norm(gx->view, 2, gw->view.data, gb->view.data, 1e-5f, out.view, stream_));
  const HostTensor<float> got = download(out.view);
  const double rstd = 1.0 / std::sqrt(1.0 + 1e-5);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const int64_t c = i / shape[2];
    const double want = x.data[i] * rstd * w.data[c] + b.data[c];
    if (std::fabs(got.data[i] - want) > 1e-4 && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0) << "first wrong element at flat index " << first << " of "
                    << shape_to_string(shape);
}

}  // namespace
}  // namespace kb::eager

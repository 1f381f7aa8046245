// kernels/cores/conv_transpose2d_tf32x3 (L2_091's and L2_093's conv core), run on the host: the
// implicit GEMM its kernel computes, emulated through the core's own maps (plan_parity_gemm,
// tile_of, a_source / a_copy_source for A, packed_weight_source for B, pixel_of and the phase for
// the output), in double, against the golden model's transposed convolution (kernels/cpu/ops.h).
// Every output must receive exactly its sum, and nothing outside the output may be stored.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cores/conv_transpose2d_tf32x3/parity_gemm.cuh"
#include "tests/host_cuda/transposed_layer.h"

namespace kb::custom::parity_gemm {
namespace {

using namespace host_test;  // transposed_layer.h: Layer, geometry, name, golden, ...

// A 2-D layer (the geometry's last two axes): batch, channels, then (h, w) pairs of input size,
// kernel, stride, padding, dilation and output padding.
Layer layer(int64_t batch, int64_t c_in, int64_t c_out, int64_t in_h, int64_t in_w, int64_t k_h,
            int64_t k_w, int64_t s_h, int64_t s_w, int64_t p_h, int64_t p_w, int64_t d_h,
            int64_t d_w, int64_t op_h, int64_t op_w) {
  Layer l;
  l.rank = 2, l.batch = batch, l.c_in = c_in, l.c_out = c_out;
  l.in[1] = in_h, l.in[2] = in_w, l.kernel[1] = k_h, l.kernel[2] = k_w;
  l.stride[1] = s_h, l.stride[2] = s_w, l.padding[1] = p_h, l.padding[2] = p_w;
  l.dilation[1] = d_h, l.dilation[2] = d_w, l.output_padding[1] = op_h, l.output_padding[2] = op_w;
  return l;
}

// The kernel's GEMM through the core's maps: per CTA tile, thread tid's A copies (k = 32 kt +
// jw + 2 j for jw = tid / 128), B from the packed weights, each (m, n) sum stored where the
// epilogue stores it. stored[] counts the stores per output.
std::vector<double> emulated(const ParityPlan& p, const std::vector<float>& x,
                             const std::vector<float>& w, std::vector<int>& stored) {
  const int64_t out_size = int64_t{p.batch} * p.c_out * p.out_plane();
  std::vector<double> y(static_cast<size_t>(out_size), 0.0);
  stored.assign(static_cast<size_t>(out_size), 0);
  std::vector<double> a(static_cast<size_t>(kTile) * p.k_pad());  // [m in tile][k]
  for (int64_t block = 0; block < p.blocks(); ++block) {
    const Tile t = tile_of(p, static_cast<int>(block));
    std::fill(a.begin(), a.end(), 0.0);
    for (int tid = 0; tid < kThreads; ++tid) {
      const ASource s = a_source(p, t, tid);
      for (int kt = 0; kt < p.k_tiles; ++kt)
        for (int j = 0; j < kACopies; ++j) {
          const int64_t src = a_copy_source(p, s, kt, j);
          const int k = kt * kBK + tid / kTile + 2 * j;
          a[static_cast<size_t>(tid % kTile) * p.k_pad() + k] =
              src < 0 ? 0.0 : double{x[static_cast<size_t>(src)]};
        }
    }
    for (int mi = 0; mi < kTile; ++mi) {
      const int m = t.m0 + mi;
      if (m >= p.m_total) continue;
      const Pixel px = pixel_of(p, m);
      const int oh = px.qh * p.h.stride + t.rh - p.h.pad, ow = px.qw * p.w.stride + t.rw - p.w.pad;
      if (oh < 0 || oh >= p.h.out || ow < 0 || ow >= p.w.out) continue;  // computed, not stored
      for (int n = t.n0; n < t.n0 + kTile && n < p.c_out; ++n) {
        double sum = 0.0;
        for (int k = 0; k < p.k_pad(); ++k) {
          const int64_t src = packed_weight_source(p, t.cls, k, n);
          if (src >= 0)
            sum += a[static_cast<size_t>(mi) * p.k_pad() + k] * w[static_cast<size_t>(src)];
        }
        const size_t at =
            static_cast<size_t>(((int64_t{px.n} * p.c_out + n) * p.h.out + oh) * p.w.out + ow);
        y[at] += sum;
        ++stored[at];
      }
    }
  }
  return y;
}

// L2_091's and L2_093's form (k 4, stride 2, padding 1, output padding 1 / 0) at small sizes, and
// strides 1-4 with dilations that keep <= 2 taps per phase; C_in not a multiple of 8, C_out above
// one 128-channel tile in one layer.
std::vector<Layer> layers() {
  return {
      layer(2, 5, 7, 6, 5, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1),
      layer(1, 9, 3, 7, 8, 4, 4, 2, 2, 1, 1, 1, 1, 0, 0),
      layer(2, 3, 130, 5, 4, 3, 2, 3, 2, 0, 1, 1, 1, 2, 0),
      layer(1, 11, 6, 9, 3, 2, 3, 1, 4, 0, 1, 1, 2, 0, 3),
      layer(3, 2, 4, 4, 6, 3, 1, 2, 1, 2, 0, 1, 1, 1, 0),
  };
}

TEST(ParityGemm2d, TheEmulatedGemmIsTheTransposedConvolution) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const Layer& l : layers()) {
    const gather::ConvTransposeGeometry g = geometry(l);
    Result<ParityPlan> plan = plan_parity_gemm(g, INT64_MAX);
    ASSERT_TRUE(plan.is_ok()) << name(l) << ": " << plan.status().message();
    std::vector<float> x(static_cast<size_t>(l.batch * l.c_in * l.in[1] * l.in[2]));
    std::vector<float> w(static_cast<size_t>(l.c_in * l.c_out * l.kernel[1] * l.kernel[2]));
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
    std::vector<int> stored;
    const std::vector<double> got = emulated(plan.value(), x, w, stored);
    const std::vector<double> want = golden(l, x, w);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(stored[i], 1) << name(l) << " output " << i << " stored " << stored[i] << " times";
      ASSERT_NEAR(got[i], want[i], 1e-9 * (1.0 + std::fabs(want[i]))) << name(l) << " output " << i;
    }
  }
}

TEST(ParityGemm2d, RefusesMoreThanTwoTapsPerPhase) {
  const Layer l =
      layer(1, 4, 4, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0);  // stride 1: 3 taps on one phase
  Result<ParityPlan> plan = plan_parity_gemm(geometry(l), INT64_MAX);
  ASSERT_FALSE(plan.is_ok());
  EXPECT_NE(plan.status().message().find("more than 2 taps per phase"), std::string::npos)
      << plan.status().message();
}

}  // namespace
}  // namespace kb::custom::parity_gemm

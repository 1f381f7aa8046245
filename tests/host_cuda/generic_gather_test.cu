// kernels/cores/conv_transpose_gather/gather.cuh's generic gather (every transposed-conv custom's
// fallback, the only path of their smallest layers), run on the host: each output decoded by
// decode_output and summed by gather_one over its channel lanes, exactly as gather_generic_kernel
// does, against the golden model's transposed convolution (kernels/cpu/ops.h). The data are small
// integers, so every fp32 sum is exact and must equal the golden double sum.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "tests/host_cuda/transposed_layer.h"

namespace kb::custom::gather {
namespace {

using host_test::geometry;
using host_test::golden;
using host_test::name;
using Layer = host_test::TransposedLayer;

// A random valid layer: PyTorch's constraints (output padding below the stride or the dilation,
// an output of >= 1), channels divisible by the groups.
Layer random_layer(std::mt19937& rng, int rank) {
  const auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Layer l;
  l.rank = rank;
  l.groups = pick(1, 3);
  l.batch = pick(1, 2);
  l.c_in = l.groups * pick(1, 5);
  l.c_out = l.groups * pick(1, 4);
  for (int a = kSpatial - rank; a < kSpatial; ++a) {
    l.in[a] = pick(1, rank == 3 ? 5 : 9);
    l.kernel[a] = pick(1, 4);
    l.stride[a] = pick(1, 4);
    l.dilation[a] = pick(1, 3);
    l.output_padding[a] = pick(0, std::max(l.stride[a], l.dilation[a]) - 1);
    const int64_t span = (l.in[a] - 1) * l.stride[a] + l.dilation[a] * (l.kernel[a] - 1) + 1;
    l.padding[a] = pick(0, std::min<int64_t>(l.dilation[a] * (l.kernel[a] - 1), (span - 1) / 2));
  }
  return l;
}

// Every output as gather_generic_kernel computes it with `split` lanes per output: lane r sums the
// channels r, r + split, ... (gather_one), the lanes' sums added.
std::vector<double> gathered(const ConvTransposeGeometry& g, const std::vector<float>& x,
                             const std::vector<float>& w, int split) {
  const GatherDividers dv(g);
  std::vector<double> y(static_cast<size_t>(g.output_numel()));
  for (int64_t e = 0; e < g.output_numel(); ++e) {
    int64_t n, co, o[kSpatial];
    decode_output(e, g, dv, n, co, o);
    float v = 0.0f;
    for (int r = 0; r < split; ++r) v += gather_one(x.data(), w.data(), g, dv, n, co, o, r, split);
    y[static_cast<size_t>(e)] = v;
  }
  return y;
}

TEST(GenericGather, EveryOutputIsTheGoldenTransposedConvolution) {
  std::mt19937 rng(27);
  std::uniform_int_distribution<int> small(-3, 3);
  int layers = 0;
  for (int rank = 1; rank <= 3; ++rank) {
    for (int i = 0; i < 120; ++i, ++layers) {
      const Layer l = random_layer(rng, rank);
      const ConvTransposeGeometry g = geometry(l);
      std::vector<float> x(static_cast<size_t>(l.batch * l.c_in * g.in[0] * g.in[1] * g.in[2]));
      std::vector<float> w(static_cast<size_t>(l.c_in * (l.c_out / l.groups) * g.kernel[0] *
                                               g.kernel[1] * g.kernel[2]));
      for (float& v : x) v = static_cast<float>(small(rng));
      for (float& v : w) v = static_cast<float>(small(rng));
      const std::vector<double> want = golden(l, x, w);
      ASSERT_EQ(static_cast<int64_t>(want.size()), g.output_numel()) << name(l);
      for (int split = 1; split <= l.c_in / l.groups && split <= 4; split *= 2) {
        const std::vector<double> got = gathered(g, x, w, split);
        for (size_t e = 0; e < want.size(); ++e)
          ASSERT_EQ(got[e], want[e]) << name(l) << " split " << split << " output " << e;
      }
    }
  }
  EXPECT_EQ(layers, 360);
}

// Past 2^31 elements decode_output leaves the 32-bit dividers for 64-bit divisions: both branches
// decode the same way on either side of the boundary (no data needed: the decode only).
TEST(GenericGather, DecodesBothSidesOf2To31) {
  ConvTransposeGeometry g;
  g.rank = 3, g.batch = 9, g.in_channels = 3, g.out_channels = 7;
  const int64_t out[kSpatial] = {311, 509, 433};  // 9 x 7 x 311 x 509 x 433 > 2^32
  for (int a = 0; a < kSpatial; ++a) g.out[a] = out[a];
  const GatherDividers dv(g);
  const int64_t edge = int64_t{1} << 31;
  for (int64_t e = edge - 3000; e < edge + 3000; ++e) {
    int64_t n, co, o[kSpatial];
    decode_output(e, g, dv, n, co, o);
    const int64_t back =
        (((n * g.out_channels + co) * out[0] + o[0]) * out[1] + o[1]) * out[2] + o[2];
    ASSERT_EQ(back, e);
    ASSERT_TRUE(co < g.out_channels && o[0] < out[0] && o[1] < out[1] && o[2] < out[2]) << e;
  }
}

}  // namespace
}  // namespace kb::custom::gather

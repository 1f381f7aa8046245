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
#include "kernels/cpu/ops.h"

namespace kb::custom::gather {
namespace {

struct Layer {
  int rank;
  int64_t batch, c_in, c_out, groups;
  int64_t in[kSpatial], kernel[kSpatial], stride[kSpatial], pad[kSpatial], dilation[kSpatial],
      out_pad[kSpatial];
};

// The layer in the geometry's last `rank` axes (unit dims first, as read_conv_transpose pads).
ConvTransposeGeometry geometry(const Layer& l) {
  ConvTransposeGeometry g;
  g.rank = l.rank, g.batch = l.batch, g.in_channels = l.c_in, g.out_channels = l.c_out;
  g.groups = l.groups;
  for (int a = kSpatial - l.rank; a < kSpatial; ++a) {
    g.in[a] = l.in[a], g.kernel[a] = l.kernel[a], g.stride[a] = l.stride[a];
    g.padding[a] = l.pad[a], g.dilation[a] = l.dilation[a];
    g.out[a] = (l.in[a] - 1) * l.stride[a] - 2 * l.pad[a] + l.dilation[a] * (l.kernel[a] - 1) +
               l.out_pad[a] + 1;
  }
  return g;
}

std::string name(const Layer& l) {
  std::string s = "N" + std::to_string(l.batch) + " " + std::to_string(l.c_in) + "->" +
                  std::to_string(l.c_out) + " g" + std::to_string(l.groups);
  for (int a = kSpatial - l.rank; a < kSpatial; ++a) {
    s += " [in " + std::to_string(l.in[a]) + " k" + std::to_string(l.kernel[a]) + " s" +
         std::to_string(l.stride[a]) + " p" + std::to_string(l.pad[a]) + " d" +
         std::to_string(l.dilation[a]) + " op" + std::to_string(l.out_pad[a]) + "]";
  }
  return s;
}

// A random valid layer: PyTorch's constraints (output padding below the stride or the dilation,
// an output of >= 1), channels divisible by the groups.
Layer random_layer(std::mt19937& rng, int rank) {
  const auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Layer l{};
  l.rank = rank;
  l.groups = pick(1, 3);
  l.batch = pick(1, 2);
  l.c_in = l.groups * pick(1, 5);
  l.c_out = l.groups * pick(1, 4);
  for (int a = 0; a < kSpatial; ++a) {
    l.in[a] = 1, l.kernel[a] = 1, l.stride[a] = 1, l.pad[a] = 0, l.dilation[a] = 1;
    l.out_pad[a] = 0;
  }
  for (int a = kSpatial - rank; a < kSpatial; ++a) {
    l.in[a] = pick(1, rank == 3 ? 5 : 9);
    l.kernel[a] = pick(1, 4);
    l.stride[a] = pick(1, 4);
    l.dilation[a] = pick(1, 3);
    l.out_pad[a] = pick(0, std::max(l.stride[a], l.dilation[a]) - 1);
    const int64_t span = (l.in[a] - 1) * l.stride[a] + l.dilation[a] * (l.kernel[a] - 1) + 1;
    l.pad[a] = pick(0, std::min<int64_t>(l.dilation[a] * (l.kernel[a] - 1), (span - 1) / 2));
  }
  return l;
}

// y = ConvTranspose(x, w) by the golden model's op, in double.
std::vector<double> golden(const Layer& l, const std::vector<float>& x,
                           const std::vector<float>& w) {
  Shape xs{l.batch, l.c_in}, ws{l.c_in, l.c_out / l.groups};
  cpu::ConvParams cp;
  cp.groups = l.groups;
  for (int a = kSpatial - l.rank; a < kSpatial; ++a) {
    xs.push_back(l.in[a]), ws.push_back(l.kernel[a]);
    cp.stride.push_back(l.stride[a]), cp.padding.push_back(l.pad[a]);
    cp.dilation.push_back(l.dilation[a]), cp.output_padding.push_back(l.out_pad[a]);
  }
  HostTensor<double> xt(xs), wt(ws);
  for (size_t i = 0; i < x.size(); ++i) xt.data[i] = x[i];
  for (size_t i = 0; i < w.size(); ++i) wt.data[i] = w[i];
  return cpu::conv_transpose<double>(xt, wt, nullptr, cp).data;
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

// kernels/cores/conv_transpose_gather/generic.cuh, the generic gather (every transposed-conv
// custom's fallback, the only path of their smallest layers), run on the host: each output decoded
// by decode_block and summed by gather_channels over its channel lanes, exactly as
// gather_generic_kernel does (elements of 1 x 1, 1 x 4, 2 x 2, 4 x 1 and 4 x 2 channels x
// positions, rows walked phase by phase), against the golden model's transposed convolution
// (kernels/cpu/ops.h). The data are small integers, so every fp32 sum is exact and must equal the
// golden double sum.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cores/conv_transpose_gather/generic.cuh"
#include "tests/host_cuda/transposed_layer.h"

namespace kb::custom::gather {
namespace {

using namespace host_test;  // transposed_layer.h: Layer, geometry, name, golden, ...

// Every output as gather_generic_kernel<kThreads, kCo, kPos> computes it with `split` lanes per
// element: each element decoded (decode_block), lane r summing the channels r, r + split, ...
// (gather_channels), the lanes' sums added and stored at the block's channels and positions; an
// output written twice or never is a NaN.
template <int kCo, int kPos>
std::vector<double> gathered(const ConvTransposeGeometry& g, const std::vector<float>& x,
                             const std::vector<float>& w, int split) {
  const GatherDividers dv(g);
  const GenericLayout layout(g, kCo, kPos);
  const int64_t volume = g.out[0] * g.out[1] * g.out[2];
  std::vector<double> y(static_cast<size_t>(g.output_numel()), 0.0);
  std::vector<int> writes(y.size(), 0);
  for (int64_t e = 0; e < layout.elements; ++e) {
    const ChannelBlock b = decode_block<kCo, kPos>(e, g, layout);
    float v[kCo][kPos] = {};
    for (int r = 0; r < split; ++r) {
      float lane[kCo][kPos];
      gather_channels<kCo, kPos>(x.data(), w.data(), g, dv, b.n, b.group, b.co_local, b.co_count,
                                 b.o, r, split, lane);
      for (int j = 0; j < kCo; ++j)
        for (int k = 0; k < kPos; ++k) v[j][k] += lane[j][k];
    }
    for (int j = 0; j < b.co_count; ++j)
      for (int k = 0; k < b.pos_count; ++k) {
        const auto at = static_cast<size_t>(b.output_index(g, 0) + j * volume + k * g.stride[2]);
        y[at] = v[j][k];
        ++writes[at];
      }
  }
  for (size_t i = 0; i < y.size(); ++i)
    if (writes[i] != 1) y[i] = std::numeric_limits<double>::quiet_NaN();
  return y;
}

TEST(GenericGather, EveryOutputIsTheGoldenTransposedConvolution) {
  std::mt19937 rng(27);
  int layers = 0;
  for (int rank = 1; rank <= 3; ++rank) {
    for (int i = 0; i < 120; ++i, ++layers) {
      const Layer l = random_layer(rng, rank);
      const ConvTransposeGeometry g = geometry(l);
      const auto [x, w] = small_integer_tensors(l, rng);
      const std::vector<double> want = golden(l, x, w);
      ASSERT_EQ(static_cast<int64_t>(want.size()), g.output_numel()) << name(l);
      for (int split = 1; split <= l.c_in / l.groups && split <= 4; split *= 2) {
        const std::vector<double> got[] = {
            gathered<1, 1>(g, x, w, split), gathered<1, 4>(g, x, w, split),
            gathered<2, 2>(g, x, w, split), gathered<4, 1>(g, x, w, split),
            gathered<4, 2>(g, x, w, split)};
        for (int b = 0; b < 5; ++b)
          for (size_t e = 0; e < want.size(); ++e)
            ASSERT_EQ(got[b][e], want[e])
                << name(l) << " element shape " << b << " split " << split << " output " << e;
      }
    }
  }
  EXPECT_EQ(layers, 360);
}

// axis_taps lists exactly the taps that the definition (axis_input) finds landing on each output,
// in increasing order with their inputs, at every axis geometry of for_each_axis_geometry's range
// (no output padding) and every output position; with a reach, the taps of the phase whose
// inputs lie in [-reach, in).
TEST(GenericGather, AxisTapsAreTheDefinitionsTaps) {
  int outputs = 0;
  host_test::for_each_axis_geometry(false, [&](const ConvTransposeGeometry& g, int op) {
    const int s = static_cast<int>(g.stride[2]), d = static_cast<int>(g.dilation[2]);
    const int k = static_cast<int>(g.kernel[2]), in = static_cast<int>(g.in[2]);
    const int p = static_cast<int>(g.padding[2]);
    const GatherDividers dv(g);
    for (int o = 0; o < g.out[2]; ++o, ++outputs) {
      for (int reach = 0; reach <= 3; ++reach) {  // phase-mates o + s, ..., o + reach s
        std::vector<std::pair<int64_t, int64_t>> want, got;
        for (int t = 0; t < k; ++t) {
          if (reach == 0) {
            const int64_t i = axis_input(o, t, s, p, d, in);
            if (i >= 0) want.emplace_back(t, i);
          } else if ((o + p - t * d) % s == 0) {
            const int64_t i = (o + p - t * d) / s;  // exact, negative or not
            if (i >= -reach && i < in) want.emplace_back(t, i);
          }
        }
        const AxisTaps taps = axis_taps(o, 2, g, dv, reach);
        for (int j = 0; j < taps.count; ++j)
          got.emplace_back(taps.first + j * dv.tap_step[2], taps.input - j * dv.input_step[2]);
        ASSERT_EQ(got, want) << host_test::axis_name(g, op) << " o " << o << " reach " << reach;
      }
    }
  });
  EXPECT_GT(outputs, 50000);
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

// decode_block's 32-bit and 64-bit branches, on either side of 2^31: each element's block,
// position and sample encode back to the element (GenericLayout's order), at 2 x 2 elements of a
// row whose phases are of 2 lengths (stride 3).
TEST(GenericGather, DecodesBlocksBothSidesOf2To31) {
  ConvTransposeGeometry g;
  g.rank = 3, g.batch = 40, g.in_channels = 3, g.out_channels = 7;
  const int64_t out[kSpatial] = {311, 509, 433};
  for (int a = 0; a < kSpatial; ++a) g.out[a] = out[a];
  g.stride[2] = 3;
  const GenericLayout l(g, 2, 2);
  ASSERT_GT(l.elements, int64_t{1} << 32);  // 40 x 4 x 311 x 509 x 73
  const int64_t long_blocks = l.long_blocks.divisor, short_blocks = l.short_blocks.divisor;
  const int64_t edge = int64_t{1} << 31;
  for (int64_t e = edge - 3000; e < edge + 3000; ++e) {
    const ChannelBlock b = decode_block<2, 2>(e, g, l);
    const int64_t phase = b.o[2] % 3, k = b.o[2] / 3 / 2;
    const int64_t row_block =
        phase < l.long_phases
            ? phase * long_blocks + k
            : l.long_phases * long_blocks + (phase - l.long_phases) * short_blocks + k;
    const int64_t block = b.group * l.blocks_per_group.divisor + b.co_local / 2;
    const int64_t back =
        (((b.n * l.channel_blocks.divisor + block) * out[0] + b.o[0]) * out[1] + b.o[1]) *
            l.row_blocks.divisor +
        row_block;
    ASSERT_EQ(back, e);
    ASSERT_TRUE(b.co_count >= 1 && b.pos_count >= 1 && b.o[2] < out[2]) << e;
  }
}

}  // namespace
}  // namespace kb::custom::gather

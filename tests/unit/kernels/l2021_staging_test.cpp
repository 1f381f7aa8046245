// kernels/L2_021_.../staging.h, run on the host: a warpgroup's 128 threads copy out every item of a
// shape from a staging that holds each value's own output coordinates, and every output must
// receive its own value (channels below C_out, the rows and columns that exist, odd widths with
// 4-byte stores), nothing written outside the tensor.
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/staging.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kb::custom::L2_021::rows {
namespace {

struct Shape {
  int n, c_out, ho, wo;
};

// The value staged for output (n, co, oh, ow): distinct for every output of the shapes below, and
// exact in a float.
float code(int64_t n, int co, int oh, int ow) {
  return static_cast<float>(((n * 32 + co) * 300 + oh) * 300 + ow);
}

// Outputs that did not receive their own value (0: all did), after copying out every item with
// 8-byte pairs allowed or not.
int64_t wrong_outputs(const Shape& s, bool pairs) {
  const int64_t total = int64_t{s.n} * s.c_out * s.ho * s.wo;
  std::vector<float> tensor(total + 2, -1.0f);  // one guard float on each side
  float* out = tensor.data() + 1;
  std::vector<float> stage(kTileRows * kChannels * kTileCols);
  const int tiles_h = (s.ho + kTileRows - 1) / kTileRows,
            tiles_w = (s.wo + kTileCols - 1) / kTileCols;
  for (int n = 0; n < s.n; ++n)
    for (int th = 0; th < tiles_h; ++th)
      for (int tw = 0; tw < tiles_w; ++tw) {
        const int r0 = th * kTileRows, c0 = tw * kTileCols;
        for (int r = 0; r < kTileRows; ++r)
          for (int co = 0; co < kChannels; ++co)
            for (int col = 0; col < kTileCols; ++col)
              stage[stage_index(r, co, col)] = code(n, co, r0 + r, c0 + col);
        for (int wt = 0; wt < kGroupThreads; ++wt)
          store_staged(out, s.c_out, s.ho, s.wo, pairs && s.wo % 2 == 0, n, r0, c0, wt,
                       stage.data());
      }
  int64_t wrong = (tensor.front() != -1.0f) + (tensor.back() != -1.0f);
  for (int n = 0; n < s.n; ++n)
    for (int co = 0; co < s.c_out; ++co)
      for (int oh = 0; oh < s.ho; ++oh)
        for (int ow = 0; ow < s.wo; ++ow)
          wrong +=
              out[((int64_t{n} * s.c_out + co) * s.ho + oh) * s.wo + ow] != code(n, co, oh, ow);
  return wrong;
}

TEST(L2021Staging, EveryOutputReceivesItsOwnValueAtOddShapes) {
  // The full preset's rows; the `wgmma` preset (partial tiles, odd W'); C_out 17 (one channel past
  // half of M) and 31; one output row; W' one past a tile; W' = 96, the path's narrowest.
  const Shape shapes[] = {{2, 32, 254, 254}, {3, 24, 12, 199}, {1, 17, 7, 96},  {2, 31, 5, 255},
                          {1, 18, 3, 130},   {3, 29, 11, 129}, {1, 32, 1, 200}, {2, 32, 9, 97}};
  for (const Shape& s : shapes)
    for (bool pairs : {false, true})
      EXPECT_EQ(wrong_outputs(s, pairs), 0) << "N " << s.n << ", C_out " << s.c_out << ", " << s.ho
                                            << " x " << s.wo << ", pairs " << pairs;
}

}  // namespace
}  // namespace kb::custom::L2_021::rows

// kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/narrow.cuh's plan_narrow, run on the host:
// what narrow_conv_kernel assumes of its bands and chunks, over random 3x3 unit convs.
//   - a plan fits the kernel's shared memory (weights of a chunk, then the band's kw-expanded
//     rows), the chunk's weights their share, and holds at least one row and one quad;
//   - the bands cover the output rows exactly (the last may be shorter, none empty), the chunks
//     the quads, and chunks stay a valid grid dimension;
//   - no plan where one quad's weights or one input row cannot fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>

#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/narrow.cuh"

namespace kb::custom::L2_021 {
namespace {

constexpr int kSms = 132;

Geometry unit_conv(int64_t batch, int64_t c_in, int64_t c_out, int64_t h, int64_t w) {
  Geometry g{};
  g.batch = batch, g.c_in = c_in, g.c_out = c_out, g.h = h, g.w = w, g.ho = h - 2, g.wo = w - 2;
  g.quads = (c_out + kQuad - 1) / kQuad;
  return g;
}

TEST(L2021NarrowPlan, BandsAndChunksCoverTheOutputWithinSharedMemory) {
  std::mt19937_64 rng(39);
  int planned = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const Geometry g = unit_conv(1 + rng() % 130, 1 + rng() % 200, 1 + rng() % 128, 3 + rng() % 300,
                                 3 + rng() % (trial % 2 ? 40 : 400));
    SCOPED_TRACE(testing::Message()
                 << g.batch << " x " << g.c_in << " -> " << g.c_out << ", " << g.h << " x " << g.w);
    const std::optional<NarrowPlan> p = plan_narrow(g, kSms);
    const int64_t quad_bytes = int64_t{16} * (g.c_in * kTaps + 3);
    const int64_t row_bytes = int64_t{4} * kTapCols * g.c_in * g.wo;
    const int64_t chunk_quads = std::min(g.quads, kNarrowWeightBytes / quad_bytes);
    if (!p) {  // only where one quad's weights, or they and a one-row band, do not fit
      EXPECT_TRUE(chunk_quads < 1 || chunk_quads * quad_bytes + 3 * row_bytes > kNarrowSmemBytes);
      continue;
    }
    ++planned;
    EXPECT_LE(p->smem, static_cast<size_t>(kNarrowSmemBytes));
    EXPECT_EQ(p->smem,
              static_cast<size_t>(p->chunk_quads * quad_bytes + row_bytes * (p->rows + 2)));
    EXPECT_LE(p->chunk_quads * quad_bytes, kNarrowWeightBytes);
    EXPECT_GE(p->rows, 1);
    EXPECT_GE(int64_t{p->bands} * p->rows, g.ho);
    EXPECT_LT(int64_t{p->bands - 1} * p->rows, g.ho);  // no empty band
    EXPECT_GE(p->chunk_quads, 1);
    EXPECT_GE(int64_t{p->chunks} * p->chunk_quads, g.quads);
    EXPECT_LT(int64_t{p->chunks - 1} * p->chunk_quads, g.quads);  // no empty chunk
    EXPECT_LE(p->chunks, 65535);
  }
  EXPECT_GT(planned, 2000);  // ~18% of these draws (deep or wide ones are not narrow convs)
}

TEST(L2021NarrowPlan, TheSweepsNarrowImagesArePlanned) {
  // N 123, C_in 8, C_out 32, 211 x 7 and N 68, C_in 9, C_out 32, 165 x 9 (session 39).
  for (const Geometry& g : {unit_conv(123, 8, 32, 211, 7), unit_conv(68, 9, 32, 165, 9)}) {
    const std::optional<NarrowPlan> p = plan_narrow(g, kSms);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->chunks, 1);  // 8 quads of 8-9 channels' weights: one chunk
  }
  EXPECT_FALSE(plan_narrow(unit_conv(1, 5000, 8, 10, 10), kSms).has_value());  // one quad: 720 KB
}

}  // namespace
}  // namespace kb::custom::L2_021

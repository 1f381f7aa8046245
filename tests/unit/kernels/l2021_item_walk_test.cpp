// kernels/L2_021_.../item_walk.h: walking first, first + step, ... with carries lands on the same
// (n, th, tw) as dividing each item index, for grids of every size against tile counts of 1 up.
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/item_walk.h"

#include <gtest/gtest.h>

namespace kb::custom::L2_021::rows {
namespace {

TEST(L2021ItemWalk, MatchesTheDivisionsForEveryItemOfEveryWarpgroup) {
  const int tiles[][3] = {{128, 127, 2}, {3, 6, 2}, {1, 1, 1}, {7, 5, 3}, {2, 127, 1}, {5, 1, 4}};
  for (const auto& t : tiles) {
    const int batch = t[0], tiles_h = t[1], tiles_w = t[2], total = batch * tiles_h * tiles_w;
    for (int step : {1, 2, 3, 4, 7, 132 * 4, 131 * 4, total, total + 1}) {
      const ItemWalk stride = ItemWalk::at(step, tiles_h, tiles_w);
      for (int first = 0; first < step && first < total; ++first) {
        ItemWalk w = ItemWalk::at(first, tiles_h, tiles_w);
        int visited = 0;
        for (int item = first; item < total; item += step, ++visited) {
          const ItemWalk want = ItemWalk::at(item, tiles_h, tiles_w);
          ASSERT_TRUE(w.n == want.n && w.th == want.th && w.tw == want.tw)
              << "item " << item << " of " << batch << " x " << tiles_h << " x " << tiles_w
              << ", step " << step;
          ASSERT_LT(w.n, batch);
          w.advance(stride, tiles_h, tiles_w);
        }
        EXPECT_GE(w.n, batch) << "the walk ends where the items do (first " << first << ")";
        EXPECT_EQ(visited, (total - first + step - 1) / step);
      }
    }
  }
}

}  // namespace
}  // namespace kb::custom::L2_021::rows

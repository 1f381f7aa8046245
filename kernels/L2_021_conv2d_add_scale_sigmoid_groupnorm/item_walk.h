// A persistent warpgroup's items in L2_021's wgmma kernel (wgmma_rows.cuh): the flat item index
// first, first + step, ... decomposed as (sample n, row pair th, column tile tw) over
// tiles_h x tiles_w items per sample, advanced by adding the step's own decomposition with carries
// instead of dividing by the runtime tile counts per item (two divisions and two remainders,
// ~80 instructions per thread and item). Host-includable:
// tests/unit/kernels/l2021_item_walk_test.cpp walks it against the divisions.
//
// Thread safety: plain data.
#pragma once

#include "common/host_device.h"

namespace kb::custom::L2_021::rows {

struct ItemWalk {
  int n, th, tw;

  // Item `item`'s coordinates (also a step's decomposition); item >= 0.
  KB_HD static ItemWalk at(int item, int tiles_h, int tiles_w) {
    return {item / tiles_w / tiles_h, item / tiles_w % tiles_h, item % tiles_w};
  }

  // The item `step` further on, where step = at(step_items, tiles_h, tiles_w).
  KB_HD void advance(const ItemWalk& step, int tiles_h, int tiles_w) {
    tw += step.tw;
    const int carry_w = tw >= tiles_w;
    tw -= carry_w * tiles_w;
    th += step.th + carry_w;
    const int carry_h = th >= tiles_h;
    th -= carry_h * tiles_h;
    n += step.n + carry_h;
  }
};

}  // namespace kb::custom::L2_021::rows

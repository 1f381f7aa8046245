// The conv2d core's host tests' geometry: an unpadded stride-1 3 x 3 ConvGeometry from its sizes
// (conv2d_few_channels_plan_test.cu, conv2d_flat_tile_test.cu).
#pragma once

#include "kernels/cores/conv2d_tf32x3/conv2d_core.cuh"

namespace kb::custom::conv2d_tf32x3 {

inline ConvGeometry conv3x3(int n, int c_in, int c_out, int h, int w) {
  ConvGeometry g;
  g.n = n, g.c_in = c_in, g.c_out = c_out, g.h = h, g.w = w, g.kh = 3, g.kw = 3;
  g.ho = h - 2, g.wo = w - 2;
  return g;
}

}  // namespace kb::custom::conv2d_tf32x3

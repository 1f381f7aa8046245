// The conv3d host tests' geometry: a stride-1, dilation-1 Conv3dGeometry from its sizes, a name
// for failure messages, and the golden model's convolution of float tensors in that geometry
// (conv3d_tile_test.cu, conv3d_group_test.cu).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/cpu/ops.h"

namespace kb::custom::conv3d_direct {

inline Conv3dGeometry geometry(int64_t batch, int64_t cin, int64_t cout, const int64_t (&in)[3],
                               const int64_t (&kernel)[3], const int64_t (&pad)[3]) {
  Conv3dGeometry g;
  g.batch = batch, g.cin = cin, g.cout = cout;
  for (int a = 0; a < 3; ++a) {
    g.in[a] = in[a], g.kernel[a] = kernel[a], g.padding[a] = pad[a];
    g.stride[a] = g.dilation[a] = 1;
    g.out[a] = in[a] + 2 * pad[a] - kernel[a] + 1;
  }
  return g;
}

inline std::string name(const Conv3dGeometry& g) {
  std::string s =
      "N" + std::to_string(g.batch) + " " + std::to_string(g.cin) + "->" + std::to_string(g.cout);
  for (int a = 0; a < 3; ++a)
    s += " [" + std::to_string(g.in[a]) + " k" + std::to_string(g.kernel[a]) + " p" +
         std::to_string(g.padding[a]) + "]";
  return s;
}

// x (N, C_in, D, H, W) conv w (C_out, C_in, KD, KH, KW) in g's geometry, by kernels/cpu/ops.h in
// double.
inline HostTensor<double> golden_conv(const Conv3dGeometry& g, const std::vector<float>& x,
                                      const std::vector<float>& w) {
  HostTensor<double> xt(Shape{g.batch, g.cin, g.in[0], g.in[1], g.in[2]});
  HostTensor<double> wt(Shape{g.cout, g.cin, g.kernel[0], g.kernel[1], g.kernel[2]});
  for (size_t i = 0; i < x.size(); ++i) xt.data[i] = x[i];
  for (size_t i = 0; i < w.size(); ++i) wt.data[i] = w[i];
  cpu::ConvParams cp;
  cp.stride = cp.dilation = {1, 1, 1};
  cp.padding = {g.padding[0], g.padding[1], g.padding[2]};
  cp.output_padding = {0, 0, 0};
  return cpu::conv<double>(xt, wt, nullptr, cp);
}

}  // namespace kb::custom::conv3d_direct

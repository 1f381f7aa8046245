// A transposed-conv layer as the host tests write it, and what each of them needs of it: the
// geometry a custom variant reads (padded to 3 axes as read_conv_transpose pads it, unit axes
// first), a name for failure messages, and the golden model's output (kernels/cpu/ops.h) in double.
// Used by the tests of the parity GEMM, the patch plan and the generic gather.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cpu/ops.h"

namespace kb::custom::host_test {

using gather::ConvTransposeGeometry;
using gather::kSpatial;

// The layer's axes are the last `rank` of the three; the others stay unit.
struct TransposedLayer {
  int rank = 3;
  int64_t batch = 1, c_in = 1, c_out = 1, groups = 1;
  int64_t in[kSpatial] = {1, 1, 1}, kernel[kSpatial] = {1, 1, 1}, stride[kSpatial] = {1, 1, 1};
  int64_t padding[kSpatial] = {0, 0, 0}, dilation[kSpatial] = {1, 1, 1};
  int64_t output_padding[kSpatial] = {0, 0, 0};
};

inline ConvTransposeGeometry geometry(const TransposedLayer& l) {
  ConvTransposeGeometry g;
  g.rank = l.rank, g.batch = l.batch, g.in_channels = l.c_in, g.out_channels = l.c_out;
  g.groups = l.groups;
  for (int a = 0; a < kSpatial; ++a) {
    g.in[a] = l.in[a], g.kernel[a] = l.kernel[a], g.stride[a] = l.stride[a];
    g.padding[a] = l.padding[a], g.dilation[a] = l.dilation[a];
    g.out[a] = (l.in[a] - 1) * l.stride[a] - 2 * l.padding[a] + l.dilation[a] * (l.kernel[a] - 1) +
               l.output_padding[a] + 1;
  }
  return g;
}

inline std::string name(const TransposedLayer& l) {
  std::string s = "N" + std::to_string(l.batch) + " " + std::to_string(l.c_in) + "->" +
                  std::to_string(l.c_out) + " g" + std::to_string(l.groups);
  for (int a = kSpatial - l.rank; a < kSpatial; ++a) {
    s += " [in " + std::to_string(l.in[a]) + " k" + std::to_string(l.kernel[a]) + " s" +
         std::to_string(l.stride[a]) + " p" + std::to_string(l.padding[a]) + " d" +
         std::to_string(l.dilation[a]) + " op" + std::to_string(l.output_padding[a]) + "]";
  }
  return s;
}

// y = ConvTranspose(x, w) by the golden model's op, in double: x (N, C_in, *in), w (C_in,
// C_out / groups, *kernel) over the layer's `rank` axes.
inline std::vector<double> golden(const TransposedLayer& l, const std::vector<float>& x,
                                  const std::vector<float>& w) {
  Shape xs{l.batch, l.c_in}, ws{l.c_in, l.c_out / l.groups};
  cpu::ConvParams cp;
  cp.groups = l.groups;
  for (int a = kSpatial - l.rank; a < kSpatial; ++a) {
    xs.push_back(l.in[a]), ws.push_back(l.kernel[a]);
    cp.stride.push_back(l.stride[a]), cp.padding.push_back(l.padding[a]);
    cp.dilation.push_back(l.dilation[a]), cp.output_padding.push_back(l.output_padding[a]);
  }
  HostTensor<double> xt(xs), wt(ws);
  for (size_t i = 0; i < x.size(); ++i) xt.data[i] = x[i];
  for (size_t i = 0; i < w.size(); ++i) wt.data[i] = w[i];
  return cpu::conv_transpose<double>(xt, wt, nullptr, cp).data;
}

}  // namespace kb::custom::host_test

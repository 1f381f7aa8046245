// A transposed-conv layer as the host tests write it, and what each of them needs of it: the
// geometry a custom variant reads (padded to 3 axes as read_conv_transpose pads it, unit axes
// first), a random valid layer, a name for failure messages, every one-axis geometry of a range,
// and the golden model's output (kernels/cpu/ops.h) in double. Used by the tests of the parity
// GEMM, the patch plan, the generic gather and the split gather.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
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
using Layer = TransposedLayer;

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

// A random valid layer of `rank` axes: PyTorch's constraints (output padding below the stride or
// the dilation, an output of >= 1), channels divisible by the groups (1 to in_per_group inputs and
// 1 to out_per_group outputs per group).
inline TransposedLayer random_layer(std::mt19937& rng, int rank, int64_t in_per_group = 5,
                                    int64_t out_per_group = 4) {
  const auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  TransposedLayer l;
  l.rank = rank;
  l.groups = pick(1, 3);
  l.batch = pick(1, 2);
  l.c_in = l.groups * pick(1, in_per_group);
  l.c_out = l.groups * pick(1, out_per_group);
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

// Every one-axis geometry (on the last axis, one channel) of the axis tests' range: stride 1-5,
// dilation 1-4, kernel 1-6, inputs 1-7, every padding that leaves an output and, with
// output_paddings, every output padding below the stride or the dilation (else none); f(g, op)
// for each.
template <class F>
void for_each_axis_geometry(bool output_paddings, F&& f) {
  for (int s = 1; s <= 5; ++s)
    for (int d = 1; d <= 4; ++d)
      for (int k = 1; k <= 6; ++k)
        for (int in = 1; in <= 7; ++in)
          for (int p = 0; p <= d * (k - 1); ++p)
            for (int op = 0; op < (output_paddings ? std::max(s, d) : 1); ++op) {
              ConvTransposeGeometry g;
              g.in_channels = g.out_channels = 1;
              g.in[2] = in, g.kernel[2] = k, g.stride[2] = s, g.dilation[2] = d;
              g.padding[2] = p;
              g.out[2] = (in - 1) * s - 2 * p + d * (k - 1) + op + 1;
              if (g.out[2] >= 1) f(g, op);
            }
}

// "s 2 d 1 k 3 in 5 p 1 op 0": the axis geometry of a for_each_axis_geometry failure.
inline std::string axis_name(const ConvTransposeGeometry& g, int op) {
  return "s " + std::to_string(g.stride[2]) + " d " + std::to_string(g.dilation[2]) + " k " +
         std::to_string(g.kernel[2]) + " in " + std::to_string(g.in[2]) + " p " +
         std::to_string(g.padding[2]) + " op " + std::to_string(op);
}

// x (N, C_in, *in) and w (C_in, C_out / groups, *kernel) of the layer, each element `fill`(rng)'s.
struct LayerTensors {
  std::vector<float> x, w;
};

inline LayerTensors layer_tensors(const TransposedLayer& l, const std::function<float()>& fill) {
  const ConvTransposeGeometry g = geometry(l);
  LayerTensors t{
      std::vector<float>(static_cast<size_t>(l.batch * l.c_in * g.in[0] * g.in[1] * g.in[2])),
      std::vector<float>(static_cast<size_t>(l.c_in * (l.c_out / l.groups) * g.kernel[0] *
                                             g.kernel[1] * g.kernel[2]))};
  for (float& v : t.x) v = fill();
  for (float& v : t.w) v = fill();
  return t;
}

// Small integers (-3 .. 3): every sum of the layer exact in fp32, so a kernel's sums, in any
// order, equal the golden model's.
inline LayerTensors small_integer_tensors(const TransposedLayer& l, std::mt19937& rng) {
  std::uniform_int_distribution<int> small(-3, 3);
  return layer_tensors(l, [&] { return static_cast<float>(small(rng)); });
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

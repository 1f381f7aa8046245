// The split gather's rule: which transposed-conv layers the generic gather (generic.cuh) runs as
// the split gather (gather_split_kernel: one output an element, its lanes splitting the output's
// flattened (landing tap, input channel) pairs, their sums added by shuffles), and the layer-level
// launch_generic that applies it.
//
//   - axis_landings / mean_sum_length: the (tap, channel) pairs an output sums, on average;
//   - split_reduction_lanes: lanes per output for layers of few outputs with long sums, else 0;
//   - launch_generic(x, w, y, g, stream): the split gather where that rule takes g, else
//     generic_shape's elements. Every custom's generic path launches through it.
//
// Why: a layer of few outputs with long channel sums, each run by one group of lanes of the
// generic gather, leaves most SMs idle behind a few long chains of dependent loads (the generic's
// lanes split only an output's input channels, and its elements are 2-8 outputs).
// Checked on the host: tests/host_cuda/split_gather_test.cu (every output of random layers as
// the kernel's lanes sum it, against the golden model; the landings against axis_taps; the rule
// at the layers it was cut for).
// Thread safety: stateless; the host functions may be called from any thread.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/status.h"
#include "kernels/cores/conv_transpose_gather/generic.cuh"
#include "kernels/cores/conv_transpose_gather/geometry.cuh"

namespace kb::custom::gather {

// The (input, tap) pairs of axis a that land on an output: per tap t, the inputs i with
// 0 <= i s - p + t d < out. O(kernel) on the host, where summing axis_taps' counts would be
// O(out) at every launch.
inline int64_t axis_landings(const ConvTransposeGeometry& g, int a) {
  const int64_t s = g.stride[a];
  int64_t pairs = 0;
  for (int64_t t = 0; t < g.kernel[a]; ++t) {
    const int64_t shift = g.padding[a] - t * g.dilation[a];  // i s in [shift, out + shift)
    const int64_t top = g.out[a] - 1 + shift;
    if (top < 0) continue;
    const int64_t first = shift > 0 ? (shift + s - 1) / s : 0;
    const int64_t last = std::min(top / s, g.in[a] - 1);
    pairs += std::max<int64_t>(last - first + 1, 0);
  }
  return pairs;
}

// The mean length of an output's sum: its (landing tap, input channel) pairs, averaged over the
// outputs (the axes' landings multiply). Below layer_macs / outputs where taps land outside the
// output (padding): L1_073's stride-2, padding-1 layer at 5 x 7 x 5 inputs, 89 against 130.
inline double mean_sum_length(const ConvTransposeGeometry& g) {
  double pairs = static_cast<double>(g.in_per_group());
  for (int a = 0; a < kSpatial; ++a)
    pairs *= static_cast<double>(axis_landings(g, a)) / static_cast<double>(g.out[a]);
  return pairs;
}

// Lanes per output of the split gather for g, or 0 where the generic elements serve. It takes
// layers of few outputs with long sums:
//   - few outputs: the generic gather's grid (generic_shape's elements x lanes, at the fill bound
//     of 2^14 lanes that this rule was measured against: kSplitBaselineFill) under
//     kSplitMaxGenericThreads, about what the generic kernels keep resident on 132 SMs (2 blocks
//     of 256 per SM at their 82-120 registers: 67.6 K), so that SMs or their slots sit idle;
//   - lanes: the greatest power of two from kSplitMinLanes up to a warp at which outputs x lanes
//     stay within kBusyThreads (the split kernel keeps 3 blocks per SM, 101 K threads), each
//     lane keeping kSplitMinLaneProducts pairs of the mean sum or more, so sums under
//     kSplitMinLanes x kSplitMinLaneProducts = 256 pairs stay generic;
//   - at least kSplitMinGain x the generic grid's threads: the split gives up the generic
//     elements' reuse of an x load over 2-4 channels and of a weight over 2-4 positions, and
//     every lane repeats its output's decode and tap enumeration.
// Measured (session 41, H100, `kb bench P --dims D`, main's pack and this rule's first form (from
// 4 lanes) alternating twice; custom us, reference in brackets): L1_070 N 1, 45 -> 1, 3 x 79 x 11
// (5,265 outputs of 602 pairs; the plane gather) 22 -> 20 [17] at 32 lanes; L1_070 N 2, 48 -> 24,
// 3 x 5 x 7 (the generic gather) 33 -> 29 [17] at 16 lanes; L1_073 N 2, 32 -> 32, 4 x 5 x 6 24 ->
// 22 [17] at 4 lanes, but L1_073 N 4, 29 -> 10, 5 x 7 x 5 (42,120 outputs of 89 pairs) 22 -> 24
// [17] at 4 lanes, and L1_070 N 2, 35 -> 3, 9 x 29 x 5 27 -> 34 [17] at 16 lanes against the
// plane gather. So: from 16 lanes (at 4 the reuse given up and the gain were a wash, +-9%), and
// L1_070's plane gather yields to it only at one output channel (parity_gemm3d.cuh).
// Session 42 (H100, one lease, both forced in one pack, `kb bench L1_070 --dims ...`): at N 1,
// 45 -> 1, 3 x 79 x 11 16 lanes ran 0.018 ms (0.949x the reference) against 32 lanes' 0.020
// (0.840x; main's pack 0.829x): 32 lanes (168 K threads) overshot the busy count, so lanes now
// double only while outputs x lanes stay within it (32 lanes from 4,096 outputs down).
constexpr int64_t kSplitMaxGenericThreads = int64_t{1} << 16;
constexpr int64_t kSplitBaselineFill = int64_t{1} << 14;
constexpr int kSplitMinLanes = 16;
constexpr double kSplitMinLaneProducts = 16;
constexpr int64_t kSplitMinGain = 2;
inline int split_reduction_lanes(const ConvTransposeGeometry& g) {
  const GenericShape shape = generic_shape(g, kSplitBaselineFill);
  const int64_t generic_threads =
      GenericLayout(g, shape.co_block, shape.pos_block).elements * shape.split;
  const int64_t outputs = g.output_numel();
  if (outputs == 0 || generic_threads >= kSplitMaxGenericThreads) return 0;
  const double sum_length = mean_sum_length(g);
  int lanes = kSplitMinLanes;
  while (lanes < kWarp && outputs * 2 * lanes <= kBusyThreads &&
         sum_length / (2 * lanes) >= kSplitMinLaneProducts)
    lanes *= 2;
  const bool long_sums = sum_length / lanes >= kSplitMinLaneProducts;
  return long_sums && outputs * lanes >= kSplitMinGain * generic_threads ? lanes : 0;
}

// The generic gather's launch for g: the split gather where split_reduction_lanes takes g, else
// generic_shape's elements.
inline Status launch_generic(const float* x, const float* w, float* y,
                             const ConvTransposeGeometry& g, cudaStream_t stream) {
  const int lanes = split_reduction_lanes(g);
  const GenericShape shape =
      lanes > 0 ? GenericShape{.co_block = 1, .pos_block = 1, .split = lanes, .flat = true}
                : generic_shape(g);
  return launch_generic(x, w, y, g, shape, stream);
}

}  // namespace kb::custom::gather

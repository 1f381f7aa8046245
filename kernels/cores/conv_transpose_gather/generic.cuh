// The generic gather: the transposed convolution of any geometry (rank 1-3, stride, padding,
// dilation, output_padding, groups) as an output-stationary kernel, every transposed-conv
// custom's fallback and the only path of their smallest layers (gather_generic_kernel,
// launch_generic; gather_one for kernels that fuse it, L2_060's).
//
//   - GatherDividers: the index arithmetic's divisions, built on the host;
//   - axis_taps: the taps of one axis that land on an output, enumerated from its phase;
//   - gather_channels: the sums of kCo output channels at kPos phase-mates, over the taps that
//     land and the input channels a lane owns;
//   - GenericLayout / decode_block: the kernel's elements (kCo channels x kPos positions, rows
//     walked phase by phase) and their decode;
//   - generic_shape: the element shape and lanes per element for a layer; generic_is_faster: the
//     layers where this beats the fast paths;
//   - gather_split_kernel, the split gather: the same kernel over elements of one output whose
//     lanes split its flattened (tap, channel) pairs. Its rule, and launch_generic's overload
//     that picks between it and generic_shape's elements for a layer: split_gather.cuh.
//
// Checked on the host: tests/host_cuda/generic_gather_test.cu (every output of 360 random layers
// at every element shape, exactly the golden model's; the taps against the definition) and
// tests/host_cuda/split_gather_test.cu (the split gather's lanes and its rule).
// Thread safety: stateless; the host functions may be called from any thread.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

#include "common/cuda/int_divider.h"
#include "common/host_device.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose_gather/geometry.cuh"

namespace kb::custom::gather {

// ---- The generic gather: any rank, stride, padding, dilation, output_padding, groups ----

constexpr int kGenericThreads = 256;
constexpr int64_t kGenericMaxBlocks = int64_t{1} << 20;

// The generic gather's runtime divisions as dividers (common/cuda/int_divider.h), built once on
// the host: the output decode's (each output extent, C_out), a channel's group (C_out / groups)
// and each axis's stride. With plain divisions (64-bit ones among them) the index arithmetic was
// most of the kernel: 8.0 M warp instructions for L1_073 at N 3, 4 -> 7 channels, 5 x 7 x 9, where
// cuDNN's kernel executed 0.44 M (ncu, session 27). read_conv_transpose keeps every size, tap
// offset and channel count below 2^30, so the 32-bit dividers are exact on the sizes and on
// element indices below 2^31 (decode_output's 32-bit branch).
// With them, per axis, the steps between the taps of one phase (axis_taps): the taps landing on
// an output are t, t + tap_step, ... (tap_step = s / gcd(s, d)), their inputs i, i - input_step,
// ... (input_step = d / gcd(s, d)); dilation_mod and dilation_div are d mod s and d / s.
struct GatherDividers {
  Divider<uint32_t> out[kSpatial], out_channels, out_per_group, stride[kSpatial];
  int tap_step[kSpatial] = {1, 1, 1}, input_step[kSpatial] = {1, 1, 1};
  int dilation_mod[kSpatial] = {0, 0, 0}, dilation_div[kSpatial] = {1, 1, 1};

  GatherDividers() = default;
  explicit GatherDividers(const ConvTransposeGeometry& g)
      : out_channels(static_cast<uint32_t>(g.out_channels)),
        out_per_group(static_cast<uint32_t>(g.out_per_group())) {
    for (int a = 0; a < kSpatial; ++a) {
      out[a] = Divider<uint32_t>(static_cast<uint32_t>(g.out[a]));
      stride[a] = Divider<uint32_t>(static_cast<uint32_t>(g.stride[a]));
      const int s = static_cast<int>(g.stride[a]), d = static_cast<int>(g.dilation[a]);
      const int common = std::gcd(s, d);
      tap_step[a] = s / common, input_step[a] = d / common;
      dilation_mod[a] = d % s, dilation_div[a] = d / s;
    }
  }
};

// A load through the read-only path on the device (a plain load in host tests).
__host__ __device__ __forceinline__ float load_read_only(const float* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// The taps of one axis that land on an output (gather_channels' loops): taps first, first +
// tap_step, ... (count of them), feeding inputs input, input - input_step, ...
struct AxisTaps {
  int first = 0, input = 0, count = 0;
};

// Axis a's AxisTaps at output o, for inputs in [-reach, in): o + p = q s + r (the phase r); the
// first tap of the phase is the least t with t d = c s + r (t below tap_step; none when that t is
// past the kernel), feeding input q - c; then the taps whose input lies at or past `in` are
// skipped and the rest, down to input -reach or the kernel's end, counted. Only adds and compares
// past the one division, where testing every tap took a division each (axis_input). A reach
// above 0 serves the phase-mates o + s, ..., o + reach s at once (their inputs are i + 1, ...,
// i + reach: gather_channels). read_conv_transpose keeps o + pad and every size below 2^30.
__host__ __device__ __forceinline__ AxisTaps axis_taps(int o, int a, const ConvTransposeGeometry& g,
                                                       const GatherDividers& dv, int reach = 0) {
  const int kernel = static_cast<int>(g.kernel[a]), in = static_cast<int>(g.in[a]);
  const int s = static_cast<int>(dv.stride[a].divisor);
  const uint32_t u = static_cast<uint32_t>(o + static_cast<int>(g.padding[a]));
  const uint32_t q = dv.stride[a].div(u);
  const int r = static_cast<int>(u - q * dv.stride[a].divisor);
  const int limit = dv.tap_step[a] < kernel ? dv.tap_step[a] : kernel;
  int t = 0, m = 0, c = 0;  // t d = c s + m
  while (m != r) {
    if (++t >= limit) return {};
    m += dv.dilation_mod[a], c += dv.dilation_div[a];
    if (m >= s) m -= s, ++c;
  }
  int i = static_cast<int>(q) - c;
  while (i >= in && t < kernel) i -= dv.input_step[a], t += dv.tap_step[a];
  AxisTaps taps{t, i, 0};
  for (; t < kernel && i >= -reach; t += dv.tap_step[a], i -= dv.input_step[a]) ++taps.count;
  return taps;
}

// y[n, co, o] for the channels co = group * C_out/groups + co_local + j (j < kCo) and the
// positions o + (0, 0, k s) (k < kPos: phase-mates along the last axis, whose inputs there are
// i + k) by gather: every kernel tap that lands on each output, the input channels c_begin,
// c_begin + c_step, ... of the group. sums[j][k] of channels past C_out/groups repeat the last
// channel's; of positions past the row's end, whatever the inputs give (not stored). Each
// output's sum runs over its taps in increasing order and its channels in order whatever kCo and
// kPos, so its bits do not depend on them.
// kFlat (the split gather, gather_split_kernel): the lanes split the flattened list of (landing
// tap, channel) pairs, taps outer, rather than each tap's channels: the lane's channel walk
// carries over from one tap into the next (at c - C_in/groups where it left the tap), so a lane
// with c_begin r and c_step L takes the pairs r, r + L, ... of the list, and taps whose share is
// empty (L above C_in/groups) are skipped.
// (The 64-bit form of v1, a 64-bit division per tap and index products per channel, ran 2.7x
// slower: L2_060's generic path at N 39, C_in 1, 0.209 against 0.076 ms.)
template <int kCo, int kPos, bool kFlat = false>
__host__ __device__ inline void gather_channels(
    const float* __restrict__ x, const float* __restrict__ w, const ConvTransposeGeometry& g,
    const GatherDividers& dv, int64_t n, int64_t group, int64_t co_local, int co_count,
    const int64_t (&o)[kSpatial], int c_begin, int c_step, float (&sums)[kCo][kPos]) {
  const int64_t cin_g = g.in_per_group(), cout_g = g.out_per_group();
  const int64_t c_first = group * cin_g;
  const int64_t x_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t w_taps = g.kernel[0] * g.kernel[1] * g.kernel[2], w_step = cout_g * w_taps;
  const float* x_base = x + (n * g.in_channels + c_first) * x_plane;
  const float* w_base = w + (c_first * cout_g + co_local) * w_taps;
  int64_t w_channel[kCo];  // each channel's weights from co_local's
  KB_UNROLL
  for (int j = 0; j < kCo; ++j) w_channel[j] = (j < co_count ? j : co_count - 1) * w_taps;
  AxisTaps taps[kSpatial];
  KB_UNROLL
  for (int a = 0; a < kSpatial; ++a)
    taps[a] = axis_taps(static_cast<int>(o[a]), a, g, dv, a == kSpatial - 1 ? kPos - 1 : 0);
  const int in1 = static_cast<int>(g.in[1]), in2 = static_cast<int>(g.in[2]);
  const int k1 = static_cast<int>(g.kernel[1]), k2 = static_cast<int>(g.kernel[2]);
  KB_UNROLL
  for (int j = 0; j < kCo; ++j) {
    KB_UNROLL
    for (int k = 0; k < kPos; ++k) sums[j][k] = 0.f;
  }
  // Taps in increasing order on every axis, as the definition's loops: the sum's order is that of
  // testing every tap (axis_input), and so are its bits.
  for (int j0 = 0, t0 = taps[0].first, i0 = taps[0].input; j0 < taps[0].count;
       ++j0, t0 += dv.tap_step[0], i0 -= dv.input_step[0]) {
    for (int j1 = 0, t1 = taps[1].first, i1 = taps[1].input; j1 < taps[1].count;
         ++j1, t1 += dv.tap_step[1], i1 -= dv.input_step[1]) {
      for (int j2 = 0, t2 = taps[2].first, i2 = taps[2].input; j2 < taps[2].count;
           ++j2, t2 += dv.tap_step[2], i2 -= dv.input_step[2]) {
        if (kFlat && c_begin >= cin_g) {  // none of this tap's pairs is the lane's
          c_begin -= static_cast<int>(cin_g);
          continue;
        }
        bool lands[kPos];  // position k's input i2 + k lies in the row (always, for one position)
        KB_UNROLL
        for (int k = 0; k < kPos; ++k)
          lands[k] = kPos == 1 || static_cast<unsigned>(i2 + k) < static_cast<unsigned>(in2);
        const float* xp = x_base + (int64_t{i0} * in1 + i1) * in2 + i2 + c_begin * x_plane;
        const float* wp = w_base + (t0 * k1 + t1) * k2 + t2 + c_begin * w_step;
        int64_t c = c_begin;
        KB_UNROLL_BY(4)
        for (; c < cin_g; c += c_step, xp += c_step * x_plane, wp += c_step * w_step) {
          float xv[kPos];
          KB_UNROLL
          for (int k = 0; k < kPos; ++k) xv[k] = lands[k] ? load_read_only(xp + k) : 0.f;
          KB_UNROLL
          for (int j = 0; j < kCo; ++j) {
            const float wv = load_read_only(wp + w_channel[j]);
            KB_UNROLL
            for (int k = 0; k < kPos; ++k)
              if (lands[k]) sums[j][k] = fmaf(xv[k], wv, sums[j][k]);
          }
        }
        if constexpr (kFlat) c_begin = static_cast<int>(c - cin_g);
      }
    }
  }
}

// y[n, co, o] by gather (gather_channels of one channel and position); dv = GatherDividers(g).
__host__ __device__ inline float gather_one(const float* __restrict__ x,
                                            const float* __restrict__ w,
                                            const ConvTransposeGeometry& g,
                                            const GatherDividers& dv, int64_t n, int64_t co,
                                            const int64_t (&o)[kSpatial], int c_begin = 0,
                                            int c_step = 1) {
  const int64_t group = dv.out_per_group.div(static_cast<uint32_t>(co));
  float sum[1][1];
  gather_channels<1, 1>(x, w, g, dv, n, group, co - group * g.out_per_group(), 1, o, c_begin,
                        c_step, sum);
  return sum[0][0];
}

// Element e of y (N, C_out, *S_out) as its sample n, channel co and position o: below 2^31 by
// the 32-bit dividers, else by 64-bit divisions.
__host__ __device__ __forceinline__ void decode_output(int64_t e, const ConvTransposeGeometry& g,
                                                       const GatherDividers& dv, int64_t& n,
                                                       int64_t& co, int64_t (&o)[kSpatial]) {
  if (e <= 0x7fffffff) {
    uint32_t r = static_cast<uint32_t>(e);
    KB_UNROLL
    for (int a = kSpatial - 1; a >= 0; --a) {
      const uint32_t q = dv.out[a].div(r);
      o[a] = r - q * dv.out[a].divisor;
      r = q;
    }
    const uint32_t q = dv.out_channels.div(r);
    n = q, co = r - q * dv.out_channels.divisor;
    return;
  }
  for (int a = kSpatial - 1; a >= 0; --a) {
    o[a] = e % g.out[a];
    e /= g.out[a];
  }
  n = e / g.out_channels, co = e % g.out_channels;
}

// The elements of gather_generic_kernel<kThreads, kCo, kPos>: each is kCo output channels of one
// group (a channel block; the last of a group short where kCo does not divide C_out / groups)
// at kPos phase-mates of the last axis (a position block). A row of the last axis (out
// positions, stride s) is walked phase by phase, positions w with w mod s = 0 first, then 1, ...,
// each phase cut into blocks of kPos: the lanes of a warp then share their taps along that axis
// where, in order, they alternated between phases of different tap counts. The first
// long_phases phases hold long_members positions (long_blocks blocks each), the others
// long_members - 1 (short_blocks blocks). Elements: N x channel_blocks x out[0] x out[1] x
// row_blocks, decoded by decode_block.
struct GenericLayout {
  Divider<uint32_t> out[kSpatial - 1], channel_blocks, blocks_per_group, row_blocks;
  Divider<uint32_t> long_blocks, short_blocks;
  int long_phases = 0, long_members = 0, stride = 1;
  int64_t elements = 0;

  GenericLayout() = default;
  GenericLayout(const ConvTransposeGeometry& g, int co_block, int pos_block)
      : stride(static_cast<int>(g.stride[kSpatial - 1])) {
    const int64_t per_group = (g.out_per_group() + co_block - 1) / co_block;
    blocks_per_group = Divider<uint32_t>(static_cast<uint32_t>(per_group));
    channel_blocks = Divider<uint32_t>(static_cast<uint32_t>(per_group * g.groups));
    for (int a = 0; a < kSpatial - 1; ++a)
      out[a] = Divider<uint32_t>(static_cast<uint32_t>(g.out[a]));
    const int64_t row = g.out[kSpatial - 1], s = stride;
    long_phases = static_cast<int>(row % s);
    long_members = static_cast<int>(row / s + 1);
    const int64_t long_count = (row / s + pos_block) / pos_block;  // blocks of row / s + 1
    const int64_t short_count = (row / s + pos_block - 1) / pos_block;
    long_blocks = Divider<uint32_t>(static_cast<uint32_t>(long_count));
    short_blocks = Divider<uint32_t>(static_cast<uint32_t>(std::max<int64_t>(short_count, 1)));
    const int64_t blocks = long_phases * long_count + (s - long_phases) * short_count;
    row_blocks = Divider<uint32_t>(static_cast<uint32_t>(blocks));
    elements = g.batch * per_group * g.groups * g.out[0] * g.out[1] * blocks;
  }
};

// Element e of gather_generic_kernel<kThreads, kCo, kPos>: sample n, the channels group *
// C_out/groups + co_local + j for j < co_count (<= kCo), the positions o + (0, 0, k stride) for
// k < pos_count (<= kPos).
struct ChannelBlock {
  int64_t n = 0, group = 0, co_local = 0, o[kSpatial] = {0, 0, 0};
  int co_count = 0, pos_count = 0;
  // y's index of channel j of the block at o.
  __host__ __device__ int64_t output_index(const ConvTransposeGeometry& g, int j) const {
    const int64_t co = group * g.out_per_group() + co_local + j;
    return (((n * g.out_channels + co) * g.out[0] + o[0]) * g.out[1] + o[1]) * g.out[2] + o[2];
  }
};

template <int kCo, int kPos>
__host__ __device__ inline ChannelBlock decode_block(int64_t e, const ConvTransposeGeometry& g,
                                                     const GenericLayout& l) {
  ChannelBlock b;
  int64_t block, row_block;
  if (e <= 0x7fffffff) {
    uint32_t r = static_cast<uint32_t>(e), q = l.row_blocks.div(r);
    row_block = r - q * l.row_blocks.divisor, r = q;
    KB_UNROLL
    for (int a = kSpatial - 2; a >= 0; --a) {
      q = l.out[a].div(r);
      b.o[a] = r - q * l.out[a].divisor, r = q;
    }
    q = l.channel_blocks.div(r);
    b.n = q, block = r - q * l.channel_blocks.divisor;
  } else {
    row_block = e % l.row_blocks.divisor, e /= l.row_blocks.divisor;
    for (int a = kSpatial - 2; a >= 0; --a) b.o[a] = e % g.out[a], e /= g.out[a];
    b.n = e / l.channel_blocks.divisor, block = e % l.channel_blocks.divisor;
  }
  b.group = l.blocks_per_group.div(static_cast<uint32_t>(block));
  b.co_local = (block - b.group * l.blocks_per_group.divisor) * kCo;
  const int64_t channels_left = g.out_per_group() - b.co_local;
  b.co_count = static_cast<int>(channels_left < kCo ? channels_left : kCo);
  // The row block as (phase, block k of the phase): its first position phase + k kPos s.
  const uint32_t long_span = l.long_phases * l.long_blocks.divisor, rb = row_block;
  uint32_t phase, k;
  int members;
  if (rb < long_span) {
    phase = l.long_blocks.div(rb), k = rb - phase * l.long_blocks.divisor;
    members = l.long_members;
  } else {
    const uint32_t rest = rb - long_span, short_phase = l.short_blocks.div(rest);
    phase = l.long_phases + short_phase, k = rest - short_phase * l.short_blocks.divisor;
    members = l.long_members - 1;
  }
  b.o[kSpatial - 1] = phase + int64_t{k} * kPos * l.stride;
  const int positions_left = members - static_cast<int>(k) * kPos;
  b.pos_count = positions_left < kPos ? positions_left : kPos;
  return b;
}

// y: (N, C_out, *S_out) by elements of kCo channels at kPos positions (GenericLayout), `split`
// consecutive lanes per element (a power of two <= 32), lane r of the group summing the input
// channels c = r, r + split, ... (gather_channels), the group's lanes added by shuffles;
// grid-stride over the elements. A template so that each including file may instantiate it
// without a duplicate host stub. At least 2 blocks per SM in the bounds: with kThreads alone
// ptxas held the 4 x 1 and 1 x 1 kernels to 80 registers and spilled (sm_90a); with 2 they take
// 82-120, no spills (session 32). kFlat: the lanes split the element's flattened (tap, channel)
// pairs (gather_channels), the split gather's walk; its 1 x 1 kernel is held to 3 blocks per SM,
// 80 registers, no spills (2 left it 90; 4 spilled 88 bytes; ptxas, sm_90a).
template <int kThreads, int kCo, int kPos, bool kFlat = false>
__global__ void __launch_bounds__(kThreads, kFlat ? 3 : 2)
    gather_generic_kernel(const float* __restrict__ x, const float* __restrict__ w,
                          float* __restrict__ y, ConvTransposeGeometry g, GatherDividers dv,
                          GenericLayout layout, int split) {
  const int64_t volume = g.out[0] * g.out[1] * g.out[2], stride = layout.stride;
  const int split_log2 = __ffs(split) - 1;
  const int64_t step = static_cast<int64_t>(gridDim.x) * (kThreads >> split_log2);
  const int lane = static_cast<int>(threadIdx.x) % kWarp, r = lane & (split - 1);
  const unsigned lanes = (split == kWarp ? 0xffffffffu : (1u << split) - 1u) << (lane - r);
  for (int64_t e = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) >> split_log2;
       e < layout.elements; e += step) {
    const ChannelBlock b = decode_block<kCo, kPos>(e, g, layout);
    float v[kCo][kPos];
    gather_channels<kCo, kPos, kFlat>(x, w, g, dv, b.n, b.group, b.co_local, b.co_count, b.o, r,
                                      split, v);
    KB_UNROLL
    for (int j = 0; j < kCo; ++j) {
      KB_UNROLL
      for (int k = 0; k < kPos; ++k)
        for (int off = split / 2; off > 0; off /= 2)
          v[j][k] += __shfl_xor_sync(lanes, v[j][k], off);
    }
    if (r != 0) continue;
    float* out = y + b.output_index(g, 0);
    KB_UNROLL
    for (int j = 0; j < kCo; ++j) {
      KB_UNROLL
      for (int k = 0; k < kPos; ++k)
        if (j < b.co_count && k < b.pos_count) out[j * volume + k * stride] = v[j][k];
    }
  }
}

// The split gather: elements of one output, `split` lanes (a power of two, 16 or 32:
// split_reduction_lanes) per output walking its flattened (landing tap, input channel) pairs
// (gather_channels' kFlat), so that the lanes stay busy where the group's input channels are fewer
// than the lanes or not a multiple of them, their sums added by shuffles. For layers of few outputs
// with long sums, where the generic elements leave most SMs idle (split_gather.cuh's rule).
template <int kThreads>
constexpr auto gather_split_kernel = gather_generic_kernel<kThreads, 1, 1, true>;

// Multiply-adds of the layer: every input element meets C_out/groups outputs per kernel tap.
inline double layer_macs(const ConvTransposeGeometry& g) {
  return static_cast<double>(g.batch) * static_cast<double>(g.in_channels) *
         static_cast<double>(g.in[0] * g.in[1] * g.in[2]) * static_cast<double>(g.out_per_group()) *
         static_cast<double>(g.kernel[0] * g.kernel[1] * g.kernel[2]);
}

// Layers so small that a tensor-core path's fixed cost (a weight-split launch, tiles padded to
// 8-32 output channels, a persistent grid) outweighs their work: gather_generic_kernel is faster.
// The shape sweep measured L1_070 and L1_073 at 0.43-0.74x the reference through their tensor-
// core paths on layers of 1-2 M multiply-adds.
// Larger layers too where the path's tiles would mostly compute padding (`waste`, the tiles'
// multiply-adds over the layer's, tile_waste below) of kGenericMinWaste or more, up to
// kGenericMaxMacs x waste multiply-adds (both paths' times grow with it: the generic gather runs
// 0.5-1.3 T multiply-adds/s, the tensor paths ~3 T of their padded ones). Session 32 (H100, us,
// the tensor path / the generic gather): L1_073's parity GEMM at N 2, 13 -> 7 (waste 4.2, 10.5 M
// MACs) 25 / 15.9, at 23 -> 2 (16.7) 53 / 24.7, at 8 -> 12 (4.0, 33 M) 38 / 35.8, at 16 -> 16
// (1.5, 89 M) 38 / 71; L1_070's patch GEMM at C_out 4, C_in 24 (6.0) 37 / 26.0, at C_out 8, C_in
// 16 (3.0) 29 / 30.2. (Session 22, with the gather of one output a thread testing every tap, put
// the bound at waste 16.)
constexpr double kGenericMaxMacs = 8e6;
constexpr double kGenericMinWaste = 4;
inline bool generic_is_faster(const ConvTransposeGeometry& g, double waste = 1) {
  const double macs = layer_macs(g);
  return macs <= kGenericMaxMacs || (waste >= kGenericMinWaste && macs <= kGenericMaxMacs * waste);
}

// The padding factor of a path that tiles each group's output channels by co_tile and its input
// channels by ci_tile: the tiles' multiply-adds over the layer's (>= 1).
inline double tile_waste(const ConvTransposeGeometry& g, int64_t co_tile, int64_t ci_tile) {
  const auto padded = [](int64_t n, int64_t tile) {
    return static_cast<double>((n + tile - 1) / tile * tile) / static_cast<double>(n);
  };
  return padded(g.out_per_group(), co_tile) * padded(g.in_per_group(), ci_tile);
}

// An element's shape in gather_generic_kernel: kCo output channels at kPos phase-mates (co_block
// x pos_block, four or eight outputs a thread: their x loads are shared across the channels,
// their weight loads across the positions), and `split` lanes per element.
// flat: the split gather (gather_split_kernel; co_block and pos_block 1).
struct GenericShape {
  int co_block = 1, pos_block = 1, split = 1;
  bool flat = false;
};

// Lanes per element: doubled (up to a warp, at most the group's input channels) while the
// elements times the lanes stay under ~half the H200's resident threads (kBusyThreads) and each
// lane keeps kMinLaneMacs multiply-adds or more (an element's outputs x the layer's mean products
// per output, over the lanes), or the grid stays under fill_threads anyway. A layer of few
// outputs with long channel sums otherwise leaves most SMs idle behind one chain of dependent
// loads per thread (L1_070 at C_out 1, C_in 41: 4 outputs a thread of ~600 products, 8 lanes
// 31.9 us, 1 lane 120); lanes of short sums run slower than one lane where the grid fills the GPU
// (L1_073 N 2, 13 -> 7: 4 outputs of ~44 products, 1 lane 15.9 us, 2 lanes 18.5), not where it
// is tiny (L1_070 N 2, 5 -> 3, 3 x 5 x 7: 350 elements, 1 lane 13.2 us, 4 lanes 10.2; session
// 32, H100). Session 42 (H100, shapes forced): grids of 12-60 K lanes ran faster with more lanes
// than a fill bound of 16 K gave them (L1_073 N 4, 29 -> 10, 5 x 7 x 5 22 -> 17 us at 4 lanes, N
// 3, 4 -> 7 10 -> 8). Session 43 (H100, `kb bench P --dims D`, custom ms, the bound 2^14 -> 2^16,
// reference in brackets): L1_073 N 4, 29 -> 10, 5 x 7 x 5 0.022 -> 0.014 [0.017]; N 2, 32 -> 32,
// 4 x 5 x 6 0.024 -> 0.016 [0.017]; N 2, 13 -> 7, 11 x 5 x 39 0.020 -> 0.016 [0.021]; N 3, 4 -> 7,
// 5 x 7 x 9 0.010 -> 0.008; N 1, 6 -> 22 0.013 -> 0.012; L1_070 N 2, 48 -> 24 and N 2, 5 -> 3 no
// change; 2^15 moved none of them, 2^17 gave back most of the gain (N 1, 6 -> 22 0.016). At
// L1_070 N 1, 45 -> 1, 3 x 79 x 11 the split gather (split_gather.cuh) stays faster (0.017
// [0.017] against the filled generic grid's 0.022): it is weighed against the grid of the older
// bound (kSplitBaselineFill).
constexpr int64_t kBusyThreads = int64_t{1} << 17;
constexpr int64_t kFillThreads = int64_t{1} << 16;
constexpr double kMinLaneMacs = 256;
inline int channel_split(const ConvTransposeGeometry& g, int64_t elements, int outputs_per_element,
                         int64_t fill_threads) {
  const double element_macs = outputs_per_element * layer_macs(g) /
                              static_cast<double>(std::max<int64_t>(g.output_numel(), 1));
  int split = 1;
  while (split < kWarp && 2 * split <= g.in_per_group() && elements * split < kBusyThreads &&
         (element_macs / (2 * split) >= kMinLaneMacs || elements * 2 * split <= fill_threads))
    split *= 2;
  return split;
}

// Four outputs a thread: 4 channels where the group has 4 or more, else 2 x 2 or 1 x 4 positions.
// Session 32 (H100, the kernel alone, us, one output a thread testing every tap -> this):
// L1_073 N 1, 6 -> 22, 3 x 15 x 37 26.5 -> 10.5; N 2, 13 -> 7, 11 x 5 x 39 38.4 -> 15.5;
// L1_070 N 8, 41 -> 1, 41 x 5 x 9 45.7 -> 31.8; N 1, 24 -> 4, 20^3 42.3 -> 26.0.
// Eight (4 channels x 2 phase-mates) where that still leaves kWideLanes lanes or more: 117 -> 66
// at a layer of L2_060's geometry (N 39, 1 -> 16, 8 x 16 x 16; 427 before); L1_073 N 2, 16 -> 16
// 71 -> 51; N 4, 8 -> 12, 9 x 17 x 21 36 -> 27; L1_070 N 2, 16 -> 8, 13 x 17 x 19 32 -> 29; N 1,
// 7 -> 5, 21^3 19.0 -> 15.6. With fewer lanes eight lost: L1_073 6 -> 22 10.5 -> 11.9 (32 K
// lanes), 13 -> 7 15.5 -> 16.7 (15 K).
// fill_threads: channel_split's fill bound.
constexpr int64_t kWideLanes = int64_t{1} << 15;
inline GenericShape generic_shape(const ConvTransposeGeometry& g,
                                  int64_t fill_threads = kFillThreads) {
  const auto shape_of = [&g, fill_threads](int co_block, int pos_block) {
    const int64_t elements = GenericLayout(g, co_block, pos_block).elements;
    return std::pair{GenericShape{co_block, pos_block,
                                  channel_split(g, elements, co_block * pos_block, fill_threads)},
                     elements};
  };
  const int64_t cout_g = g.out_per_group();
  if (cout_g < 4) return shape_of(cout_g >= 2 ? 2 : 1, cout_g >= 2 ? 2 : 4).first;
  const auto [wide, elements] = shape_of(4, 2);
  return elements * wide.split >= kWideLanes ? wide : shape_of(4, 1).first;
}

// gather_generic_kernel at `shape` (co_block x pos_block one of 1 x 1, 1 x 4, 2 x 2, 4 x 1, 4 x 2;
// flat: gather_split_kernel).
inline Status launch_generic(const float* x, const float* w, float* y,
                             const ConvTransposeGeometry& g, GenericShape shape,
                             cudaStream_t stream) {
  const GenericLayout layout(g, shape.co_block, shape.pos_block);
  const int64_t blocks = (layout.elements * shape.split + kGenericThreads - 1) / kGenericThreads;
  const dim3 grid(static_cast<unsigned>(std::min(blocks, kGenericMaxBlocks)));
  const GatherDividers dv(g);
  const auto run = [&](auto kernel) {
    return launch(kernel, grid, kGenericThreads, 0, stream, x, w, y, g, dv, layout, shape.split);
  };
  if (shape.flat && shape.co_block * shape.pos_block == 1)
    return run(gather_split_kernel<kGenericThreads>);
  if (shape.flat) return Status::invalid_argument("gather: the split gather sums one output each");
  const int kind = shape.co_block * 8 + shape.pos_block;
  switch (kind) {
    case 1 * 8 + 1:
      return run(gather_generic_kernel<kGenericThreads, 1, 1>);
    case 1 * 8 + 4:
      return run(gather_generic_kernel<kGenericThreads, 1, 4>);
    case 2 * 8 + 2:
      return run(gather_generic_kernel<kGenericThreads, 2, 2>);
    case 4 * 8 + 1:
      return run(gather_generic_kernel<kGenericThreads, 4, 1>);
    case 4 * 8 + 2:
      return run(gather_generic_kernel<kGenericThreads, 4, 2>);
    default:
      return Status::invalid_argument("gather: no generic kernel of " +
                                      std::to_string(shape.co_block) + " channels x " +
                                      std::to_string(shape.pos_block) + " positions");
  }
}

}  // namespace kb::custom::gather

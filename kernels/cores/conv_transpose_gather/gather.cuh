// Output-stationary ("gather") transposed convolutions: the row gather of L1_075 and L1_081, and
// the node every transposed-conv custom binds. Included by .cu files and device headers.
//
//   - ConvTransposeNode: a conv_transpose node (geometry.cuh's ConvTransposeGeometry) with its x
//     and w's indices in ImplArgs, as the custom variants bind it at setup;
//   - the generic gather (generic.cuh, and split_gather.cuh's split form for layers of few
//     outputs with long sums; included here): any geometry, the fast paths' fallback;
//   - row_gather_kernel: the 2-D fast path on fp32 FMA, one block per (n, output row, block of
//     channels) of 256 threads, or 64 for a group of few channels, its column taps fixed at
//     compile time (K_w, s_w, d_w), everything else at run time; its row geometry
//     (fill_row_geometry), blocks (row_block), row taps and zero rows (store_zero_rows) are
//     shared with tensor_rows.cuh, the same blocks on 3xTF32 tensor cores;
//   - RowGatherConvTranspose: the custom variant of a 2-D problem (row gather, else generic).
//
// Every kernel here lives in namespace kb::custom::gather, so the executor sees it as ours.
// Thread safety: stateless; the host functions may be called from any thread.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose_gather/generic.cuh"
#include "kernels/cores/conv_transpose_gather/geometry.cuh"
#include "kernels/cores/conv_transpose_gather/split_gather.cuh"
#include "kernels/implementation.h"

namespace kb::custom::gather {

// ---- The node a custom variant runs ----

// A custom variant's conv_transpose node `name` (input x_name, weight w_name) as bind() reads it
// at setup: its geometry and where run() finds x and w in ImplArgs. Shared by every custom
// variant that runs one such node on the generic gather or a fast path (RowGatherConvTranspose,
// TensorRowConvTranspose, ../conv_transpose3d_tf32x3's ParityConvTranspose3d's, L2_091,
// L2_093). The names are borrowed (string literals in practice) and must outlive it.
struct ConvTransposeNode {
  const char* name;    // the graph node
  const char* x_name;  // its input x (N, C_in, *S): an input of the problem
  const char* w_name;  // its weight w (C_in, C_out / groups, *K): a parameter
  ConvTransposeGeometry geometry{};
  size_t x = 0, w = 0;  // input_index(x_name), param_index(w_name)

  // Reads geometry, x and w. A node that is missing or that read_conv_transpose rejects: its
  // error, and nothing changed.
  Status bind(const ProblemInstance& p) {
    KB_ASSIGN_OR_RETURN(geometry, read_conv_transpose(p, name));
    x = input_index(p, x_name);
    w = param_index(p, w_name);
    return Status::ok();
  }
  const float* input(const ImplArgs& args) const { return args.inputs[x].data; }
  const float* weight(const ImplArgs& args) const { return args.params[w].data; }
};

// ---- The 2-D row gather (fast path) ----
//
// One block per (n, output row oh, block of co_block output channels of one group), of
// kRowThreads threads, or kRowNarrowThreads for a group of few channels (row_threads):
//   1. the kernel rows th landing on oh with a valid input row ih are its "slots"; with none, the
//      block writes zeros and ends;
//   2. stages per slot x[n, group's channels, ih, :] (zero-padded) and w[group's channels,
//      block's channels, th, :];
//   3. per pass of pass_co channels, each thread takes two column positions qw (q_threads apart)
//      and 4 channels (RowThreadTile), sums
//      every phase r (ow = qw*s_w + r - pad_w) over slots, channels and column taps in registers,
//      and writes the row to shared memory (z) shifted to the output row's 16-byte phase;
//   4. the warps copy z to the output rows with 16-byte stores.
// The helpers that spread work over the block's warps take its threads as kThreads, by default
// kRowThreads (tensor_rows.cuh's blocks).

constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / kWarp;
// A group of at most 8 channels (one pass of 2 channel sets x 4) whose row one warp spans: a
// 256-thread block computed 32 channels a pass there, 24 or more of them padding (L1_081 at
// C_out 7: 0.64x the reference).
constexpr int kRowNarrowThreads = 64;
constexpr int kRowMaxCoBlock = 64;  // output channels per block at most
constexpr int kRowMaxPhases = 8;    // row strides the plan takes
constexpr int kRowMaxTaps = 8;      // kernel rows landing on one output row, at most

// z rows start kZMargin<kSw> floats in (16-byte aligned): the column positions a pass computes
// reach kSw - 1 outputs past either end of the output row, and land in the margins unchecked.
template <int kSw>
constexpr int kZMargin = (kSw + 2) / 4 * 4;

// The column taps, fixed at compile time: tap t lands on phase (t*d) mod s at input qw - offset.
template <int kKw, int kSw, int kDw>
struct ColumnTaps {
  static constexpr int phase(int t) { return t * kDw % kSw; }
  static constexpr int offset(int t) { return t * kDw / kSw; }
  static constexpr int kMaxOffset = (kKw - 1) * kDw / kSw;
};

struct RowGatherParams {
  const float* x;  // (N, C_in, H, W)
  const float* w;  // (groups, K_h, C_in / groups, K_w, co_pad): prepare_row_weights's layout
  float* y;        // (N, C_out, H_out, W_out)
  int cin_g, cout_g, groups;
  int in_h, in_w, out_h, out_w;
  int k_h, stride_h, pad_h, dil_h, pad_w;
  int co_block, co_blocks_per_group;  // channels per block (a multiple of the pass), per group
  int co_pad;                         // co_block * co_blocks_per_group: w's channel extent
  int q_min, q_count;                 // column positions qw = (ow + pad_w) / s_w of a row
  int x_len, z_stride;                // staged x row, z row (floats)
  bool x_vec;     // x rows staged by 16-byte copies (the staged span is inside x, 16-byte aligned)
  int row_taps;   // most kernel rows landing on one output row (slots)
  int q_threads;  // threads along qw; the block's threads / q_threads channel sets
  // Per row phase r = (oh + pad_h) mod stride_h: the kernel rows th landing on it, and the input
  // row each reads, ih = (oh + pad_h) / stride_h - tap_back[r][i] (th ascending).
  int8_t tap_count[kRowMaxPhases];
  int8_t tap_th[kRowMaxPhases][kRowMaxTaps];
  int tap_back[kRowMaxPhases][kRowMaxTaps];
};

struct RowBlock {
  int n, oh, group, co0, co_count;  // channels co0 .. co0 + co_count - 1 of the group
  float* out;                       // y[n, group * cout_g + co0, oh, 0]
  int64_t plane;                    // H_out * W_out: from one channel's row to the next
};

// The grid is (channel blocks of all groups, H_out, N): no index division per block.
__device__ __forceinline__ RowBlock row_block(const RowGatherParams& p) {
  RowBlock b;
  const int cb = static_cast<int>(blockIdx.x);
  b.oh = static_cast<int>(blockIdx.y);
  b.n = static_cast<int>(blockIdx.z);
  b.group = cb / p.co_blocks_per_group;
  b.co0 = cb % p.co_blocks_per_group * p.co_block;
  b.co_count = std::min(p.co_block, p.cout_g - b.co0);
  b.plane = static_cast<int64_t>(p.out_h) * p.out_w;
  const int64_t co = static_cast<int64_t>(b.n) * p.groups * p.cout_g + b.group * p.cout_g + b.co0;
  b.out = p.y + (co * p.out_h + b.oh) * p.out_w;
  return b;
}

// Calls f(slot, th, ih) for each kernel row th that feeds output row oh from input row ih, from
// the plan's phase table (one division per block; the per-tap divisions were ~7% of L1_081's
// instructions).
template <class F>
__device__ __forceinline__ int for_each_row_tap(const RowGatherParams& p, int oh, F f) {
  const int u = oh + p.pad_h, q = u / p.stride_h, r = u - q * p.stride_h;
  int slot = 0;
  for (int i = 0; i < p.tap_count[r]; ++i) {
    const int ih = q - p.tap_back[r][i];
    if (ih >= 0 && ih < p.in_h) f(slot++, p.tap_th[r][i], ih);
  }
  return slot;
}

// The block's output rows as zeros (a row that no kernel row lands on), a warp per channel.
template <int kThreads = kRowThreads>
__device__ __forceinline__ void store_zero_rows(const RowGatherParams& p, const RowBlock& b) {
  for (int c = threadIdx.x / kWarp; c < b.co_count; c += kThreads / kWarp) {
    store_zeros(b.out + c * b.plane, p.out_w, threadIdx.x % kWarp, kWarp);
  }
}

// Calls f(r, c) for every r < rows, c < cols, spread over the block's kThreads threads with no
// division per cell: a warp takes 32 / cols rows at a time when cols <= 32, else one row along
// its lanes.
template <int kThreads = kRowThreads, class F>
__device__ __forceinline__ void for_each_cell(int rows, int cols, F f) {
  constexpr int kWarps = kThreads / kWarp;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (cols <= kWarp) {
    const int per = kWarp / cols, r0 = lane / cols, c = lane - r0 * cols;
    if (r0 >= per) return;
    for (int r = warp * per + r0; r < rows; r += kWarps * per) f(r, c);
  } else {
    for (int r = warp; r < rows; r += kWarps)
      for (int c = lane; c < cols; c += kWarp) f(r, c);
  }
}

// Asynchronously (cp.async, then a commit): xs[slot][ci][k] = x[n, c0 + ci, ih, q_min - kMaxOff
// + k] (zeros outside x; a warp per staged row, lanes along it) and ws[slot][ci][t][co] = the
// prepared w[group][th][ci][t][co0 + co] (16-byte copies of whole channel rows; zeros past the
// group's channels come from the preparation).
template <int kKw, int kMaxOff, int kThreads>
__device__ void stage_slot(const RowGatherParams& p, const RowBlock& b, int slot, int th, int ih,
                           float* ws, float* xs) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t c0 = static_cast<int64_t>(b.group) * p.cin_g;
  const int iw0 = p.q_min - kMaxOff;
  const int64_t c_first = static_cast<int64_t>(b.n) * p.groups * p.cin_g + c0;
  if (p.x_vec) {  // no zero padding: the staged span lies inside the row
    for_each_cell<kThreads>(p.cin_g, p.x_len / 4, [&](int ci, int k4) {
      const float* src = p.x + ((c_first + ci) * p.in_h + ih) * p.in_w + iw0 + 4 * k4;
      __pipeline_memcpy_async(xs + (slot * p.cin_g + ci) * p.x_len + 4 * k4, src,
                              4 * sizeof(float));
    });
  }
  for (int ci = warp; !p.x_vec && ci < p.cin_g; ci += kThreads / kWarp) {
    const float* src = p.x + ((c_first + ci) * p.in_h + ih) * p.in_w;
    float* dst = xs + (slot * p.cin_g + ci) * p.x_len;
    for (int k = lane; k < p.x_len; k += kWarp) {
      const int iw = iw0 + k;
      if (iw >= 0 && iw < p.in_w) {
        __pipeline_memcpy_async(dst + k, src + iw, sizeof(float));
      } else {
        dst[k] = 0.f;
      }
    }
  }
  const int rows = p.cin_g * kKw;
  const float* src = p.w + (static_cast<int64_t>(b.group) * p.k_h + th) * rows * p.co_pad + b.co0;
  float* dst = ws + slot * rows * p.co_block;
  for_each_cell<kThreads>(rows, p.co_block / 4, [&](int row, int c4) {
    __pipeline_memcpy_async(dst + row * p.co_block + 4 * c4,
                            src + static_cast<int64_t>(row) * p.co_pad + 4 * c4, 4 * sizeof(float));
  });
  __pipeline_commit();
}

// A thread's share of a pass: kQ column positions (q_threads apart) x kCo channels.
template <int kQ, int kCo>
struct ThreadTile {
  static_assert(kCo % 4 == 0, "weights are read as float4");
  static constexpr int kQs = kQ, kCos = kCo;
};
// Two positions x 4 channels: a float4 of weights feeds 8 multiply-adds, with fewer shared loads
// per multiply-add than 1 x 8 (L1_081: 5 instead of 7 per 24; L1_075: 9 instead of 12 per 40).
using RowThreadTile = ThreadTile<2, 4>;

// acc[j][r][c]: phase r of column position q_min + qi[j], channel co_l0 + c, over all staged
// rows. A float4 of weights feeds kQ x 4 multiply-adds.
template <int kKw, int kSw, int kDw, class Tile>
__device__ __forceinline__ void accumulate(const RowGatherParams& p, int slots,
                                           const int (&qi)[Tile::kQs], int co_l0, const float* ws,
                                           const float* xs,
                                           float (&acc)[Tile::kQs][kSw][Tile::kCos]) {
  using Taps = ColumnTaps<kKw, kSw, kDw>;
  constexpr int kQ = Tile::kQs, kCo = Tile::kCos;
  const int rows = slots * p.cin_g;  // (slot, ci), in staging order
#pragma unroll 2
  for (int row = 0; row < rows; ++row) {
    const float* xr = xs + row * p.x_len + Taps::kMaxOffset;
    float xv[kQ][Taps::kMaxOffset + 1];
#pragma unroll
    for (int j = 0; j < kQ; ++j)
#pragma unroll
      for (int o = 0; o <= Taps::kMaxOffset; ++o) xv[j][o] = xr[qi[j] - o];
    const float* wr = ws + row * kKw * p.co_block + co_l0;
#pragma unroll
    for (int t = 0; t < kKw; ++t) {
#pragma unroll
      for (int c4 = 0; c4 < kCo; c4 += 4) {
        const float4 w4 = *reinterpret_cast<const float4*>(wr + t * p.co_block + c4);
        const float wv[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int j = 0; j < kQ; ++j)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            float& a = acc[j][Taps::phase(t)][c4 + c];
            a = fmaf(xv[j][Taps::offset(t)], wv[c], a);
          }
      }
    }
  }
}

// z[row][shift + ow] for the pass's channels pass + row, shift = the output row's 16-byte phase.
template <int kKw, int kSw, int kDw, class Tile>
__device__ void compute_pass(const RowGatherParams& p, const RowBlock& b, int slots, int pass,
                             const float* ws, const float* xs, float* z) {
  constexpr int kQ = Tile::kQs, kCo = Tile::kCos;
  const int tq = threadIdx.x % p.q_threads, cs = threadIdx.x / p.q_threads;
  const int co_l0 = pass + cs * kCo;
  // The 16-byte phase of each channel's row, in 32-bit (only the values mod 4 matter).
  const int out_phase = static_cast<int>((reinterpret_cast<uintptr_t>(b.out) >> 2) & 3);
  const int plane4 = static_cast<int>(b.plane & 3);
  int shift[kCo];
#pragma unroll
  for (int c = 0; c < kCo; ++c) shift[c] = (out_phase + (co_l0 + c) * plane4) & 3;
  float* zc = z + cs * kCo * p.z_stride;
  for (int q0 = tq; q0 < p.q_count; q0 += kQ * p.q_threads) {
    int qi[kQ];
#pragma unroll
    for (int j = 0; j < kQ; ++j) qi[j] = std::min(q0 + j * p.q_threads, p.q_count - 1);
    float acc[kQ][kSw][kCo] = {};
    accumulate<kKw, kSw, kDw, Tile>(p, slots, qi, co_l0, ws, xs, acc);
#pragma unroll
    for (int j = 0; j < kQ; ++j) {
      if (q0 + j * p.q_threads >= p.q_count) break;
      // ow0 + r spans [-(kSw - 1), W_out + kSw - 2]: the margins take the outside ones.
      const int ow0 = (p.q_min + qi[j]) * kSw - p.pad_w + kZMargin<kSw>;
#pragma unroll
      for (int r = 0; r < kSw; ++r)
#pragma unroll
        for (int c = 0; c < kCo; ++c) zc[c * p.z_stride + shift[c] + ow0 + r] = acc[j][r][c];
    }
  }
}

template <int kSw, int kThreads = kRowThreads>
__device__ __forceinline__ void store_pass(const RowGatherParams& p, const RowBlock& b, int pass,
                                           int pass_co, const float* z) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (int row = warp; row < pass_co && pass + row < b.co_count; row += kThreads / kWarp) {
    float* dst = b.out + (pass + row) * b.plane;
    const float* src =
        z + row * p.z_stride + kZMargin<kSw> + ((reinterpret_cast<uintptr_t>(dst) >> 2) & 3);
    store_run(
        dst, p.out_w, lane, kWarp,
        [src](int o) { return *reinterpret_cast<const float4*>(src + o); },
        [src](int o) { return src[o]; });
  }
}

// Blocks per SM the kernel's registers allow. 256 threads: three (<= 85 registers): shared
// memory allows no more at L1_075 (57 KB), and with a bare __launch_bounds__(256) ptxas held
// L1_075 to 64 registers and spilled (0.422 -> 0.440 ms). 64 threads: sixteen (<= 64 registers,
// no spills for L1_075 or L1_081; at 20, L1_081 spilled), shared memory permitting (L1_081 at
// 25 -> 7 channels, 47 x 25: 9.3 KB a block).
template <int kThreads>
constexpr int kRowMinBlocks = kThreads == kRowThreads ? 3 : 16;

template <int kKw, int kSw, int kDw, class Tile, int kThreads = kRowThreads>
__global__ void __launch_bounds__(kThreads, kRowMinBlocks<kThreads>)
    row_gather_kernel(RowGatherParams p) {
  static_assert(kThreads % kWarp == 0 && kThreads <= kRowThreads, "whole warps, at most 256");
  const RowBlock b = row_block(p);
  const int slots = for_each_row_tap(p, b.oh, [](int, int, int) {});
  if (slots == 0) return store_zero_rows<kThreads>(p, b);  // no tap lands on this row
  float* ws = dynamic_smem();
  float* xs = ws + p.row_taps * p.cin_g * kKw * p.co_block;
  float* z = xs + (p.row_taps * p.cin_g * p.x_len + 3) / 4 * 4;
  constexpr int kMaxOff = ColumnTaps<kKw, kSw, kDw>::kMaxOffset;
  for_each_row_tap(p, b.oh, [&](int slot, int th, int ih) {
    stage_slot<kKw, kMaxOff, kThreads>(p, b, slot, th, ih, ws, xs);
  });
  __pipeline_wait_prior(0);
  __syncthreads();
  const int pass_co = kThreads / p.q_threads * Tile::kCos;
  for (int pass = 0; pass < b.co_count; pass += pass_co) {
    compute_pass<kKw, kSw, kDw, Tile>(p, b, slots, pass, ws, xs, z);
    __syncthreads();
    store_pass<kSw, kThreads>(p, b, pass, pass_co, z);
    __syncthreads();
  }
}

// wp[group][th][ci][t][co] = w[group * cin_g + ci, co, th, t] for co < cout_g, else 0: the
// weights in the order a block stages them (whole rows of its channels, 16-byte copies). One
// thread per element of wp; a few microseconds per call (the weights may change between calls).
template <int kKw>
__global__ void __launch_bounds__(kGenericThreads)
    prepare_row_weights_kernel(const float* __restrict__ w, float* __restrict__ wp,
                               RowGatherParams p) {
  const int64_t total = static_cast<int64_t>(p.groups) * p.k_h * p.cin_g * kKw * p.co_pad;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kGenericThreads + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * kGenericThreads) {
    int64_t r = e;
    const int co = static_cast<int>(r % p.co_pad);
    r /= p.co_pad;
    const int t = static_cast<int>(r % kKw);
    r /= kKw;
    const int ci = static_cast<int>(r % p.cin_g);
    r /= p.cin_g;
    const int th = static_cast<int>(r % p.k_h);
    const int64_t group = r / p.k_h;
    wp[e] =
        co < p.cout_g
            ? w[((group * p.cin_g + ci) * p.cout_g + co) * (int64_t{p.k_h} * kKw) + th * kKw + t]
            : 0.f;
  }
}

struct RowGatherPlan {
  RowGatherParams params = {};
  dim3 grid;                  // (channel blocks of all groups, H_out, N)
  int threads = kRowThreads;  // per block: row_gather_kernel's kThreads (row_threads)
  size_t smem_bytes = 0;
  int64_t weight_floats = 0;  // of the prepared weights (prepare_row_weights_kernel)
};

// The row geometry every row kernel shares: sizes, column positions q_min .. q_min + q_count - 1
// (qw = (ow + pad_w) / s_w over the output row) and the row-tap table; failed_precondition
// saying why when a row kernel with column taps (kKw, kSw, kDw) does not apply to g.
template <int kKw, int kSw, int kDw>
Status fill_row_geometry(const ConvTransposeGeometry& g, RowGatherParams* out) {
  const auto no = [](const std::string& why) { return Status::failed_precondition(why); };
  if (g.rank != 2) return no("not a 2-D layer");
  if (g.kernel[2] != kKw || g.stride[2] != kSw || g.dilation[2] != kDw) {
    return no("column taps differ from the compiled ones");
  }
  const int64_t limit = int64_t{1} << 30;
  for (int64_t v : {g.in[1], g.in[2], g.out[1], g.out[2], g.in_channels, g.out_channels,
                    g.kernel[1] * g.stride[1] * g.dilation[1] + g.padding[1], g.padding[2]}) {
    if (v >= limit) return no("a size needs 64-bit indexing");
  }
  RowGatherParams& p = *out;
  p.cin_g = static_cast<int>(g.in_per_group()), p.cout_g = static_cast<int>(g.out_per_group());
  p.groups = static_cast<int>(g.groups);
  p.in_h = static_cast<int>(g.in[1]), p.in_w = static_cast<int>(g.in[2]);
  p.out_h = static_cast<int>(g.out[1]), p.out_w = static_cast<int>(g.out[2]);
  p.k_h = static_cast<int>(g.kernel[1]), p.stride_h = static_cast<int>(g.stride[1]);
  p.pad_h = static_cast<int>(g.padding[1]), p.dil_h = static_cast<int>(g.dilation[1]);
  p.pad_w = static_cast<int>(g.padding[2]);
  p.q_min = p.pad_w / kSw;
  p.q_count = (p.out_w - 1 + p.pad_w) / kSw - p.q_min + 1;
  p.row_taps = static_cast<int>(max_taps_per_phase(g.kernel[1], g.stride[1], g.dilation[1]));
  if (p.stride_h > kRowMaxPhases || p.row_taps > kRowMaxTaps)
    return no("too many row phases or taps");
  // Kernel row th lands on phase r = (th d) mod s and reads input row q - (th d - r) / s.
  for (int th = 0; th < p.k_h; ++th) {
    const int td = th * p.dil_h, r = td % p.stride_h;
    const int i = p.tap_count[r]++;
    p.tap_th[r][i] = static_cast<int8_t>(th);
    p.tap_back[r][i] = (td - r) / p.stride_h;
  }
  if (p.out_h > 65535 || g.batch > 65535) return no("grid too large");
  return Status::ok();
}

// The row gather's block for a group of cout_g channels and rows of q_count column positions:
// kRowNarrowThreads when one pass of it (a warp along the row, 2 channel sets) holds the group's
// channels and one warp spans the row, else kRowThreads.
template <class Tile>
constexpr int row_threads(int cout_g, int q_count) {
  constexpr int kNarrowPassCo = kRowNarrowThreads / kWarp * Tile::kCos;
  return cout_g <= kNarrowPassCo && q_count <= kWarp * Tile::kQs ? kRowNarrowThreads : kRowThreads;
}

// The launch of row_gather_kernel<kKw, kSw, kDw, Tile, plan.threads> for g, or
// failed_precondition saying why the fast path does not apply (the caller then runs the generic
// gather).
template <int kKw, int kSw, int kDw, class Tile>
Result<RowGatherPlan> plan_row_gather(const ConvTransposeGeometry& g, int64_t max_smem_bytes) {
  const auto no = [](const std::string& why) { return Status::failed_precondition(why); };
  RowGatherPlan plan;
  RowGatherParams& p = plan.params;
  KB_TRY((fill_row_geometry<kKw, kSw, kDw>(g, &p)));
  const int64_t limit = int64_t{1} << 30;
  plan.threads = row_threads<Tile>(p.cout_g, p.q_count);
  p.q_threads = kWarp;
  while (p.q_threads * Tile::kQs < p.q_count && p.q_threads < plan.threads) p.q_threads *= 2;
  const int pass_co = plan.threads / p.q_threads * Tile::kCos;
  p.co_block = (std::min(p.cout_g, kRowMaxCoBlock) + pass_co - 1) / pass_co * pass_co;
  p.co_blocks_per_group = (p.cout_g + p.co_block - 1) / p.co_block;
  p.co_pad = p.co_block * p.co_blocks_per_group;
  p.x_len = p.q_count + ColumnTaps<kKw, kSw, kDw>::kMaxOffset;
  const int iw0 = p.q_min - ColumnTaps<kKw, kSw, kDw>::kMaxOffset;
  p.x_vec = iw0 >= 0 && iw0 % 4 == 0 && iw0 + p.x_len <= p.in_w && p.x_len % 4 == 0 &&
            p.in_w % 4 == 0;  // and, per call, x 16-byte aligned (run())
  p.z_stride = (kZMargin<kSw> + p.out_w + kSw + 2 + 3) / 4 * 4;
  const int64_t floats = int64_t{p.row_taps} * p.cin_g * kKw * p.co_block +
                         (int64_t{p.row_taps} * p.cin_g * p.x_len + 3) / 4 * 4 +
                         int64_t{pass_co} * p.z_stride;
  plan.smem_bytes = static_cast<size_t>(floats) * sizeof(float);
  if (floats * static_cast<int64_t>(sizeof(float)) > max_smem_bytes) {
    return no("staged rows exceed shared memory");
  }
  const int64_t co_blocks = int64_t{p.groups} * p.co_blocks_per_group;
  if (co_blocks >= limit) return no("grid too large");
  plan.grid = dim3(static_cast<unsigned>(co_blocks), static_cast<unsigned>(p.out_h),
                   static_cast<unsigned>(g.batch));
  plan.weight_floats = int64_t{p.groups} * p.k_h * p.cin_g * kKw * p.co_pad;
  if (plan.weight_floats >= limit) return no("too many weights");
  return plan;
}

// ---- The custom variant of a 2-D problem ----

// Column positions per row below which a small layer (generic_is_faster) runs the generic gather.
constexpr int kNarrowRow = 16;

// Runs node `node` (input x_name, weight w_name) through row_gather_kernel<kKw, kSw, kDw,
// RowThreadTile, the plan's threads> when the plan applies and the layer is not small with narrow
// rows, else through the generic gather.
template <int kKw, int kSw, int kDw>
class RowGatherConvTranspose : public Implementation {
 public:
  RowGatherConvTranspose(const char* node, const char* x_name, const char* w_name)
      : node_{node, x_name, w_name} {}
  RowGatherConvTranspose(const RowGatherConvTranspose&) = delete;
  RowGatherConvTranspose& operator=(const RowGatherConvTranspose&) = delete;
  ~RowGatherConvTranspose() override { KB_CUDA_WARN(cudaFree(prepared_w_)); }

  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    KB_TRY(node_.bind(p));
    Result<int> max_smem = cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    if (!max_smem.is_ok()) return max_smem.status();
    Result<RowGatherPlan> plan =
        plan_row_gather<kKw, kSw, kDw, RowThreadTile>(node_.geometry, max_smem.value());
    // Rows of a few column positions leave most of a block's threads idle behind its staging
    // latency: in a small layer the generic gather is faster there (the sweep measured L1_075 at
    // 0.67x the reference at 11 x 28 x 59 x 7, 7 positions, and 1.5x on the generic gather).
    // With rows of 19-55 positions (L1_081, N = 1) the row gather stayed the faster one.
    fast_ = plan.is_ok() &&
            !(generic_is_faster(node_.geometry) && plan.value().params.q_count < kNarrowRow) &&
            node_.geometry.out_per_group() > generic_max_group_channels_;
    if (!fast_) return Status::ok();
    plan_ = plan.value();
    KB_CUDA_TRY(cudaFree(prepared_w_));
    prepared_w_ = nullptr;
    KB_CUDA_TRY(cudaMalloc(&prepared_w_, sizeof(float) * static_cast<size_t>(plan_.weight_floats)));
    return allow_shared_memory(kernel(plan_.threads), plan_.smem_bytes);
  }

  // Layers whose groups have at most `channels` output channels run the generic gather (set
  // before setup; 0 by default). A row gather thread computes 4 channels (RowThreadTile): 1 or 2
  // leave half or more of its FMAs on padding. L1_075 at N 11, 28 -> 4 (1 channel a group), 127
  // x 19: the row gather 0.63x the reference, the generic gather 1.14x (H100, session 54).
  void set_generic_max_group_channels(int64_t channels) { generic_max_group_channels_ = channels; }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = node_.input(args);
    const float* w = node_.weight(args);
    if (!fast_) return launch_generic(x, w, args.output.data, node_.geometry, stream);
    RowGatherParams p = plan_.params;
    p.x = x, p.w = prepared_w_, p.y = args.output.data;
    p.x_vec = p.x_vec && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const int64_t prep_blocks = (plan_.weight_floats + kGenericThreads - 1) / kGenericThreads;
    KB_TRY(launch(prepare_row_weights_kernel<kKw>,
                  dim3(static_cast<unsigned>(std::min(prep_blocks, kGenericMaxBlocks))),
                  kGenericThreads, 0, stream, w, prepared_w_, p));
    return launch(kernel(plan_.threads), plan_.grid, plan_.threads, plan_.smem_bytes, stream, p);
  }

 private:
  using Kernel = void (*)(RowGatherParams);
  static Kernel kernel(int threads) {
    return threads == kRowNarrowThreads
               ? row_gather_kernel<kKw, kSw, kDw, RowThreadTile, kRowNarrowThreads>
               : row_gather_kernel<kKw, kSw, kDw, RowThreadTile, kRowThreads>;
  }

  ConvTransposeNode node_;
  bool fast_ = false;
  int64_t generic_max_group_channels_ = 0;  // set_generic_max_group_channels
  RowGatherPlan plan_;
  float* prepared_w_ = nullptr;  // owned: plan_.weight_floats, prepare_row_weights_kernel's layout
};

}  // namespace kb::custom::gather

// Direct (output-stationary) fp32 Conv3d for few input channels: the kernel that L1_054, L1_060
// and L2_007 share. Included by those custom.cu files only.
//
//   x: (N, C_in, D, H, W), w: (C_out, C_in, KD, KH, KW), y: (N, C_out, D', H', W'), fp32 NCDHW;
//   y[n,o,d,h,v] = epilogue_o( sum_{c,a,b,e} w[o,c,a,b,e] * x[n,c,d+a-pd, h+b-ph, v+e-pw] ).
//
// Owns: Conv3dGeometry (read from the ProblemInstance), the tile kernel (stride 1, dilation 1,
// groups 1, kernel extents fixed at compile time, any padding, C_in, C_out and sizes), the narrow
// kernel (the tile's geometries, one thread per output: small layers, one output channel, and
// tiles of too few tasks to fill the GPU), the channel-group kernel (the tile's geometries, one
// thread per output position and 8 channels: narrow output rows and the narrow kernel's layers of
// 4 or more channels), the generic kernel (one thread per output, any geometry: the fallback),
// Conv3d, the plan that picks one, and PlainConv3dVariant, the custom variant of a conv3d without
// epilogue.
//
// Tile kernel. A block (256 threads, two per multiprocessor) owns one output plane d of one
// sample, 4*row_groups output rows h, 64 output columns and 8*co_groups channels. It stages, once,
// the input it needs (all C_in channels, KD planes, the rows and columns with halo; zeros outside
// x; where they do not fit in shared memory, in chunks of input channels, one after another, each
// warp then running one task whose accumulators carry across the chunks) and those channels'
// weights (pre-transposed to [c, tap][co] by a small kernel each run, so the copy is 16-byte and
// coalesced) in shared memory; then each warp runs tasks of (8 channels, 4 rows): lane l computes
// columns l and l + 32 of those 4 rows for 8 channels, 64 fp32 accumulators. Per (c, kd, kw) a lane
// loads 2 x (4 + KH - 1) input values (consecutive lanes, consecutive banks), per tap 8 weights as
// two broadcast LDS.128, and issues 64 FFMA per tap: ~10 FFMA per shared load. The kw loop stays
// rolled: unrolled, ptxas wants ~168 registers and spills at the 128 that two blocks allow. Stores
// are one 128-byte row piece per (channel, row, column half): coalesced for any W', no alignment
// assumption. Summation order per output: c, kd, kw, kh (fp32 FMA, no TF32).
//
// The stage/compute/store steps are __host__ __device__ functions of (block, warp, lane):
// tests/host_cuda/conv3d_tile_test.cu runs them on the host for a whole grid.
// Thread safety: stateless; Conv3d follows Implementation (one thread at a time).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/host_device.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/cores/conv3d_direct/tf32x3_tile.cuh"
#include "kernels/implementation.h"

namespace kb::custom::conv3d_direct {

constexpr int kWarp = 32;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarp;
constexpr int kCoThread = 8;                 // channels of a task (registers)
constexpr int kRowsThread = 4;               // output rows of a task (registers)
constexpr int kColsThread = 2;               // columns lane and lane + 32
constexpr int kTileW = kWarp * kColsThread;  // 64 output columns per block
constexpr int kMaxRowGroups = 4;             // at most 16 output rows per block
constexpr int kMaxCoGroups = 8;              // at most 64 channels per block
constexpr size_t kSmemBudget = 112 * 1024;   // two blocks per multiprocessor (227 KB)
static_assert(kCoThread == 8, "weights of a tap are two float4 loads");

// ---- Geometry ----

struct Conv3dGeometry {
  int64_t batch = 0, cin = 0, cout = 0, groups = 1;
  int64_t in[3] = {}, out[3] = {}, kernel[3] = {};
  int64_t stride[3] = {}, padding[3] = {}, dilation[3] = {};
};

// The sizes both tiles' parameters (TileParams, tf32::Params) carry, from g (checked to fit int
// by the caller).
template <class Params>
void set_sizes(const Conv3dGeometry& g, Params& p) {
  p.batch = static_cast<int>(g.batch), p.cin = static_cast<int>(g.cin);
  p.cout = static_cast<int>(g.cout);
  p.in_d = static_cast<int>(g.in[0]), p.in_h = static_cast<int>(g.in[1]);
  p.in_w = static_cast<int>(g.in[2]);
  p.out_d = static_cast<int>(g.out[0]), p.out_h = static_cast<int>(g.out[1]);
  p.out_w = static_cast<int>(g.out[2]);
  p.pad_d = static_cast<int>(g.padding[0]), p.pad_h = static_cast<int>(g.padding[1]);
  p.pad_w = static_cast<int>(g.padding[2]);
}

// Reads conv node `node` (inputs x (N, C_in, D, H, W), w (C_out, C_in/groups, KD, KH, KW)).
inline Result<Conv3dGeometry> read_conv3d(const ProblemInstance& p, const std::string& node) {
  const GraphNode* n = p.spec().find_node(node);
  if (n == nullptr || n->op != "conv" || n->inputs.size() < 2) {
    return Status::invalid_argument("conv3d_direct: no conv node '" + node + "'");
  }
  const Shape& x = p.shape_of(n->inputs[0]);
  const Shape& w = p.shape_of(n->inputs[1]);
  const Shape& y = p.shape_of(n->output);
  if (x.size() != 5 || w.size() != 5 || y.size() != 5) {
    return Status::invalid_argument("conv3d_direct: " + node + " is not a 3-D convolution");
  }
  const auto ints_or = [&](const char* attr, int64_t fill) {  // PyTorch's defaults when absent
    return p.has_attr(node, attr) ? p.ints(node, attr) : std::vector<int64_t>(3, fill);
  };
  const std::vector<int64_t> stride = ints_or("stride", 1), pad = ints_or("padding", 0);
  const std::vector<int64_t> dil = ints_or("dilation", 1);
  if (stride.size() != 3 || pad.size() != 3 || dil.size() != 3) {
    return Status::invalid_argument("conv3d_direct: " + node + " needs 3 stride/padding/dilation");
  }
  Conv3dGeometry g;
  g.groups = p.has_attr(node, "groups") ? p.int_attr(node, "groups") : 1;
  g.batch = x[0], g.cin = x[1], g.cout = w[0];
  for (int a = 0; a < 3; ++a) {
    g.in[a] = x[2 + a], g.kernel[a] = w[2 + a], g.out[a] = y[2 + a];
    g.stride[a] = stride[a], g.padding[a] = pad[a], g.dilation[a] = dil[a];
  }
  if (g.groups < 1 || g.cin % g.groups != 0 || g.cout % g.groups != 0 || w[1] * g.groups != g.cin ||
      y[0] != g.batch || y[1] != g.cout) {
    return Status::invalid_argument("conv3d_direct: " + node + ": channels do not match groups");
  }
  return g;
}

// ---- Tile kernel pieces ----

struct TileParams {
  const float* x;  // (N, C_in, D, H, W)
  const float* w;  // transposed weights: (C_in * KD * KH * KW, cout_pad), 0 past C_out
  float* y;        // (N, C_out, D', H', W')
  int batch, cin, cout, cout_pad;  // cout_pad = co_blocks * 8 * co_groups
  int in_d, in_h, in_w, out_d, out_h, out_w, pad_d, pad_h, pad_w;
  int row_groups, co_groups;        // block tile: 4*row_groups rows, 8*co_groups channels
  int cin_chunk;                    // input channels staged at a time (cin when all fit)
  int h_tiles, w_tiles, co_blocks;  // blocks: ((n, d, h tile, w tile), channel block fastest)
};

template <int KD, int KH, int KW>
struct TileShape {
  static constexpr int kColsIn = kTileW + KW - 1;  // staged input columns
  static constexpr int kTaps = KD * KH * KW;
  static __host__ __device__ int rows_in(const TileParams& p) {
    return kRowsThread * p.row_groups + KH - 1;
  }
  static __host__ __device__ int co_block(const TileParams& p) { return kCoThread * p.co_groups; }
  // Shared memory for a chunk of cin_chunk input channels: weights ws[c*KD + kd][kh][kw][co_block],
  // then xs[c*KD + kd][rows_in][kColsIn] (c counted in the chunk).
  static __host__ __device__ int weight_floats(const TileParams& p) {
    return p.cin_chunk * kTaps * co_block(p);
  }
  static __host__ __device__ int x_floats(const TileParams& p) {
    return p.cin_chunk * KD * rows_in(p) * kColsIn;
  }
  static size_t smem_bytes(const TileParams& p) {
    return sizeof(float) * static_cast<size_t>(weight_floats(p) + x_floats(p));
  }
};

using TaskAcc = float[kCoThread][kRowsThread][kColsThread];  // a lane's accumulators

struct TileCoord {
  int n, d, h0, w0, co0;  // sample, output plane, first row, first column, first channel
};

__host__ __device__ inline TileCoord tile_coord(const TileParams& p, int64_t block, int co_block) {
  const int cb = static_cast<int>(block % p.co_blocks);
  int64_t rest = block / p.co_blocks;
  const int wt = static_cast<int>(rest % p.w_tiles);
  rest /= p.w_tiles;
  const int ht = static_cast<int>(rest % p.h_tiles);
  rest /= p.h_tiles;
  const int d = static_cast<int>(rest % p.out_d);
  return {static_cast<int>(rest / p.out_d), d, ht * kRowsThread * p.row_groups, wt * kTileW,
          cb * co_block};
}

// wt[ctap][co] = w[co][ctap] (0 for co >= C_out), ctap = (c, kd, kh, kw): element e of wt.
__host__ __device__ inline float transposed_weight(const float* w, int cout, int cout_pad,
                                                   int ctaps, int e) {
  const int co = e % cout_pad, ctap = e / cout_pad;
  return co < cout ? w[static_cast<int64_t>(co) * ctaps + ctap] : 0.f;
}

static __global__ void transpose_weights_kernel(const float* w, float* wt, int cout, int cout_pad,
                                                int ctaps) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < ctaps * cout_pad) wt[e] = transposed_weight(w, cout, cout_pad, ctaps, e);
}

// ws[ctap][j] = wt[c0 taps + ctap][co0 + j], j < co_block, for the chunk's `channels` input
// channels from c0: 16-byte pieces, coalesced, no division in the loop (the (row, piece) position
// advances by a fixed step).
template <int KD, int KH, int KW>
__host__ __device__ void stage_weights(const TileParams& p, float* ws, TileCoord t, int c0,
                                       int channels, int tid, int nthreads) {
  using S = TileShape<KD, KH, KW>;
  const int pieces = S::co_block(p) / 4, count = channels * S::kTaps * pieces;
  const float* w = p.w + static_cast<int64_t>(c0) * S::kTaps * p.cout_pad;
  const int row_step = nthreads / pieces, piece_step = nthreads % pieces;
  int row = tid / pieces, piece = tid % pieces;
  for (int i = tid; i < count; i += nthreads) {
    *reinterpret_cast<float4*>(ws + 4 * i) = *reinterpret_cast<const float4*>(
        w + static_cast<int64_t>(row) * p.cout_pad + t.co0 + 4 * piece);
    row += row_step, piece += piece_step;
    if (piece >= pieces) piece -= pieces, ++row;
  }
}

// xs[c, kd][r][k] = x[n, c0 + c, d + kd - pd, h0 + r - ph, w0 + k - pw] (0 outside x), c <
// channels. A warp copies one staged row at a time, lanes along the columns (coalesced).
template <int KD, int KH, int KW>
__host__ __device__ void stage_input(const TileParams& p, float* xs, TileCoord t, int c0,
                                     int channels, int warp, int lane, int nwarps) {
  using S = TileShape<KD, KH, KW>;
  const int rows_in = S::rows_in(p), rows = channels * KD * rows_in;
  for (int r = warp; r < rows; r += nwarps) {
    const int row = r % rows_in, plane = r / rows_in, c = c0 + plane / KD, kd = plane % KD;
    const int gd = t.d + kd - p.pad_d, gh = t.h0 + row - p.pad_h;
    const bool row_in = gd >= 0 && gd < p.in_d && gh >= 0 && gh < p.in_h;
    const float* src =
        row_in ? p.x + ((static_cast<int64_t>(t.n) * p.cin + c) * p.in_d + gd) * p.in_h * p.in_w +
                     static_cast<int64_t>(gh) * p.in_w
               : p.x;
    float* dst = xs + r * S::kColsIn;
    for (int k = lane; k < S::kColsIn; k += kWarp) {
      const int gw = t.w0 + k - p.pad_w;
      dst[k] = row_in && gw >= 0 && gw < p.in_w ? src[gw] : 0.f;
    }
  }
}

__host__ __device__ __forceinline__ void zero_task(TaskAcc& acc) {
  KB_UNROLL
  for (int j = 0; j < kCoThread; ++j) KB_UNROLL
  for (int i = 0; i < kRowsThread; ++i) KB_UNROLL
  for (int q = 0; q < kColsThread; ++q) acc[j][i][q] = 0.f;
}

// acc[j][i][q] += sum over the staged chunk's `channels` input channels and the taps of
// w[co0 + 8 cg + j] * x at row 4 rg + i, column lane + 32 q (channels in order: chunks after one
// another sum in the unchunked order).
template <int KD, int KH, int KW>
__host__ __device__ __forceinline__ void compute_task(const TileParams& p, const float* ws,
                                                      const float* xs, int cg, int rg, int lane,
                                                      int channels, TaskAcc& acc) {
  using S = TileShape<KD, KH, KW>;
  constexpr int kWindow = kRowsThread + KH - 1;  // input rows under a task's 4 output rows
  const int rows_in = S::rows_in(p), cob = S::co_block(p);
  const float* xp = xs + rg * kRowsThread * S::kColsIn + lane;
  const float* wp = ws + cg * kCoThread;
  KB_UNROLL_BY(1)
  for (int plane = 0; plane < channels * KD; ++plane) {
    KB_UNROLL_BY(1)
    for (int kw = 0; kw < KW; ++kw) {
      float xv[kColsThread][kWindow];
      KB_UNROLL
      for (int q = 0; q < kColsThread; ++q) KB_UNROLL
      for (int i = 0; i < kWindow; ++i) xv[q][i] = xp[i * S::kColsIn + kw + kWarp * q];
      KB_UNROLL
      for (int kh = 0; kh < KH; ++kh) {
        const float* wt = wp + (kh * KW + kw) * cob;
        const float4 lo = *reinterpret_cast<const float4*>(wt);
        const float4 hi = *reinterpret_cast<const float4*>(wt + 4);
        const float wv[kCoThread] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        KB_UNROLL
        for (int j = 0; j < kCoThread; ++j) KB_UNROLL
        for (int i = 0; i < kRowsThread; ++i) KB_UNROLL
        for (int q = 0; q < kColsThread; ++q)
          acc[j][i][q] = fmaf(wv[j], xv[q][i + kh], acc[j][i][q]);
      }
    }
    xp += rows_in * S::kColsIn;
    wp += KH * KW * cob;
  }
}

// y at the task's valid (channel, row, column) = epilogue.channel(co)(acc); one coalesced row
// piece per store instruction.
template <class Epilogue>
__host__ __device__ __forceinline__ void store_task(const TileParams& p, const Epilogue& epilogue,
                                                    TileCoord t, int cg, int rg, int lane,
                                                    const TaskAcc& acc) {
  const int h_first = t.h0 + rg * kRowsThread;
  KB_UNROLL
  for (int j = 0; j < kCoThread; ++j) {
    const int co = t.co0 + cg * kCoThread + j;
    if (co >= p.cout) break;
    const auto f = epilogue.channel(co);
    float* plane =
        p.y + ((static_cast<int64_t>(t.n) * p.cout + co) * p.out_d + t.d) * p.out_h * p.out_w;
    KB_UNROLL
    for (int i = 0; i < kRowsThread; ++i) {
      if (h_first + i >= p.out_h) break;
      KB_UNROLL
      for (int q = 0; q < kColsThread; ++q) {
        const int col = t.w0 + lane + kWarp * q;
        if (col < p.out_w) {
          float* dst = plane + static_cast<int64_t>(h_first + i) * p.out_w + col;
#ifdef __CUDA_ARCH__
          __stcs(dst, f(acc[j][i][q]));  // streaming: keep L2 for the input halo
#else
          *dst = f(acc[j][i][q]);
#endif
        }
      }
    }
  }
}

__device__ __forceinline__ float* dynamic_smem() {
  extern __shared__ float4 kb_conv3d_direct_smem[];
  return reinterpret_cast<float*>(kb_conv3d_direct_smem);
}

template <int KD, int KH, int KW, class Epilogue>
__global__ void __launch_bounds__(kThreads, 2) conv3d_tile_kernel(TileParams p, Epilogue epilogue) {
  using S = TileShape<KD, KH, KW>;
  float* ws = dynamic_smem();
  float* xs = ws + S::weight_floats(p);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const TileCoord t = tile_coord(p, blockIdx.x, S::co_block(p));
  if (p.cin_chunk >= p.cin) {  // every input channel staged once; a warp may run several tasks
    stage_weights<KD, KH, KW>(p, ws, t, 0, p.cin, threadIdx.x, kThreads);
    stage_input<KD, KH, KW>(p, xs, t, 0, p.cin, warp, lane, kWarps);
    __syncthreads();
    for (int task = warp; task < p.co_groups * p.row_groups; task += kWarps) {
      const int cg = task % p.co_groups, rg = task / p.co_groups;
      if (t.co0 + cg * kCoThread >= p.cout || t.h0 + rg * kRowsThread >= p.out_h) continue;
      TaskAcc acc;
      zero_task(acc);
      compute_task<KD, KH, KW>(p, ws, xs, cg, rg, lane, p.cin, acc);
      store_task(p, epilogue, t, cg, rg, lane, acc);
    }
    return;
  }
  // Chunks of cin_chunk input channels; make_tile_params gives each warp at most one task, whose
  // accumulators carry across the chunks.
  const int cg = warp % p.co_groups, rg = warp / p.co_groups;
  const bool live = warp < p.co_groups * p.row_groups && t.co0 + cg * kCoThread < p.cout &&
                    t.h0 + rg * kRowsThread < p.out_h;
  TaskAcc acc;
  zero_task(acc);
  for (int c0 = 0; c0 < p.cin; c0 += p.cin_chunk) {
    const int channels = min(p.cin_chunk, p.cin - c0);
    if (c0 > 0) __syncthreads();  // every warp is done with the previous chunk
    stage_weights<KD, KH, KW>(p, ws, t, c0, channels, threadIdx.x, kThreads);
    stage_input<KD, KH, KW>(p, xs, t, c0, channels, warp, lane, kWarps);
    __syncthreads();
    if (live) compute_task<KD, KH, KW>(p, ws, xs, cg, rg, lane, channels, acc);
  }
  if (live) store_task(p, epilogue, t, cg, rg, lane, acc);
}

// ---- Generic kernel: any stride, padding, dilation, groups and kernel ----

struct GenericParams {
  const float* x;
  const float* w;
  float* y;
  Conv3dGeometry g;
};

// Output element e (NCDHW order) of the convolution, before the epilogue.
__host__ __device__ inline float conv3d_one(const GenericParams& p, int64_t e, int64_t* channel) {
  const Conv3dGeometry& g = p.g;
  int64_t r = e;
  const int64_t ow = r % g.out[2];
  r /= g.out[2];
  const int64_t oh = r % g.out[1];
  r /= g.out[1];
  const int64_t od = r % g.out[0];
  r /= g.out[0];
  const int64_t co = r % g.cout, n = r / g.cout;
  const int64_t cin_g = g.cin / g.groups, cout_g = g.cout / g.groups;
  float acc = 0.f;
  for (int64_t cl = 0; cl < cin_g; ++cl) {
    const int64_t c = co / cout_g * cin_g + cl;
    const float* xc = p.x + (n * g.cin + c) * g.in[0] * g.in[1] * g.in[2];
    const float* wc = p.w + (co * cin_g + cl) * g.kernel[0] * g.kernel[1] * g.kernel[2];
    for (int64_t a = 0; a < g.kernel[0]; ++a) {
      const int64_t id = od * g.stride[0] - g.padding[0] + a * g.dilation[0];
      if (id < 0 || id >= g.in[0]) continue;
      for (int64_t b = 0; b < g.kernel[1]; ++b) {
        const int64_t ih = oh * g.stride[1] - g.padding[1] + b * g.dilation[1];
        if (ih < 0 || ih >= g.in[1]) continue;
        for (int64_t k = 0; k < g.kernel[2]; ++k) {
          const int64_t iw = ow * g.stride[2] - g.padding[2] + k * g.dilation[2];
          if (iw < 0 || iw >= g.in[2]) continue;
          acc = fmaf(wc[(a * g.kernel[1] + b) * g.kernel[2] + k],
                     xc[(id * g.in[1] + ih) * g.in[2] + iw], acc);
        }
      }
    }
  }
  *channel = co;
  return acc;
}

template <class Epilogue>
__global__ void conv3d_generic_kernel(GenericParams p, Epilogue epilogue) {
  const Conv3dGeometry& g = p.g;
  const int64_t total = g.batch * g.cout * g.out[0] * g.out[1] * g.out[2];
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    int64_t co = 0;
    const float acc = conv3d_one(p, e, &co);
    p.y[e] = epilogue.channel(static_cast<int>(co))(acc);
  }
}

// ---- Narrow kernel (small layers) ----
//
// One thread per output like the generic kernel, for the geometries the tile takes (stride 1,
// dilation 1, kernel KD x KH x KW fixed): the output index decodes in 32-bit, the in-range taps
// of each axis are clamped once per output instead of tested per tap, and full rows of KW taps
// are unrolled. For layers whose tile would be mostly padding (64 columns for a W' of 5, 8
// channels for a C_out of 1) or whose work is too small to fill the machine.
struct NarrowParams {
  const float* x;
  const float* w;
  float* y;
  int batch, cin, cout, in_d, in_h, in_w, out_d, out_h, out_w, pad_d, pad_h, pad_w;
};

// The narrow and channel-group kernels' parameters for g (which fits_tile accepted).
inline NarrowParams narrow_params(const Conv3dGeometry& g, const float* x, const float* w,
                                  float* y) {
  NarrowParams p = {};
  p.x = x, p.w = w, p.y = y;
  set_sizes(g, p);
  return p;
}

template <int KD, int KH, int KW, class Epilogue>
__global__ void __launch_bounds__(kThreads, 4)
    conv3d_narrow_kernel(NarrowParams p, Epilogue epilogue) {
  const int64_t in_vol = int64_t{p.in_d} * p.in_h * p.in_w;
  const int64_t total = int64_t{p.batch} * p.cout * p.out_d * p.out_h * p.out_w;
  for (int64_t e = blockIdx.x * int64_t{kThreads} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    int ow, oh, od, co;
    int64_t n;
    if (total <= 0x7fffffff) {  // 32-bit divisions
      unsigned r = static_cast<unsigned>(e);
      ow = static_cast<int>(r % p.out_w), r /= p.out_w;
      oh = static_cast<int>(r % p.out_h), r /= p.out_h;
      od = static_cast<int>(r % p.out_d), r /= p.out_d;
      co = static_cast<int>(r % p.cout), n = r / p.cout;
    } else {
      int64_t r = e;
      ow = static_cast<int>(r % p.out_w), r /= p.out_w;
      oh = static_cast<int>(r % p.out_h), r /= p.out_h;
      od = static_cast<int>(r % p.out_d), r /= p.out_d;
      co = static_cast<int>(r % p.cout), n = r / p.cout;
    }
    const int d0 = od - p.pad_d, h0 = oh - p.pad_h, w0 = ow - p.pad_w;
    const int a_lo = max(0, -d0), a_hi = min(KD, p.in_d - d0);
    const int b_lo = max(0, -h0), b_hi = min(KH, p.in_h - h0);
    const int k_lo = max(0, -w0), k_hi = min(KW, p.in_w - w0);
    const bool full_row = k_lo == 0 && k_hi == KW;
    const bool full_box = full_row && a_lo == 0 && a_hi == KD && b_lo == 0 && b_hi == KH;
    const float* xc = p.x + n * p.cin * in_vol + (int64_t{d0} * p.in_h + h0) * p.in_w + w0;
    const float* wc = p.w + int64_t{co} * p.cin * (KD * KH * KW);
    float acc = 0.0f;  // the sum of per-row sums: rows are independent chains of KW FMAs
    if (full_box) {
      // Every tap inside: the same sums in the same order, unrolled, so that a channel's loads
      // are all in flight at once (the loops below wait for each row's loads in turn, a memory
      // latency per row: most of a tiny layer's time).
      for (int c = 0; c < p.cin; ++c, xc += in_vol, wc += KD * KH * KW) {
#pragma unroll
        for (int a = 0; a < KD; ++a) {
#pragma unroll
          for (int b = 0; b < KH; ++b) {
            const float* xr = xc + (a * p.in_h + b) * p.in_w;
            const float* wr = wc + (a * KH + b) * KW;
            float row = 0.0f;
#pragma unroll
            for (int k = 0; k < KW; ++k) row = fmaf(__ldg(wr + k), __ldg(xr + k), row);
            acc += row;
          }
        }
      }
      p.y[e] = epilogue.channel(co)(acc);
      continue;
    }
    for (int c = 0; c < p.cin; ++c, xc += in_vol, wc += KD * KH * KW) {
      for (int a = a_lo; a < a_hi; ++a) {
        for (int b = b_lo; b < b_hi; ++b) {
          const float* xr = xc + (a * p.in_h + b) * p.in_w;
          const float* wr = wc + (a * KH + b) * KW;
          float row = 0.0f;
          if (full_row) {
#pragma unroll
            for (int k = 0; k < KW; ++k) row = fmaf(__ldg(wr + k), __ldg(xr + k), row);
          } else {
            for (int k = k_lo; k < k_hi; ++k) row = fmaf(__ldg(wr + k), __ldg(xr + k), row);
          }
          acc += row;
        }
      }
    }
    p.y[e] = epilogue.channel(co)(acc);
  }
}

// ---- Channel-group kernel (narrow output rows, few input channels) ----
//
// One thread per output position (n, d', h', w') and a group of kGroupCo output channels, their
// fp32 accumulators in registers: each input value loaded serves 8 channels (the narrow kernel
// loads x and w per multiply-add and is load-bound), for the tile's geometries whose output rows
// are too narrow for the tiles' 64 columns (L1_054 at W' 11: the 3xTF32 tile 17% busy) and the
// narrow kernel's layers of 4 or more channels (conv3d_group_is_faster). A block's channel group
// is blockIdx.y; it stages the group's weights at its start, ws[c][tap][j] = w[8 group + j][c][tap]
// (tap = (a KH + b) KW + k, 0 past C_out), so that a tap's 8 weights are two broadcast LDS.128.
// Positions run over blockIdx.x (grid-stride) with w' fastest: a warp's loads of a tap and its
// stores of a channel are consecutive addresses. Taps are clamped per axis once per position as
// in the narrow kernel, and each channel's sum runs in its order (c, then a, b: per-row chains of
// KW FMAs from 0, added into the accumulator): the same fp32 result as the narrow kernel.
// The pieces (group_position, group_weight, group_sums, store_group) are __host__ __device__:
// tests/host_cuda/conv3d_group_test.cu runs them on the host.
constexpr int kGroupCo = 8;                  // channels of a thread (accumulators)
constexpr int kGroupUnrolledPlaneTaps = 16;  // planes of up to this many taps run unrolled
static_assert(kGroupCo == 8, "a tap's weights are two float4 loads");

// Dynamic shared memory of a channel group's weights: C_in x taps x kGroupCo floats.
inline size_t group_smem_bytes(const Conv3dGeometry& g) {
  return sizeof(float) *
         static_cast<size_t>(g.cin * g.kernel[0] * g.kernel[1] * g.kernel[2] * kGroupCo);
}

// Shared-memory weight e = (c taps + tap) kGroupCo + j of channel group `group`: w[8 group +
// j][c][tap], 0 for channels past C_out (their accumulators are never stored). ctaps = C_in taps.
__host__ __device__ inline float group_weight(const float* w, int cout, int ctaps, int group,
                                              int e) {
  const int co = group * kGroupCo + e % kGroupCo;
  return co < cout ? w[int64_t{co} * ctaps + e / kGroupCo] : 0.f;
}

struct GroupPosition {
  int64_t n;
  int od, oh, ow;
};

// Output position e of (N, D', H', W') (w' fastest); 32-bit divisions where every position fits.
__host__ __device__ __forceinline__ GroupPosition group_position(const NarrowParams& p, int64_t e,
                                                                 bool index32) {
  GroupPosition q;
  if (index32) {
    unsigned r = static_cast<unsigned>(e);
    q.ow = static_cast<int>(r % p.out_w), r /= p.out_w;
    q.oh = static_cast<int>(r % p.out_h), r /= p.out_h;
    q.od = static_cast<int>(r % p.out_d), q.n = r / p.out_d;
  } else {
    int64_t r = e;
    q.ow = static_cast<int>(r % p.out_w), r /= p.out_w;
    q.oh = static_cast<int>(r % p.out_h), r /= p.out_h;
    q.od = static_cast<int>(r % p.out_d), q.n = r / p.out_d;
  }
  return q;
}

__host__ __device__ __forceinline__ float load_input(const float* at) {
#ifdef __CUDA_ARCH__
  return __ldg(at);  // read-only path: x is reread by the neighbouring positions' taps
#else
  return *at;
#endif
}

// acc[j] += the sum over k of ws[tap(k)][j] * xch[row + k], k in [k_lo, k_hi) (all KW taps when
// kFullRow, unrolled): a chain of FMAs per channel from 0, as the narrow kernel's row sum. wr:
// the row's first tap's 8 weights (16-byte aligned); xch: the input channel's first element, row:
// the index in it at k = 0 (a valid element's only from k_lo on: no pointer is formed outside x).
template <int KW, bool kFullRow>
__host__ __device__ __forceinline__ void group_row(const float* xch, int row, const float* wr,
                                                   int k_lo, int k_hi, float (&acc)[kGroupCo]) {
  float sum[kGroupCo];
  KB_UNROLL
  for (int j = 0; j < kGroupCo; ++j) sum[j] = 0.0f;
  const auto tap = [&](int k) {
    const float v = load_input(xch + (row + k));
    const float4 lo = *reinterpret_cast<const float4*>(wr + k * kGroupCo);
    const float4 hi = *reinterpret_cast<const float4*>(wr + k * kGroupCo + 4);
    sum[0] = fmaf(lo.x, v, sum[0]), sum[1] = fmaf(lo.y, v, sum[1]);
    sum[2] = fmaf(lo.z, v, sum[2]), sum[3] = fmaf(lo.w, v, sum[3]);
    sum[4] = fmaf(hi.x, v, sum[4]), sum[5] = fmaf(hi.y, v, sum[5]);
    sum[6] = fmaf(hi.z, v, sum[6]), sum[7] = fmaf(hi.w, v, sum[7]);
  };
  if constexpr (kFullRow) {
    KB_UNROLL
    for (int k = 0; k < KW; ++k) tap(k);
  } else {
    for (int k = k_lo; k < k_hi; ++k) tap(k);
  }
  KB_UNROLL
  for (int j = 0; j < kGroupCo; ++j) acc[j] += sum[j];
}

// acc[j] = the convolution of position q for channel 8 group + j (ws: the group's weights,
// [c][tap][j]), over the taps inside x.
template <int KD, int KH, int KW>
__host__ __device__ __forceinline__ void group_sums(const NarrowParams& p, const float* ws,
                                                    GroupPosition q, float (&acc)[kGroupCo]) {
  constexpr int kTaps = KD * KH * KW;
  const int64_t in_vol = int64_t{p.in_d} * p.in_h * p.in_w;
  const int d0 = q.od - p.pad_d, h0 = q.oh - p.pad_h, w0 = q.ow - p.pad_w;
  const int a_lo = d0 < 0 ? -d0 : 0, a_hi = p.in_d - d0 < KD ? p.in_d - d0 : KD;
  const int b_lo = h0 < 0 ? -h0 : 0, b_hi = p.in_h - h0 < KH ? p.in_h - h0 : KH;
  const int k_lo = w0 < 0 ? -w0 : 0, k_hi = p.in_w - w0 < KW ? p.in_w - w0 : KW;
  const bool full_row = k_lo == 0 && k_hi == KW;
  const bool full_box = full_row && a_lo == 0 && a_hi == KD && b_lo == 0 && b_hi == KH;
  // Tap (a, b, k) of channel c: xch[corner + (a in_h + b) in_w + k], xch = x + (n C_in + c)
  // in_vol (int in a channel, the padding's negative indices included: conv3d_group_fits).
  const float* xch = p.x + q.n * p.cin * in_vol;
  const int corner = (d0 * p.in_h + h0) * p.in_w + w0;
  const float* wc = ws;
  KB_UNROLL
  for (int j = 0; j < kGroupCo; ++j) acc[j] = 0.0f;
  if (full_box) {
    // Every tap inside: a plane's rows unrolled where they are few, so that the plane's loads are
    // in flight at once (more, or the whole channel's, spill at the 64 registers of 4 blocks per
    // SM: L1_054's 27 taps and L1_060's 35-tap planes did, 16-60 bytes), else each row's.
    constexpr int kRowsUnrolled = KH * KW <= kGroupUnrolledPlaneTaps ? KH : 1;
    for (int c = 0; c < p.cin; ++c, xch += in_vol, wc += kTaps * kGroupCo) {
      KB_UNROLL_BY(1)
      for (int a = 0; a < KD; ++a) {
        KB_UNROLL_BY(kRowsUnrolled)
        for (int b = 0; b < KH; ++b) {
          group_row<KW, true>(xch, corner + (a * p.in_h + b) * p.in_w,
                              wc + (a * KH + b) * KW * kGroupCo, 0, KW, acc);
        }
      }
    }
    return;
  }
  for (int c = 0; c < p.cin; ++c, xch += in_vol, wc += kTaps * kGroupCo) {
    for (int a = a_lo; a < a_hi; ++a) {
      for (int b = b_lo; b < b_hi; ++b) {
        const int row = corner + (a * p.in_h + b) * p.in_w;
        const float* wr = wc + (a * KH + b) * KW * kGroupCo;
        if (full_row) {
          group_row<KW, true>(xch, row, wr, 0, KW, acc);
        } else {
          group_row<KW, false>(xch, row, wr, k_lo, k_hi, acc);
        }
      }
    }
  }
}

// y[n, 8 group + j, d', h', w'] = epilogue.channel(8 group + j)(acc[j]) for the group's channels
// below C_out: per channel, a warp's consecutive positions are consecutive addresses.
template <class Epilogue>
__host__ __device__ __forceinline__ void store_group(const NarrowParams& p,
                                                     const Epilogue& epilogue, int group,
                                                     GroupPosition q,
                                                     const float (&acc)[kGroupCo]) {
  const int64_t plane = int64_t{p.out_d} * p.out_h * p.out_w;
  const int co0 = group * kGroupCo;
  int64_t at = (q.n * p.cout + co0) * plane + (int64_t{q.od} * p.out_h + q.oh) * p.out_w + q.ow;
  KB_UNROLL
  for (int j = 0; j < kGroupCo; ++j, at += plane) {
    if (co0 + j >= p.cout) break;
    p.y[at] = epilogue.channel(co0 + j)(acc[j]);
  }
}

// Grid: (position blocks, channel groups); dynamic shared memory group_smem_bytes.
template <int KD, int KH, int KW, class Epilogue>
__global__ void __launch_bounds__(kThreads, 4)
    conv3d_group_kernel(NarrowParams p, Epilogue epilogue) {
  constexpr int kTaps = KD * KH * KW;
  float* ws = dynamic_smem();
  const int group = blockIdx.y, ctaps = p.cin * kTaps;
  for (int e = threadIdx.x; e < ctaps * kGroupCo; e += kThreads) {
    ws[e] = group_weight(p.w, p.cout, ctaps, group, e);
  }
  __syncthreads();
  const int64_t positions = int64_t{p.batch} * p.out_d * p.out_h * p.out_w;
  const bool index32 = positions <= 0x7fffffff;
  for (int64_t e = blockIdx.x * int64_t{kThreads} + threadIdx.x; e < positions;
       e += int64_t{gridDim.x} * kThreads) {
    const GroupPosition q = group_position(p, e, index32);
    float acc[kGroupCo];
    group_sums<KD, KH, KW>(p, ws, q, acc);
    store_group(p, epilogue, group, q, acc);
  }
}

// ---- Epilogues ----

// epilogue.channel(co) returns the per-element function of channel co (loads its constants once).
struct NoEpilogue {
  struct Channel {
    __host__ __device__ float operator()(float v) const { return v; }
  };
  __host__ __device__ Channel channel(int) const { return {}; }
};

// ---- Plan ----

// The tile shape for geometry g (which fits_tile accepted): the (row_groups, co_groups) with the
// fewest issued instructions in a simple model (FFMA of the busiest warp + staging), so that the
// warps stay busy, the halo is amortized and two blocks fit on a multiprocessor; cin_chunk the
// most input channels whose planes and weights fit beside each other (all of them where they fit,
// else chunks, and then at most one task per warp). Tensors unset.
template <int KD, int KH, int KW>
TileParams make_tile_params(const Conv3dGeometry& g) {
  using S = TileShape<KD, KH, KW>;
  TileParams p = {};
  set_sizes(g, p);
  p.w_tiles = (p.out_w + kTileW - 1) / kTileW;
  const int row_groups = (p.out_h + kRowsThread - 1) / kRowsThread;
  const int co_groups = (p.cout + kCoThread - 1) / kCoThread;
  const double task = 64.0 * p.cin * S::kTaps;  // FFMA per thread
  double best = -1;
  TileParams out = p;
  for (int rg = 1; rg <= std::min(kMaxRowGroups, row_groups); ++rg) {
    for (int cg = 1; cg <= std::min(kMaxCoGroups, co_groups); ++cg) {
      p.row_groups = rg, p.co_groups = cg;
      p.cin_chunk = 1;
      const int64_t per_channel = S::weight_floats(p) + S::x_floats(p);
      p.cin_chunk = static_cast<int>(std::min<int64_t>(
          p.cin, static_cast<int64_t>(kSmemBudget / sizeof(float)) / per_channel));
      if (p.cin_chunk < 1 || (p.cin_chunk < p.cin && rg * cg > kWarps)) continue;
      p.h_tiles = (row_groups + rg - 1) / rg;
      p.co_blocks = (co_groups + cg - 1) / cg;
      p.cout_pad = p.co_blocks * kCoThread * cg;
      const double blocks = double(p.batch) * p.out_d * p.h_tiles * p.w_tiles * p.co_blocks;
      const double chunks = (p.cin + p.cin_chunk - 1) / p.cin_chunk;
      const double stage = chunks * (2.0 * S::weight_floats(p) + 6.0 * S::x_floats(p)) / kThreads;
      const double cost = blocks * ((rg * cg + kWarps - 1) / kWarps * task + stage);
      if (best < 0 || cost < best) best = cost, out = p;
    }
  }
  return out;
}

// Whether the tile and narrow kernels compute g: stride 1, dilation 1, groups 1, kernel KD x KH x
// KW, and every index fits in int (offsets are 64-bit). Any C_in: the FMA tile stages it in
// chunks where it does not fit at once.
template <int KD, int KH, int KW>
bool fits_tile(const Conv3dGeometry& g) {
  const int64_t kernel[3] = {KD, KH, KW};
  const int64_t limit = int64_t{1} << 30;
  for (int a = 0; a < 3; ++a) {
    if (g.stride[a] != 1 || g.dilation[a] != 1 || g.kernel[a] != kernel[a] || g.in[a] >= limit ||
        g.padding[a] >= limit || g.out[a] != g.in[a] + 2 * g.padding[a] - kernel[a] + 1 ||
        g.out[a] < 1) {
      return false;
    }
  }
  const int64_t blocks =
      g.batch * g.out[0] * ((g.out[1] + 3) / 4) * ((g.out[2] + 63) / 64) * ((g.cout + 7) / 8);
  return g.groups == 1 && g.cin * KD * KH * KW * (g.cout + 64) < limit && g.cout < limit &&
         g.batch < limit && blocks < limit;
}

// Layers the narrow kernel runs (of those fits_tile accepts): one output channel, few
// multiply-adds, or output rows of fewer than 8 columns (both tiles' 64 columns then more than 8x
// padding; the narrow kernel costs ~4-9x the tile per multiply-add). Measured on the H200
// (session 9, narrow against tile at 30 sweep shapes of L1_054 / L1_060 / L2_007): the narrow
// kernel won up to ~33 M multiply-adds (L2_007 at N 16, C_in 13, C_out 5, W' 5: 35 against 128
// us; at N 8, C_in 1, C_out 18: 15 against 44 us) and lost 4-9x at every shape of >= 14% of the
// preset's FLOPs. H100, seed-909 sweep (session 31): L1_060 at N 14, C_in 1, C_out 60, 31 x 43 x
// 7 (W' 1, 100 M multiply-adds) ran 0.250 ms on the 3xTF32 tile against the reference's 0.073;
// on the narrow kernel 0.056 (H200, 0.255 before).
inline bool conv3d_narrow_is_faster(const Conv3dGeometry& g) {
  const int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t macs = g.batch * g.cout * g.out[0] * g.out[1] * g.out[2] * g.cin * taps;
  return g.cout == 1 || macs <= int64_t{32} << 20 || 8 * g.out[2] < kTileW;
}

// The channel-group kernel's plan. A model, not measured yet (to A/B on the GPU): below
// kGroupMinCout channels most of a thread's 8 accumulators would be idle (the narrow kernel
// keeps those layers); below kGroupMaxOutW output columns the tiles' 64-column rows are over
// half padding (L1_054 at N 10, C_in 2, C_out 54, 45 x 13 x 11: the 3xTF32 tile 81 us against
// cuDNN's 32). The weights must fit the default 48 KB of dynamic shared memory (no opt-in
// attribute), less a reserve.
constexpr int64_t kGroupMinCout = 4;
constexpr int64_t kGroupMaxOutW = 32;  // W' below which the group kernel replaces the tiles
constexpr size_t kGroupSmemLimit = 48 * 1024 - 1024;
constexpr int64_t kGroupMaxGroups = 65535;          // gridDim.y
constexpr int64_t kGroupMaxPositionBlocks = 65535;  // gridDim.x; the grid-stride loop runs the rest

// Whether the channel-group kernel takes g (which fits_tile accepted): 4 or more channels, the
// group's weights in default shared memory, the groups in gridDim.y, and the padded input channel
// in int (group_sums's in-channel indices, the padding's negative ones included).
inline bool conv3d_group_fits(const Conv3dGeometry& g) {
  int64_t padded = 1;
  for (int a = 0; a < 3; ++a) padded *= g.in[a] + 2 * g.padding[a];
  return g.cout >= kGroupMinCout && group_smem_bytes(g) <= kGroupSmemLimit &&
         (g.cout + kGroupCo - 1) / kGroupCo <= kGroupMaxGroups && padded <= int64_t{0x7fffffff};
}

// Whether the channel-group kernel runs g (which fits_tile accepted) ahead of the other kernels:
// where it fits, for the narrow kernel's layers and for output rows narrower than kGroupMaxOutW,
// while its threads (a position and a group each) number at least kGroupMinThreads: below, the
// narrow kernel's thread an output keeps 8x as many threads to fill the machine (also a model).
// H100, session 40 (`kb bench --dims`, gated, custom ms, main's pack then this one): L1_054 N 10,
// C_in 2, C_out 54, 47 x 15 x 13 0.080 -> 0.027 (reference 0.032; the 3xTF32 tile's 64 columns
// for W' 11), N 10, C_in 3, C_out 5, 17 x 53 x 25 0.060 -> 0.020; L2_007 N 59, C_in 3, C_out 31,
// 19 x 43 x 17 0.482 -> 0.186; but L1_060 at N 1, C_in 9, C_out 31, 3 x 23 x 33 (9,108 threads),
// which the FMA tile's too-few-tasks fallback had sent to it, 0.045 -> 0.060: hence the bound.
constexpr int64_t kGroupMinThreads = 32768;
inline bool conv3d_group_fills(const Conv3dGeometry& g) {
  const int64_t threads =
      g.batch * g.out[0] * g.out[1] * g.out[2] * ((g.cout + kGroupCo - 1) / kGroupCo);
  return conv3d_group_fits(g) && threads >= kGroupMinThreads;
}
inline bool conv3d_group_is_faster(const Conv3dGeometry& g) {
  return conv3d_group_fills(g) && (conv3d_narrow_is_faster(g) || g.out[2] < kGroupMaxOutW);
}

// The convolution of one graph node: where the geometry fits the tile, the channel-group, narrow,
// 3xTF32 or FMA tile kernel (setup's plan), else the generic one. setup() once (it may set a
// function attribute), run() per call on the caller's stream.
template <int KD, int KH, int KW, class Epilogue>
class Conv3d {
 public:
  Conv3d() = default;
  Conv3d(const Conv3d&) = delete;
  Conv3d& operator=(const Conv3d&) = delete;
  ~Conv3d() { KB_CUDA_WARN(cudaFree(wt_)); }

  Status setup(const ProblemInstance& problem, const std::string& node) {
    Result<Conv3dGeometry> g = read_conv3d(problem, node);
    if (!g.is_ok()) return g.status();
    geometry_ = g.value();
    // Narrow output rows and small layers of 4 or more channels run the channel-group kernel
    // (conv3d_group_is_faster); the other small layers and one output channel (7 of the tile's 8
    // channels per task idle) the narrow kernel (conv3d_narrow_is_faster).
    const bool fits = fits_tile<KD, KH, KW>(geometry_);
    grouped_ = fits && conv3d_group_is_faster(geometry_);
    narrow_ = fits && !grouped_ && conv3d_narrow_is_faster(geometry_);
    tiled_ = fits && !grouped_ && !narrow_;
    if (!tiled_) return Status::ok();
    Result<bool> tensor_cores = setup_tf32x3();
    if (!tensor_cores.is_ok()) return tensor_cores.status();
    tf32x3_ = tensor_cores.value();
    if (tf32x3_) return Status::ok();
    tile_ = make_tile_params<KD, KH, KW>(geometry_);
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    if (tile_tasks(tile_) < int64_t{kMinTileTasksPerSm} * sms) {
      // Too few warps: the channel-group kernel where it takes g with threads enough, else the
      // narrow one.
      grouped_ = conv3d_group_fills(geometry_);
      narrow_ = !grouped_;
      tiled_ = false;
      return Status::ok();
    }
    smem_bytes_ = TileShape<KD, KH, KW>::smem_bytes(tile_);
    blocks_ = int64_t{tile_.batch} * tile_.out_d * tile_.h_tiles * tile_.w_tiles * tile_.co_blocks;
    ctaps_ = tile_.cin * TileShape<KD, KH, KW>::kTaps;
    KB_CUDA_TRY(cudaMalloc(&wt_, sizeof(float) * static_cast<size_t>(ctaps_) * tile_.cout_pad));
    KB_CUDA_TRY(cudaFuncSetAttribute(conv3d_tile_kernel<KD, KH, KW, Epilogue>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(smem_bytes_)));
    return Status::ok();
  }

  // x: (N, C_in, D, H, W), w: (C_out, C_in/groups, KD, KH, KW) -> y: (N, C_out, D', H', W').
  Status run(const float* x, const float* w, float* y, const Epilogue& epilogue,
             cudaStream_t stream) const {
    if (grouped_) {
      const Conv3dGeometry& g = geometry_;
      const int64_t positions = g.batch * g.out[0] * g.out[1] * g.out[2];
      const int64_t blocks =
          std::min<int64_t>((positions + kThreads - 1) / kThreads, kGroupMaxPositionBlocks);
      const dim3 grid(static_cast<unsigned>(std::max<int64_t>(blocks, 1)),
                      static_cast<unsigned>((g.cout + kGroupCo - 1) / kGroupCo));
      conv3d_group_kernel<KD, KH, KW, Epilogue>
          <<<grid, kThreads, group_smem_bytes(g), stream>>>(narrow_params(g, x, w, y), epilogue);
    } else if (narrow_) {
      const Conv3dGeometry& g = geometry_;
      const NarrowParams p = narrow_params(g, x, w, y);
      const int64_t total = g.batch * g.cout * g.out[0] * g.out[1] * g.out[2];
      const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, int64_t{1} << 20);
      conv3d_narrow_kernel<KD, KH, KW, Epilogue>
          <<<static_cast<unsigned>(std::max<int64_t>(blocks, 1)), kThreads, 0, stream>>>(p,
                                                                                         epilogue);
    } else if (tf32x3_) {
      tf32::Params p = tf32_;
      p.x = x, p.w = w, p.y = y;
      const tf32::Launch& l = tf32_launch_;
      if (tf32_narrow_block_) {
        tf32::conv3d_tf32x3_kernel<KD, KH, KW, kTf32NarrowChannels, Epilogue>
            <<<l.grid, tf32::kThreads, l.smem, stream>>>(p, epilogue);
      } else {
        tf32::conv3d_tf32x3_kernel<KD, KH, KW, kTf32Channels, Epilogue>
            <<<l.grid, tf32::kThreads, l.smem, stream>>>(p, epilogue);
      }
    } else if (tiled_) {
      const int wt_size = ctaps_ * tile_.cout_pad;
      transpose_weights_kernel<<<(wt_size + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
          w, wt_, tile_.cout, tile_.cout_pad, ctaps_);
      KB_CUDA_TRY(cudaGetLastError());
      TileParams p = tile_;
      p.x = x, p.w = wt_, p.y = y;
      conv3d_tile_kernel<KD, KH, KW, Epilogue>
          <<<static_cast<unsigned>(blocks_), kThreads, smem_bytes_, stream>>>(p, epilogue);
    } else {
      const Conv3dGeometry& g = geometry_;
      const int64_t total = g.batch * g.cout * g.out[0] * g.out[1] * g.out[2];
      const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, int64_t{1} << 20);
      conv3d_generic_kernel<Epilogue>
          <<<static_cast<unsigned>(std::max<int64_t>(blocks, 1)), kThreads, 0, stream>>>(
              GenericParams{x, w, y, g}, epilogue);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  bool tiled() const { return tiled_; }
  bool tensor_cores() const { return tf32x3_; }
  bool grouped() const { return grouped_; }

 private:
  static constexpr int kTf32Channels = 64;        // the 3xTF32 tile's channel block
  static constexpr int kTf32NarrowChannels = 32;  // its block for 16 < C_out <= 32
  // The 3xTF32 tile (tf32x3_tile.cuh) for a geometry the FMA tile also takes, when C_out > 16
  // and its shared memory fits; channel blocks of 64 (32 for C_out <= 32), persistent blocks.
  // Measured on the H200 (docs/kernels.md): L1_054 1.24 -> 0.99 ms and L1_060 3.73 -> 2.95 ms.
  // L2_007 (C_out 32, C_in 8) ran 4.28 -> 5.12 ms in session 5 with a 64-channel block (half its
  // warps idle, one block per SM); with the 32-channel block and the tile's channel chunks (two
  // blocks per SM) 4.28 -> 3.03 ms (session 13). A 5-channel sweep shape ran at 0.79x the
  // reference on the 64-channel block: C_out 16 or fewer stay on the FMA tile.
  Result<bool> setup_tf32x3() {
    const Conv3dGeometry& g = geometry_;
    if (g.cout <= 16) return false;
    tf32::Params p = {};
    set_sizes(g, p);
    tf32::derive_params<KD, KH, KW>(p);
    tf32_narrow_block_ = g.cout <= kTf32NarrowChannels;
    KB_ASSIGN_OR_RETURN(
        const std::optional<tf32::Launch> launch,
        (tf32_narrow_block_ ? tf32::plan_launch<KD, KH, KW, kTf32NarrowChannels, Epilogue>(p)
                            : tf32::plan_launch<KD, KH, KW, kTf32Channels, Epilogue>(p)));
    if (!launch) return false;
    tf32_launch_ = *launch;
    tf32_ = p;
    return true;
  }

  // The FMA tile's tasks (warps' 8 channels x 4 rows x 64 columns) in all. Below
  // kMinTileTasksPerSm per SM the tile leaves most schedulers idle behind each task's long
  // serial FMA chain (C_in x taps x 64 per lane), and the narrow kernel's one thread per output
  // runs instead. H100 (session 31, custom ms): 72 tasks (L1_060 N 3, C_in 15, C_out 13, 5 x 19
  // x 61) narrow 0.082 against the tile's 0.259; 336 (L2_007 C_in 23) the tile 0.162 against
  // 0.173; 504 (L1_054 C_in 23) the tile 0.130 against 0.196.
  static int64_t tile_tasks(const TileParams& t) {
    return int64_t{t.batch} * t.out_d * t.h_tiles * t.w_tiles * t.co_blocks *
           std::min(t.row_groups * t.co_groups, kWarps);
  }
  static constexpr int kMinTileTasksPerSm = 2;

  Conv3dGeometry geometry_;
  bool grouped_ = false;  // conv3d_group_kernel runs (narrow_ and tiled_ are then false)
  bool narrow_ = false;   // conv3d_narrow_kernel runs (tiled_ is then false)
  bool tiled_ = false;
  bool tf32x3_ = false;  // the 3xTF32 tile runs (tiled_ is then true too)
  tf32::Params tf32_ = {};
  bool tf32_narrow_block_ = false;  // the tile runs with kTf32NarrowChannels
  tf32::Launch tf32_launch_ = {};
  TileParams tile_ = {};
  size_t smem_bytes_ = 0;
  int64_t blocks_ = 0;
  int ctaps_ = 0;        // C_in * KD * KH * KW
  float* wt_ = nullptr;  // owned: transposed weights, (ctaps_, tile_.cout_pad)
};

// The custom variant of a problem that is one Conv3d without bias or epilogue (node "conv3d",
// input "x"): L1_054 and L1_060, which differ only in their kernel extents.
template <int KD, int KH, int KW>
class PlainConv3dVariant final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv3d.weight");
    return conv_.setup(p, "conv3d");
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, args.output.data,
                     NoEpilogue{}, stream);
  }

 private:
  Conv3d<KD, KH, KW, NoEpilogue> conv_;
  size_t x_ = 0, weight_ = 0;
};

}  // namespace kb::custom::conv3d_direct

// The plane gather: a stride-1 transposed 3-D convolution with a 3 x 3 x 3 kernel (a full
// correlation: L1_070's layer) of at most 8 output channels, as an fp32 FMA tile over input
// planes staged in shared memory with the tile's row pitch.
//
//   y[n, co, o] = sum_{ci, a, b, c} x[n, ci, o + p - (a, b, c)] w[ci, co, a, b, c]  (x = 0 outside)
//
// Why: at few output channels the patch GEMM (parity_gemm3d.cuh) pads each tile's 24 channels
// (C_out 3: 8x its multiply-adds) and the generic gather (generic.cuh) reloads x from L1 for
// every tap and channel; L1_070 at N 6, 35 -> 3, 25 x 83 x 5 ran 0.44-0.60x the reference on the
// first, N 8, 41 -> 1, 41 x 5 x 9 0.57x on the second (session 32, H100).
//
// A block (kPlaneThreads) owns one sample, kCo output channels and a tile of TD output planes x
// TH rows x TW columns; its threads form `split` groups, each summing every split-th input
// channel. Per round the block stages `split` channels (one per group): each channel's TD + 2
// input planes x TH + 2 rows x TW + 2 columns (zeros outside x) and its 27 x kCo weights. With
// the staged row pitch TW + 2, output (h, w)'s tap (b, c) reads staged element (h + 2 - b) pitch
// + w + 2 - c: a constant shift, so the lanes (consecutive w, then row groups, then planes) read
// consecutive words whatever the layer's width. A thread holds kRows rows x kCo channels of one
// column: per (plane tap, column tap) it loads kRows + 2 staged values and uses each for up to 3
// row taps: per channel 27 kRows kCo FMA against 9 (kRows + 2) staged loads and 27 weight loads
// of up to 4 channels each (kCo 4: 432 FMA per 81 loads). The groups' sums are added in group
// order through shared memory at the end.
// Measured (session 34, H100, `kb bench L1_070 --dims ...` against main's paths): 1.67x faster at
// N 8, 48 -> 1, 64^3 (1.90 against 3.18 ms; the reference 0.77), 6-12% faster at 35 -> 3 and
// 24 -> 4, 10-21% slower at 41 -> 1, 41 x 5 x 9 and 48 -> 8, 32^3: not routed
// (ParityConvTranspose3d::kRoutePlaneGather, parity_gemm3d.cuh). The staging is the cost: the
// plans cut one output plane a tile, so a round stages 3.6-4.9 floats per output, each through
// three divider steps and a 4-byte load, with no overlap of staging and compute
// (docs/kernels.md, session 34, has the next steps).
// Sum order per output: its group's channels in order (taps a, c, b within each), then the
// groups in order; fp32 FMA throughout (no TF32).
//
// The steps (plane_stage, plane_accumulate, plane_park, plane_fold_store) are __host__ __device__
// functions of (block, thread): tests/host_cuda/plane_gather_test.cu runs whole grids on the host.
// Thread safety: stateless; the host functions may be called from any thread.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/cuda/int_divider.h"
#include "common/host_device.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose_gather/geometry.cuh"

namespace kb::custom::gather {

constexpr int kPlaneThreads = 256;
constexpr int kPlaneTaps = 3;  // kernel extent of every axis
constexpr int kPlaneTapCount = kPlaneTaps * kPlaneTaps * kPlaneTaps;
constexpr int kPlaneMaxSplit = 8;
constexpr int kPlaneMaxChannels = 8;  // output channels of a layer this path takes

// A layer's launch: sizes, the tile and the block and thread decodes. Passed to the kernel by
// value; built by plan_plane_gather.
struct PlaneGatherPlan {
  int batch = 0, cin = 0, cout = 0;
  int in[kSpatial] = {}, out[kSpatial] = {}, pad[kSpatial] = {};
  int co_block = 1, rows = 4;                    // kCo, kRows of the kernel instance
  int split = 1, group_threads = kPlaneThreads;  // groups and threads per group
  int tile[kSpatial] = {};                       // TD, TH (= row_groups x rows), TW output extents
  int row_groups = 1;                            // G: a tile's rows / rows
  int lanes = 0;                                 // busy threads per group: TD x G x TW
  int tiles[kSpatial] = {}, co_blocks = 1;
  int staged[kSpatial] = {};  // TD + 2, TH + 2, TW + 2 (the pitch)
  int stage_stride = 0;       // floats of one group's staged channel (a multiple of 4)
  int64_t blocks = 0;
  size_t smem_bytes = 0;
  Divider<uint32_t> pitch, staged_rows, staged_planes;

  // Floats of the staged channels (all groups); the weights follow.
  __host__ __device__ int stage_floats() const { return split * stage_stride; }
};

// The block's tile: sample n, channel block cb and the tile's first output (d0, h0, w0).
struct PlaneTile {
  int n = 0, cb = 0, o[kSpatial] = {};
};

__host__ __device__ inline PlaneTile plane_tile(const PlaneGatherPlan& p, int64_t block) {
  PlaneTile t;
  for (int a = kSpatial - 1; a >= 0; --a) {
    t.o[a] = static_cast<int>(block % p.tiles[a]) * p.tile[a];
    block /= p.tiles[a];
  }
  t.cb = static_cast<int>(block % p.co_blocks), t.n = static_cast<int>(block / p.co_blocks);
  return t;
}

// A thread's group and element: column w, row group rg and plane td of the tile.
struct PlaneLane {
  int group = 0, t = 0, w = 0, rg = 0, td = 0;
  bool busy = false;
};

__host__ __device__ inline PlaneLane plane_lane(const PlaneGatherPlan& p, int thread) {
  PlaneLane l;
  l.group = thread / p.group_threads, l.t = thread % p.group_threads;
  l.busy = l.t < p.lanes;
  l.w = l.t % p.tile[2];
  const int q = l.t / p.tile[2];
  l.rg = q % p.row_groups, l.td = q / p.row_groups;
  return l;
}

// Stages the round's channels c0 + g (group g < split) for the block's tile: thread `thread` of
// `threads` writes every threads-th staged float, then the weights [g][tap][kCo] (zeros past
// C_in and C_out).
template <int kCo>
__host__ __device__ inline void plane_stage(const float* __restrict__ x,
                                            const float* __restrict__ w, const PlaneGatherPlan& p,
                                            const PlaneTile& tile, int c0, int thread, int threads,
                                            float* smem) {
  const int pitch = p.staged[2], rows = p.staged[1], planes = p.staged[0];
  const int per_group = planes * rows * pitch;
  const int64_t in_plane = int64_t{p.in[1]} * p.in[2];
  for (int i = thread; i < p.split * per_group; i += threads) {
    const uint32_t r = p.pitch.div(static_cast<uint32_t>(i));
    const int k = i - static_cast<int>(r * p.pitch.divisor);
    const uint32_t r2 = p.staged_rows.div(r);
    const int j = static_cast<int>(r - r2 * p.staged_rows.divisor);
    const uint32_t g = p.staged_planes.div(r2);
    const int pl = static_cast<int>(r2 - g * p.staged_planes.divisor);
    const int ci = c0 + static_cast<int>(g);
    const int id = tile.o[0] + p.pad[0] - (kPlaneTaps - 1) + pl;
    const int ih = tile.o[1] + p.pad[1] - (kPlaneTaps - 1) + j;
    const int iw = tile.o[2] + p.pad[2] - (kPlaneTaps - 1) + k;
    float v = 0.f;
    if (ci < p.cin && static_cast<unsigned>(id) < static_cast<unsigned>(p.in[0]) &&
        static_cast<unsigned>(ih) < static_cast<unsigned>(p.in[1]) &&
        static_cast<unsigned>(iw) < static_cast<unsigned>(p.in[2])) {
      const int64_t channel = int64_t{tile.n} * p.cin + ci;
      v = x[(channel * p.in[0] + id) * in_plane + int64_t{ih} * p.in[2] + iw];
    }
    smem[static_cast<int>(g) * p.stage_stride + (pl * rows + j) * pitch + k] = v;
  }
  float* ws = smem + p.stage_floats();
  for (int i = thread; i < p.split * kPlaneTapCount * kCo; i += threads) {
    const int co = i % kCo, tap = (i / kCo) % kPlaneTapCount, g = i / (kCo * kPlaneTapCount);
    const int ci = c0 + g, gco = tile.cb * kCo + co;
    ws[i] =
        ci < p.cin && gco < p.cout ? w[(int64_t{ci} * p.cout + gco) * kPlaneTapCount + tap] : 0.f;
  }
}

// kCo consecutive weights from shared memory (16- or 8-byte loads on the device).
template <int kCo>
__host__ __device__ __forceinline__ void plane_weights(const float* p, float (&wv)[kCo]) {
#if defined(__CUDA_ARCH__)
  constexpr bool kVector = kCo % 4 == 0 || kCo == 2;
#else
  constexpr bool kVector = false;
#endif
  if constexpr (kVector && kCo % 4 == 0) {
    KB_UNROLL
    for (int q = 0; q < kCo / 4; ++q) {
      const float4 v = reinterpret_cast<const float4*>(p)[q];
      wv[4 * q] = v.x, wv[4 * q + 1] = v.y, wv[4 * q + 2] = v.z, wv[4 * q + 3] = v.w;
    }
  } else if constexpr (kVector) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    wv[0] = v.x, wv[1] = v.y;
  } else {
    KB_UNROLL
    for (int j = 0; j < kCo; ++j) wv[j] = p[j];
  }
}

// Adds the thread's group's staged channel into acc[co][r] (rows rg * kRows + r of its column
// and plane).
template <int kCo, int kRows>
__host__ __device__ inline void plane_accumulate(const PlaneGatherPlan& p, const PlaneLane& l,
                                                 const float* smem, float (&acc)[kCo][kRows]) {
  const int pitch = p.staged[2], plane = p.staged[1] * pitch;
  const float* xs = smem + l.group * p.stage_stride + l.td * plane + l.rg * kRows * pitch + l.w;
  const float* ws = smem + p.stage_floats() + l.group * kPlaneTapCount * kCo;
  KB_UNROLL
  for (int a = 0; a < kPlaneTaps; ++a) {
    const float* xa = xs + (kPlaneTaps - 1 - a) * plane;
    KB_UNROLL
    for (int c = 0; c < kPlaneTaps; ++c) {
      float xr[kRows + kPlaneTaps - 1];  // staged rows rg kRows + j of column w + 2 - c
      KB_UNROLL
      for (int j = 0; j < kRows + kPlaneTaps - 1; ++j) xr[j] = xa[j * pitch + kPlaneTaps - 1 - c];
      KB_UNROLL
      for (int b = 0; b < kPlaneTaps; ++b) {
        float wv[kCo];
        plane_weights<kCo>(ws + ((a * kPlaneTaps + b) * kPlaneTaps + c) * kCo, wv);
        KB_UNROLL
        for (int r = 0; r < kRows; ++r) {
          KB_UNROLL
          for (int co = 0; co < kCo; ++co)
            acc[co][r] = fmaf(xr[r + kPlaneTaps - 1 - b], wv[co], acc[co][r]);
        }
      }
    }
  }
}

// Groups past the first park their sums in shared memory ([group - 1][co][r][t]).
template <int kCo, int kRows>
__host__ __device__ inline void plane_park(const PlaneGatherPlan& p, const PlaneLane& l,
                                           const float (&acc)[kCo][kRows], float* smem) {
  if (l.group == 0 || !l.busy) return;
  float* red = smem + (l.group - 1) * kCo * kRows * p.group_threads + l.t;
  KB_UNROLL
  for (int co = 0; co < kCo; ++co) {
    KB_UNROLL
    for (int r = 0; r < kRows; ++r) red[(co * kRows + r) * p.group_threads] = acc[co][r];
  }
}

// The first group adds the parked sums in group order and stores its outputs inside y.
template <int kCo, int kRows>
__host__ __device__ inline void plane_fold_store(const PlaneGatherPlan& p, const PlaneTile& tile,
                                                 const PlaneLane& l, float (&acc)[kCo][kRows],
                                                 const float* smem, float* __restrict__ y) {
  if (l.group != 0 || !l.busy) return;
  for (int g = 1; g < p.split; ++g) {
    const float* red = smem + (g - 1) * kCo * kRows * p.group_threads + l.t;
    KB_UNROLL
    for (int co = 0; co < kCo; ++co) {
      KB_UNROLL
      for (int r = 0; r < kRows; ++r) acc[co][r] += red[(co * kRows + r) * p.group_threads];
    }
  }
  const int od = tile.o[0] + l.td, oh = tile.o[1] + l.rg * kRows, ow = tile.o[2] + l.w;
  if (od >= p.out[0] || ow >= p.out[2]) return;
  const int64_t out_plane = int64_t{p.out[1]} * p.out[2];
  KB_UNROLL
  for (int co = 0; co < kCo; ++co) {
    const int gco = tile.cb * kCo + co;
    if (gco >= p.cout) break;
    float* yc = y + ((int64_t{tile.n} * p.cout + gco) * p.out[0] + od) * out_plane + ow;
    KB_UNROLL
    for (int r = 0; r < kRows; ++r)
      if (oh + r < p.out[1]) yc[int64_t{oh + r} * p.out[2]] = acc[co][r];
  }
}

template <int kCo, int kRows>
__global__ void __launch_bounds__(kPlaneThreads)
    plane_gather_kernel(const float* __restrict__ x, const float* __restrict__ w,
                        float* __restrict__ y, PlaneGatherPlan p) {
  float* smem = dynamic_smem();
  const PlaneTile tile = plane_tile(p, blockIdx.x);
  const PlaneLane lane = plane_lane(p, static_cast<int>(threadIdx.x));
  float acc[kCo][kRows];
  KB_UNROLL
  for (int co = 0; co < kCo; ++co) {
    KB_UNROLL
    for (int r = 0; r < kRows; ++r) acc[co][r] = 0.f;
  }
  for (int c0 = 0; c0 < p.cin; c0 += p.split) {
    if (c0 > 0) __syncthreads();  // the previous round's reads are done
    plane_stage<kCo>(x, w, p, tile, c0, static_cast<int>(threadIdx.x), kPlaneThreads, smem);
    __syncthreads();
    if (lane.busy && c0 + lane.group < p.cin) plane_accumulate<kCo, kRows>(p, lane, smem, acc);
  }
  if (p.split > 1) {
    __syncthreads();
    plane_park<kCo, kRows>(p, lane, acc, smem);
    __syncthreads();
  }
  plane_fold_store<kCo, kRows>(p, tile, lane, acc, smem, y);
}

// ---- Plan ----

// Output channels per block (kCo) and rows per thread (kRows) of the instances launch_plane_gather
// has.
inline int plane_co_block(int64_t cout) {
  return cout <= 1 ? 1 : cout <= 2 ? 2 : cout <= 4 ? 4 : 8;
}
constexpr int kPlaneRows = 4;

// The tile of `split` groups: TW the row (in the fewest pieces of at most group_threads), then
// as many row groups and planes as the group's threads hold, each axis cut evenly.
inline void plane_tile_shape(PlaneGatherPlan& p) {
  const auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  const int t = p.group_threads;
  p.tiles[2] = ceil_div(p.out[2], t), p.tile[2] = ceil_div(p.out[2], p.tiles[2]);
  const int groups_needed = ceil_div(p.out[1], p.rows);
  const int groups_max = std::max(t / p.tile[2], 1);
  p.tiles[1] = ceil_div(groups_needed, groups_max);
  p.row_groups = ceil_div(groups_needed, p.tiles[1]);
  p.tile[1] = p.row_groups * p.rows;
  const int planes_max = std::max(t / (p.row_groups * p.tile[2]), 1);
  p.tiles[0] = ceil_div(p.out[0], planes_max), p.tile[0] = ceil_div(p.out[0], p.tiles[0]);
  p.lanes = p.tile[0] * p.row_groups * p.tile[2];
  p.blocks = int64_t{p.batch} * p.co_blocks * p.tiles[0] * p.tiles[1] * p.tiles[2];
}

// Blocks the split aims for: a few per multiprocessor.
constexpr int kPlaneBlocksPerSm = 4;

// The plane gather's launch for g, or an error where it does not apply (rank-3, stride 1,
// dilation 1, groups 1, 3 x 3 x 3 kernel, padding <= 2, at most kPlaneMaxChannels outputs).
// Groups: doubled (up to kPlaneMaxSplit, at most C_in) while the grid is under kPlaneBlocksPerSm
// blocks per SM.
inline Result<PlaneGatherPlan> plan_plane_gather(const ConvTransposeGeometry& g, int sms) {
  if (g.rank != 3 || g.groups != 1 || g.out_channels > kPlaneMaxChannels)
    return Status::failed_precondition("plane gather: not a 3-D layer of <= 8 outputs");
  PlaneGatherPlan p;
  for (int a = 0; a < kSpatial; ++a) {
    if (g.kernel[a] != kPlaneTaps || g.stride[a] != 1 || g.dilation[a] != 1 || g.padding[a] > 2 ||
        g.out[a] != g.in[a] + 2 - 2 * g.padding[a])
      return Status::failed_precondition("plane gather: not a stride-1 3 x 3 x 3 layer");
    p.in[a] = static_cast<int>(g.in[a]), p.out[a] = static_cast<int>(g.out[a]);
    p.pad[a] = static_cast<int>(g.padding[a]);
  }
  if (g.batch >= (int64_t{1} << 30))
    return Status::failed_precondition("plane gather: a batch above 2^30");
  p.batch = static_cast<int>(g.batch), p.cin = static_cast<int>(g.in_channels);
  p.cout = static_cast<int>(g.out_channels);
  p.co_block = plane_co_block(g.out_channels), p.rows = kPlaneRows;
  p.co_blocks = (p.cout + p.co_block - 1) / p.co_block;
  const auto shape = [&p](int split) {
    p.split = split, p.group_threads = kPlaneThreads / split;
    plane_tile_shape(p);
  };
  int split = 1;
  shape(split);
  while (split < kPlaneMaxSplit && 2 * split <= p.cin &&
         p.blocks < int64_t{kPlaneBlocksPerSm} * sms)
    shape(split *= 2);
  if (p.blocks >= (int64_t{1} << 31))
    return Status::failed_precondition("plane gather: more than 2^31 - 1 blocks");
  for (int a = 0; a < kSpatial; ++a) p.staged[a] = p.tile[a] + kPlaneTaps - 1;
  p.stage_stride = (p.staged[0] * p.staged[1] * p.staged[2] + 3) / 4 * 4;
  p.pitch = Divider<uint32_t>(static_cast<uint32_t>(p.staged[2]));
  p.staged_rows = Divider<uint32_t>(static_cast<uint32_t>(p.staged[1]));
  p.staged_planes = Divider<uint32_t>(static_cast<uint32_t>(p.staged[0]));
  const size_t stage =
      static_cast<size_t>(p.stage_floats()) + size_t{kPlaneTapCount} * p.split * p.co_block;
  const size_t parked = static_cast<size_t>(p.split - 1) * p.co_block * p.rows * p.group_threads;
  p.smem_bytes = std::max(stage, parked) * sizeof(float);
  if (p.smem_bytes > 48 * 1024)
    return Status::failed_precondition("plane gather: the tile needs more than 48 KB");
  return p;
}

// plane_gather_kernel at the plan's instance.
inline Status launch_plane_gather(const float* x, const float* w, float* y,
                                  const PlaneGatherPlan& p, cudaStream_t stream) {
  if (p.rows != kPlaneRows)  // the tile was cut for other rows than the kernels hold
    return Status::invalid_argument("plane gather: a plan of " + std::to_string(p.rows) +
                                    " rows a thread");
  const dim3 grid(static_cast<unsigned>(p.blocks));
  const auto run = [&](auto kernel) {
    return launch(kernel, grid, kPlaneThreads, p.smem_bytes, stream, x, w, y, p);
  };
  switch (p.co_block) {
    case 1:
      return run(plane_gather_kernel<1, kPlaneRows>);
    case 2:
      return run(plane_gather_kernel<2, kPlaneRows>);
    case 4:
      return run(plane_gather_kernel<4, kPlaneRows>);
    case 8:
      return run(plane_gather_kernel<8, kPlaneRows>);
    default:
      return Status::invalid_argument("plane gather: no kernel of " + std::to_string(p.co_block) +
                                      " channels");
  }
}

}  // namespace kb::custom::gather

// The plane gather: a stride-1 transposed 3-D convolution with a 3 x 3 x 3 kernel (a full
// correlation: L1_070's layer) of at most 8 output channels, as an fp32 FMA tile over input
// planes staged in shared memory.
//
//   y[n, co, o] = sum_{ci, a, b, c} x[n, ci, o + p - (a, b, c)] w[ci, co, a, b, c]  (x = 0 outside)
//
// Why: at few output channels the patch GEMM (parity_gemm3d.cuh) pads each tile's 24 channels
// (C_out 1: 24x its multiply-adds) and the generic gather (generic.cuh) reloads x from L1 for
// every tap and channel: N 8, 48 -> 1, 64^3 ran 0.24x the reference (cuDNN, 0.77 ms) on main's
// paths, N 8, 41 -> 1, 41 x 5 x 9 0.57x (sessions 32-34, H100). Measured (session 35, H100,
// `kb bench L1_070 --dims ...` against those paths): 3.18 -> 0.57 ms at the first (1.4x the
// reference), 36 -> 28 us at the second, 1.25-5.6x faster at 16 of 17 layers, as fast at the
// 17th (12 us, launch-bound). ncu at the first: 44% of the instructions are FMA, 46% of the
// shared-load wavefronts bank conflicts (a quarter-warp's 16-byte reads spanning staged rows
// 4 pitch apart, which is 0 or 16 floats modulo 32), 25% occupancy. Session 36 (H100, against
// session 35's form; docs/kernels.md): the skewed layout below took the conflicts from 46% to 29%
// of the wavefronts at the first layer and from 62% to 16% at N 16, 64 -> 2, 32^3 (the rest are
// the 8-byte reads of a row's columns 4-5, two wavefronts like a 16-byte read), 566 -> 543 and
// 354 -> 292 us; SASS showed the accumulation 91% FFMA and the staging loop at 21 instructions a
// float (44% of those executed); up to 32 groups and a staging loop through one column pointer
// took the first layer to 487 us, N 1, 64 -> 1, 30^3 36 -> 28 us, N 8, 41 -> 1, 41 x 5 x 9 28
// -> 23 us.
//
// A block (kPlaneThreads) owns one sample, kCo output channels and a tile of TD x TH x TW outputs;
// its threads form `split` groups, each summing every split-th input channel. A busy thread holds
// a register block of kPlanes planes x kPlaneRows (4) rows x kPlaneCols (4) columns x kCo channels.
// Per round the block stages `split` channels (one per group) into one of kPlaneStages buffers by
// 4-byte cp.async (zeros outside x), the next round's copies in flight while this round computes:
// each channel's TD + 2 planes x TH + 2 rows x TW + 4 columns (the pitch, a multiple of 4: the
// two last columns are zeros) and its 27 x kCo weights. A thread stages one column of the tile
// (thread % pitch) over every (kPlaneThreads / pitch)-th staged row, the row's source offset and
// start in the stage read from a table the block fills once: no division per element. The rows
// are skewed after every kPlaneRows and the planes padded (plane_skews) so that 8 consecutive
// threads' 16-byte reads hit 8 distinct bank quads: one shared-memory wavefront each.
// The accumulation is x-stationary: per staged plane and row the thread loads its 8 staged columns
// (two 16-byte loads) once and uses them for every output plane and row whose tap reads them
// (up to 3 x 3 x 3 x 4 x kCo FMA per 8 floats); the weights sit in registers (kCo <= 2) or are
// read as 16-byte broadcasts per (plane tap, row tap) (kCo 4). The groups' sums are added in
// group order through shared memory at the end.
// Sum order per output: its group's channels in order (within each: plane taps a descending, row
// taps b descending, column taps c ascending), then the groups in order; fp32 FMA throughout.
//
// The steps (plane_row_table, plane_stage, plane_accumulate, plane_park, plane_fold_store) are
// __host__ __device__ functions of (block, thread): tests/host_cuda/plane_gather_test.cu runs
// whole grids on the host, a round's staging done before its accumulation as the kernel's
// barriers order them.
// Thread safety: stateless; the host functions may be called from any thread.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/host_device.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose_gather/geometry.cuh"
#include "kernels/cores/tf32x3/mma.cuh"  // the cp.async primitives

namespace kb::custom::gather {

constexpr int kPlaneThreads = 256;
constexpr int kPlaneTaps = 3;  // kernel extent of every axis
constexpr int kPlaneTapCount = kPlaneTaps * kPlaneTaps * kPlaneTaps;
constexpr int kPlaneMaxSplit = 32;    // groups of 8 threads: single-sample layers of many channels
constexpr int kPlaneMaxChannels = 8;  // output channels of a layer this path takes
constexpr int kPlaneCols = 4;         // output columns a thread holds
constexpr int kPlaneRowFloats = 8;    // staged columns a thread reads per row (6 used)
constexpr int kPlaneStages = 2;       // staging buffers: one computed, one in flight
// Shared memory of a block at most: two blocks on a multiprocessor (228 KB, 1 KB each reserved).
constexpr size_t kPlaneMaxSmem = 110 * 1024;
// Busy threads along W at most: the staged pitch (4 x lanes + 4) within kPlaneThreads.
constexpr int kPlaneMaxLanesW = (kPlaneThreads - kPlaneCols) / kPlaneCols;

// The register block of the instance for kCo output channels: planes x kPlaneRows rows x
// kPlaneCols columns (32 outputs at kCo 1 and 2, 64 at kCo 4).
constexpr int kPlaneRows = 4;
__host__ __device__ constexpr int plane_thread_planes(int co_block) {
  return co_block == 1 ? 2 : 1;
}

// A layer's launch: sizes, the tile and the block and thread decodes. Passed to the kernel by
// value; built by plan_plane_gather.
struct PlaneGatherPlan {
  int batch = 0, cin = 0, cout = 0;
  int in[kSpatial] = {}, out[kSpatial] = {}, pad[kSpatial] = {};
  int co_block = 1, planes = 2, rows = kPlaneRows;  // kCo and the register block of the instance
  int split = 1, group_threads = kPlaneThreads;     // groups and threads per group
  int lanes[kSpatial] = {};                         // a group's busy threads along D, H, W
  int busy = 0;                                     // their product
  int tile[kSpatial] = {};  // TD = lanes[0] planes, TH = lanes[1] rows, TW = lanes[2] kPlaneCols
  int tiles[kSpatial] = {}, co_blocks = 1;
  int staged[kSpatial] = {};  // TD + 2, TH + 2, TW + 4 (the pitch)
  // The staged layout (floats, multiples of 4): row j of plane s starts at s plane_stride +
  // j pitch + (j / kPlaneRows) row_skew. The skew after every kPlaneRows rows and the plane's
  // padding put the 16-byte reads of 8 consecutive busy threads (a quarter-warp's shared-memory
  // wavefront) in 8 distinct bank quads (plane_skews).
  int row_skew = 0, plane_stride = 0;
  int stage_stride = 0;   // floats of one group's staged channel: TD + 2 plane strides
  int weight_stride = 0;  // floats of one group's weights: 27 kCo rounded up to 4
  int buffer_floats = 0;  // one stage: split (stage_stride + weight_stride)
  int copy_rows = 1;      // staged rows a step of every thread covers: kPlaneThreads / pitch
  int64_t blocks = 0;
  size_t smem_bytes = 0;

  __host__ __device__ int staged_rows() const { return staged[0] * staged[1]; }
  // The row table's offset in shared memory (floats): after the stages (PlaneRow each).
  __host__ __device__ int row_table() const { return kPlaneStages * buffer_floats; }
  // Where staged row j of plane s starts within a group's channel (floats).
  __host__ __device__ int row_start(int s, int j) const {
    return s * plane_stride + j * staged[2] + j / kPlaneRows * row_skew;
  }
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

// A thread's group and register block: its first output is (td planes, th rows, tw columns) of
// register blocks into the tile.
struct PlaneLane {
  int group = 0, t = 0, tw = 0, th = 0, td = 0;
  bool busy = false;
};

__host__ __device__ inline PlaneLane plane_lane(const PlaneGatherPlan& p, int thread) {
  PlaneLane l;
  l.group = thread / p.group_threads, l.t = thread % p.group_threads;
  l.busy = l.t < p.busy;
  l.tw = l.t % p.lanes[2];
  const int q = l.t / p.lanes[2];
  l.th = q % p.lanes[1], l.td = q / p.lanes[1];
  return l;
}

// A staged row of the block: the offset of its first input column within a channel of x (-1
// where the row lies outside x) and its start in a group's staged channel (row_start). One
// 8-byte shared load.
struct alignas(8) PlaneRow {
  int source = -1, start = 0;
};
static_assert(sizeof(PlaneRow) == 2 * sizeof(float), "a row table entry is two floats of smem");

// Fills the block's row table: staged row i = (plane s, row j) -> table[i]. Thread `thread` of
// `threads`.
__host__ __device__ inline void plane_row_table(const PlaneGatherPlan& p, const PlaneTile& tile,
                                                int thread, int threads, PlaneRow* table) {
  for (int i = thread; i < p.staged_rows(); i += threads) {
    const int s = i / p.staged[1], j = i % p.staged[1];
    const int id = tile.o[0] + p.pad[0] - (kPlaneTaps - 1) + s;
    const int ih = tile.o[1] + p.pad[1] - (kPlaneTaps - 1) + j;
    const bool inside = static_cast<unsigned>(id) < static_cast<unsigned>(p.in[0]) &&
                        static_cast<unsigned>(ih) < static_cast<unsigned>(p.in[1]);
    table[i] = {inside ? (id * p.in[1] + ih) * p.in[2] : -1, p.row_start(s, j)};
  }
}

// One 4-byte copy global -> shared: cp.async on the device (zero-fill where !valid), a plain
// store on the host.
__host__ __device__ __forceinline__ void plane_copy(float* dst, const float* src, bool valid) {
#if defined(__CUDA_ARCH__)
  tf32x3::cp_async_4(static_cast<uint32_t>(__cvta_generic_to_shared(dst)), src, valid);
#else
  *dst = valid ? *src : 0.f;
#endif
}

// Issues the copies of thread `thread` for the round of channels c0 + g (group g < split) into
// `buffer`: staged column thread % pitch of every (copy_rows)-th staged row of each channel, then
// every kPlaneThreads-th weight ([g][tap][kCo], zeros past C_in and C_out).
template <int kCo>
__host__ __device__ inline void plane_stage(const float* __restrict__ x,
                                            const float* __restrict__ w, const PlaneGatherPlan& p,
                                            const PlaneTile& tile, const PlaneRow* table, int c0,
                                            int thread, float* buffer) {
  const int pitch = p.staged[2];
  const int k = thread % pitch, row0 = thread / pitch;
  if (row0 < p.copy_rows) {
    const int iw = tile.o[2] + p.pad[2] - (kPlaneTaps - 1) + k;
    const bool column = k < p.tile[2] + kPlaneTaps - 1 &&
                        static_cast<unsigned>(iw) < static_cast<unsigned>(p.in[2]);
    const int64_t channel_floats = int64_t{p.in[0]} * p.in[1] * p.in[2];
    const int rows = p.staged_rows();
    for (int g = 0; g < p.split; ++g) {
      const int ci = c0 + g;
      const bool live = column && ci < p.cin;
      // Column k of channel ci (x itself where there is none), + each row's source offset.
      const float* xk = live ? x + ((int64_t{tile.n} * p.cin + ci) * channel_floats + iw) : x;
      float* dst = buffer + g * p.stage_stride + k;
      KB_UNROLL_BY(4)
      for (int r = row0; r < rows; r += p.copy_rows) {
        const PlaneRow row = table[r];
        const bool valid = live && row.source >= 0;
        plane_copy(dst + row.start, xk + (valid ? row.source : 0), valid);
      }
    }
  }
  float* ws = buffer + p.split * p.stage_stride;
  for (int i = thread; i < p.split * kPlaneTapCount * kCo; i += kPlaneThreads) {
    const int g = i / (kPlaneTapCount * kCo), e = i % (kPlaneTapCount * kCo);
    const int tap = e / kCo, co = e % kCo;
    const int ci = c0 + g, gco = tile.cb * kCo + co;
    const bool valid = ci < p.cin && gco < p.cout;
    plane_copy(ws + g * p.weight_stride + e,
               valid ? w + (int64_t{ci} * p.cout + gco) * kPlaneTapCount + tap : w, valid);
  }
}

// kPlaneRowFloats staged floats from a 16-byte aligned address (two 16-byte loads on the device).
__host__ __device__ __forceinline__ void plane_row(const float* src, float (&v)[kPlaneRowFloats]) {
#if defined(__CUDA_ARCH__)
  KB_UNROLL
  for (int q = 0; q < kPlaneRowFloats / 4; ++q) {
    const float4 f = reinterpret_cast<const float4*>(src)[q];
    v[4 * q] = f.x, v[4 * q + 1] = f.y, v[4 * q + 2] = f.z, v[4 * q + 3] = f.w;
  }
#else
  for (int q = 0; q < kPlaneRowFloats; ++q) v[q] = src[q];
#endif
}

// n consecutive weights (n a multiple of 4 on 16-byte aligned addresses: 16-byte loads on the
// device).
template <int kN>
__host__ __device__ __forceinline__ void plane_weights(const float* src, float* v) {
#if defined(__CUDA_ARCH__)
  constexpr bool kVector = kN % 4 == 0;
#else
  constexpr bool kVector = false;
#endif
  if constexpr (kVector) {
    KB_UNROLL
    for (int q = 0; q < kN / 4; ++q) {
      const float4 f = reinterpret_cast<const float4*>(src)[q];
      v[4 * q] = f.x, v[4 * q + 1] = f.y, v[4 * q + 2] = f.z, v[4 * q + 3] = f.w;
    }
  } else {
    KB_UNROLL
    for (int q = 0; q < kN; ++q) v[q] = src[q];
  }
}

// The accumulators of a thread: [plane][row][column][channel].
template <int kCo, int kPlanes>
using PlaneAcc = float[kPlanes][kPlaneRows][kPlaneCols][kCo];

// Where lane l's reads start in a stage (floats): its group's channel, plane td kPlanes, row
// th kPlaneRows, column tw kPlaneCols. Its register block's rows th kPlaneRows + j (j < 6) lie
// j pitch, plus row_skew from j = kPlaneRows on, past it.
__host__ __device__ inline int plane_lane_offset(const PlaneGatherPlan& p, const PlaneLane& l,
                                                 int planes) {
  return l.group * p.stage_stride + p.row_start(l.td * planes, l.th * kPlaneRows) +
         l.tw * kPlaneCols;
}

// Adds the thread's group's staged channel in `buffer` into acc.
template <int kCo, int kPlanes>
__host__ __device__ inline void plane_accumulate(const PlaneGatherPlan& p, const PlaneLane& l,
                                                 const float* buffer, PlaneAcc<kCo, kPlanes>& acc) {
  constexpr bool kWeightsHeld = kCo <= 2;  // every weight of the channel in registers
  const int pitch = p.staged[2], plane = p.plane_stride;
  const float* xs = buffer + plane_lane_offset(p, l, kPlanes);
  const float* xs_low = xs + kPlaneRows * pitch + p.row_skew;  // its rows from kPlaneRows on
  const float* ws = buffer + p.split * p.stage_stride + l.group * p.weight_stride;
  float held[kWeightsHeld ? kPlaneTapCount * kCo : 1];
  if constexpr (kWeightsHeld) {
    KB_UNROLL
    for (int i = 0; i < kPlaneTapCount * kCo; ++i) held[i] = ws[i];
  }
  KB_UNROLL
  for (int s = 0; s < kPlanes + kPlaneTaps - 1; ++s) {
    KB_UNROLL
    for (int j = 0; j < kPlaneRows + kPlaneTaps - 1; ++j) {
      float xr[kPlaneRowFloats];
      plane_row((j < kPlaneRows ? xs + j * pitch : xs_low + (j - kPlaneRows) * pitch) + s * plane,
                xr);
      KB_UNROLL
      for (int pl = 0; pl < kPlanes; ++pl) {
        const int a = pl + kPlaneTaps - 1 - s;  // output plane pl reads staged plane pl + 2 - a
        if (a < 0 || a >= kPlaneTaps) continue;
        KB_UNROLL
        for (int r = 0; r < kPlaneRows; ++r) {
          const int b = r + kPlaneTaps - 1 - j;
          if (b < 0 || b >= kPlaneTaps) continue;
          const int tap0 = (a * kPlaneTaps + b) * kPlaneTaps;  // tap (a, b, 0)
          float wv[kPlaneTaps * kCo];                          // [c][co]
          if constexpr (kWeightsHeld) {
            KB_UNROLL
            for (int i = 0; i < kPlaneTaps * kCo; ++i) wv[i] = held[tap0 * kCo + i];
          } else {
            plane_weights<kPlaneTaps * kCo>(ws + tap0 * kCo, wv);
          }
          KB_UNROLL
          for (int c = 0; c < kPlaneTaps; ++c) {
            KB_UNROLL
            for (int q = 0; q < kPlaneCols; ++q) {
              KB_UNROLL
              for (int co = 0; co < kCo; ++co)
                acc[pl][r][q][co] =
                    fmaf(xr[q + kPlaneTaps - 1 - c], wv[c * kCo + co], acc[pl][r][q][co]);
            }
          }
        }
      }
    }
  }
}

// The register block as a flat array (the park and fold walk it in this order).
template <int kCo, int kPlanes>
__host__ __device__ __forceinline__ float* plane_flat(PlaneAcc<kCo, kPlanes>& acc) {
  return &acc[0][0][0][0];
}
template <int kCo, int kPlanes>
constexpr int kPlaneHeld = kPlanes* kPlaneRows* kPlaneCols* kCo;

// Groups past the first park their sums in shared memory ([group - 1][element][t]).
template <int kCo, int kPlanes>
__host__ __device__ inline void plane_park(const PlaneGatherPlan& p, const PlaneLane& l,
                                           PlaneAcc<kCo, kPlanes>& acc, float* smem) {
  if (l.group == 0 || !l.busy) return;
  constexpr int kHeld = kPlaneHeld<kCo, kPlanes>;
  const float* v = plane_flat<kCo, kPlanes>(acc);
  float* red = smem + (l.group - 1) * kHeld * p.group_threads + l.t;
  KB_UNROLL
  for (int i = 0; i < kHeld; ++i) red[i * p.group_threads] = v[i];
}

// The first group adds the parked sums in group order and stores its outputs inside y.
template <int kCo, int kPlanes>
__host__ __device__ inline void plane_fold_store(const PlaneGatherPlan& p, const PlaneTile& tile,
                                                 const PlaneLane& l, PlaneAcc<kCo, kPlanes>& acc,
                                                 const float* smem, float* __restrict__ y) {
  if (l.group != 0 || !l.busy) return;
  constexpr int kHeld = kPlaneHeld<kCo, kPlanes>;
  float* v = plane_flat<kCo, kPlanes>(acc);
  for (int g = 1; g < p.split; ++g) {
    const float* red = smem + (g - 1) * kHeld * p.group_threads + l.t;
    KB_UNROLL
    for (int i = 0; i < kHeld; ++i) v[i] += red[i * p.group_threads];
  }
  const int od = tile.o[0] + l.td * kPlanes, oh = tile.o[1] + l.th * kPlaneRows;
  const int ow = tile.o[2] + l.tw * kPlaneCols;
  const int64_t out_plane = int64_t{p.out[1]} * p.out[2];
  KB_UNROLL
  for (int co = 0; co < kCo; ++co) {
    const int gco = tile.cb * kCo + co;
    if (gco >= p.cout) break;
    float* yc = y + (int64_t{tile.n} * p.cout + gco) * p.out[0] * out_plane;
    KB_UNROLL
    for (int pl = 0; pl < kPlanes; ++pl) {
      if (od + pl >= p.out[0]) break;
      KB_UNROLL
      for (int r = 0; r < kPlaneRows; ++r) {
        if (oh + r >= p.out[1]) break;
        float* row = yc + (od + pl) * out_plane + int64_t{oh + r} * p.out[2];
        KB_UNROLL
        for (int q = 0; q < kPlaneCols; ++q)
          if (ow + q < p.out[2]) row[ow + q] = acc[pl][r][q][co];
      }
    }
  }
}

template <int kCo, int kPlanes>
__global__ void __launch_bounds__(kPlaneThreads, 2)
    plane_gather_kernel(const float* __restrict__ x, const float* __restrict__ w,
                        float* __restrict__ y, PlaneGatherPlan p) {
  float* smem = dynamic_smem();
  PlaneRow* table = reinterpret_cast<PlaneRow*>(smem + p.row_table());
  const int thread = static_cast<int>(threadIdx.x);
  const PlaneTile tile = plane_tile(p, blockIdx.x);
  const PlaneLane lane = plane_lane(p, thread);
  plane_row_table(p, tile, thread, kPlaneThreads, table);
  __syncthreads();
  PlaneAcc<kCo, kPlanes> acc;
  float* v = plane_flat<kCo, kPlanes>(acc);
  KB_UNROLL
  for (int i = 0; i < kPlaneHeld<kCo, kPlanes>; ++i) v[i] = 0.f;
  const int rounds = (p.cin + p.split - 1) / p.split;
  plane_stage<kCo>(x, w, p, tile, table, 0, thread, smem);
  tf32x3::cp_async_commit();
  for (int k = 0; k < rounds; ++k) {
    if (k + 1 < rounds) {  // the buffer of round k - 1: its reads ended at the last barrier
      plane_stage<kCo>(x, w, p, tile, table, (k + 1) * p.split, thread,
                       smem + ((k + 1) % kPlaneStages) * p.buffer_floats);
      tf32x3::cp_async_commit();
      tf32x3::cp_async_wait<1>();
    } else {
      tf32x3::cp_async_wait<0>();
    }
    __syncthreads();  // every thread's copies of round k landed
    if (lane.busy && k * p.split + lane.group < p.cin)
      plane_accumulate<kCo, kPlanes>(p, lane, smem + (k % kPlaneStages) * p.buffer_floats, acc);
    __syncthreads();  // round k's buffer is free
  }
  if (p.split > 1) {
    plane_park<kCo, kPlanes>(p, lane, acc, smem);
    __syncthreads();
  }
  plane_fold_store<kCo, kPlanes>(p, tile, lane, acc, smem, y);
}

// ---- Plan ----

// Output channels per block (kCo of the instance): 1, 2, else 4 (C_out 5-8 in two blocks).
inline int plane_co_block(int64_t cout) {
  return cout <= 1 ? 1 : cout <= 2 ? 2 : 4;
}

// Staging a float (the copy, its row-table read, bounds and address) against one FMA: the unit
// of a plan's cost.
constexpr double kPlaneStageCost = 10.0;
// Blocks a multiprocessor holds at once (registers and kPlaneMaxSmem allow two).
constexpr int kPlaneBlocksPerSm = 2;

// Shared memory of plan p's launch: the stages and the row table, or the parked sums.
inline size_t plane_smem_bytes(const PlaneGatherPlan& p) {
  const size_t stages = static_cast<size_t>(p.row_table()) +
                        static_cast<size_t>(p.staged_rows()) * (sizeof(PlaneRow) / sizeof(float));
  const size_t parked = static_cast<size_t>(p.split - 1) * p.co_block * p.planes * p.rows *
                        kPlaneCols * p.group_threads;
  return std::max(stages, parked) * sizeof(float);
}

// Sets p's row_skew and plane_stride (from its lanes, pitch and staged rows) so that the reads of
// busy threads t .. t + 7 start in distinct bank quads: in 16-byte units lane (tw, th, td) reads
// from tw + th (kPlaneRows pitch + row_skew) / 4 + td planes plane_stride / 4 past its group's
// channel (plane_lane_offset), which is t = tw + lw th + lw lh td modulo 8 when
//   kPlaneRows pitch + row_skew = 4 lw  and  planes plane_stride = 4 lw lh   (modulo 32 floats).
// The skew is needed only where a quarter-warp spans rows (lh > 1, lw not a multiple of 8), the
// plane padding only where it spans planes (ld > 1, lw lh not a multiple of 8); at 2 planes a
// thread and lw lh odd the second has no solution and is met but for one thread pair.
// Costs at most 28 floats per 4 rows and per plane.
inline void plane_skews(PlaneGatherPlan& p) {
  const auto up_to = [](int v, int residue, int modulus) {  // least u >= v, u = residue (mod)
    return v + ((residue - v) % modulus + modulus) % modulus;
  };
  const int lw = p.lanes[2], lh = p.lanes[1], ld = p.lanes[0];
  const int pitch4 = p.staged[2] / 4;  // 16-byte units
  p.row_skew = lh > 1 && lw % 8 != 0 ? 4 * up_to(0, lw - kPlaneRows * pitch4, 8) : 0;
  const int last = p.staged[1] - 1;
  const int extent4 = (p.row_start(0, last) + p.staged[2]) / 4;  // plane_stride not used at s 0
  const int lanes = (lw * lh) % 8;
  if (ld == 1 || lanes == 0) {
    p.plane_stride = 4 * extent4;
  } else if (p.planes == 1) {
    p.plane_stride = 4 * up_to(extent4, lanes, 8);
  } else {  // planes 2: 2 stride4 = lanes (mod 8), or lanes + 1 where lanes is odd
    p.plane_stride = 4 * up_to(extent4, (lanes + 1) / 2, 4);
  }
}

// Sets the tile from the lanes (ld, lh, lw) and derives the staging sizes, tile counts and blocks.
inline void plane_set_tile(PlaneGatherPlan& p, int ld, int lh, int lw) {
  const auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  p.lanes[0] = ld, p.lanes[1] = lh, p.lanes[2] = lw, p.busy = ld * lh * lw;
  p.tile[0] = ld * p.planes, p.tile[1] = lh * p.rows, p.tile[2] = lw * kPlaneCols;
  for (int a = 0; a < kSpatial; ++a) p.tiles[a] = ceil_div(p.out[a], p.tile[a]);
  p.staged[0] = p.tile[0] + kPlaneTaps - 1, p.staged[1] = p.tile[1] + kPlaneTaps - 1;
  p.staged[2] = p.tile[2] + kPlaneRowFloats - kPlaneCols;
  plane_skews(p);
  p.stage_stride = p.staged[0] * p.plane_stride;
  p.weight_stride = (kPlaneTapCount * p.co_block + 3) / 4 * 4;
  p.buffer_floats = p.split * (p.stage_stride + p.weight_stride);
  p.copy_rows = std::max(kPlaneThreads / p.staged[2], 1);
  p.blocks = int64_t{p.batch} * p.co_blocks * p.tiles[0] * p.tiles[1] * p.tiles[2];
  p.smem_bytes = plane_smem_bytes(p);
}

// The plan's cost: a block's work (the FMA of every thread, idle ones included, plus
// kPlaneStageCost per staged float, over its rounds; then the fold of the groups' sums, one unit
// per parked value and thread) times the blocks an SM runs, counted as at least kPlaneLoneBlock
// (a block alone on an SM runs its 8 warps at ~1 / kPlaneLoneBlock of the SM's rate; two share
// it at full rate).
constexpr double kPlaneLoneBlock = 1.6;
inline double plane_cost(const PlaneGatherPlan& p, int sms) {
  const double per_sm = static_cast<double>((p.blocks + sms - 1) / sms);
  const double rounds = (p.cin + p.split - 1) / p.split;
  const double held = static_cast<double>(p.co_block) * p.planes * p.rows * kPlaneCols;
  const double fma = kPlaneTapCount * held * kPlaneThreads;
  const double fold = (p.split - 1) * held * kPlaneThreads;
  return std::max(per_sm, kPlaneLoneBlock) *
         (rounds * (fma + kPlaneStageCost * p.split * p.stage_stride) + fold);
}

// Sets p to the cheapest plan (plane_cost at sms): every split (1 to kPlaneMaxSplit, powers of
// two, at most C_in) and every lane arrangement (ld, lh, lw) of at most group_threads busy
// threads with no axis longer than the layer's, within kPlaneMaxSmem.
// False where none fits.
inline bool plane_cheapest(PlaneGatherPlan& p, int sms) {
  const auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  const int max_h = ceil_div(p.out[1], p.rows), max_d = ceil_div(p.out[0], p.planes);
  double best = -1;
  int pick[kSpatial + 1] = {};
  for (int split = 1; split <= std::min(kPlaneMaxSplit, p.cin); split *= 2) {
    p.split = split, p.group_threads = kPlaneThreads / split;
    const int gt = p.group_threads;
    // A row's pitch within the threads (each stages one column).
    const int max_w = std::min({gt, ceil_div(p.out[2], kPlaneCols), kPlaneMaxLanesW});
    for (int lw = 1; lw <= max_w; ++lw) {
      for (int lh = 1; lh <= std::min(gt / lw, max_h); ++lh) {
        for (int ld = 1; ld <= std::min(gt / (lw * lh), max_d); ++ld) {
          plane_set_tile(p, ld, lh, lw);
          if (p.smem_bytes > kPlaneMaxSmem) continue;
          const double cost = plane_cost(p, sms);
          if (best < 0 || cost < best) {
            best = cost;
            pick[0] = split, pick[1] = ld, pick[2] = lh, pick[3] = lw;
          }
        }
      }
    }
  }
  if (best < 0) return false;
  p.split = pick[0], p.group_threads = kPlaneThreads / pick[0];
  plane_set_tile(p, pick[1], pick[2], pick[3]);
  return true;
}

// The plane gather's launch for g, or an error where it does not apply (rank-3, stride 1,
// dilation 1, groups 1, 3 x 3 x 3 kernel, padding <= 2, at most kPlaneMaxChannels outputs).
// The split and tile: plane_cheapest at `sms` multiprocessors.
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
  if (g.in[0] * g.in[1] * g.in[2] >= (int64_t{1} << 31))
    return Status::failed_precondition("plane gather: a channel of 2^31 or more inputs");
  p.batch = static_cast<int>(g.batch), p.cin = static_cast<int>(g.in_channels);
  p.cout = static_cast<int>(g.out_channels);
  p.co_block = plane_co_block(g.out_channels);
  p.planes = plane_thread_planes(p.co_block), p.rows = kPlaneRows;
  p.co_blocks = (p.cout + p.co_block - 1) / p.co_block;
  if (!plane_cheapest(p, std::max(sms, 1)))
    return Status::failed_precondition("plane gather: no tile fits");
  if (p.blocks >= (int64_t{1} << 31))
    return Status::failed_precondition("plane gather: more than 2^31 - 1 blocks");
  return p;
}

template <int kCo>
constexpr auto plane_kernel = plane_gather_kernel<kCo, plane_thread_planes(kCo)>;

// Lets the plan's instance take its shared memory (above the 48 KB a launch gets without
// opting in); once before its launches.
inline Status prepare_plane_gather(const PlaneGatherPlan& p) {
  switch (p.co_block) {
    case 1:
      return allow_shared_memory(plane_kernel<1>, p.smem_bytes);
    case 2:
      return allow_shared_memory(plane_kernel<2>, p.smem_bytes);
    case 4:
      return allow_shared_memory(plane_kernel<4>, p.smem_bytes);
    default:
      return Status::invalid_argument("plane gather: no kernel of " + std::to_string(p.co_block) +
                                      " channels");
  }
}

// plane_gather_kernel at the plan's instance (prepare_plane_gather first).
inline Status launch_plane_gather(const float* x, const float* w, float* y,
                                  const PlaneGatherPlan& p, cudaStream_t stream) {
  if (p.rows != kPlaneRows || p.planes != plane_thread_planes(p.co_block))
    return Status::invalid_argument("plane gather: a plan cut for another register block");
  const dim3 grid(static_cast<unsigned>(p.blocks));
  const auto run = [&](auto kernel) {
    return launch(kernel, grid, kPlaneThreads, p.smem_bytes, stream, x, w, y, p);
  };
  switch (p.co_block) {
    case 1:
      return run(plane_kernel<1>);
    case 2:
      return run(plane_kernel<2>);
    case 4:
      return run(plane_kernel<4>);
    default:
      return Status::invalid_argument("plane gather: no kernel of " + std::to_string(p.co_block) +
                                      " channels");
  }
}

}  // namespace kb::custom::gather

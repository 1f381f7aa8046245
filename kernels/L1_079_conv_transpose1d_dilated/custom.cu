// L1_079 custom: y = ConvTranspose1d(C_in, C_out, 3, stride=2, padding=1, dilation=2,
// bias=False)(x).
//   x: (N, C_in, L), w: (C_in, C_out, 3), y: (N, C_out, 2L + 1) fp32 (full preset: x (16, 32,
//   131072) -> y (16, 64, 262145)).
//   With stride == dilation == 2 every tap lands on the even phase of o + pad: writing
//   o + pad = 2q + r, phase r = 1 is exactly 0 and phase 0 is the dense correlation
//     y[n, co, 2q - pad] = sum_{c, t<3} x[n, c, q - t] * w[c, co, t]     (x = 0 outside [0, L)),
//   a GEMM with M = N*(L+1) positions, N = C_out, K = 3*C_in, written interleaved with zeros.
//
// Cost (docs/problems.md#l1_079, full preset): 12.88 G MAC = 25.8 GFLOP -> t_fp32 385 us (fp32
// FMA, no TF32); 1,342 MB (x 268, y 1,074) -> t_mem 312 us. Floor 385 us: FMA-bound. Best
// strict-fp32 peer 2.93 ms (autotuned cuDNN, docs/baselines.md); goal <= 0.62 ms (1.6 x the
// floor).
//
// Design: one launch, persistent blocks of 256 threads (2 per SM), each over tiles of 64
// channels x 256 q. A thread holds 8 channels x 8 consecutive q in registers; per input channel
// it reads a window of 10 x values (the 3 taps slide over it) and 3 x 8 weights from shared
// memory: 192 FMA per 9 shared loads. The next tile's x arrives by cp.async while the warps store
// the current one: each warp stages its 16 x 128 results in shared memory (8 channels per round)
// and writes whole output runs (y and the interleaved zeros) with 16-byte stores, scalar stores
// at the run ends (rows are 262,145 floats: every row has its own 16-byte phase).
// The fast path needs K = 3, stride == dilation == 2, groups 1, C_in <= 32; any N, L, C_out,
// padding and output_padding. Anything else runs the generic gather (a thread or a few lanes per
// output) of kernels/cores/conv_transpose_gather/gather.cuh (correct, slow).
//
// Predicted: ~0.47 ms (FMA issue ~85% of peak; stores overlap the FMA of the other block).
// Measured (H200, full preset): 0.783 / 0.781 ms (docs/kernels.md), 0.782 ms in
// docs/bench-h200-2026-12-02b.json (33 TFLOP/s, 2.0x the floor, 1.3x the goal); see the ladder.
//
// Accuracy: strict fp32 FMA (no TF32, no fast intrinsics): each output one fp32 accumulator over
// its K = 96 products (channel by channel, 3 taps each); the zero phase is exact. No statistics,
// no norm. Measured max |err| 0 at the full preset (bench 2026-12-02b: the same bits as the
// reference), vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs the golden
// model): shift (x + 100) 0.044x the tolerance, scale (x 1000) 0.36x, centered 0.0014x, each
// equal to the reference's.
//
// Ladder (variant -> predicted -> measured, H200, kb bench full preset, L2 flushed):
//   v1 (this code) -> 0.47 -> 0.783 ms: the FFMA pipe at ~49% of 67 TFLOPS. Not yet explained;
//      leads, none measured: 127 registers under the (256, 2) cap leave no room to prefetch the
//      next channel's 34 operand registers, so each warp waits ~30 cycles of LDS latency per
//      192 FFMA with 4 warps per scheduler; the x window loads are 4-way bank conflicted
//      (16 addresses 32 B apart); clocks under dense FFMA. Next: profile (ncu
//      smsp__inst_executed_pipe_fma, stall reasons) before changing code.
//   v2 (session 2, docs/kernels.md) 3xTF32 mma.sync, 64 channels x 128 positions per block,
//      operands pre-split, output staged with its zeros -> predicted ~0.42 -> measured 0.98 ms
//      (error 1.6e-6). Rejected; v1 kept.
//   ncu (session 2, docs/profiles/ncu-h200-2026-11-30-L1_079.txt): issue slots 73% busy, 5.2
//      cycles per issued instruction, 25% occupancy (127 registers, 2 blocks/SM), DRAM 35%: the
//      FMA path is issue-bound at low occupancy; the shared-operand loads per FMA are the lever.
//   v3 (session 11, docs/kernels.md) each (value, zero) pair one 8-byte store from the
//      accumulators, no staging -> predicted ~0.64 -> measured 1.652 ms (a warp's store touches
//      32 sectors 64 bytes apart, half-written). Rejected; the staged 16-byte runs stay.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_079 {

using gather::kWarp;

constexpr int kThreads = 256;
constexpr int kTaps = 3;                        // kernel size of the fast path
constexpr int kStride = 2;                      // stride == dilation
constexpr int kCoThread = 8;                    // channels per thread (registers)
constexpr int kQThread = 8;                     // consecutive q per thread (registers)
constexpr int kLanesCo = 2, kLanesQ = 16;       // a warp: 16 channels x 128 q
constexpr int kWarpCo = kLanesCo * kCoThread;   // 16
constexpr int kWarpQ = kLanesQ * kQThread;      // 128
constexpr int kWarpsCo = 4, kWarpsQ = 2;        // a block: 64 channels x 256 q
constexpr int kBlockCo = kWarpsCo * kWarpCo;    // 64
constexpr int kBlockQ = kWarpsQ * kWarpQ;       // 256
constexpr int kMaxCin = 32;                     // all input channels staged at once
constexpr int kHalo = 4;                        // x columns left of the tile
constexpr int kXRow = kHalo + kBlockQ;          // 260 staged x per input channel
constexpr int kWindow = kQThread + kTaps - 1;   // 10 x per thread and input channel
constexpr int kStageCo = 8;                     // channels per staging round of a warp
constexpr int kPerRound = kStageCo / kLanesCo;  // 4 of a thread's channels per round
constexpr int kRounds = kCoThread / kPerRound;  // 2
constexpr int kStageRow = kWarpQ + 4;           // 132: odd rows shifted by 4 banks
constexpr int kBlocksPerSm = 2;

static_assert(kLanesCo * kLanesQ == kWarp && kWarpsCo * kWarpsQ * kWarp == kThreads);
static_assert(kHalo >= kTaps - 1 && kHalo % 4 == 0, "the x window must stay 16-byte aligned");
static_assert(kWindow == 10 && kHalo - (kTaps - 1) == 2, "x window loads are written for K = 3");
static_assert(kStageCo % kLanesCo == 0 && kCoThread % kPerRound == 0, "whole staging rounds");
static_assert(kBlockQ % 4 == 0 && kStageRow % 4 == 0);

struct Params {
  const float* x;  // (N, C_in, L)
  const float* w;  // (C_in, C_out, 3)
  float* y;        // (N, C_out, L_out)
  int batch, cin, cout, in_len, out_len, pad;
  int q_tiles, co_blocks;  // tiles: co_blocks x batch x q_tiles (q tile fastest)
  bool x_vec16;            // rows of x 16-byte aligned: copy them in 16-byte pieces
};

struct Tile {
  int n, cb, q0;  // sample, channel block, first q
};

__device__ __forceinline__ Tile tile_at(const Params& p, int tile) {
  const int rest = tile / p.q_tiles;
  return {rest % p.batch, rest / p.batch, tile % p.q_tiles * kBlockQ};
}

// xs[c][k] = x[n, c, q0 - kHalo + k] (0 outside [0, L)), asynchronously; ends with a commit.
__device__ void load_x_tile(const Params& p, float* xs, Tile t) {
  const float* x_n = p.x + static_cast<int64_t>(t.n) * p.cin * p.in_len;
  const int col0 = t.q0 - kHalo;
  if (p.x_vec16) {  // col0 and L are multiples of 4: each piece is wholly inside or outside
    constexpr int kPieces = kXRow / 4;
    for (int i = threadIdx.x; i < p.cin * kPieces; i += kThreads) {
      const int c = i / kPieces, col = col0 + 4 * (i - c * kPieces);
      float* dst = xs + c * kXRow + (col - col0);
      if (col >= 0 && col < p.in_len) {
        __pipeline_memcpy_async(dst, x_n + static_cast<int64_t>(c) * p.in_len + col, 16);
      } else {
        *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  } else {
    for (int i = threadIdx.x; i < p.cin * kXRow; i += kThreads) {
      const int c = i / kXRow, col = col0 + (i - c * kXRow);
      float* dst = xs + i;
      if (col >= 0 && col < p.in_len) {
        __pipeline_memcpy_async(dst, x_n + static_cast<int64_t>(c) * p.in_len + col, 4);
      } else {
        *dst = 0.f;
      }
    }
  }
  __pipeline_commit();
}

// ws[c][t][co] = w[c, cb*64 + co, t] (0 past C_out).
__device__ void load_weights(const Params& p, float* ws, int cb) {
  for (int i = threadIdx.x; i < p.cin * kTaps * kBlockCo; i += kThreads) {
    const int co = cb * kBlockCo + i % kBlockCo, ct = i / kBlockCo;
    ws[i] = co < p.cout ? p.w[(static_cast<int64_t>(ct / kTaps) * p.cout + co) * kTaps + ct % kTaps]
                        : 0.f;
  }
}

// acc[j][i] = sum_{c, t} x[q0 + q_off + i - t] * w[c, co_off + j, t], from shared memory.
__device__ __forceinline__ void compute_tile(const float* ws, const float* xs, int cin, int co_off,
                                             int q_off, float (&acc)[kCoThread][kQThread]) {
#pragma unroll
  for (int j = 0; j < kCoThread; ++j) {
#pragma unroll
    for (int i = 0; i < kQThread; ++i) acc[j][i] = 0.f;
  }
#pragma unroll 2
  for (int c = 0; c < cin; ++c) {
    const float* xr = xs + c * kXRow + (kHalo - (kTaps - 1)) + q_off;  // xr[m]: x at q - 2 + m
    const float2 a = *reinterpret_cast<const float2*>(xr);
    const float4 b = *reinterpret_cast<const float4*>(xr + 2);
    const float4 d = *reinterpret_cast<const float4*>(xr + 6);
    const float xv[kWindow] = {a.x, a.y, b.x, b.y, b.z, b.w, d.x, d.y, d.z, d.w};
    const float* wr = ws + c * kTaps * kBlockCo + co_off;
#pragma unroll
    for (int t = 0; t < kTaps; ++t) {
      const float4 lo = *reinterpret_cast<const float4*>(wr + t * kBlockCo);
      const float4 hi = *reinterpret_cast<const float4*>(wr + t * kBlockCo + 4);
      const float wv[kCoThread] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int j = 0; j < kCoThread; ++j) {
#pragma unroll
        for (int i = 0; i < kQThread; ++i) {
          acc[j][i] = fmaf(xv[i + kTaps - 1 - t], wv[j], acc[j][i]);
        }
      }
    }
  }
}

// One staged channel row of a warp (128 q, relative to qa) as the output run it owns: element
// o of the run is position u = o + shift = 2 (q - qa) + phase; phase 1 is 0.
__device__ __forceinline__ void store_stage_row(float* dst, int len, int shift, const float* yr,
                                                int lane) {
  gather::store_run(
      dst, len, lane, kWarp,
      [yr, shift](int o) {
        const int u = o + shift, a = (u + 1) >> 1;
        const float v0 = yr[a], v1 = yr[a + 1];
        return (u & 1) ? make_float4(0.f, v0, 0.f, v1) : make_float4(v0, 0.f, v1, 0.f);
      },
      [yr, shift](int o) { return ((o + shift) & 1) ? 0.f : yr[(o + shift) >> 1]; });
}

// The warp's 16 channels x 128 q to y, in two rounds of 8 channels through `stage`.
__device__ void store_tile(const Params& p, const float (&acc)[kCoThread][kQThread], float* stage,
                           Tile t) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int cc = lane % kLanesCo, pl = lane / kLanesCo;
  const int co_warp = t.cb * kBlockCo + warp % kWarpsCo * kWarpCo;
  const int qa = t.q0 + warp / kWarpsCo * kWarpQ;
  // this warp owns outputs o with (o + pad) / 2 in [qa, qa + 128)
  const int o_begin = std::max(0, kStride * qa - p.pad);
  const int o_end = std::min(p.out_len, kStride * (qa + kWarpQ) - p.pad);
  if (o_begin >= o_end) return;
  const int shift = o_begin + p.pad - kStride * qa;
#pragma unroll
  for (int round = 0; round < kRounds; ++round) {
#pragma unroll
    for (int jj = 0; jj < kPerRound; ++jj) {  // stage row jj * 2 + cc: channel cc*8 + round*4 + jj
      float* dst = stage + (jj * kLanesCo + cc) * kStageRow + pl * kQThread;
      const float* v = acc[round * kPerRound + jj];
      *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
      *reinterpret_cast<float4*>(dst + 4) = make_float4(v[4], v[5], v[6], v[7]);
    }
    __syncwarp();
    for (int row = 0; row < kStageCo; ++row) {
      const int co = co_warp + row % kLanesCo * kCoThread + round * kPerRound + row / kLanesCo;
      if (co >= p.cout) continue;
      float* dst = p.y + (static_cast<int64_t>(t.n) * p.cout + co) * p.out_len + o_begin;
      store_stage_row(dst, o_end - o_begin, shift, stage + row * kStageRow, lane);
    }
    __syncwarp();
  }
}

// Persistent: tiles blockIdx.x, + gridDim.x, ...; the weights stay staged while the channel block
// does not change.
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) conv_transpose1d_kernel(Params p) {
  const int tiles = p.co_blocks * p.batch * p.q_tiles;
  if (static_cast<int>(blockIdx.x) >= tiles) return;
  float* ws = gather::dynamic_smem();
  float* xs = ws + p.cin * kTaps * kBlockCo;
  float* stage = xs + p.cin * kXRow + threadIdx.x / kWarp * kStageCo * kStageRow;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int co_off = warp % kWarpsCo * kWarpCo + lane % kLanesCo * kCoThread;
  const int q_off = warp / kWarpsCo * kWarpQ + lane / kLanesCo * kQThread;
  int staged_cb = -1;
  load_x_tile(p, xs, tile_at(p, blockIdx.x));
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const Tile t = tile_at(p, tile);
    if (t.cb != staged_cb) load_weights(p, ws, staged_cb = t.cb);
    __pipeline_wait_prior(0);
    __syncthreads();
    float acc[kCoThread][kQThread];
    compute_tile(ws, xs, p.cin, co_off, q_off, acc);
    __syncthreads();  // xs and ws are free
    const int next = tile + static_cast<int>(gridDim.x);
    if (next < tiles) load_x_tile(p, xs, tile_at(p, next));  // lands while this tile is stored
    store_tile(p, acc, stage, t);
  }
}

class ConvTranspose1dDilated final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    Result<gather::ConvTransposeGeometry> g = gather::read_conv_transpose(p, "conv1d_transpose");
    if (!g.is_ok()) return g.status();
    geometry_ = g.value();
    x_ = input_index(p, "x");
    w_ = param_index(p, "conv1d_transpose.weight");
    fast_ = fits_fast_path(geometry_);
    if (!fast_) return Status::ok();
    params_ = make_params(geometry_);
    smem_bytes_ = sizeof(float) * static_cast<size_t>(params_.cin * (kTaps * kBlockCo + kXRow) +
                                                      kThreads / kWarp * kStageCo * kStageRow);
    KB_TRY(gather::allow_shared_memory(conv_transpose1d_kernel, smem_bytes_));
    int per_sm = 0;
    KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, conv_transpose1d_kernel,
                                                              kThreads, smem_bytes_));
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    const int64_t tiles = int64_t{params_.co_blocks} * params_.batch * params_.q_tiles;
    grid_ = std::min<int64_t>(tiles, int64_t{std::max(per_sm, 1)} * sms);
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;
    const float* w = args.params[w_].data;
    if (!fast_) return gather::launch_generic(x, w, args.output.data, geometry_, stream);
    Params p = params_;
    p.x = x, p.w = w, p.y = args.output.data;
    p.x_vec16 = p.in_len % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    return gather::launch(conv_transpose1d_kernel, dim3(static_cast<unsigned>(grid_)), kThreads,
                          smem_bytes_, stream, p);
  }

 private:
  // Everything but the tensors, which come with each call.
  static Params make_params(const gather::ConvTransposeGeometry& g) {
    Params p = {};
    p.batch = static_cast<int>(g.batch);
    p.cin = static_cast<int>(g.in_channels), p.cout = static_cast<int>(g.out_channels);
    p.in_len = static_cast<int>(g.in[2]), p.out_len = static_cast<int>(g.out[2]);
    p.pad = static_cast<int>(g.padding[2]);
    const int q_last = (p.out_len - 1 + p.pad) / kStride;  // q of the last output
    p.q_tiles = q_last / kBlockQ + 1;
    p.co_blocks = (p.cout + kBlockCo - 1) / kBlockCo;
    return p;
  }

  static bool fits_fast_path(const gather::ConvTransposeGeometry& g) {
    const int64_t limit = int64_t{1} << 30;
    const int64_t tiles = (g.out_channels + kBlockCo - 1) / kBlockCo * g.batch *
                          ((g.out[2] + g.padding[2]) / kBlockQ + 1);
    return g.rank == 1 && g.groups == 1 && g.kernel[2] == kTaps && g.stride[2] == kStride &&
           g.dilation[2] == kStride && g.in_channels <= kMaxCin && g.in[2] < limit &&
           g.out[2] + g.padding[2] < limit && g.batch * g.out_channels < limit && tiles < limit;
  }

  gather::ConvTransposeGeometry geometry_;
  size_t x_ = 0, w_ = 0;
  bool fast_ = false;
  Params params_ = {};
  size_t smem_bytes_ = 0;
  int64_t grid_ = 0;
};

}  // namespace kb::custom::L1_079

KB_REGISTER_IMPLEMENTATION(L1_079, custom, kb::custom::L1_079::ConvTranspose1dDilated)

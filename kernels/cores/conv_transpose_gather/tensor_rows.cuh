// The 2-D row gather on 3xTF32 tensor cores ("tensor rows"): the fast path of L1_075. Same
// blocks as row_gather_kernel (gather.cuh): one per (n, output row, 16 output channels of one
// group); a row no kernel row lands on is written as zeros. The sums of a row are an m16n8k8 GEMM
// per (row tap, column tap): A = the weights (16 output channels x 8 input channels), B = one
// staged input row (8 channels x column positions), and the column taps cost no extra loads:
//
//   Column taps (compile time): output column ow = qw s_w + r - pad_w (phase r) takes tap t with
//   phase(t) = (t d_w) mod s_w = r from input column qw - offset(t), offset(t) = t d_w / s_w.
//   A warp's item is 32 positions jl = qw - q_min: n8 tile j's column n is jl = 32 i + 4 n + j,
//   so tap t of tile j reads the columns of tile j - offset(t) (L1_079's tap-shifted tiles), and
//   a lane's B operands for every tap and tile are one window of 4 + kMaxOffset staged columns
//   of its two channels (b0: tig, b1: tig + 4), read with 16-byte loads and split into TF32
//   (big, small) in registers. Per (row tap, k8 step) a warp issues 3 kKw x 4 MMAs (60 for
//   L1_075) against 4 + 2 kKw shared loads.
//   The C fragment gives lane (g, tig) 8 consecutive positions (32 i + 8 tig ..) of channels g
//   and g + 8, every phase: 8 s_w consecutive outputs per channel, put into the block's staged
//   output rows (16-byte phase of each output row, as the row gather's z) with 8-byte stores
//   where the runs start even (stage_item_outputs), which the warps then copy out with 16-byte
//   stores (store_pass).
//
// Staging: per row tap, x rows of the group's input channels (padded with zero rows to whole k8
// steps) from input column iw_base, a multiple of 4 (16-byte cp.async when the rows allow), so a
// window starts kLead = q_min - kMaxOffset - iw_base columns into its aligned 16-byte pieces
// (kLead a template parameter: the window's registers are chosen at compile time); the weights
// prepared once per call in A-fragment order, split (prepare_tensor_weights_kernel).
// Staged rows are x_pitch = 8 (mod 32) floats: a quarter warp's 16-byte loads (2 g x 4 tig) hit
// 8 different bank quads. Output rows are z_stride = 4 (mod 32) floats. The output rows alias the
// staged x when the row fits one round of items (<= 8 warps x 32 positions); else they follow it.
//
// Accuracy: 3xTF32 (kernels/cores/tf32x3/mma.cuh), products exact in the tensor core, sums kept
// in the MMA accumulator: at most row taps x steps x 2 column taps x 3 MMAs per output (18 at
// L1_075, 72 at 32 input channels per group), each truncating against the running sum. L1_075
// measured max |err| 5.4e-7 at the full preset and 0.68x the tolerance under the scale trial
// (the reference 0.36x; L1_075's custom.cu has the figures and the next step, promotion).
//
// Occupancy: 3 blocks (24 warps) per SM at L1_075 (66.5 KB of shared memory each; the bound caps
// ptxas at 80 registers with ~90 bytes of spill loads): 0.326 ms against 0.355 at 2 blocks and
// 112-116 registers (session 16, kb bench L1_075 --time-cap 2, two runs each); 0.291 ms with
// the 8-byte output staging (session 17; 12-24 bytes of spills).
//
// Applies (plan_tensor_rows) to 2-D layers with the compiled column taps, <= 32 input channels
// per group, and staged rows that fit shared memory; TensorRowConvTranspose runs it on layers of
// more than 8 M multiply-adds whose rows hold at least one item (32 column positions), and
// otherwise runs the row gather (or the generic gather, for groups of 1-2 output channels too).
// L1_081's layer (taps (3, 5, 2), 32 input channels, one group) measured slower on it: 0.354 /
// 0.364 ms against the FFMA row gather's 0.297 (four 16-channel blocks restage each input row).
// Thread safety: stateless kernels; one object per stream.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::gather {

constexpr int kTensorCo = 16;                   // output channels per block: one m16 tile
constexpr int kTensorTiles = 4;                 // n8 tiles of an item
constexpr int kTensorItemQ = 8 * kTensorTiles;  // column positions of an item
constexpr int kTensorMaxSteps = 4;              // k8 steps: <= 32 input channels per group
constexpr int kFragFloats = 2 * kWarp * 4;      // one tap's A fragments: big, then small
constexpr int kTensorLeads = 4;                 // kLead in [0, 4)
// TensorRowConvTranspose's bounds (setup): rows of fewer column positions than one item run the
// row gather, and that runs groups of fewer output channels than this on the generic gather.
constexpr int kTensorMinRowPositions = kTensorItemQ;
constexpr int64_t kRowGatherMinGroupChannels = 3;

struct TensorRowParams {
  RowGatherParams rows;  // geometry, row taps, z_stride (4 mod 32) and x_vec (in_w % 4 == 0 and
                         // x 16-byte aligned); w in prepare_tensor_weights_kernel's layout
  int steps;             // k8 steps: ceil(cin_g / 8)
  int items;             // ceil(q_count / 32)
  int iw_base;           // input column of staged column 0 (a multiple of 4)
  int x_pitch;           // staged x row, floats (8 mod 32)
  int z_offset;          // floats from the staged x to the output rows (0: they alias)
};

// The prepared weights: wp[group][co block][th][step][t][big | small][lane][4] = the A fragment
// (a0..a3) of lane (g, tig): W(co = 16 cb + g + 8 (e & 1), c = 8 step + tig + 4 (e >> 1)), where
// W(co, c) = w[group cin_g + c, co, th, t], 0 past the group's channels. One thread per element.
template <int kKw>
__global__ void __launch_bounds__(kGenericThreads)
    prepare_tensor_weights_kernel(const float* __restrict__ w, float* __restrict__ wp,
                                  TensorRowParams tp) {
  const RowGatherParams& p = tp.rows;
  const int64_t total =
      int64_t{p.groups} * p.co_blocks_per_group * p.k_h * tp.steps * kKw * kFragFloats;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kGenericThreads + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * kGenericThreads) {
    int64_t r = e;
    const int el = static_cast<int>(r % 4);
    r /= 4;
    const int lane = static_cast<int>(r % kWarp);
    r /= kWarp;
    const int half = static_cast<int>(r % 2);
    r /= 2;
    const int t = static_cast<int>(r % kKw);
    r /= kKw;
    const int step = static_cast<int>(r % tp.steps);
    r /= tp.steps;
    const int th = static_cast<int>(r % p.k_h);
    r /= p.k_h;
    const int cb = static_cast<int>(r % p.co_blocks_per_group);
    const int64_t group = r / p.co_blocks_per_group;
    const int co = cb * kTensorCo + lane / 4 + 8 * (el & 1);
    const int c = 8 * step + lane % 4 + 4 * (el >> 1);
    const float v =
        co < p.cout_g && c < p.cin_g
            ? w[((group * p.cin_g + c) * p.cout_g + co) * (int64_t{p.k_h} * kKw) + th * kKw + t]
            : 0.f;
    const tf32x3::SplitTf32 s = tf32x3::split_tf32(v);
    wp[e] = __uint_as_float(half == 0 ? s.big : s.small);
  }
}

// Asynchronously (then a commit): xs[slot][ci][k] = x[n, group's channel ci, ih, iw_base + k]
// for ci < 8 steps (zero past the group's channels and outside x), and ws[slot] = the block's
// prepared fragments of kernel row th.
template <int kKw>
__device__ void stage_tensor_slot(const TensorRowParams& tp, const RowBlock& b, int slot, int th,
                                  int ih, float* ws, float* xs) {
  const RowGatherParams& p = tp.rows;
  const int rows = 8 * tp.steps;
  const int64_t c_first = (static_cast<int64_t>(b.n) * p.groups + b.group) * p.cin_g;
  float* x_slot = xs + slot * rows * tp.x_pitch;
  const auto x_row = [&](int ci) {
    return p.x + ((c_first + ci) * p.in_h + ih) * static_cast<int64_t>(p.in_w);
  };
  if (p.x_vec) {  // iw_base and in_w multiples of 4: a piece is wholly inside or outside x
    for_each_cell(rows, tp.x_pitch / 4, [&](int ci, int k4) {
      float* dst = x_slot + ci * tp.x_pitch + 4 * k4;
      const int iw = tp.iw_base + 4 * k4;
      if (ci < p.cin_g && iw >= 0 && iw < p.in_w) {
        __pipeline_memcpy_async(dst, x_row(ci) + iw, 4 * sizeof(float));
      } else {
        *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    });
  } else {
    for_each_cell(rows, tp.x_pitch, [&](int ci, int k) {
      float* dst = x_slot + ci * tp.x_pitch + k;
      const int iw = tp.iw_base + k;
      if (ci < p.cin_g && iw >= 0 && iw < p.in_w) {
        __pipeline_memcpy_async(dst, x_row(ci) + iw, sizeof(float));
      } else {
        *dst = 0.f;
      }
    });
  }
  const int pieces = tp.steps * kKw * kFragFloats / 4;
  const int64_t block = (int64_t{b.group} * p.co_blocks_per_group + b.co0 / kTensorCo) * p.k_h + th;
  const float* src = p.w + block * pieces * 4;
  float* dst = ws + slot * pieces * 4;
  for (int i = threadIdx.x; i < pieces; i += kRowThreads)
    __pipeline_memcpy_async(dst + 4 * i, src + 4 * i, 4 * sizeof(float));
  __pipeline_commit();
}

// acc[r][j] = item `item`'s n8 tile j of phase r (16 channels x 8 positions, column n at
// jl = 32 item + 4 n + j), summed over every staged (row tap, k8 step) and column tap.
template <int kKw, int kSw, int kDw, int kLead>
__device__ __forceinline__ void tensor_item(const TensorRowParams& tp, int slots, int item,
                                            const float* ws, const float* xs, int lane,
                                            float (&acc)[kSw][kTensorTiles][4]) {
  using Taps = ColumnTaps<kKw, kSw, kDw>;
  constexpr int kOff = Taps::kMaxOffset;
  constexpr int kWin = kTensorTiles + kOff;       // window: columns of B tiles -kOff .. 3
  constexpr int kLoads = (kLead + kWin + 3) / 4;  // 16-byte loads per channel row
  const int g = lane / 4, tig = lane % 4;
  tf32x3::zero_accumulators(acc);
  const float* x_lane = xs + tig * tp.x_pitch + item * kTensorItemQ + 4 * g;
  const float* w_lane = ws + lane * 4;
#pragma unroll 1
  for (int ss = 0; ss < slots * tp.steps; ++ss) {  // (row tap, k8 step): 8 staged channel rows
    uint32_t b_big[2][kWin], b_small[2][kWin];     // [channel tig | tig + 4][window column]
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float* row = x_lane + (8 * ss + 4 * h) * tp.x_pitch;
      float v[4 * kLoads];
#pragma unroll
      for (int m = 0; m < kLoads; ++m) {
        const float4 f = *reinterpret_cast<const float4*>(row + 4 * m);
        v[4 * m] = f.x, v[4 * m + 1] = f.y, v[4 * m + 2] = f.z, v[4 * m + 3] = f.w;
      }
#pragma unroll
      for (int u = 0; u < kWin; ++u) {
        const tf32x3::SplitTf32 s = tf32x3::split_tf32(v[kLead + u]);
        b_big[h][u] = s.big, b_small[h][u] = s.small;
      }
    }
    const float* w_step = w_lane + ss * kKw * kFragFloats;
#pragma unroll
    for (int t = 0; t < kKw; ++t) {
      const uint4 big = *reinterpret_cast<const uint4*>(w_step + t * kFragFloats);
      const uint4 small = *reinterpret_cast<const uint4*>(w_step + t * kFragFloats + kWarp * 4);
      const uint32_t a_big[4] = {big.x, big.y, big.z, big.w};
      const uint32_t a_small[4] = {small.x, small.y, small.z, small.w};
      const int r = Taps::phase(t), u0 = kOff - Taps::offset(t);  // tile j reads window j + u0
#pragma unroll
      for (int j = 0; j < kTensorTiles; ++j)
        tf32x3::mma_tf32(acc[r][j], a_small, b_big[0][j + u0], b_big[1][j + u0]);
#pragma unroll
      for (int j = 0; j < kTensorTiles; ++j)
        tf32x3::mma_tf32(acc[r][j], a_big, b_small[0][j + u0], b_small[1][j + u0]);
#pragma unroll
      for (int j = 0; j < kTensorTiles; ++j)
        tf32x3::mma_tf32(acc[r][j], a_big, b_big[0][j + u0], b_big[1][j + u0]);
    }
  }
}

// The item's outputs into the staged output rows z (row gather layout: z[co][kZMargin + shift(co)
// + ow], shift = the output row's 16-byte phase). C fragment: c0 / c1 are channel g at columns
// n = 2 tig / 2 tig + 1 (jl = 32 item + 8 tig + j / + 4 + j), c2 / c3 the same for channel g + 8:
// per channel, a lane holds the 8 s_w consecutive outputs of its positions 8 tig .. 8 tig + 7
// (position n, phase r at run index n s_w + r). `pairs` (block-uniform: z_pairs_aligned): every
// lane's run starts at an even z index, so the run goes out as 8-byte stores, 4 s_w of them per
// channel instead of 8 s_w 4-byte ones. Why: in a warp's store, channels g and the runs of lanes
// tig are z_stride and 8 s_w floats apart, and the rows' 16-byte phases (shift) cannot all be
// chosen: at L1_075 (z_stride 4 mod 32, 24-float runs, even planes) the 4-byte stores met 4-way
// bank conflicts (4 wavefronts each), the 8-byte ones 2-way (4 wavefronts for twice the data, a
// quarter of the instructions).
template <int kSw>
__device__ __forceinline__ void stage_item_outputs(const TensorRowParams& tp, const RowBlock& b,
                                                   int item,
                                                   const float (&acc)[kSw][kTensorTiles][4],
                                                   float* z, int lane, bool pairs) {
  const RowGatherParams& p = tp.rows;
  const int g = lane / 4, tig = lane % 4;
  const int out_phase = static_cast<int>((reinterpret_cast<uintptr_t>(b.out) >> 2) & 3);
  const int plane4 = static_cast<int>(b.plane & 3);
  const int ow0 = (p.q_min + item * kTensorItemQ + 8 * tig) * kSw - p.pad_w + kZMargin<kSw>;
  constexpr int kRun = 2 * kTensorTiles * kSw;  // a lane's consecutive outputs per channel
  // Run index e: position n = e / s_w (tile j = n % 4 of c_{2h} for n < 4, else of c_{2h + 1}),
  // phase r = e % s_w.
  const auto run_value = [&](int h, int e) {
    const int n = e / kSw, r = e % kSw;
    return acc[r][n % kTensorTiles][2 * h + n / kTensorTiles];
  };
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int co = g + 8 * h;
    float* zr = z + co * p.z_stride + ((out_phase + co * plane4) & 3) + ow0;
    if (pairs) {
#pragma unroll
      for (int e = 0; e < kRun; e += 2)
        *reinterpret_cast<float2*>(zr + e) = make_float2(run_value(h, e), run_value(h, e + 1));
    } else {
#pragma unroll
      for (int e = 0; e < kRun; ++e) zr[e] = run_value(h, e);
    }
  }
}

// Whether every lane's output run of block b starts at an even z index (stage_item_outputs): the
// run of channel co starts at co z_stride + (phase(b.out) + co plane) mod 4 + ow0, z_stride a
// multiple of 4 and ow0 = (q_min + 32 item + 8 tig) s_w - pad_w + kZMargin.
template <int kSw>
__device__ __forceinline__ bool z_pairs_aligned(const RowGatherParams& p, const RowBlock& b) {
  const int out_phase = static_cast<int>((reinterpret_cast<uintptr_t>(b.out) >> 2) & 3);
  return (b.plane & 1) == 0 && ((out_phase + p.q_min * kSw - p.pad_w) & 1) == 0;
}

template <int kKw, int kSw, int kDw, int kLead>
__global__ void __launch_bounds__(kRowThreads, 3) tensor_rows_kernel(TensorRowParams tp) {
  const RowGatherParams& p = tp.rows;
  const RowBlock b = row_block(p);
  const int slots = for_each_row_tap(p, b.oh, [](int, int, int) {});
  if (slots == 0) return store_zero_rows(p, b);  // no tap lands on this row
  float* ws = dynamic_smem();
  float* xs = ws + p.row_taps * tp.steps * kKw * kFragFloats;
  float* z = xs + tp.z_offset;
  for_each_row_tap(p, b.oh, [&](int slot, int th, int ih) {
    stage_tensor_slot<kKw>(tp, b, slot, th, ih, ws, xs);
  });
  __pipeline_wait_prior(0);
  __syncthreads();
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int rounds = (tp.items + kRowWarps - 1) / kRowWarps;  // 1 when z aliases xs
  const bool pairs = z_pairs_aligned<kSw>(p, b);
  for (int round = 0; round < rounds; ++round) {
    const int item = round * kRowWarps + warp;
    float acc[kSw][kTensorTiles][4];
    if (item < tp.items) tensor_item<kKw, kSw, kDw, kLead>(tp, slots, item, ws, xs, lane, acc);
    if (tp.z_offset == 0) __syncthreads();  // every warp is done reading xs
    if (item < tp.items) stage_item_outputs<kSw>(tp, b, item, acc, z, lane, pairs);
  }
  __syncthreads();
  store_pass<kSw>(p, b, 0, kTensorCo, z);
}

struct TensorRowPlan {
  TensorRowParams params = {};
  dim3 grid;  // (16-channel blocks of all groups, H_out, N)
  size_t smem_bytes = 0;
  int lead = 0;               // the kernel's kLead
  int64_t weight_floats = 0;  // of the prepared weights (prepare_tensor_weights_kernel)
};

// The smallest v >= at_least with v = residue (mod 32).
inline int64_t round_up_mod32(int64_t at_least, int64_t residue) {
  return at_least + ((residue - at_least) % 32 + 32) % 32;
}

// The launch of tensor_rows_kernel<kKw, kSw, kDw, plan.lead> for g, or failed_precondition
// saying why it does not apply.
template <int kKw, int kSw, int kDw>
Result<TensorRowPlan> plan_tensor_rows(const ConvTransposeGeometry& g, int64_t max_smem_bytes) {
  const auto no = [](const std::string& why) { return Status::failed_precondition(why); };
  using Taps = ColumnTaps<kKw, kSw, kDw>;
  static_assert(Taps::kMaxOffset <= 4, "a window of at most 8 columns");
  TensorRowPlan plan;
  TensorRowParams& tp = plan.params;
  RowGatherParams& p = tp.rows;
  KB_TRY((fill_row_geometry<kKw, kSw, kDw>(g, &p)));
  if (p.cin_g > 8 * kTensorMaxSteps) return no("more than 32 input channels per group");
  p.co_block = kTensorCo;
  p.co_blocks_per_group = (p.cout_g + kTensorCo - 1) / kTensorCo;
  p.co_pad = kTensorCo * p.co_blocks_per_group;
  tp.steps = (p.cin_g + 7) / 8;
  tp.items = (p.q_count + kTensorItemQ - 1) / kTensorItemQ;
  const int first = p.q_min - Taps::kMaxOffset;  // input column of item 0's first window column
  tp.iw_base = first >= 0 ? first / 4 * 4 : -((3 - first) / 4 * 4);
  plan.lead = first - tp.iw_base;
  const int loads = (plan.lead + kTensorTiles + Taps::kMaxOffset + 3) / 4;
  // The last lane's window loads end at column 32 (items - 1) + 28 + 4 loads.
  tp.x_pitch =
      static_cast<int>(round_up_mod32(int64_t{kTensorItemQ} * tp.items - 4 + 4 * loads, 8));
  // Computed outputs reach ow = (q_min + 32 items) s_w - 1 - pad_w (past W_out: harmless).
  p.z_stride = static_cast<int>(round_up_mod32(
      kZMargin<kSw> + 3 + (int64_t{p.q_min} + kTensorItemQ * tp.items) * kSw - p.pad_w, 4));
  const int64_t w_floats = int64_t{p.row_taps} * tp.steps * kKw * kFragFloats;
  const int64_t x_floats = int64_t{p.row_taps} * 8 * tp.steps * tp.x_pitch;
  const int64_t z_floats = int64_t{kTensorCo} * p.z_stride;
  const bool alias = tp.items <= kRowWarps;
  tp.z_offset = alias ? 0 : static_cast<int>(x_floats);
  const int64_t floats = w_floats + (alias ? std::max(x_floats, z_floats) : x_floats + z_floats);
  if (floats * static_cast<int64_t>(sizeof(float)) > max_smem_bytes) {
    return no("staged rows exceed shared memory");
  }
  plan.smem_bytes = static_cast<size_t>(floats) * sizeof(float);
  p.x_vec = p.in_w % 4 == 0;  // and, per call, x 16-byte aligned (run())
  const int64_t co_blocks = int64_t{p.groups} * p.co_blocks_per_group;
  const int64_t limit = int64_t{1} << 30;
  if (co_blocks >= limit) return no("grid too large");
  plan.grid = dim3(static_cast<unsigned>(co_blocks), static_cast<unsigned>(p.out_h),
                   static_cast<unsigned>(g.batch));
  plan.weight_floats = co_blocks * p.k_h * tp.steps * kKw * kFragFloats;
  if (plan.weight_floats >= limit) return no("too many weights");
  return plan;
}

// Runs node `node` (input x_name, weight w_name) through tensor_rows_kernel when its plan applies
// and the layer has more than 8 M multiply-adds on rows of at least kTensorMinRowPositions, else
// as RowGatherConvTranspose does (the FFMA row gather, or the generic gather), with groups of
// fewer than kRowGatherMinGroupChannels output channels on the generic gather.
template <int kKw, int kSw, int kDw>
class TensorRowConvTranspose : public Implementation {
 public:
  TensorRowConvTranspose(const char* node, const char* x_name, const char* w_name)
      : node_{node, x_name, w_name}, fallback_(node, x_name, w_name) {
    fallback_.set_generic_max_group_channels(kRowGatherMinGroupChannels - 1);
  }
  TensorRowConvTranspose(const TensorRowConvTranspose&) = delete;
  TensorRowConvTranspose& operator=(const TensorRowConvTranspose&) = delete;
  ~TensorRowConvTranspose() override { KB_CUDA_WARN(cudaFree(prepared_w_)); }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_TRY(node_.bind(p));
    KB_ASSIGN_OR_RETURN(const int max_smem,
                        cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
    Result<TensorRowPlan> plan = plan_tensor_rows<kKw, kSw, kDw>(node_.geometry, max_smem);
    // A small layer (<= 8 M multiply-adds) runs as the row gather decides (FFMA rows, or the
    // generic gather for narrow rows), as measured before: with the tensor rows at every size
    // the shape sweep missed its goal on L1_075 (session 16; its per-shape table did not come
    // back), and the one small sweep shape they took, 5 x 4 x 13 x 89 (1.0 M multiply-adds),
    // keeps 1 of a step's 8 input and 3 of a tile's 16 output channels busy.
    // Rows of under kTensorMinRowPositions column positions (one warp's item) leave 7 of the
    // block's 8 warps idle while it stages every tap's fragments for one output row: session 54
    // (H100, `kb bench L1_075 --dims ...`, /work/.device/6; tensor rows / FFMA row gather /
    // generic gather, x the reference) at 127 x 19 (19 positions), N 11, 28 -> 4: 0.41 / 0.63 /
    // 1.14; 28 -> 12: 0.85 / 1.28 / 1.02; 28 -> 20: 1.19 / 1.69 / 1.27; 4 -> 28: 4.6 / 11.9 /
    // 11.6. At 99 columns (N 16, 28 -> 4, 84 M) the tensor rows led: 1.12 / 0.74 / 0.94; at 61
    // (the ragged preset) they tied with the row gather (2.82 / 2.89).
    tensor_ = plan.is_ok() && !generic_is_faster(node_.geometry) &&
              plan.value().params.rows.q_count >= kTensorMinRowPositions;
    if (!tensor_) return fallback_.setup(p, stream);
    plan_ = plan.value();
    KB_CUDA_TRY(cudaFree(prepared_w_));
    prepared_w_ = nullptr;
    KB_CUDA_TRY(cudaMalloc(&prepared_w_, sizeof(float) * static_cast<size_t>(plan_.weight_floats)));
    return allow_shared_memory(kernel(plan_.lead), plan_.smem_bytes);
  }

  // Whether the last setup chose tensor_rows_kernel (else the row gather decides).
  bool uses_tensor_rows() const { return tensor_; }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (!tensor_) return fallback_.run(args, stream);
    const float* x = node_.input(args);
    TensorRowParams tp = plan_.params;
    tp.rows.x = x, tp.rows.w = prepared_w_, tp.rows.y = args.output.data;
    tp.rows.x_vec = tp.rows.x_vec && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const int64_t prep_blocks = (plan_.weight_floats + kGenericThreads - 1) / kGenericThreads;
    KB_TRY(launch(prepare_tensor_weights_kernel<kKw>,
                  dim3(static_cast<unsigned>(std::min(prep_blocks, kGenericMaxBlocks))),
                  kGenericThreads, 0, stream, node_.weight(args), prepared_w_, tp));
    return launch(kernel(plan_.lead), plan_.grid, kRowThreads, plan_.smem_bytes, stream, tp);
  }

 private:
  using Kernel = void (*)(TensorRowParams);
  static Kernel kernel(int lead) {
    static constexpr Kernel kKernels[kTensorLeads] = {
        tensor_rows_kernel<kKw, kSw, kDw, 0>, tensor_rows_kernel<kKw, kSw, kDw, 1>,
        tensor_rows_kernel<kKw, kSw, kDw, 2>, tensor_rows_kernel<kKw, kSw, kDw, 3>};
    return kKernels[lead];
  }

  ConvTransposeNode node_;
  RowGatherConvTranspose<kKw, kSw, kDw> fallback_;
  bool tensor_ = false;
  TensorRowPlan plan_;
  float* prepared_w_ = nullptr;  // owned: plan_.weight_floats, prepare_tensor_weights's layout
};

}  // namespace kb::custom::gather

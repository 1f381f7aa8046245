// The CUDA kernels behind eager_ops.cu and eager_norm_ops.cu (internal: included by those files
// only, so kernels that are not templates are static), with the index helpers they share.
// Everything here is in namespace kb::eager, so that the executor recognizes the kernels as ours
// by their mangled names.
//
// Layout conventions: dense row-major fp32; "rows" are contiguous runs of `len` elements.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "common/cuda/int_divider.h"
#include "kernels/eager/eager_ops.h"

namespace kb::eager {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kMaxRank = 8;  // dims of an index map after merging

// Maps a linear output index to element offsets in up to two strided operands. Dims are stored
// innermost first.
template <typename I>
struct IndexMap {
  int rank = 0;
  Divider<I> size[kMaxRank];
  I stride_a[kMaxRank] = {};
  I stride_b[kMaxRank] = {};

  __device__ void offsets(I i, I& a, I& b) const {
    a = 0;
    b = 0;
#pragma unroll
    for (int d = 0; d < kMaxRank; ++d) {
      if (d == rank) break;
      const I q = size[d].div(i);
      const I r = i - q * size[d].divisor;
      a += r * stride_a[d];
      b += r * stride_b[d];
      i = q;
    }
  }
};

template <typename I>
__device__ I first_index() {
  return static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x;
}
template <typename I>
__device__ I grid_stride() {
  return static_cast<I>(gridDim.x) * blockDim.x;
}

// ATen's launch for elementwise ops over index-mapped (broadcast, strided) operands,
// `elementwise_kernel<128, 2>`: blocks of 128 threads, one block per tile of 256 outputs, each
// thread two outputs 128 apart. Both values are computed (their loads issued) before either is
// stored, so a thread has two loads in flight where a grid of one output per thread has one: at
// one load per thread the H200's DRAM is latency-bound (L2_021's broadcasts ran 19% slower than
// eager's that way). Launch with legacy_grid(n) blocks of kLegacyThreads.
constexpr int kLegacyThreads = 128;
constexpr int kLegacyPerThread = 2;
constexpr int64_t kLegacyTile = kLegacyThreads * kLegacyPerThread;

template <typename I, typename Value>
__device__ __forceinline__ void legacy_elementwise(I n, float* out, Value value) {
  const I tiles = (n + kLegacyTile - 1) / kLegacyTile;
  for (I t = blockIdx.x; t < tiles; t += gridDim.x) {
    const I first = t * kLegacyTile + threadIdx.x;
    float v[kLegacyPerThread];
#pragma unroll
    for (int k = 0; k < kLegacyPerThread; ++k) {
      const I i = first + static_cast<I>(k) * kLegacyThreads;
      if (i < n) v[k] = value(i);
    }
#pragma unroll
    for (int k = 0; k < kLegacyPerThread; ++k) {
      const I i = first + static_cast<I>(k) * kLegacyThreads;
      if (i < n) out[i] = v[k];
    }
  }
}

// ---- Reductions within a warp and a block ----

__device__ inline float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum (or max) over the block, returned to every thread. blockDim.x is a multiple of 32.
template <bool kMax>
__device__ float block_reduce(float v) {
  __shared__ float shared[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // a previous call may still be reading `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const float identity = kMax ? -INFINITY : 0.0f;
  v = lane < static_cast<int>(blockDim.x / kWarp) ? shared[lane] : identity;
  return kMax ? warp_max(v) : warp_sum(v);
}

// Running mean and sum of squared deviations (Welford); n is a float like ATen's WelfordData.
struct Welford {
  float n = 0, mean = 0, m2 = 0;

  __device__ void add(float x) {
    n += 1.0f;
    const float delta = x - mean;
    mean += delta / n;
    m2 += delta * (x - mean);
  }
};

// Chan et al.'s parallel combination.
__device__ inline Welford merge(const Welford& a, const Welford& b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float delta = b.mean - a.mean, b_share = b.n / n;
  return {n, a.mean + delta * b_share, a.m2 + b.m2 + delta * delta * a.n * b_share};
}

__device__ inline Welford warp_merge(Welford w) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const Welford other{__shfl_xor_sync(0xffffffffu, w.n, offset),
                        __shfl_xor_sync(0xffffffffu, w.mean, offset),
                        __shfl_xor_sync(0xffffffffu, w.m2, offset)};
    w = merge(w, other);
  }
  return w;
}

__device__ inline Welford block_merge(Welford w) {
  __shared__ Welford shared[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  w = warp_merge(w);
  __syncthreads();
  if (lane == 0) shared[warp] = w;
  __syncthreads();
  w = lane < static_cast<int>(blockDim.x / kWarp) ? shared[lane] : Welford{};
  return warp_merge(w);
}

// Sum of p[lo], p[lo + step], ... below hi, in four interleaved accumulators (ILP, and shorter
// fp32 chains, like ATen's vectorized reduce).
__device__ inline float strided_sum(const float* p, int64_t lo, int64_t hi, int64_t step) {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int64_t i = lo;
  for (; i + 3 * step < hi; i += 4 * step) {
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[k] += p[i + k * step];
  }
  for (; i < hi; i += step) acc[0] += p[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// ---- Elementwise ----

// ATen's definitions; comparisons are written so that NaN propagates like std::min/std::max in
// ATen's kernels (clamp, hardswish, relu as clamp_min, minimum).
template <Unary kOp>
__device__ __forceinline__ float unary_op(float x, float a, float b) {
  if constexpr (kOp == Unary::kRelu) return isnan(x) ? x : (x < 0.0f ? 0.0f : x);
  if constexpr (kOp == Unary::kSigmoid) return 1.0f / (1.0f + expf(-x));
  if constexpr (kOp == Unary::kTanh) return tanhf(x);
  if constexpr (kOp == Unary::kGeluErf) return x * 0.5f * (1.0f + erff(x * 0.70710678118654752f));
  if constexpr (kOp == Unary::kSwish) return (1.0f / (1.0f + expf(-x))) * x;  // sigmoid(x) * x
  if constexpr (kOp == Unary::kHardswish) {
    const float t = x + 3.0f;
    const float clamped = (t < 0.0f) ? 0.0f : t;  // NaN stays NaN
    return x * (6.0f < clamped ? 6.0f : clamped) * (1.0f / 6.0f);
  }
  if constexpr (kOp == Unary::kLog) return logf(x);
  if constexpr (kOp == Unary::kLeakyRelu) return x > 0.0f ? x : x * a;
  if constexpr (kOp == Unary::kHardtanh) return isnan(x) ? x : fminf(fmaxf(x, a), b);
  if constexpr (kOp == Unary::kAddScalar) return x + a;
  if constexpr (kOp == Unary::kMulScalar) return x * a;
  if constexpr (kOp == Unary::kDivScalar) return x / a;
  if constexpr (kOp == Unary::kMinScalar) return isnan(x) ? x : (isnan(a) ? a : (a < x ? a : x));
  return x;
}

template <Unary kOp>
__global__ void unary_kernel(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = first_index<int64_t>(); i < n; i += grid_stride<int64_t>())
    y[i] = unary_op<kOp>(x[i], a, b);
}

template <Unary kOp>
__global__ void unary_vec4_kernel(const float4* x, float4* y, int64_t n4, float a, float b) {
  for (int64_t i = first_index<int64_t>(); i < n4; i += grid_stride<int64_t>()) {
    const float4 v = x[i];
    y[i] = make_float4(unary_op<kOp>(v.x, a, b), unary_op<kOp>(v.y, a, b), unary_op<kOp>(v.z, a, b),
                       unary_op<kOp>(v.w, a, b));
  }
}

template <Binary kOp>
__device__ __forceinline__ float binary_op(float a, float b) {
  if constexpr (kOp == Binary::kAdd) return a + b;
  if constexpr (kOp == Binary::kSub) return a - b;
  if constexpr (kOp == Binary::kXlogy) return isnan(b) ? b : (a == 0.0f ? 0.0f : a * logf(b));
  return a * b;
}

template <Binary kOp>
__global__ void binary_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = first_index<int64_t>(); i < n; i += grid_stride<int64_t>())
    out[i] = binary_op<kOp>(a[i], b[i]);
}

template <Binary kOp>
__global__ void binary_vec4_kernel(const float4* a, const float4* b, float4* out, int64_t n4) {
  for (int64_t i = first_index<int64_t>(); i < n4; i += grid_stride<int64_t>()) {
    const float4 u = a[i], v = b[i];
    out[i] = make_float4(binary_op<kOp>(u.x, v.x), binary_op<kOp>(u.y, v.y),
                         binary_op<kOp>(u.z, v.z), binary_op<kOp>(u.w, v.w));
  }
}

template <Binary kOp, typename I>
__global__ void __launch_bounds__(kLegacyThreads)
    broadcast_kernel(const float* a, const float* b, float* out, I n, IndexMap<I> map) {
  legacy_elementwise(n, out, [&](I i) {
    I ia, ib;
    map.offsets(i, ia, ib);
    return binary_op<kOp>(a[ia], b[ib]);
  });
}

// out[i] = x[offset(i)] (permute, channel shuffle): coalesced writes, strided reads.
template <typename I>
__global__ void gather_kernel(const float* x, float* out, I n, IndexMap<I> map) {
  for (I i = first_index<I>(); i < n; i += grid_stride<I>()) {
    I ia, unused;
    map.offsets(i, ia, unused);
    out[i] = x[ia];
  }
}

// ---- Pooling ----

// Three spatial dims (D, H, W); 1-D and 2-D pools have leading unit dims.
struct PoolGeometry {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
};

template <typename I>
struct PoolIndex {
  PoolGeometry g;
  Divider<I> out_d, out_h, out_w;
  explicit PoolIndex(const PoolGeometry& geometry)
      : g(geometry),
        out_d(static_cast<I>(geometry.out[0])),
        out_h(static_cast<I>(geometry.out[1])),
        out_w(static_cast<I>(geometry.out[2])) {}
};

// One output element per thread. Windows are clipped to the input; the average divides by the
// window clipped to the padded input, which with count_include_pad in floor mode is the kernel
// volume (ATen's pool_size). Max pooling propagates NaN like ATen.
template <bool kAverage, typename I>
__global__ void pool_kernel(const float* x, float* y, I n, PoolIndex<I> p) {
  const PoolGeometry& g = p.g;
  for (I i = first_index<I>(); i < n; i += grid_stride<I>()) {
    I q = i;
    const I ow = p.out_w.mod(q);
    q = p.out_w.div(q);
    const I oh = p.out_h.mod(q);
    q = p.out_h.div(q);
    const I od = p.out_d.mod(q);
    const I plane = p.out_d.div(q);
    const int64_t o[3] = {static_cast<int64_t>(od), static_cast<int64_t>(oh),
                          static_cast<int64_t>(ow)};
    int64_t lo[3], hi[3], divisor = 1;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      const int64_t start = o[a] * g.stride[a] - g.pad[a];
      const int64_t end = min(start + g.kernel[a], g.in[a] + g.pad[a]);
      divisor *= end - start;
      lo[a] = max(start, int64_t{0});
      hi[a] = min(end, g.in[a]);
    }
    const float* xp = x + static_cast<int64_t>(plane) * g.in[0] * g.in[1] * g.in[2];
    float acc = kAverage ? 0.0f : -INFINITY;
    for (int64_t d = lo[0]; d < hi[0]; ++d)
      for (int64_t h = lo[1]; h < hi[1]; ++h)
        for (int64_t w = lo[2]; w < hi[2]; ++w) {
          const float v = xp[(d * g.in[1] + h) * g.in[2] + w];
          if (kAverage) {
            acc += v;
          } else if (v > acc || isnan(v)) {
            acc = v;
          }
        }
    y[i] = kAverage ? acc / static_cast<float>(divisor) : acc;
  }
}

// ---- Row sums ----

// One warp per row of x (rows, len): out[r] = scale * sum(row r).
static __global__ void row_sum_warp_kernel(const float* x, int64_t rows, int64_t len, float scale,
                                           float* out) {
  const int64_t warps = grid_stride<int64_t>() / kWarp;
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = first_index<int64_t>() / kWarp; r < rows; r += warps) {
    const float s = warp_sum(strided_sum(x + r * len, lane, len, kWarp));
    if (lane == 0) out[r] = s * scale;
  }
}

// Block b sums chunk b % chunks of row b / chunks: out (rows, chunks) = scale * chunk sums.
static __global__ void row_sum_block_kernel(const float* x, int64_t rows, int64_t len,
                                            int64_t chunks, float scale, float* out) {
  const int64_t per = (len + chunks - 1) / chunks;
  for (int64_t b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
    const int64_t lo = (b % chunks) * per, hi = min(len, lo + per);
    const float* row = x + (b / chunks) * len;
    const float s = block_reduce<false>(strided_sum(row, lo + threadIdx.x, hi, blockDim.x));
    if (threadIdx.x == 0) out[b] = s * scale;
  }
}

// One block: out[0] = scale * sum(x[0..n)), in a fixed order.
static __global__ void sum_kernel(const float* x, int64_t n, float scale, float* out) {
  const float s = block_reduce<false>(strided_sum(x, threadIdx.x, n, blockDim.x));
  if (threadIdx.x == 0) out[0] = s * scale;
}

// ---- KL divergence ----

// xlogy(t, t) - t * log_input, each product rounded as the separate ATen kernels round it.
__device__ __forceinline__ float kl_term(float log_input, float target) {
  const float xlogy =
      isnan(target) ? target : (target == 0.0f ? 0.0f : __fmul_rn(target, logf(target)));
  return __fsub_rn(xlogy, __fmul_rn(target, log_input));
}

// partials[block] = the block's sum of kl terms over a grid-stride share of the n elements.
static __global__ void kl_div_partials_kernel(const float* log_input, const float* target,
                                              int64_t n, float* partials) {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t step = grid_stride<int64_t>();
  int64_t i = first_index<int64_t>();
  for (; i + 3 * step < n; i += 4 * step) {
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[k] += kl_term(log_input[i + k * step], target[i + k * step]);
  }
  for (; i < n; i += step) acc[0] += kl_term(log_input[i], target[i]);
  const float s = block_reduce<false>((acc[0] + acc[1]) + (acc[2] + acc[3]));
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// partials[block] = the block's sum over a grid-stride share of the n elements.
static __global__ void sum_partials_kernel(const float* x, int64_t n, float* partials) {
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t step = grid_stride<int64_t>();
  int64_t i = first_index<int64_t>();
  for (; i + 3 * step < n; i += 4 * step) {
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[k] += x[i + k * step];
  }
  for (; i < n; i += step) acc[0] += x[i];
  const float s = block_reduce<false>((acc[0] + acc[1]) + (acc[2] + acc[3]));
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// ---- Softmax ----

// Softmax along len for each (outer, inner) column, inner > 1: one thread per column, outer
// columns strided over blockIdx.x, inner ones over (blockIdx.y, threadIdx.x), as ATen's
// cunn_SpatialSoftMaxForward does when it keeps one thread per column.
static __global__ void softmax_columns_kernel(const float* x, float* y, int64_t outer, int64_t len,
                                              int64_t inner) {
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x)
    for (int64_t in = int64_t{blockIdx.y} * blockDim.x + threadIdx.x; in < inner;
         in += int64_t{blockDim.x} * gridDim.y) {
      const int64_t base = o * len * inner + in;
      float m = -INFINITY, s = 0.0f;
      for (int64_t j = 0; j < len; ++j) m = fmaxf(m, x[base + j * inner]);
      for (int64_t j = 0; j < len; ++j) s += expf(x[base + j * inner] - m);
      for (int64_t j = 0; j < len; ++j) y[base + j * inner] = expf(x[base + j * inner] - m) / s;
    }
}

// Softmax of each contiguous row of len elements: one warp per row.
static __global__ void softmax_rows_warp_kernel(const float* x, float* y, int64_t rows,
                                                int64_t len) {
  const int64_t warps = grid_stride<int64_t>() / kWarp;
  const int lane = threadIdx.x % kWarp;
  for (int64_t r = first_index<int64_t>() / kWarp; r < rows; r += warps) {
    const float* xr = x + r * len;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = lane; j < len; j += kWarp) m = fmaxf(m, xr[j]);
    m = warp_max(m);
    for (int64_t j = lane; j < len; j += kWarp) s += expf(xr[j] - m);
    s = warp_sum(s);
    for (int64_t j = lane; j < len; j += kWarp) y[r * len + j] = expf(xr[j] - m) / s;
  }
}

// Softmax of each contiguous row of len elements: one block per row.
static __global__ void softmax_rows_block_kernel(const float* x, float* y, int64_t rows,
                                                 int64_t len) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * len;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = block_reduce<true>(m);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += expf(xr[j] - m);
    s = block_reduce<false>(s);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) y[r * len + j] = expf(xr[j] - m) / s;
  }
}

// Softmax of each contiguous row of len elements, len % 4 == 0 and rows 16-byte aligned: one
// block per row, its three passes (max, sum of exp, write) each reading the row as float4, as
// ATen's cunn_SoftMaxForward does for rows longer than 1,024 (ILP 4, a power-of-two block of up to
// 1,024 threads; the row does not fit its 48 KB shared-memory variant at L3_031's 16,384 keys).
// With few, large blocks per SM the second and third passes mostly hit L2.
static __global__ void __launch_bounds__(1024)
    softmax_rows_vec4_kernel(const float* x, float* y, int64_t rows, int64_t len) {
  const int64_t vec_len = len / 4;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float4* xr = reinterpret_cast<const float4*>(x + r * len);
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < vec_len; j += blockDim.x) {
      const float4 v = xr[j];
      m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    m = block_reduce<true>(m);
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < vec_len; j += blockDim.x) {
      const float4 v = xr[j];
      s += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
    }
    s = block_reduce<false>(s);
    float4* yr = reinterpret_cast<float4*>(y + r * len);
    for (int64_t j = threadIdx.x; j < vec_len; j += blockDim.x) {
      const float4 v = xr[j];
      yr[j] =
          make_float4(expf(v.x - m) / s, expf(v.y - m) / s, expf(v.z - m) / s, expf(v.w - m) / s);
    }
  }
}

// ---- Normalization ----

// Statistics groups: group g holds `runs` runs of `run_len` contiguous elements, `run_stride`
// apart, the first at g * group_stride (batch norm: g = channel, runs = N; otherwise one run).
struct NormLayout {
  int64_t groups;
  int64_t runs;
  int64_t run_len;
  int64_t run_stride;
  int64_t group_stride;
  float eps;
};

// Element i belongs to group (i / group_stride) % groups and uses affine parameter
// (i / affine_inner) % affine_count.
template <typename I>
struct NormIndex {
  Divider<I> group_stride, groups, affine_inner, affine_count;
  NormIndex(const NormLayout& layout, int64_t inner, int64_t count)
      : group_stride(static_cast<I>(layout.group_stride)),
        groups(static_cast<I>(layout.groups)),
        affine_inner(static_cast<I>(inner)),
        affine_count(static_cast<I>(count)) {}
  __device__ I group(I i) const { return groups.mod(group_stride.div(i)); }
  __device__ I channel(I i) const { return affine_count.mod(affine_inner.div(i)); }
};

__device__ inline float inverse_std(const Welford& w, float eps) {
  return 1.0f / sqrtf(w.m2 / w.n + eps);  // biased variance, like the training-mode norms
}

template <typename I>
__device__ __forceinline__ float normalized(float v, float mean, float rstd, const float* weight,
                                            const float* bias, const NormIndex<I>& index, I i) {
  float y = (v - mean) * rstd;
  if (weight != nullptr || bias != nullptr) {
    const I c = index.channel(i);
    if (weight != nullptr) y *= weight[c];
    if (bias != nullptr) y += bias[c];
  }
  return y;
}

// Block b reduces chunk b % chunks of group b / chunks. With one chunk per group it writes the
// group's (mean, rstd) to stats; otherwise its Welford triple to partials.
static __global__ void norm_stats_kernel(const float* x, NormLayout layout, int64_t chunks,
                                         float* partials, float* stats) {
  const int64_t group_len = layout.runs * layout.run_len;
  const int64_t per = (group_len + chunks - 1) / chunks;
  for (int64_t b = blockIdx.x; b < layout.groups * chunks; b += gridDim.x) {
    const int64_t g = b / chunks, lo = (b % chunks) * per, hi = min(group_len, lo + per);
    Welford w;
    for (int64_t r = lo / layout.run_len; lo < hi && r <= (hi - 1) / layout.run_len; ++r) {
      const float* run = x + g * layout.group_stride + r * layout.run_stride;
      const int64_t j_lo = max(lo - r * layout.run_len, int64_t{0});
      const int64_t j_hi = min(hi - r * layout.run_len, layout.run_len);
#pragma unroll 4
      for (int64_t j = j_lo + threadIdx.x; j < j_hi; j += blockDim.x) w.add(run[j]);
    }
    w = block_merge(w);
    if (threadIdx.x != 0) continue;
    if (chunks == 1) {
      stats[2 * g] = w.mean;
      stats[2 * g + 1] = inverse_std(w, layout.eps);
    } else {
      partials[3 * b] = w.n;
      partials[3 * b + 1] = w.mean;
      partials[3 * b + 2] = w.m2;
    }
  }
}

// One thread per group merges its chunks' Welford triples in order.
static __global__ void norm_combine_kernel(NormLayout layout, int64_t chunks, const float* partials,
                                           float* stats) {
  for (int64_t g = first_index<int64_t>(); g < layout.groups; g += grid_stride<int64_t>()) {
    Welford w;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* p = partials + 3 * (g * chunks + c);
      w = merge(w, Welford{p[0], p[1], p[2]});
    }
    stats[2 * g] = w.mean;
    stats[2 * g + 1] = inverse_std(w, layout.eps);
  }
}

// ATen's GroupNorm applies the statistics as an elementwise op launched the legacy way.
template <typename I>
__global__ void __launch_bounds__(kLegacyThreads)
    normalize_kernel(const float* x, const float* stats, NormIndex<I> index, const float* weight,
                     const float* bias, float* y, I n) {
  legacy_elementwise(n, y, [&](I i) {
    const I g = index.group(i);
    return normalized(x[i], stats[2 * g], stats[2 * g + 1], weight, bias, index, i);
  });
}

// LayerNorm as ATen's vectorized_layer_norm_kernel runs it (rows of len % 4 == 0, 16-byte
// aligned): one block of 128 threads (4 warps) per row; float4 loads, a Welford triple per thread
// (ATen's cuWelfordOnlineSum), a shuffle-down reduction within each warp and a two-step tree
// across the 4 warps through shared memory (its cuWelfordMuSigma2, with cuWelfordCombine's one
// reciprocal per merge), the row's (mean, rstd) broadcast through shared memory, then a second
// float4 pass writing (x - mean) rstd w + b with w and b read as float4. For short rows most of
// the block idles, as in eager (L2_034: 64-element rows, 16 threads with data).
constexpr int kLayerNormThreads = 128;
constexpr int kLayerNormWarps = kLayerNormThreads / kWarp;

struct WelfordLn {  // ATen's WelfordDataLN: mean, sum of squared deviations, count
  float mean = 0, m2 = 0, n = 0;
  __device__ void add(float x) {
    const float delta = x - mean;
    n += 1.0f;
    mean += delta * (1.0f / n);
    m2 += delta * (x - mean);
  }
};

__device__ inline WelfordLn combine_ln(const WelfordLn& b, const WelfordLn& a) {
  const float delta = b.mean - a.mean, n = a.n + b.n;
  if (!(n > 0.0f)) return {};
  const float coef = 1.0f / n, na = a.n * coef, nb = b.n * coef;
  return {na * a.mean + nb * b.mean, a.m2 + b.m2 + delta * delta * a.n * nb, n};
}

// The row's statistics, complete in every thread of the block.
__device__ inline WelfordLn block_welford_ln(WelfordLn w) {
  __shared__ WelfordLn partial[kLayerNormWarps];
  __shared__ WelfordLn total;
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const WelfordLn other{__shfl_down_sync(0xffffffffu, w.mean, offset),
                          __shfl_down_sync(0xffffffffu, w.m2, offset),
                          __shfl_down_sync(0xffffffffu, w.n, offset)};
    w = combine_ln(other, w);
  }
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int offset = kLayerNormWarps / 2; offset > 0; offset /= 2) {
    if (lane == 0 && warp >= offset && warp < 2 * offset) partial[warp - offset] = w;
    __syncthreads();
    if (lane == 0 && warp < offset) w = combine_ln(partial[warp], w);
    __syncthreads();
  }
  if (threadIdx.x == 0) total = w;
  __syncthreads();
  return total;
}

static __global__ void __launch_bounds__(kLayerNormThreads)
    layer_norm_rows_vec4_kernel(const float* x, int64_t rows, int64_t len, float eps,
                                const float* weight, const float* bias, float* y) {
  const int64_t vecs = len / 4;
  const bool wide_affine =
      reinterpret_cast<uintptr_t>(weight) % 16 == 0 && reinterpret_cast<uintptr_t>(bias) % 16 == 0;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float4* xr = reinterpret_cast<const float4*>(x + r * len);
    WelfordLn w;
    for (int64_t j = threadIdx.x; j < vecs; j += blockDim.x) {
      const float4 v = xr[j];
      w.add(v.x), w.add(v.y), w.add(v.z), w.add(v.w);
    }
    w = block_welford_ln(w);
    const float rstd = rsqrtf(w.m2 / w.n + eps);  // ATen: c10::cuda::compat::rsqrt
    float4* yr = reinterpret_cast<float4*>(y + r * len);
    for (int64_t j = threadIdx.x; j < vecs; j += blockDim.x) {
      const float4 v = xr[j];
      float o[4] = {(v.x - w.mean) * rstd, (v.y - w.mean) * rstd, (v.z - w.mean) * rstd,
                    (v.w - w.mean) * rstd};
      if (weight != nullptr && bias != nullptr && wide_affine) {
        const float4 g = reinterpret_cast<const float4*>(weight)[j];
        const float4 b = reinterpret_cast<const float4*>(bias)[j];
        o[0] = o[0] * g.x + b.x, o[1] = o[1] * g.y + b.y, o[2] = o[2] * g.z + b.z,
        o[3] = o[3] * g.w + b.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (weight != nullptr) o[e] *= weight[4 * j + e];
          if (bias != nullptr) o[e] += bias[4 * j + e];
        }
      }
      yr[j] = make_float4(o[0], o[1], o[2], o[3]);
    }
  }
}

// Groups of one short run: one warp computes a group's statistics and normalizes it.
template <typename I>
__global__ void norm_rows_warp_kernel(const float* x, NormLayout layout, NormIndex<I> index,
                                      const float* weight, const float* bias, float* y) {
  const int64_t warps = grid_stride<int64_t>() / kWarp, len = layout.run_len;
  const int lane = threadIdx.x % kWarp;
  for (int64_t g = first_index<int64_t>() / kWarp; g < layout.groups; g += warps) {
    const float* xg = x + g * len;
    Welford w;
    for (int64_t j = lane; j < len; j += kWarp) w.add(xg[j]);
    w = warp_merge(w);
    const float rstd = inverse_std(w, layout.eps);
    for (int64_t j = lane; j < len; j += kWarp) {
      const I i = static_cast<I>(g * len + j);
      y[i] = normalized(xg[j], w.mean, rstd, weight, bias, index, i);
    }
  }
}

}  // namespace kb::eager

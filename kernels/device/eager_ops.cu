// The eager ops of eager_ops.h: one kernel per op (two or three for the reductions that need a
// second pass), each a plain grid-stride or block-per-row CUDA kernel in namespace kb, so that the
// executor counts them as our own.
//
// Numerics follow ATen's CUDA kernels where that is cheap: expf/logf/erff/tanhf (never the
// intrinsics), fp32 accumulation, Welford statistics, 1 / sqrtf for the inverse deviation, the
// mean as sum * (outputs / inputs) like MeanOps, x / scalar as x * (1 / scalar) like
// div_true_kernel_cuda with a CPU scalar. Where an eager op ran as two ATen kernels but runs here
// as one (swish, kl_div's terms) the intermediate is rounded explicitly (__fmul_rn) so nvcc cannot
// contract it into an FMA that eager never does.
//
// Indexing: the elementwise kernels that decompose indices take an index type I: uint32_t with
// magic-number division when every index fits in 31 bits (like ATen's 32-bit indexing), uint64_t
// with plain division otherwise, so tensors of 2^31 elements and more stay correct.
#include "kernels/device/eager_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

#include "kernels/device/cuda_check.h"
#include "kernels/device/eager_kernels.cuh"

namespace kb::eager {
namespace {

// ---- Launch helpers ----

constexpr int64_t kMaxGridBlocks = int64_t{1} << 20;
// Blocks of a grid-wide reduction: a fixed count (about 8 resident blocks per SM on an H200), so
// the partial sums and hence the result do not depend on the device.
constexpr int kReduceBlocks = 1024;
// A reduction chunk below this many elements is not worth a block of its own.
constexpr int64_t kMinChunk = 16384;
// Groups (rows) at most this long are reduced by one warp each.
constexpr int64_t kWarpRowMax = 2048;

unsigned grid_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + threads - 1) / threads, 1, kMaxGridBlocks));
}

bool fits_32(int64_t n) {
  return n < (int64_t{1} << 31);
}

// The launch status of the kernel just enqueued (bad configuration, no device, ...).
Status launched(const char* kernel) {
  return cuda_status(cudaGetLastError(), kernel, __FILE__, __LINE__);
}

std::string shape_str(const DeviceTensor& t) {
  return shape_to_string(t.shape);
}

Status shape_error(const char* op, const std::string& message) {
  return Status::invalid_argument(std::string("eager::") + op + ": " + message);
}

int64_t product(const Shape& s, size_t first, size_t last) {
  int64_t n = 1;
  for (size_t d = first; d < last; ++d) n *= s[d];
  return n;
}

// ---- Scratch memory for multi-pass reductions ----

// A private stream-ordered pool per device that keeps what it is given back: the partial sums of
// a reduction come and go on every call (as PyTorch's caching allocator serves them), without
// mapping memory each time and without state shared between streams.
Result<cudaMemPool_t> scratch_pool() {
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;
  int device = 0;
  KB_CUDA_TRY(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools.find(device);
  if (it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  KB_CUDA_TRY(cudaMemPoolCreate(&pool, &props));
  uint64_t keep_all = UINT64_MAX;
  KB_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  pools.emplace(device, pool);
  return pool;
}

// Runs body(float* scratch) with `floats` floats of scratch valid on `stream` until body's work
// is done; the memory returns to the pool in stream order.
template <typename Body>
Status with_scratch(int64_t floats, cudaStream_t stream, Body body) {
  Result<cudaMemPool_t> pool = scratch_pool();
  if (!pool.is_ok()) return pool.status();
  void* scratch = nullptr;
  KB_CUDA_TRY(cudaMallocFromPoolAsync(&scratch, static_cast<size_t>(floats) * sizeof(float),
                                      pool.value(), stream));
  Status s = body(static_cast<float*>(scratch));
  KB_CUDA_TRY(cudaFreeAsync(scratch, stream));
  return s;
}

// ---- Unary and binary ----

bool aligned_16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <Unary kOp>
Status launch_unary(const float* x, float* y, int64_t n, cudaStream_t stream, float a, float b) {
  if (aligned_16(x) && aligned_16(y)) {
    const int64_t n4 = n / 4;
    if (n4 > 0) {
      unary_vec4_kernel<kOp><<<grid_for(n4), kThreads, 0, stream>>>(
          reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4, a, b);
    }
    if (n % 4 != 0) {
      unary_kernel<kOp><<<1, kThreads, 0, stream>>>(x + 4 * n4, y + 4 * n4, n % 4, a, b);
    }
  } else {
    unary_kernel<kOp><<<grid_for(n), kThreads, 0, stream>>>(x, y, n, a, b);
  }
  return launched("unary kernel launch");
}

template <Binary kOp>
Status launch_same_shape(const float* a, const float* b, float* out, int64_t n,
                         cudaStream_t stream) {
  if (aligned_16(a) && aligned_16(b) && aligned_16(out)) {
    const int64_t n4 = n / 4;
    if (n4 > 0) {
      binary_vec4_kernel<kOp><<<grid_for(n4), kThreads, 0, stream>>>(
          reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
          reinterpret_cast<float4*>(out), n4);
    }
    if (n % 4 != 0) {
      binary_kernel<kOp><<<1, kThreads, 0, stream>>>(a + 4 * n4, b + 4 * n4, out + 4 * n4, n % 4);
    }
  } else {
    binary_kernel<kOp><<<grid_for(n), kThreads, 0, stream>>>(a, b, out, n);
  }
  return launched("binary kernel launch");
}

// Strided view of an operand broadcast to the output's shape, dims merged where both operands
// stay contiguous across them (a per-channel bias on (N, C, H, W) becomes (N, C, H*W)).
struct BroadcastPlan {
  Shape sizes;                  // innermost first
  std::vector<int64_t> sa, sb;  // element strides of a and b, 0 where broadcast
};

Result<BroadcastPlan> plan_broadcast(const DeviceTensor& a, const DeviceTensor& b,
                                     const DeviceTensor& out) {
  const size_t rank = out.shape.size();
  if (a.shape.size() > rank || b.shape.size() > rank) {
    return shape_error("binary", "a " + shape_str(a) + " or b " + shape_str(b) +
                                     " has more dims than out " + shape_str(out));
  }
  BroadcastPlan p;
  int64_t stride_a = 1, stride_b = 1;
  for (size_t d = 0; d < rank; ++d) {  // d counts from the innermost dim
    const int64_t size = out.shape[rank - 1 - d];
    const int64_t da = d < a.shape.size() ? a.shape[a.shape.size() - 1 - d] : 1;
    const int64_t db = d < b.shape.size() ? b.shape[b.shape.size() - 1 - d] : 1;
    if ((da != size && da != 1) || (db != size && db != 1) || (size != std::max(da, db))) {
      return shape_error("binary", "a " + shape_str(a) + " and b " + shape_str(b) +
                                       " do not broadcast to out " + shape_str(out));
    }
    const int64_t sa = da == 1 ? 0 : stride_a, sb = db == 1 ? 0 : stride_b;
    stride_a *= da;
    stride_b *= db;
    if (size == 1) continue;
    const size_t last = p.sizes.size() - 1;
    if (!p.sizes.empty() && sa == p.sa[last] * p.sizes[last] && sb == p.sb[last] * p.sizes[last]) {
      p.sizes[last] *= size;  // merges into the inner dim: both operands continue contiguously
      continue;
    }
    p.sizes.push_back(size);
    p.sa.push_back(sa);
    p.sb.push_back(sb);
  }
  if (p.sizes.size() > static_cast<size_t>(kMaxRank))
    return shape_error("binary", "out " + shape_str(out) + " has too many dims");
  return p;
}

template <typename I>
IndexMap<I> index_map(const Shape& sizes, const std::vector<int64_t>& sa,
                      const std::vector<int64_t>& sb) {
  IndexMap<I> m;
  m.rank = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    m.size[d] = Divider<I>(static_cast<I>(sizes[d]));
    m.stride_a[d] = static_cast<I>(sa[d]);
    m.stride_b[d] = sb.empty() ? 0 : static_cast<I>(sb[d]);
  }
  return m;
}

template <Binary kOp>
Status launch_broadcast(const DeviceTensor& a, const DeviceTensor& b, const DeviceTensor& out,
                        cudaStream_t stream) {
  Result<BroadcastPlan> plan = plan_broadcast(a, b, out);
  if (!plan.is_ok()) return plan.status();
  const BroadcastPlan& p = plan.value();
  const int64_t n = out.numel();
  if (fits_32(n)) {
    broadcast_kernel<kOp, uint32_t>
        <<<grid_for(n), kThreads, 0, stream>>>(a.data, b.data, out.data, static_cast<uint32_t>(n),
                                               index_map<uint32_t>(p.sizes, p.sa, p.sb));
  } else {
    broadcast_kernel<kOp, uint64_t>
        <<<grid_for(n), kThreads, 0, stream>>>(a.data, b.data, out.data, static_cast<uint64_t>(n),
                                               index_map<uint64_t>(p.sizes, p.sa, p.sb));
  }
  return launched("broadcast kernel launch");
}

template <Binary kOp>
Status launch_binary(const DeviceTensor& a, const DeviceTensor& b, const DeviceTensor& out,
                     cudaStream_t stream) {
  if (out.numel() == 0) return Status::ok();
  if (a.shape == out.shape && b.shape == out.shape)
    return launch_same_shape<kOp>(a.data, b.data, out.data, out.numel(), stream);
  return launch_broadcast<kOp>(a, b, out, stream);
}

// ---- Pooling ----

Result<PoolGeometry> plan_pool(const char* op, const DeviceTensor& x,
                               const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& stride,
                               const std::vector<int64_t>& padding, const DeviceTensor& out) {
  const size_t rank = kernel.size();
  if (rank < 1 || rank > 3 || x.shape.size() != rank + 2 ||
      (!stride.empty() && stride.size() != rank) || (!padding.empty() && padding.size() != rank)) {
    return shape_error(op, "x " + shape_str(x) +
                               ": kernel (and stride, padding when given) need "
                               "one entry per spatial dim");
  }
  PoolGeometry g;
  const size_t lead = 3 - rank;  // 1-D and 2-D pools run with leading unit dims
  for (size_t a = 0; a < 3; ++a) {
    const bool real = a >= lead;
    g.in[a] = real ? x.shape[2 + a - lead] : 1;
    g.kernel[a] = real ? kernel[a - lead] : 1;
    g.stride[a] =
        real ? (stride.empty() ? g.kernel[a] : stride[a - lead]) : 1;  // PyTorch's default
    g.pad[a] = real && !padding.empty() ? padding[a - lead] : 0;
    if (g.kernel[a] < 1 || g.stride[a] < 1 || g.pad[a] < 0 || 2 * g.pad[a] > g.kernel[a])
      return shape_error(op, "kernel and stride must be >= 1, 0 <= padding <= kernel / 2");
    if (g.in[a] + 2 * g.pad[a] < g.kernel[a])
      return shape_error(op, "x " + shape_str(x) + ": the window is larger than the padded input");
    g.out[a] = (g.in[a] + 2 * g.pad[a] - g.kernel[a]) / g.stride[a] + 1;  // floor mode
  }
  Shape expected{x.shape[0], x.shape[1]};
  for (size_t a = lead; a < 3; ++a) expected.push_back(g.out[a]);
  if (out.shape != expected) {
    return shape_error(op, "x " + shape_str(x) + " pools to " + shape_to_string(expected) +
                               ", not out " + shape_str(out));
  }
  return g;
}

template <bool kAverage>
Status launch_pool(const char* op, const DeviceTensor& x, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                   const DeviceTensor& out, cudaStream_t stream) {
  Result<PoolGeometry> g = plan_pool(op, x, kernel, stride, padding, out);
  if (!g.is_ok()) return g.status();
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  if (fits_32(std::max(n, x.numel()))) {
    pool_kernel<kAverage, uint32_t><<<grid_for(n), kThreads, 0, stream>>>(
        x.data, out.data, static_cast<uint32_t>(n), PoolIndex<uint32_t>(g.value()));
  } else {
    pool_kernel<kAverage, uint64_t><<<grid_for(n), kThreads, 0, stream>>>(
        x.data, out.data, static_cast<uint64_t>(n), PoolIndex<uint64_t>(g.value()));
  }
  return launched(op);
}

// ---- Row sums (mean) ----

// out[r] = scale * sum of row r of x (rows, len): a warp per short row, else blocks per row
// (several per row, with a second pass, when there are too few rows to fill the GPU).
Status row_sums(const float* x, int64_t rows, int64_t len, float scale, float* out,
                cudaStream_t stream) {
  if (len <= kWarpRowMax) {
    row_sum_warp_kernel<<<grid_for(rows * kWarp), kThreads, 0, stream>>>(x, rows, len, scale, out);
    return launched("row_sum_warp_kernel");
  }
  const int64_t chunks =
      std::clamp<int64_t>((kReduceBlocks + rows - 1) / rows, 1, (len + kMinChunk - 1) / kMinChunk);
  if (chunks == 1) {
    row_sum_block_kernel<<<grid_for(rows, 1), kThreads, 0, stream>>>(x, rows, len, 1, scale, out);
    return launched("row_sum_block_kernel");
  }
  return with_scratch(rows * chunks, stream, [&](float* partials) {
    row_sum_block_kernel<<<grid_for(rows * chunks, 1), kThreads, 0, stream>>>(x, rows, len, chunks,
                                                                              1.0f, partials);
    KB_TRY(launched("row_sum_block_kernel"));
    row_sum_warp_kernel<<<grid_for(rows * kWarp), kThreads, 0, stream>>>(partials, rows, chunks,
                                                                         scale, out);
    return launched("row_sum_warp_kernel");
  });
}

// ---- Normalization ----

// Welford statistics per group, then the normalization as its own elementwise pass (the eager
// way: statistics kernel, then transform kernel). Short groups are normalized by the warp that
// reduced them.
template <typename I>
Status normalize_with(const float* x, const NormLayout& layout, const NormIndex<I>& index,
                      const float* weight, const float* bias, float* y, cudaStream_t stream) {
  const int64_t group_len = layout.runs * layout.run_len;
  const int64_t n = layout.groups * group_len;
  if (layout.runs == 1 && group_len <= kWarpRowMax) {
    norm_rows_warp_kernel<I><<<grid_for(layout.groups * kWarp), kThreads, 0, stream>>>(
        x, layout, index, weight, bias, y);
    return launched("norm_rows_warp_kernel");
  }
  const int64_t chunks = std::clamp<int64_t>((kReduceBlocks + layout.groups - 1) / layout.groups, 1,
                                             (group_len + kMinChunk - 1) / kMinChunk);
  return with_scratch(layout.groups * (2 + 3 * chunks), stream, [&](float* scratch) {
    float* stats = scratch;                         // (groups, 2): mean, rstd
    float* partials = scratch + 2 * layout.groups;  // (groups, chunks, 3): Welford n, mean, m2
    norm_stats_kernel<<<grid_for(layout.groups * chunks, 1), kThreads, 0, stream>>>(
        x, layout, chunks, partials, stats);
    KB_TRY(launched("norm_stats_kernel"));
    if (chunks > 1) {
      norm_combine_kernel<<<grid_for(layout.groups), kThreads, 0, stream>>>(layout, chunks,
                                                                            partials, stats);
      KB_TRY(launched("norm_combine_kernel"));
    }
    normalize_kernel<I>
        <<<grid_for(n), kThreads, 0, stream>>>(x, stats, index, weight, bias, y, static_cast<I>(n));
    return launched("normalize_kernel");
  });
}

// `affine_inner`, `affine_count`: the affine parameter of element i is (i / inner) % count.
Status normalize(const float* x, const NormLayout& layout, int64_t affine_inner,
                 int64_t affine_count, const float* weight, const float* bias, float* y,
                 cudaStream_t stream) {
  const int64_t n = layout.groups * layout.runs * layout.run_len;
  if (n == 0) return Status::ok();
  if (fits_32(n)) {
    return normalize_with(x, layout, NormIndex<uint32_t>(layout, affine_inner, affine_count),
                          weight, bias, y, stream);
  }
  return normalize_with(x, layout, NormIndex<uint64_t>(layout, affine_inner, affine_count), weight,
                        bias, y, stream);
}

Status check_same_shape(const char* op, const DeviceTensor& x, const DeviceTensor& out,
                        size_t min_rank) {
  if (x.shape != out.shape || x.shape.size() < min_rank) {
    return shape_error(op, "x " + shape_str(x) + " and out " + shape_str(out) +
                               " must have the same shape of rank >= " + std::to_string(min_rank));
  }
  return Status::ok();
}

// ---- Permutations ----

template <typename I>
Status launch_gather(const float* x, float* out, int64_t n, const Shape& sizes,
                     const std::vector<int64_t>& strides, cudaStream_t stream) {
  gather_kernel<I><<<grid_for(n), kThreads, 0, stream>>>(x, out, static_cast<I>(n),
                                                         index_map<I>(sizes, strides, {}));
  return launched("gather_kernel");
}

// out[i] = x[offset(i)], with the output's dims (innermost first) and the input strides they
// read; dims that stay adjacent in the input are merged.
Status gather(const float* x, float* out, const Shape& sizes_outer_first,
              const std::vector<int64_t>& strides_outer_first, cudaStream_t stream) {
  Shape sizes;
  std::vector<int64_t> strides;
  for (size_t k = sizes_outer_first.size(); k-- > 0;) {
    const int64_t size = sizes_outer_first[k], stride = strides_outer_first[k];
    if (size == 1) continue;
    if (!sizes.empty() && stride == strides.back() * sizes.back()) {
      sizes.back() *= size;
      continue;
    }
    sizes.push_back(size);
    strides.push_back(stride);
  }
  if (sizes.size() > static_cast<size_t>(kMaxRank))
    return Status::invalid_argument("eager::permute: too many dims");
  const int64_t n = product(sizes_outer_first, 0, sizes_outer_first.size());
  if (n == 0) return Status::ok();
  if (sizes.empty()) {  // a single element
    sizes.push_back(1);
    strides.push_back(0);
  }
  if (fits_32(n)) return launch_gather<uint32_t>(x, out, n, sizes, strides, stream);
  return launch_gather<uint64_t>(x, out, n, sizes, strides, stream);
}

}  // namespace

Status unary(Unary op, const float* x, float* y, int64_t n, cudaStream_t stream, float a, float b) {
  if (n <= 0) return Status::ok();
  switch (op) {
    case Unary::kRelu:
      return launch_unary<Unary::kRelu>(x, y, n, stream, a, b);
    case Unary::kSigmoid:
      return launch_unary<Unary::kSigmoid>(x, y, n, stream, a, b);
    case Unary::kTanh:
      return launch_unary<Unary::kTanh>(x, y, n, stream, a, b);
    case Unary::kGeluErf:
      return launch_unary<Unary::kGeluErf>(x, y, n, stream, a, b);
    case Unary::kSwish:
      return launch_unary<Unary::kSwish>(x, y, n, stream, a, b);
    case Unary::kHardswish:
      return launch_unary<Unary::kHardswish>(x, y, n, stream, a, b);
    case Unary::kLog:
      return launch_unary<Unary::kLog>(x, y, n, stream, a, b);
    case Unary::kLeakyRelu:
      return launch_unary<Unary::kLeakyRelu>(x, y, n, stream, a, b);
    case Unary::kHardtanh:
      return launch_unary<Unary::kHardtanh>(x, y, n, stream, a, b);
    case Unary::kAddScalar:
      return launch_unary<Unary::kAddScalar>(x, y, n, stream, a, b);
    case Unary::kMulScalar:
      return launch_unary<Unary::kMulScalar>(x, y, n, stream, a, b);
    // ATen divides by a CPU scalar as a multiplication by its fp32 reciprocal.
    case Unary::kDivScalar:
      return launch_unary<Unary::kMulScalar>(x, y, n, stream, 1.0f / a, b);
    case Unary::kMinScalar:
      return launch_unary<Unary::kMinScalar>(x, y, n, stream, a, b);
  }
  return Status::invalid_argument("eager::unary: unknown op");
}

Status binary(Binary op, const DeviceTensor& a, const DeviceTensor& b, const DeviceTensor& out,
              cudaStream_t stream) {
  switch (op) {
    case Binary::kAdd:
      return launch_binary<Binary::kAdd>(a, b, out, stream);
    case Binary::kSub:
      return launch_binary<Binary::kSub>(a, b, out, stream);
    case Binary::kMul:
      return launch_binary<Binary::kMul>(a, b, out, stream);
    case Binary::kXlogy:
      return launch_binary<Binary::kXlogy>(a, b, out, stream);
  }
  return Status::invalid_argument("eager::binary: unknown op");
}

Status max_pool(const DeviceTensor& x, const std::vector<int64_t>& kernel,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                const DeviceTensor& out, cudaStream_t stream) {
  return launch_pool<false>("max_pool", x, kernel, stride, padding, out, stream);
}

Status avg_pool(const DeviceTensor& x, const std::vector<int64_t>& kernel,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                const DeviceTensor& out, cudaStream_t stream) {
  return launch_pool<true>("avg_pool", x, kernel, stride, padding, out, stream);
}

Status mean_trailing(const DeviceTensor& x, int count, const DeviceTensor& out,
                     cudaStream_t stream) {
  const size_t rank = x.shape.size();
  if (count < 1 || static_cast<size_t>(count) > rank) {
    return shape_error("mean_trailing", "cannot reduce " + std::to_string(count) +
                                            " trailing dims of x " + shape_str(x));
  }
  const int64_t outer = product(x.shape, 0, rank - count),
                inner = product(x.shape, rank - count, rank);
  if (out.numel() != outer) {
    return shape_error("mean_trailing", "out " + shape_str(out) + " must have " +
                                            std::to_string(outer) + " elements for x " +
                                            shape_str(x));
  }
  if (outer == 0) return Status::ok();
  // MeanOps' factor: float(outputs) / inputs, applied to the fp32 sum.
  const float factor = static_cast<float>(outer) / static_cast<float>(x.numel());
  return row_sums(x.data, outer, inner, factor, out.data, stream);
}

Status batch_norm_train(const DeviceTensor& x, const float* weight, const float* bias, float eps,
                        const DeviceTensor& out, cudaStream_t stream) {
  KB_TRY(check_same_shape("batch_norm_train", x, out, 2));
  const int64_t channels = x.shape[1], plane = product(x.shape, 2, x.shape.size());
  if (x.shape[0] * plane <= 1)
    return shape_error("batch_norm_train",
                       "x " + shape_str(x) + ": need more than 1 value per channel");
  const NormLayout layout{channels, x.shape[0], plane, channels * plane, plane, eps};
  return normalize(x.data, layout, plane, channels, weight, bias, out.data, stream);
}

Status instance_norm(const DeviceTensor& x, float eps, const DeviceTensor& out,
                     cudaStream_t stream) {
  KB_TRY(check_same_shape("instance_norm", x, out, 3));
  const int64_t plane = product(x.shape, 2, x.shape.size());
  if (plane <= 1)
    return shape_error("instance_norm", "x " + shape_str(x) + ": need more than 1 spatial element");
  const NormLayout layout{x.shape[0] * x.shape[1], 1, plane, plane, plane, eps};
  return normalize(x.data, layout, 1, 1, nullptr, nullptr, out.data, stream);
}

Status group_norm(const DeviceTensor& x, int64_t groups, const float* weight, const float* bias,
                  float eps, const DeviceTensor& out, cudaStream_t stream) {
  KB_TRY(check_same_shape("group_norm", x, out, 2));
  const int64_t channels = x.shape[1], plane = product(x.shape, 2, x.shape.size());
  if (groups < 1 || channels % groups != 0) {
    return shape_error("group_norm", std::to_string(groups) +
                                         " groups must divide the channels "
                                         "of x " +
                                         shape_str(x));
  }
  const int64_t group_len = channels / groups * plane;
  const NormLayout layout{x.shape[0] * groups, 1, group_len, group_len, group_len, eps};
  return normalize(x.data, layout, plane, channels, weight, bias, out.data, stream);
}

Status layer_norm(const DeviceTensor& x, int64_t normalized_numel, const float* weight,
                  const float* bias, float eps, const DeviceTensor& out, cudaStream_t stream) {
  KB_TRY(check_same_shape("layer_norm", x, out, 1));
  if (normalized_numel < 1 || x.numel() % normalized_numel != 0) {
    return shape_error("layer_norm", "x " + shape_str(x) + " does not split into rows of " +
                                         std::to_string(normalized_numel));
  }
  const NormLayout layout{
      x.numel() / normalized_numel, 1, normalized_numel, normalized_numel, normalized_numel, eps};
  return normalize(x.data, layout, 1, normalized_numel, weight, bias, out.data, stream);
}

Status softmax(const DeviceTensor& x, int dim, const DeviceTensor& out, cudaStream_t stream) {
  KB_TRY(check_same_shape("softmax", x, out, 1));
  if (dim < 0 || static_cast<size_t>(dim) >= x.shape.size())
    return shape_error("softmax",
                       "dim " + std::to_string(dim) + " out of range for x " + shape_str(x));
  const int64_t outer = product(x.shape, 0, dim), len = x.shape[dim];
  const int64_t inner = product(x.shape, dim + 1, x.shape.size());
  if (x.numel() == 0) return Status::ok();
  if (inner > 1) {
    softmax_columns_kernel<<<grid_for(outer * inner), kThreads, 0, stream>>>(x.data, out.data,
                                                                             outer, len, inner);
  } else if (len <= kWarpRowMax) {
    softmax_rows_warp_kernel<<<grid_for(outer * kWarp), kThreads, 0, stream>>>(x.data, out.data,
                                                                               outer, len);
  } else {
    softmax_rows_block_kernel<<<grid_for(outer, 1), kThreads, 0, stream>>>(x.data, out.data, outer,
                                                                           len);
  }
  return launched("softmax kernel launch");
}

Status channel_shuffle(const DeviceTensor& x, int64_t groups, const DeviceTensor& out,
                       cudaStream_t stream) {
  KB_TRY(check_same_shape("channel_shuffle", x, out, 2));
  const int64_t channels = x.shape[1], plane = product(x.shape, 2, x.shape.size());
  if (groups < 1 || channels % groups != 0) {
    return shape_error(
        "channel_shuffle",
        std::to_string(groups) + " groups must divide the channels of x " + shape_str(x));
  }
  // out (N, C/g, g, S) reads x viewed as (N, g, C/g, S): strides (C*S, S, (C/g)*S, 1).
  const int64_t per_group = channels / groups;
  return gather(x.data, out.data, {x.shape[0], per_group, groups, plane},
                {channels * plane, plane, per_group * plane, 1}, stream);
}

Status sum_all(const DeviceTensor& x, float* out, cudaStream_t stream) {
  return with_scratch(kReduceBlocks, stream, [&](float* partials) {
    sum_partials_kernel<<<kReduceBlocks, kThreads, 0, stream>>>(x.data, x.numel(), partials);
    KB_TRY(launched("sum_partials_kernel"));
    sum_kernel<<<1, 1024, 0, stream>>>(partials, kReduceBlocks, 1.0f, out);
    return launched("sum_kernel");
  });
}

Status kl_div_batchmean(const DeviceTensor& log_input, const DeviceTensor& target, float* out,
                        cudaStream_t stream) {
  if (log_input.shape != target.shape || log_input.shape.empty()) {
    return shape_error("kl_div_batchmean", "log_input " + shape_str(log_input) + " and target " +
                                               shape_str(target) + " must match, rank >= 1");
  }
  // F.kl_div: torch.kl_div(reduction='sum') / size(0); the division by a Python int runs as a
  // multiplication by the fp32 reciprocal on CUDA.
  const float scale = 1.0f / static_cast<float>(log_input.shape[0]);
  return with_scratch(kReduceBlocks, stream, [&](float* partials) {
    kl_div_partials_kernel<<<kReduceBlocks, kThreads, 0, stream>>>(log_input.data, target.data,
                                                                   log_input.numel(), partials);
    KB_TRY(launched("kl_div_partials_kernel"));
    sum_kernel<<<1, 1024, 0, stream>>>(partials, kReduceBlocks, scale, out);
    return launched("sum_kernel");
  });
}

Status permute(const DeviceTensor& x, const std::vector<int>& dims, const DeviceTensor& out,
               cudaStream_t stream) {
  const size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  Shape sizes(rank);
  std::vector<int64_t> strides(rank), x_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) x_strides[d - 1] = x_strides[d] * x.shape[d];
  bool valid = dims.size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    const int d = dims[i];
    valid = d >= 0 && static_cast<size_t>(d) < rank && !seen[d];
    if (!valid) break;
    seen[d] = true;
    sizes[i] = x.shape[d];
    strides[i] = x_strides[d];
  }
  if (!valid || out.shape != sizes) {
    return shape_error("permute", "dims must be a permutation of x " + shape_str(x) +
                                      "'s dims giving out " + shape_str(out));
  }
  return gather(x.data, out.data, sizes, strides, stream);
}

}  // namespace kb::eager

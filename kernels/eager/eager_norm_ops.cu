// The reductions and normalizations of eager_ops.h: mean_trailing, batch/instance/group/layer
// norm, softmax, sum_all and kl_div_batchmean. The numerics and indexing conventions are those
// written at the top of eager_ops.cu; the shared launch helpers are in eager_ops_internal.cuh.
#include "kernels/eager/eager_ops.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/eager/eager_ops_internal.cuh"

namespace kb::eager {
namespace {

// ---- Reduction sizes ----

// Blocks of a grid-wide reduction: a fixed count (about 8 resident blocks per SM on an H200), so
// the partial sums and hence the result do not depend on the device.
constexpr int kReduceBlocks = 1024;
// A reduction chunk below this many elements is not worth a block of its own.
constexpr int64_t kMinChunk = 16384;
// Groups (rows) at most this long are reduced by one warp each.
constexpr int64_t kWarpRowMax = 2048;
constexpr int64_t kSpatialSoftmaxThreads = 1024;  // ATen's max_threads for the spatial softmax
// Longer float4-aligned rows get one block of up to this many threads each.
constexpr int kVecRowMaxThreads = 1024;

bool aligned16(const float* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
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
    normalize_kernel<I><<<legacy_grid(n), kLegacyThreads, 0, stream>>>(x, stats, index, weight,
                                                                       bias, y, static_cast<I>(n));
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

}  // namespace

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
  const int64_t rows = x.numel() / normalized_numel;
  if (rows == 0) return Status::ok();
  if (normalized_numel % 4 == 0 && aligned16(x.data) && aligned16(out.data)) {
    // ATen's vectorized path: one 128-thread block per row (grid = rows, as ATen launches it).
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, INT_MAX));
    layer_norm_rows_vec4_kernel<<<grid, kLayerNormThreads, 0, stream>>>(
        x.data, rows, normalized_numel, eps, weight, bias, out.data);
    return launched("layer_norm_rows_vec4_kernel");
  }
  const NormLayout layout{rows, 1, normalized_numel, normalized_numel, normalized_numel, eps};
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
    // ATen's spatial softmax launch when it keeps one thread per column (inner > 64 or len < 64):
    // blocks of min(inner, 1024) threads, as many as are resident at once, tiled over inner
    // first, then over outer (SpatialSoftMax_getGridSize).
    const int threads = static_cast<int>(std::min<int64_t>(inner, kSpatialSoftmaxThreads));
    KB_ASSIGN_OR_RETURN(
        const int64_t resident,
        cuda::resident_blocks(reinterpret_cast<const void*>(softmax_columns_kernel), threads, 0));
    const int64_t inner_blocks = std::min<int64_t>((inner + threads - 1) / threads, resident);
    const int64_t outer_blocks =
        std::min<int64_t>((resident + inner_blocks - 1) / inner_blocks, outer);
    softmax_columns_kernel<<<dim3(static_cast<unsigned>(outer_blocks),
                                  static_cast<unsigned>(inner_blocks)),
                             threads, 0, stream>>>(x.data, out.data, outer, len, inner);
  } else if (len <= kWarpRowMax) {
    softmax_rows_warp_kernel<<<grid_for(outer * kWarp), kThreads, 0, stream>>>(x.data, out.data,
                                                                               outer, len);
  } else if (len % 4 == 0 && aligned16(x.data) && aligned16(out.data)) {
    int threads = kWarp;  // ATen's SoftMaxForward_getBlockSize with ILP 4
    while (threads < kVecRowMaxThreads && threads < len / 4) threads *= 2;
    softmax_rows_vec4_kernel<<<grid_for(outer, 1), threads, 0, stream>>>(x.data, out.data, outer,
                                                                         len);
  } else {
    softmax_rows_block_kernel<<<grid_for(outer, 1), kThreads, 0, stream>>>(x.data, out.data, outer,
                                                                           len);
  }
  return launched("softmax kernel launch");
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

}  // namespace kb::eager

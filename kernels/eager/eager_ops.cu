// The eager ops of eager_ops.h: one kernel per op (two or three for the reductions that need a
// second pass), each a plain grid-stride or block-per-row CUDA kernel in namespace kb::eager (the
// launch tracer counts kb::eager kernels as library work, not as a custom variant's own).
// This file holds the elementwise, broadcast, pooling and permutation ops; the reductions and
// normalizations are in eager_norm_ops.cu, and the helpers both use in eager_ops_internal.cuh.
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
#include "kernels/eager/eager_ops.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/eager/eager_ops_internal.cuh"

namespace kb::eager {
namespace {

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

// out[i] = x[i mod n]: a contiguous (rows, n) output of the row vector x (n).
__global__ void broadcast_rows_kernel(const float* x, int64_t n, float* out, int64_t total) {
  for (int64_t i = first_index<int64_t>(); i < total; i += grid_stride<int64_t>())
    out[i] = x[i % n];
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
    broadcast_kernel<kOp, uint32_t><<<legacy_grid(n), kLegacyThreads, 0, stream>>>(
        a.data, b.data, out.data, static_cast<uint32_t>(n),
        index_map<uint32_t>(p.sizes, p.sa, p.sb));
  } else {
    broadcast_kernel<kOp, uint64_t><<<legacy_grid(n), kLegacyThreads, 0, stream>>>(
        a.data, b.data, out.data, static_cast<uint64_t>(n),
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

Status broadcast_rows(const float* x, int64_t n, float* out, int64_t rows, cudaStream_t stream) {
  const int64_t total = n * rows;
  if (total == 0) return Status::ok();
  broadcast_rows_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, n, out, total);
  return launched("broadcast_rows kernel launch");
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

// The golden-model ops declared in ops.h. The contract (shapes, PyTorch semantics) is there;
// this file holds how for all but the convs and pools (conv_pool_ops.cpp): one strided walker for
// the broadcasting, permuting and reducing ops.
#include "kernels/cpu/ops.h"
#include "kernels/cpu/ops_internal.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace kb::cpu {
namespace detail {

[[noreturn]] void check_failed(const char* expr, const std::string& message, const char* file,
                               int line) {
  std::fprintf(stderr, "%s:%d: KB_CPU_CHECK(%s) failed: %s\n", file, line, expr, message.c_str());
  std::abort();
}

}  // namespace detail

namespace {

using detail::shape_of;

int64_t product(const Shape& shape, size_t first, size_t last) {
  int64_t n = 1;
  for (size_t d = first; d < last; ++d) n *= shape[d];
  return n;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

int64_t normalize_dim(int64_t dim, int rank, const char* op) {
  const int64_t d = dim < 0 ? dim + rank : dim;
  KB_CPU_CHECK(d >= 0 && d < rank, std::string(op) + ": dim " + std::to_string(dim) +
                                       " out of range for rank " + std::to_string(rank));
  return d;
}

// Calls f(i, ja, jb) for every element of `shape` in row-major order: i is its linear index,
// ja and jb its offsets under strides `sa` and `sb` (0-strides broadcast, permuted strides
// transpose, zeroed strides reduce).
template <typename F>
void for_each_offset(const Shape& shape, const std::vector<int64_t>& sa,
                     const std::vector<int64_t>& sb, F f) {
  const int64_t n = element_count(shape);
  if (shape.empty()) {
    f(0, 0, 0);
    return;
  }
  if (n == 0) return;
  const size_t last = shape.size() - 1;
  std::vector<int64_t> index(shape.size(), 0);
  int64_t ja = 0, jb = 0;
  for (int64_t i = 0; i < n; i += shape[last]) {
    for (int64_t t = 0; t < shape[last]; ++t) f(i + t, ja + t * sa[last], jb + t * sb[last]);
    for (size_t d = last; d-- > 0;) {  // carry into the outer dims
      ja += sa[d];
      jb += sb[d];
      if (++index[d] < shape[d]) break;
      ja -= sa[d] * shape[d];
      jb -= sb[d] * shape[d];
      index[d] = 0;
    }
  }
}

// Pairwise summation of f(begin..end-1): the error grows like log(n) instead of n, which keeps
// the fp32 variant within tolerance on the large reductions (L1_098 sums 2^26 terms).
template <typename T, typename F>
T pairwise_sum(int64_t begin, int64_t end, const F& f) {
  constexpr int64_t kLeaf = 64;
  if (end - begin <= kLeaf) {
    T sum = T(0);
    for (int64_t i = begin; i < end; ++i) sum += f(i);
    return sum;
  }
  const int64_t mid = begin + (end - begin) / 2;
  return pairwise_sum<T>(begin, mid, f) + pairwise_sum<T>(mid, end, f);
}

// ---- Broadcasting ----

template <typename T, typename F>
HostTensor<T> broadcast_binary(const HostTensor<T>& a, const HostTensor<T>& b, F f,
                               const char* op) {
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  Shape shape(rank);
  std::vector<int64_t> sa(rank, 0), sb(rank, 0);
  const std::vector<int64_t> a_strides = row_major_strides(a.shape);
  const std::vector<int64_t> b_strides = row_major_strides(b.shape);
  for (size_t d = 0; d < rank; ++d) {  // d counts from the right
    const size_t out_d = rank - 1 - d;
    const int64_t da = d < a.shape.size() ? a.shape[a.shape.size() - 1 - d] : 1;
    const int64_t db = d < b.shape.size() ? b.shape[b.shape.size() - 1 - d] : 1;
    KB_CPU_CHECK(da == db || da == 1 || db == 1, std::string(op) + ": shapes " + shape_of(a) +
                                                     " and " + shape_of(b) + " do not broadcast");
    shape[out_d] = std::max(da, db);
    if (da != 1) sa[out_d] = a_strides[a.shape.size() - 1 - d];
    if (db != 1) sb[out_d] = b_strides[b.shape.size() - 1 - d];
    if (da == 0 || db == 0) shape[out_d] = 0;
  }
  HostTensor<T> y(shape);
  for_each_offset(shape, sa, sb, [&](int64_t i, int64_t ja, int64_t jb) {
    y.data[static_cast<size_t>(i)] =
        f(a.data[static_cast<size_t>(ja)], b.data[static_cast<size_t>(jb)]);
  });
  return y;
}

// ---- Normalization ----

template <typename T>
struct Moments {
  T mean;
  T rstd;  // 1 / sqrt(biased variance + eps)
};

// Statistics of `runs` runs of `run` contiguous elements, `stride` apart. Two passes: the
// variance from deviations stays accurate where E[x^2] - E[x]^2 would cancel (|mean| >> std).
template <typename T>
Moments<T> moments(const T* first, int64_t runs, int64_t run, int64_t stride, double eps) {
  const auto total = [&](auto term) {
    return pairwise_sum<T>(0, runs, [&](int64_t r) {
      return pairwise_sum<T>(0, run, [&](int64_t i) { return term(first[r * stride + i]); });
    });
  };
  const T count = T(runs * run);
  const T mean = total([](T v) { return v; }) / count;
  const T var = total([mean](T v) { return (v - mean) * (v - mean); }) / count;
  return {mean, T(1) / std::sqrt(var + T(eps))};
}

// ---- Attention ----

// nn.Linear on the last dim: y (..., out) = x (..., in) . w^T + b, w (out, in) row-major (a
// row block of the packed in_proj_weight for q, k and v); b may be nullptr (no bias).
template <typename T>
HostTensor<T> linear_rows(const HostTensor<T>& x, const T* w, const T* b, int64_t out) {
  const int64_t in = x.shape.back(), rows = x.numel() / in;
  Shape shape = x.shape;
  shape.back() = out;
  HostTensor<T> y(shape);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      T acc = T(0);
      for (int64_t i = 0; i < in; ++i) acc += x.data[r * in + i] * w[o * in + i];
      y.data[r * out + o] = b != nullptr ? acc + b[o] : acc;
    }
  }
  return y;
}

// One (batch n, head h) of scaled dot-product attention on projected (len, N, E) tensors:
// o[l, n, h*hd:(h+1)*hd] = softmax_s(q_l . k_s) v_s. `scores` is a (L, S) scratch buffer.
template <typename T>
void attend_head(const T* q, const T* k, const T* v, int64_t n, int64_t h, int64_t len_q,
                 int64_t len_k, int64_t batch, int64_t embed, int64_t head_dim,
                 std::vector<T>& scores, T* o) {
  const auto row = [&](int64_t pos) { return (pos * batch + n) * embed + h * head_dim; };
  for (int64_t l = 0; l < len_q; ++l) {
    T* s_row = scores.data() + l * len_k;
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t s = 0; s < len_k; ++s) {
      T dot = T(0);
      for (int64_t d = 0; d < head_dim; ++d) dot += q[row(l) + d] * k[row(s) + d];
      s_row[s] = dot;
      max = std::max(max, dot);
    }
    T sum = T(0);
    for (int64_t s = 0; s < len_k; ++s) sum += (s_row[s] = std::exp(s_row[s] - max));
    T* o_row = o + row(l);
    std::fill(o_row, o_row + head_dim, T(0));
    for (int64_t s = 0; s < len_k; ++s) {
      const T p = s_row[s] / sum;
      for (int64_t d = 0; d < head_dim; ++d) o_row[d] += p * v[row(s) + d];
    }
  }
}

template <typename T>
void check_attention_shapes(const HostTensor<T>& q, const HostTensor<T>& k, const HostTensor<T>& v,
                            const HostTensor<T>& in_w, const HostTensor<T>& in_b,
                            const HostTensor<T>& out_w, const HostTensor<T>& out_b,
                            int64_t num_heads) {
  const std::string what =
      "multihead_attention: q " + shape_of(q) + ", k " + shape_of(k) + ", v " + shape_of(v);
  KB_CPU_CHECK(q.rank() == 3 && k.rank() == 3 && k.shape == v.shape && q.shape[1] == k.shape[1] &&
                   q.shape[2] == k.shape[2],
               what + ": need q (L,N,E), k and v (S,N,E)");
  const int64_t embed = q.shape[2];
  KB_CPU_CHECK(num_heads >= 1 && embed % num_heads == 0, what + ": heads must divide E");
  KB_CPU_CHECK(in_w.shape == Shape({3 * embed, embed}) && in_b.shape == Shape({3 * embed}) &&
                   out_w.shape == Shape({embed, embed}) && out_b.shape == Shape({embed}),
               what + ": projections must be (3E,E), (3E), (E,E), (E)");
}

}  // namespace

// ---- Public ops ----

template <typename T>
HostTensor<T> cast(const HostTensor<float>& t) {
  HostTensor<T> y(t.shape);
  for (size_t i = 0; i < t.data.size(); ++i) y.data[i] = static_cast<T>(t.data[i]);
  return y;
}

template <typename T>
HostTensor<T> bmm(const HostTensor<T>& a, const HostTensor<T>& b) {
  KB_CPU_CHECK(
      a.rank() == 3 && b.rank() == 3 && a.shape[0] == b.shape[0] && a.shape[2] == b.shape[1],
      "bmm: a " + shape_of(a) + " and b " + shape_of(b) + " must be (B,M,K), (B,K,N)");
  const int64_t batch = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape[2];
  HostTensor<T> c(Shape{batch, m, n});
  for (int64_t i = 0; i < batch; ++i) {
    const T* a_i = a.data.data() + i * m * k;
    const T* b_i = b.data.data() + i * k * n;
    T* c_i = c.data.data() + i * m * n;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t j = 0; j < k; ++j) {  // row of c += a[r, j] * row j of b, unit-stride
        const T a_rj = a_i[r * k + j];
        for (int64_t col = 0; col < n; ++col) c_i[r * n + col] += a_rj * b_i[j * n + col];
      }
    }
  }
  return c;
}

template <typename T>
HostTensor<T> add(const HostTensor<T>& a, const HostTensor<T>& b) {
  return broadcast_binary(
      a, b, [](T u, T v) { return u + v; }, "add");
}

template <typename T>
HostTensor<T> linear(const HostTensor<T>& x, const HostTensor<T>& w, const HostTensor<T>* bias) {
  KB_CPU_CHECK(w.rank() == 2 && x.rank() >= 1 && x.shape.back() == w.shape[1],
               "linear: x " + shape_of(x) + " and weight " + shape_of(w) + " must be (*,K), (O,K)");
  return linear_rows(x, w.data.data(), bias != nullptr ? bias->data.data() : nullptr, w.shape[0]);
}

template <typename T>
HostTensor<T> sub(const HostTensor<T>& a, const HostTensor<T>& b) {
  return broadcast_binary(
      a, b, [](T u, T v) { return u - v; }, "sub");
}

template <typename T>
HostTensor<T> mul(const HostTensor<T>& a, const HostTensor<T>& b) {
  return broadcast_binary(
      a, b, [](T u, T v) { return u * v; }, "mul");
}

template <typename T>
HostTensor<T> mean(const HostTensor<T>& x, const std::vector<int64_t>& dims, bool keepdim) {
  KB_CPU_CHECK(!dims.empty(), "mean: no dims given for x " + shape_of(x));
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t dim : dims) {
    const auto d = static_cast<size_t>(normalize_dim(dim, x.rank(), "mean"));
    KB_CPU_CHECK(!reduced[d], "mean: dim " + std::to_string(dim) + " given twice");
    reduced[d] = true;
  }
  Shape kept = x.shape, squeezed;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (reduced[d]) kept[d] = 1;
    if (!reduced[d]) squeezed.push_back(x.shape[d]);
  }
  HostTensor<T> y(kept);
  std::vector<int64_t> strides = row_major_strides(kept);
  for (size_t d = 0; d < strides.size(); ++d) {
    if (reduced[d]) strides[d] = 0;  // every reduced index lands on the same output element
  }
  for_each_offset(x.shape, strides, strides, [&](int64_t i, int64_t j, int64_t) {
    y.data[static_cast<size_t>(j)] += x.data[static_cast<size_t>(i)];
  });
  const T count = T(x.numel() / std::max<int64_t>(y.numel(), 1));
  for (T& v : y.data) v /= count;
  if (!keepdim) y.shape = squeezed;
  return y;
}

template <typename T>
HostTensor<T> batch_norm_train(const HostTensor<T>& x, const HostTensor<T>& weight,
                               const HostTensor<T>& bias, double eps) {
  KB_CPU_CHECK(x.rank() >= 2, "batch_norm: x " + shape_of(x) + " must be (N, C, ...)");
  const int64_t batch = x.shape[0], channels = x.shape[1],
                plane = product(x.shape, 2, x.shape.size());
  KB_CPU_CHECK(
      weight.numel() == channels && bias.numel() == channels,
      "batch_norm: weight and bias must have C = " + std::to_string(channels) + " elements");
  KB_CPU_CHECK(batch * plane > 1, "batch_norm: training needs more than 1 value per channel");
  HostTensor<T> y(x.shape);
  for (int64_t c = 0; c < channels; ++c) {
    const Moments<T> m = moments(x.data.data() + c * plane, batch, plane, channels * plane, eps);
    const T scale = m.rstd * weight.data[c], shift = bias.data[c];
    for (int64_t n = 0; n < batch; ++n) {
      const int64_t base = (n * channels + c) * plane;
      for (int64_t i = base; i < base + plane; ++i)
        y.data[i] = (x.data[i] - m.mean) * scale + shift;
    }
  }
  return y;
}

template <typename T>
HostTensor<T> instance_norm(const HostTensor<T>& x, double eps) {
  KB_CPU_CHECK(x.rank() >= 3, "instance_norm: x " + shape_of(x) + " must be (N, C, *S)");
  const int64_t plane = product(x.shape, 2, x.shape.size());
  KB_CPU_CHECK(plane > 1, "instance_norm: needs more than 1 spatial element");
  HostTensor<T> y(x.shape);
  for (int64_t base = 0; base < x.numel(); base += plane) {
    const Moments<T> m = moments(x.data.data() + base, 1, plane, plane, eps);
    for (int64_t i = base; i < base + plane; ++i) y.data[i] = (x.data[i] - m.mean) * m.rstd;
  }
  return y;
}

template <typename T>
HostTensor<T> group_norm(const HostTensor<T>& x, int64_t num_groups, const HostTensor<T>& weight,
                         const HostTensor<T>& bias, double eps) {
  KB_CPU_CHECK(x.rank() >= 2, "group_norm: x " + shape_of(x) + " must be (N, C, ...)");
  const int64_t channels = x.shape[1], plane = product(x.shape, 2, x.shape.size());
  KB_CPU_CHECK(num_groups >= 1 && channels % num_groups == 0,
               "group_norm: " + std::to_string(num_groups) +
                   " groups must divide C = " + std::to_string(channels));
  KB_CPU_CHECK(weight.numel() == channels && bias.numel() == channels,
               "group_norm: weight and bias must have C elements");
  const int64_t group_channels = channels / num_groups, group_size = group_channels * plane;
  HostTensor<T> y(x.shape);
  for (int64_t base = 0, c0 = 0; base < x.numel(); base += group_size, c0 += group_channels) {
    const Moments<T> m = moments(x.data.data() + base, 1, group_size, group_size, eps);
    for (int64_t ci = 0; ci < group_channels; ++ci) {
      const int64_t c = (c0 + ci) % channels;
      const T scale = m.rstd * weight.data[c], shift = bias.data[c];
      for (int64_t i = base + ci * plane; i < base + (ci + 1) * plane; ++i) {
        y.data[i] = (x.data[i] - m.mean) * scale + shift;
      }
    }
  }
  return y;
}

template <typename T>
HostTensor<T> layer_norm(const HostTensor<T>& x, const HostTensor<T>& weight,
                         const HostTensor<T>& bias, double eps) {
  const size_t tail = weight.shape.size();
  KB_CPU_CHECK(tail >= 1 && tail <= x.shape.size() && bias.shape == weight.shape &&
                   std::equal(weight.shape.begin(), weight.shape.end(), x.shape.end() - tail),
               "layer_norm: weight " + shape_of(weight) + " and bias " + shape_of(bias) +
                   " must equal the trailing dims of x " + shape_of(x));
  const int64_t row = weight.numel();
  HostTensor<T> y(x.shape);
  for (int64_t base = 0; base < x.numel(); base += row) {
    const Moments<T> m = moments(x.data.data() + base, 1, row, row, eps);
    for (int64_t i = 0; i < row; ++i) {
      y.data[base + i] = (x.data[base + i] - m.mean) * m.rstd * weight.data[i] + bias.data[i];
    }
  }
  return y;
}

template <typename T>
HostTensor<T> softmax(const HostTensor<T>& x, int64_t dim) {
  const auto d = static_cast<size_t>(normalize_dim(dim, x.rank(), "softmax"));
  const int64_t outer = product(x.shape, 0, d), len = x.shape[d];
  const int64_t inner = product(x.shape, d + 1, x.shape.size());
  HostTensor<T> y(x.shape);
  // Sweep whole (len, inner) slabs with per-column max and sum, so every read is unit-stride.
  std::vector<T> max(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* xs = x.data.data() + o * len * inner;
    T* ys = y.data.data() + o * len * inner;
    std::fill(max.begin(), max.end(), -std::numeric_limits<T>::infinity());
    std::fill(sum.begin(), sum.end(), T(0));
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) max[i] = std::max(max[i], xs[j * inner + i]);
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i)
        sum[i] += (ys[j * inner + i] = std::exp(xs[j * inner + i] - max[i]));
    for (int64_t j = 0; j < len; ++j)
      for (int64_t i = 0; i < inner; ++i) ys[j * inner + i] /= sum[i];
  }
  return y;
}

template <typename T>
HostTensor<T> channel_shuffle(const HostTensor<T>& x, int64_t groups) {
  KB_CPU_CHECK(
      x.rank() >= 2 && groups >= 1 && x.shape[1] % groups == 0,
      "channel_shuffle: " + std::to_string(groups) + " groups must divide C of x " + shape_of(x));
  const int64_t channels = x.shape[1], per_group = channels / groups;
  const int64_t plane = product(x.shape, 2, x.shape.size());
  HostTensor<T> y(x.shape);
  for (int64_t n = 0; n < x.shape[0]; ++n) {
    for (int64_t j = 0; j < channels; ++j) {  // out channel j = (k, g) of the (C/g, g) view
      const int64_t src = (j % groups) * per_group + j / groups;
      const T* from = x.data.data() + (n * channels + src) * plane;
      std::copy(from, from + plane, y.data.data() + (n * channels + j) * plane);
    }
  }
  return y;
}

template <typename T>
HostTensor<T> kl_div_batchmean(const HostTensor<T>& log_input, const HostTensor<T>& target) {
  KB_CPU_CHECK(log_input.rank() >= 1 && log_input.shape == target.shape,
               "kl_div: log_input " + shape_of(log_input) + " and target " + shape_of(target) +
                   " must have the same shape, rank >= 1");
  const T* li = log_input.data.data();
  const T* t = target.data.data();
  const T sum = pairwise_sum<T>(0, log_input.numel(), [&](int64_t i) {
    const T xlogy = t[i] == T(0) ? T(0) : t[i] * std::log(t[i]);  // torch.xlogy: 0*log(0) = 0
    return xlogy - t[i] * li[i];
  });
  HostTensor<T> y;  // 0-d
  y.data = {sum / T(log_input.shape[0])};
  return y;
}

template <typename T>
HostTensor<T> reshape(const HostTensor<T>& x, const Shape& shape) {
  KB_CPU_CHECK(element_count(shape) == x.numel(),
               "reshape: " + shape_of(x) + " to " + shape_to_string(shape) + " changes the size");
  HostTensor<T> y;
  y.shape = shape;
  y.data = x.data;
  return y;
}

template <typename T>
HostTensor<T> permute(const HostTensor<T>& x, const std::vector<int64_t>& dims) {
  KB_CPU_CHECK(dims.size() == x.shape.size(),
               "permute: dims must name every dim of " + shape_of(x));
  const std::vector<int64_t> x_strides = row_major_strides(x.shape);
  std::vector<bool> seen(dims.size(), false);
  Shape shape(dims.size());
  std::vector<int64_t> strides(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<size_t>(normalize_dim(dims[i], x.rank(), "permute"));
    KB_CPU_CHECK(!seen[d], "permute: dim " + std::to_string(dims[i]) + " given twice");
    seen[d] = true;
    shape[i] = x.shape[d];
    strides[i] = x_strides[d];
  }
  HostTensor<T> y(shape);
  for_each_offset(shape, strides, strides, [&](int64_t i, int64_t j, int64_t) {
    y.data[static_cast<size_t>(i)] = x.data[static_cast<size_t>(j)];
  });
  return y;
}

template <typename T>
HostTensor<T> multihead_attention(const HostTensor<T>& q, const HostTensor<T>& k,
                                  const HostTensor<T>& v, const HostTensor<T>& in_proj_weight,
                                  const HostTensor<T>& in_proj_bias,
                                  const HostTensor<T>& out_proj_weight,
                                  const HostTensor<T>& out_proj_bias, int64_t num_heads) {
  check_attention_shapes(q, k, v, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias,
                         num_heads);
  const int64_t len_q = q.shape[0], len_k = k.shape[0], batch = q.shape[1], embed = q.shape[2];
  const int64_t head_dim = embed / num_heads;
  const T* w = in_proj_weight.data.data();
  const T* b = in_proj_bias.data.data();
  HostTensor<T> qp = linear_rows(q, w, b, embed);
  const HostTensor<T> kp = linear_rows(k, w + embed * embed, b + embed, embed);
  const HostTensor<T> vp = linear_rows(v, w + 2 * embed * embed, b + 2 * embed, embed);
  const T scale = T(1) / std::sqrt(T(head_dim));  // applied to q after its bias, as PyTorch
  for (T& x : qp.data) x *= scale;
  HostTensor<T> o(q.shape);  // heads concatenated: head h owns features [h*hd, (h+1)*hd)
  std::vector<T> scores(static_cast<size_t>(len_q * len_k));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t h = 0; h < num_heads; ++h) {
      attend_head(qp.data.data(), kp.data.data(), vp.data.data(), n, h, len_q, len_k, batch, embed,
                  head_dim, scores, o.data.data());
    }
  }
  return linear_rows(o, out_proj_weight.data.data(), out_proj_bias.data.data(), embed);
}

#define KB_INSTANTIATE_CPU_OPS(T)                                                             \
  template HostTensor<T> cast<T>(const HostTensor<float>&);                                   \
  template HostTensor<T> bmm<T>(const HostTensor<T>&, const HostTensor<T>&);                  \
  template HostTensor<T> add<T>(const HostTensor<T>&, const HostTensor<T>&);                  \
  template HostTensor<T> sub<T>(const HostTensor<T>&, const HostTensor<T>&);                  \
  template HostTensor<T> linear<T>(const HostTensor<T>&, const HostTensor<T>&,                \
                                   const HostTensor<T>*);                                     \
  template HostTensor<T> mul<T>(const HostTensor<T>&, const HostTensor<T>&);                  \
  template HostTensor<T> mean<T>(const HostTensor<T>&, const std::vector<int64_t>&, bool);    \
  template HostTensor<T> batch_norm_train<T>(const HostTensor<T>&, const HostTensor<T>&,      \
                                             const HostTensor<T>&, double);                   \
  template HostTensor<T> instance_norm<T>(const HostTensor<T>&, double);                      \
  template HostTensor<T> group_norm<T>(const HostTensor<T>&, int64_t, const HostTensor<T>&,   \
                                       const HostTensor<T>&, double);                         \
  template HostTensor<T> layer_norm<T>(const HostTensor<T>&, const HostTensor<T>&,            \
                                       const HostTensor<T>&, double);                         \
  template HostTensor<T> softmax<T>(const HostTensor<T>&, int64_t);                           \
  template HostTensor<T> channel_shuffle<T>(const HostTensor<T>&, int64_t);                   \
  template HostTensor<T> kl_div_batchmean<T>(const HostTensor<T>&, const HostTensor<T>&);     \
  template HostTensor<T> reshape<T>(const HostTensor<T>&, const Shape&);                      \
  template HostTensor<T> permute<T>(const HostTensor<T>&, const std::vector<int64_t>&);       \
  template HostTensor<T> multihead_attention<T>(                                              \
      const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>&, \
      const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>&, int64_t);

KB_INSTANTIATE_CPU_OPS(float)
KB_INSTANTIATE_CPU_OPS(double)

}  // namespace kb::cpu

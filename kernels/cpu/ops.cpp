// The golden-model ops declared in ops.h. The contract (shapes, PyTorch semantics) is there;
// this file holds how: one 3-D loop nest for convs and pools (1-D and 2-D tensors get leading
// size-1 spatial dims), one strided walker for the broadcasting, permuting and reducing ops.
#include "kernels/cpu/ops.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

// A violated shape precondition is a bug in the calling golden model (its spec was validated
// before any op runs), so it aborts with a message instead of returning a Status.
#define KB_CPU_CHECK(cond, message)                                             \
  do {                                                                          \
    if (!(cond)) ::kb::cpu::check_failed(#cond, (message), __FILE__, __LINE__); \
  } while (false)

namespace kb::cpu {
namespace {

[[noreturn]] void check_failed(const char* expr, const std::string& message, const char* file,
                               int line) {
  std::fprintf(stderr, "%s:%d: KB_CPU_CHECK(%s) failed: %s\n", file, line, expr, message.c_str());
  std::abort();
}

template <typename T>
std::string shape_of(const HostTensor<T>& t) {
  return shape_to_string(t.shape);
}

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a / b - ((a % b != 0 && a < 0) ? 1 : 0);
}
int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

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

// ---- Convolution and pooling geometry: always 3 spatial dims ----

constexpr size_t kMaxSpatial = 3;
using Spatial = std::array<int64_t, kMaxSpatial>;

// Right-aligns `values` into 3 dims, filling the leading ones with `fill` (1 for sizes, strides
// and dilations, 0 for paddings), so a 1-D op runs as (1, 1, L).
Spatial spatial(const int64_t* values, size_t count, int64_t fill) {
  Spatial out;
  out.fill(fill);
  std::copy(values, values + count, out.begin() + static_cast<ptrdiff_t>(kMaxSpatial - count));
  return out;
}
Spatial spatial(const std::vector<int64_t>& values, int64_t fill) {
  return spatial(values.data(), values.size(), fill);
}
int64_t volume(const Spatial& s) {
  return s[0] * s[1] * s[2];
}

// Appends the last `rank` dims of `s` to `shape`.
void append_spatial(Shape& shape, const Spatial& s, size_t rank) {
  shape.insert(shape.end(), s.end() - static_cast<ptrdiff_t>(rank), s.end());
}

struct ConvGeometry {
  size_t rank = 0;  // spatial dims of the tensors: 1..3
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  Spatial in{}, out{}, kernel{}, stride{}, padding{}, dilation{};
};

// One kernel tap along one axis: the positions t in [lo, hi) pair
// out[t * out_step + out_offset] with in[t * in_step + in_offset], all inside their tensors.
struct AxisTap {
  int64_t lo, hi, out_step, out_offset, in_step, in_offset;
};

// A conv gathers (t = output position, in = t*stride + k*dilation - padding); a transposed conv
// scatters the same pairing (t = input position, out = t*stride + k*dilation - padding).
AxisTap axis_tap(const ConvGeometry& g, size_t axis, int64_t k, bool transposed) {
  const int64_t step = g.stride[axis];
  const int64_t offset = k * g.dilation[axis] - g.padding[axis];
  const int64_t count = transposed ? g.in[axis] : g.out[axis];
  const int64_t bound = transposed ? g.out[axis] : g.in[axis];
  const int64_t lo = std::max<int64_t>(0, ceil_div(-offset, step));
  const int64_t hi = std::max(lo, std::min(count, floor_div(bound - 1 - offset, step) + 1));
  if (transposed) return {lo, hi, step, offset, 1, 0};
  return {lo, hi, 1, 0, step, offset};
}

// out_plane += w * in_plane over the positions that taps (a, b, c) pair on the three axes.
template <typename T>
void accumulate_tap(const T* in_plane, T* out_plane, T w, const AxisTap& a, const AxisTap& b,
                    const AxisTap& c, const Spatial& in, const Spatial& out) {
  for (int64_t i = a.lo; i < a.hi; ++i) {
    const T* in_i = in_plane + (i * a.in_step + a.in_offset) * in[1] * in[2];
    T* out_i = out_plane + (i * a.out_step + a.out_offset) * out[1] * out[2];
    for (int64_t j = b.lo; j < b.hi; ++j) {
      const T* in_j = in_i + (j * b.in_step + b.in_offset) * in[2];
      T* out_j = out_i + (j * b.out_step + b.out_offset) * out[2];
      for (int64_t l = c.lo; l < c.hi; ++l) {
        out_j[l * c.out_step + c.out_offset] += w * in_j[l * c.in_step + c.in_offset];
      }
    }
  }
}

// For each (n, o): into the output plane (zero-initialized) add every (input channel of o's group,
// tap) as a strided axpy, then the bias. w is (O, C/g, *K) for a conv and (C, O/g, *K) transposed.
template <typename T>
HostTensor<T> conv_nd(const HostTensor<T>& x, const HostTensor<T>& w, const HostTensor<T>* bias,
                      const ConvGeometry& g, bool transposed) {
  Shape out_shape{g.batch, g.out_channels};
  append_spatial(out_shape, g.out, g.rank);
  HostTensor<T> y(out_shape);
  std::array<std::vector<AxisTap>, kMaxSpatial> taps;
  for (size_t axis = 0; axis < kMaxSpatial; ++axis) {
    for (int64_t k = 0; k < g.kernel[axis]; ++k)
      taps[axis].push_back(axis_tap(g, axis, k, transposed));
  }
  const int64_t cin_g = g.in_channels / g.groups, cout_g = g.out_channels / g.groups;
  const int64_t in_plane = volume(g.in), out_plane = volume(g.out), kvol = volume(g.kernel);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t o = 0; o < g.out_channels; ++o) {
      T* y_plane = y.data.data() + (n * g.out_channels + o) * out_plane;
      for (int64_t ci = 0; ci < cin_g; ++ci) {
        const int64_t c = (o / cout_g) * cin_g + ci;
        const T* x_plane = x.data.data() + (n * g.in_channels + c) * in_plane;
        const T* w_taps =
            w.data.data() + kvol * (transposed ? c * cout_g + o % cout_g : o * cin_g + ci);
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
          for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw)
              accumulate_tap(x_plane, y_plane, w_taps[(kd * g.kernel[1] + kh) * g.kernel[2] + kw],
                             taps[0][kd], taps[1][kh], taps[2][kw], g.in, g.out);
      }
      if (bias != nullptr) {
        for (int64_t i = 0; i < out_plane; ++i) y_plane[i] += bias->data[o];
      }
    }
  }
  return y;
}

// Checks what conv and conv_transpose share and fills all but the output sizes.
template <typename T>
ConvGeometry conv_geometry(const HostTensor<T>& x, const HostTensor<T>& w,
                           const HostTensor<T>* bias, const ConvParams& cp, bool transposed) {
  const std::string what = std::string(transposed ? "conv_transpose" : "conv") + ": x " +
                           shape_of(x) + ", weight " + shape_of(w);
  KB_CPU_CHECK(x.rank() >= 3 && x.rank() <= 5 && w.rank() == x.rank(), what);
  ConvGeometry g;
  g.rank = static_cast<size_t>(x.rank() - 2);
  KB_CPU_CHECK(cp.stride.size() == g.rank && cp.padding.size() == g.rank &&
                   cp.dilation.size() == g.rank &&
                   (cp.output_padding.empty() || cp.output_padding.size() == g.rank),
               what + ": stride/padding/dilation/output_padding need one entry per spatial dim");
  g.batch = x.shape[0];
  g.in_channels = x.shape[1];
  g.groups = cp.groups;
  g.out_channels = transposed ? w.shape[1] * cp.groups : w.shape[0];
  KB_CPU_CHECK(g.groups >= 1 && g.in_channels % g.groups == 0 && g.out_channels % g.groups == 0,
               what + ": groups " + std::to_string(g.groups) + " must divide both channel counts");
  KB_CPU_CHECK(transposed ? w.shape[0] == g.in_channels : w.shape[1] * g.groups == g.in_channels,
               what + ": weight does not match the input channels and groups");
  KB_CPU_CHECK(bias == nullptr || (bias->rank() == 1 && bias->shape[0] == g.out_channels),
               what + ": bias " + (bias ? shape_of(*bias) : "") + " must be (out_channels)");
  g.in = spatial(x.shape.data() + 2, g.rank, 1);
  g.kernel = spatial(w.shape.data() + 2, g.rank, 1);
  g.stride = spatial(cp.stride, 1);
  g.padding = spatial(cp.padding, 0);
  g.dilation = spatial(cp.dilation, 1);
  for (size_t a = 0; a < kMaxSpatial; ++a) {
    KB_CPU_CHECK(g.stride[a] >= 1 && g.dilation[a] >= 1 && g.padding[a] >= 0,
                 what + ": stride and dilation must be >= 1, padding >= 0");
  }
  return g;
}

// ---- Pooling ----

using Window = std::pair<int64_t, int64_t>;  // input positions [first, second) on one axis

struct PoolGeometry {
  size_t rank = 0;
  Spatial in{}, out{}, kernel{};
  std::array<std::vector<Window>, kMaxSpatial> windows;  // per axis, per output position
};

PoolGeometry pool_geometry(const Shape& x, const std::vector<int64_t>& kernel,
                           const std::vector<int64_t>& stride_list,
                           const std::vector<int64_t>& padding_list, const std::string& what) {
  PoolGeometry g;
  g.rank = kernel.size();
  KB_CPU_CHECK(g.rank >= 1 && g.rank <= kMaxSpatial && x.size() == g.rank + 2,
               what + ": kernel_size needs one entry per spatial dim");
  KB_CPU_CHECK(stride_list.empty() || stride_list.size() == g.rank, what + ": bad stride");
  KB_CPU_CHECK(padding_list.empty() || padding_list.size() == g.rank, what + ": bad padding");
  g.in = spatial(x.data() + 2, g.rank, 1);
  g.kernel = spatial(kernel, 1);
  const Spatial stride = stride_list.empty() ? g.kernel : spatial(stride_list, 1);  // PyTorch's
  const Spatial padding = spatial(padding_list, 0);
  for (size_t a = 0; a < kMaxSpatial; ++a) {
    KB_CPU_CHECK(
        g.kernel[a] >= 1 && stride[a] >= 1 && padding[a] >= 0 && 2 * padding[a] <= g.kernel[a],
        what + ": kernel and stride must be >= 1, 0 <= padding <= kernel/2");
    g.out[a] = floor_div(g.in[a] + 2 * padding[a] - g.kernel[a], stride[a]) + 1;  // floor mode
    KB_CPU_CHECK(g.out[a] >= 1, what + ": output would be empty");
    for (int64_t o = 0; o < g.out[a]; ++o) {  // clip each window to the unpadded input
      const int64_t start = o * stride[a] - padding[a];
      g.windows[a].emplace_back(std::max<int64_t>(start, 0),
                                std::min(start + g.kernel[a], g.in[a]));
    }
  }
  return g;
}

// The sum (average) or the max of one window of an input plane (in[0], in[1], in[2]).
template <typename T>
T reduce_window(const T* plane, const Spatial& in, Window d, Window h, Window w, bool average) {
  T acc = average ? T(0) : -std::numeric_limits<T>::infinity();  // max pool pads with -inf
  for (int64_t i = d.first; i < d.second; ++i)
    for (int64_t j = h.first; j < h.second; ++j)
      for (int64_t l = w.first; l < w.second; ++l) {
        const T v = plane[(i * in[1] + j) * in[2] + l];
        if (average) {
          acc += v;
        } else if (v > acc || std::isnan(v)) {  // max pool propagates NaN, as PyTorch's does
          acc = v;
        }
      }
  return acc;
}

template <typename T>
HostTensor<T> pool_nd(const HostTensor<T>& x, const std::vector<int64_t>& kernel,
                      const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      bool average) {
  const std::string what = std::string(average ? "avg_pool" : "max_pool") + ": x " + shape_of(x);
  const PoolGeometry g = pool_geometry(x.shape, kernel, stride, padding, what);
  Shape out_shape{x.shape[0], x.shape[1]};
  append_spatial(out_shape, g.out, g.rank);
  HostTensor<T> y(out_shape);
  // count_include_pad: in floor mode no window passes the padded end, so every divisor is the
  // full kernel volume.
  const T divisor = average ? T(volume(g.kernel)) : T(1);
  T* y_out = y.data.data();
  for (int64_t p = 0; p < x.shape[0] * x.shape[1]; ++p) {
    const T* x_plane = x.data.data() + p * volume(g.in);
    for (const Window& d : g.windows[0])
      for (const Window& h : g.windows[1])
        for (const Window& w : g.windows[2])
          *y_out++ = reduce_window(x_plane, g.in, d, h, w, average) / divisor;
  }
  return y;
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
// row block of the packed in_proj_weight for q, k and v).
template <typename T>
HostTensor<T> linear(const HostTensor<T>& x, const T* w, const T* b, int64_t out) {
  const int64_t in = x.shape.back(), rows = x.numel() / in;
  Shape shape = x.shape;
  shape.back() = out;
  HostTensor<T> y(shape);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      T acc = T(0);
      for (int64_t i = 0; i < in; ++i) acc += x.data[r * in + i] * w[o * in + i];
      y.data[r * out + o] = acc + b[o];
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

ConvParams conv_params(const ProblemInstance& p, const std::string& node) {
  ConvParams cp;
  cp.stride = p.ints(node, "stride");
  const size_t rank = cp.stride.size();
  const auto ints_or = [&](const char* attr, int64_t fill) {  // PyTorch's defaults when absent
    return p.has_attr(node, attr) ? p.ints(node, attr) : std::vector<int64_t>(rank, fill);
  };
  cp.padding = ints_or("padding", 0);
  cp.dilation = ints_or("dilation", 1);
  cp.output_padding = ints_or("output_padding", 0);
  cp.groups = p.has_attr(node, "groups") ? p.int_attr(node, "groups") : 1;
  return cp;
}

template <typename T>
HostTensor<T> conv(const HostTensor<T>& x, const HostTensor<T>& w, const HostTensor<T>* bias,
                   const ConvParams& cp) {
  ConvGeometry g = conv_geometry(x, w, bias, cp, /*transposed=*/false);
  for (size_t a = 0; a < kMaxSpatial; ++a) {
    const int64_t span = g.dilation[a] * (g.kernel[a] - 1) + 1;
    g.out[a] = floor_div(g.in[a] + 2 * g.padding[a] - span, g.stride[a]) + 1;
    KB_CPU_CHECK(g.out[a] >= 1, "conv: x " + shape_of(x) + ", weight " + shape_of(w) +
                                    ": the padded input is smaller than the dilated kernel");
  }
  return conv_nd(x, w, bias, g, /*transposed=*/false);
}

template <typename T>
HostTensor<T> conv_transpose(const HostTensor<T>& x, const HostTensor<T>& w,
                             const HostTensor<T>* bias, const ConvParams& cp) {
  ConvGeometry g = conv_geometry(x, w, bias, cp, /*transposed=*/true);
  const Spatial output_padding = spatial(cp.output_padding, 0);
  const std::string what = "conv_transpose: x " + shape_of(x) + ", weight " + shape_of(w);
  for (size_t a = 0; a < kMaxSpatial; ++a) {
    KB_CPU_CHECK(output_padding[a] >= 0 && output_padding[a] < std::max(g.stride[a], g.dilation[a]),
                 what + ": output_padding must be smaller than either stride or dilation");
    g.out[a] = (g.in[a] - 1) * g.stride[a] - 2 * g.padding[a] + g.dilation[a] * (g.kernel[a] - 1) +
               output_padding[a] + 1;
    KB_CPU_CHECK(g.out[a] >= 1, what + ": output would be empty");
  }
  return conv_nd(x, w, bias, g, /*transposed=*/true);
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
HostTensor<T> mul(const HostTensor<T>& a, const HostTensor<T>& b) {
  return broadcast_binary(
      a, b, [](T u, T v) { return u * v; }, "mul");
}

template <typename T>
HostTensor<T> max_pool(const HostTensor<T>& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  return pool_nd(x, kernel, stride, padding, /*average=*/false);
}

template <typename T>
HostTensor<T> avg_pool(const HostTensor<T>& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  return pool_nd(x, kernel, stride, padding, /*average=*/true);
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
  HostTensor<T> qp = linear(q, w, b, embed);
  const HostTensor<T> kp = linear(k, w + embed * embed, b + embed, embed);
  const HostTensor<T> vp = linear(v, w + 2 * embed * embed, b + 2 * embed, embed);
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
  return linear(o, out_proj_weight.data.data(), out_proj_bias.data.data(), embed);
}

#define KB_INSTANTIATE_CPU_OPS(T)                                                                  \
  template HostTensor<T> cast<T>(const HostTensor<float>&);                                        \
  template HostTensor<T> conv<T>(const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>*, \
                                 const ConvParams&);                                               \
  template HostTensor<T> conv_transpose<T>(const HostTensor<T>&, const HostTensor<T>&,             \
                                           const HostTensor<T>*, const ConvParams&);               \
  template HostTensor<T> bmm<T>(const HostTensor<T>&, const HostTensor<T>&);                       \
  template HostTensor<T> add<T>(const HostTensor<T>&, const HostTensor<T>&);                       \
  template HostTensor<T> mul<T>(const HostTensor<T>&, const HostTensor<T>&);                       \
  template HostTensor<T> max_pool<T>(const HostTensor<T>&, const std::vector<int64_t>&,            \
                                     const std::vector<int64_t>&, const std::vector<int64_t>&);    \
  template HostTensor<T> avg_pool<T>(const HostTensor<T>&, const std::vector<int64_t>&,            \
                                     const std::vector<int64_t>&, const std::vector<int64_t>&);    \
  template HostTensor<T> mean<T>(const HostTensor<T>&, const std::vector<int64_t>&, bool);         \
  template HostTensor<T> batch_norm_train<T>(const HostTensor<T>&, const HostTensor<T>&,           \
                                             const HostTensor<T>&, double);                        \
  template HostTensor<T> instance_norm<T>(const HostTensor<T>&, double);                           \
  template HostTensor<T> group_norm<T>(const HostTensor<T>&, int64_t, const HostTensor<T>&,        \
                                       const HostTensor<T>&, double);                              \
  template HostTensor<T> layer_norm<T>(const HostTensor<T>&, const HostTensor<T>&,                 \
                                       const HostTensor<T>&, double);                              \
  template HostTensor<T> softmax<T>(const HostTensor<T>&, int64_t);                                \
  template HostTensor<T> channel_shuffle<T>(const HostTensor<T>&, int64_t);                        \
  template HostTensor<T> kl_div_batchmean<T>(const HostTensor<T>&, const HostTensor<T>&);          \
  template HostTensor<T> reshape<T>(const HostTensor<T>&, const Shape&);                           \
  template HostTensor<T> permute<T>(const HostTensor<T>&, const std::vector<int64_t>&);            \
  template HostTensor<T> multihead_attention<T>(                                                   \
      const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>&,      \
      const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>&, int64_t);

KB_INSTANTIATE_CPU_OPS(float)
KB_INSTANTIATE_CPU_OPS(double)

}  // namespace kb::cpu

// The golden model's convolutions and pools (declared in ops.h): one 3-D loop nest for each
// (1-D and 2-D tensors get leading size-1 spatial dims), transposed convs by scattering the same
// taps the other way.
#include <algorithm>
#include <array>
#include <limits>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/ops_internal.h"

namespace kb::cpu {
namespace {

using detail::ceil_div;
using detail::floor_div;
using detail::shape_of;

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

}  // namespace

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
HostTensor<T> max_pool(const HostTensor<T>& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  return pool_nd(x, kernel, stride, padding, /*average=*/false);
}

template <typename T>
HostTensor<T> avg_pool(const HostTensor<T>& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  return pool_nd(x, kernel, stride, padding, /*average=*/true);
}

#define KB_INSTANTIATE_CONV_POOL_OPS(T)                                                            \
  template HostTensor<T> conv<T>(const HostTensor<T>&, const HostTensor<T>&, const HostTensor<T>*, \
                                 const ConvParams&);                                               \
  template HostTensor<T> conv_transpose<T>(const HostTensor<T>&, const HostTensor<T>&,             \
                                           const HostTensor<T>*, const ConvParams&);               \
  template HostTensor<T> max_pool<T>(const HostTensor<T>&, const std::vector<int64_t>&,            \
                                     const std::vector<int64_t>&, const std::vector<int64_t>&);    \
  template HostTensor<T> avg_pool<T>(const HostTensor<T>&, const std::vector<int64_t>&,            \
                                     const std::vector<int64_t>&, const std::vector<int64_t>&);

KB_INSTANTIATE_CONV_POOL_OPS(float)
KB_INSTANTIATE_CONV_POOL_OPS(double)

}  // namespace kb::cpu

// Output-stationary ("gather") transposed convolutions: the row gather of L1_075 and L1_081, and
// the geometry and generic kernel that every transposed-conv custom (and the tensor-core cores
// under kernels/cores/conv_transpose*) fall back on. Included by .cu files and device headers.
//
//   - ConvTransposeGeometry: a conv_transpose graph node's sizes and attributes, read from the
//     ProblemInstance and padded to 3 spatial dims (unit dims first); ConvTransposeNode: that node
//     with its x and w's indices in ImplArgs, as the custom variants bind it at setup;
//   - the gather form of one axis: output o receives kernel tap t from input i = (o + p - t*d) / s
//     when s divides o + p - t*d and 0 <= i < in. Writing o + p = q*s + r (the "phase" r), tap t
//     lands on phase (t*d) mod s at input q - floor(t*d / s): each phase is a dense correlation;
//   - gather_generic_kernel: one thread (a few lanes for layers of few outputs) per output, any
//     geometry (the fast paths' fallback);
//   - row_gather_kernel: the 2-D fast path on fp32 FMA, one block per (n, output row, block of
//     channels), its column taps fixed at compile time (K_w, s_w, d_w), everything else at run
//     time; its row geometry (fill_row_geometry), blocks (row_block), row taps and zero rows
//     (store_zero_rows) are shared with tensor_rows.cuh, the same blocks on 3xTF32 tensor cores;
//   - RowGatherConvTranspose: the custom variant of a 2-D problem (row gather, else generic);
//   - store_run: a run of an output row with 16-byte stores in the aligned middle.
//
// Every kernel here lives in namespace kb::custom::gather, so the executor sees it as ours.
// Thread safety: stateless; the host functions may be called from any thread.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/cuda/int_divider.h"
#include "common/host_device.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/implementation.h"

namespace kb::custom::gather {

constexpr int kWarp = 32;
constexpr int kSpatial = 3;  // geometry arrays hold 3 spatial dims; a 1-D layer uses the last

// ---- Geometry ----

struct ConvTransposeGeometry {
  int rank = 0;  // spatial dims of the layer (1 to 3)
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  int64_t in[kSpatial] = {1, 1, 1}, out[kSpatial] = {1, 1, 1}, kernel[kSpatial] = {1, 1, 1};
  int64_t stride[kSpatial] = {1, 1, 1}, padding[kSpatial] = {0, 0, 0};
  int64_t dilation[kSpatial] = {1, 1, 1};

  __host__ __device__ int64_t in_per_group() const { return in_channels / groups; }
  __host__ __device__ int64_t out_per_group() const { return out_channels / groups; }
  __host__ __device__ int64_t output_numel() const {
    return batch * out_channels * out[0] * out[1] * out[2];
  }
};

// The input of one axis that tap t feeds into output o, or -1 when it feeds none.
__host__ __device__ inline int64_t axis_input(int64_t o, int64_t t, int64_t stride, int64_t pad,
                                              int64_t dilation, int64_t in) {
  const int64_t u = o + pad - t * dilation;
  if (u < 0 || u % stride != 0) return -1;
  const int64_t i = u / stride;
  return i < in ? i : -1;
}

// The most taps of one axis that land on a single phase (output position class).
inline int64_t max_taps_per_phase(int64_t kernel, int64_t stride, int64_t dilation) {
  std::vector<int64_t> taps(static_cast<size_t>(stride), 0);
  for (int64_t t = 0; t < kernel; ++t) ++taps[static_cast<size_t>(t * dilation % stride)];
  return *std::max_element(taps.begin(), taps.end());
}

// Reads conv_transpose node `node_name` (x (N, C_in, *S), w (C_in, C_out/groups, *K), y) and
// checks the output size against (S - 1)*s - 2p + d*(K - 1) + output_padding + 1.
inline Result<ConvTransposeGeometry> read_conv_transpose(const ProblemInstance& p,
                                                         const std::string& node_name) {
  const GraphNode* node = p.spec().find_node(node_name);
  if (node == nullptr || node->op != "conv_transpose" || node->inputs.size() < 2) {
    return Status::invalid_argument("gather: no conv_transpose node '" + node_name + "'");
  }
  const Shape& x = p.shape_of(node->inputs[0]);
  const Shape& w = p.shape_of(node->inputs[1]);
  const Shape& y = p.shape_of(node->output);
  const std::string what = "gather: " + node_name + " x " + shape_to_string(x) + ", w " +
                           shape_to_string(w) + ", y " + shape_to_string(y);
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size() || y.size() != x.size()) {
    return Status::invalid_argument(what + ": expected 1 to 3 spatial dims");
  }
  ConvTransposeGeometry g;
  g.rank = static_cast<int>(x.size()) - 2;
  const auto ints_or = [&](const char* attr, int64_t fill) {  // PyTorch's defaults when absent
    return p.has_attr(node_name, attr) ? p.ints(node_name, attr)
                                       : std::vector<int64_t>(static_cast<size_t>(g.rank), fill);
  };
  const std::vector<int64_t> stride = ints_or("stride", 1), pad = ints_or("padding", 0);
  const std::vector<int64_t> dil = ints_or("dilation", 1), out_pad = ints_or("output_padding", 0);
  g.groups = p.has_attr(node_name, "groups") ? p.int_attr(node_name, "groups") : 1;
  g.batch = x[0];
  g.in_channels = x[1];
  g.out_channels = w[1] * g.groups;
  if (g.groups < 1 || g.in_channels % g.groups != 0 || w[0] != g.in_channels || y[0] != g.batch ||
      y[1] != g.out_channels) {
    return Status::invalid_argument(what + ": channels do not match groups " +
                                    std::to_string(g.groups));
  }
  constexpr int64_t kLimit = int64_t{1} << 30;  // the generic gather's 32-bit index arithmetic
  if (g.in_channels >= kLimit || g.out_channels >= kLimit) {
    return Status::failed_precondition(what + ": a channel count above 2^30");
  }
  const size_t rank = static_cast<size_t>(g.rank);
  if (stride.size() != rank || pad.size() != rank || dil.size() != rank || out_pad.size() != rank) {
    return Status::invalid_argument(what + ": one stride/padding/dilation entry per dim");
  }
  for (size_t a = 0; a < rank; ++a) {
    const size_t s = kSpatial - rank + a;  // unit dims first
    g.in[s] = x[2 + a], g.kernel[s] = w[2 + a], g.out[s] = y[2 + a];
    g.stride[s] = stride[a], g.padding[s] = pad[a], g.dilation[s] = dil[a];
    const int64_t expected =
        (g.in[s] - 1) * stride[a] - 2 * pad[a] + dil[a] * (g.kernel[s] - 1) + out_pad[a] + 1;
    if (stride[a] < 1 || dil[a] < 1 || pad[a] < 0 || out_pad[a] < 0 || g.out[s] != expected) {
      return Status::invalid_argument(what + ": attributes do not give this output size");
    }
    if (g.in[s] >= kLimit || g.out[s] + pad[a] >= kLimit || dil[a] * g.kernel[s] >= kLimit ||
        stride[a] * g.in[s] >= kLimit) {
      return Status::failed_precondition(what + ": a spatial size or tap offset above 2^30");
    }
  }
  return g;
}

// ---- Launch ----

// Lets `kernel` take smem_bytes of dynamic shared memory and asks for the largest carveout, so
// that several such blocks fit on a multiprocessor (the kernels here barely use the L1 cache).
template <typename Kernel>
Status allow_shared_memory(Kernel kernel, size_t smem_bytes) {
  KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem_bytes)));
  KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   cudaSharedmemCarveoutMaxShared));
  return Status::ok();
}

// Launches kernel<<<grid, threads, smem_bytes, stream>>>(args...) and returns its launch error.
template <typename... Params, typename... Args>
Status launch(void (*kernel)(Params...), dim3 grid, int threads, size_t smem_bytes,
              cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  KB_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
  return Status::ok();
}

// ---- Device helpers ----

__device__ __forceinline__ float* dynamic_smem() {
  extern __shared__ float4 kb_gather_smem[];
  return reinterpret_cast<float*>(kb_gather_smem);
}

// Writes dst[o] for o in [0, len): chunk(o) gives elements o..o+3 where dst + o is 16-byte aligned,
// single(o) one element (the up to 3 + 3 at the edges). Thread `rank` of `count` sharing the run.
template <class Chunk, class Single>
__device__ __forceinline__ void store_run(float* dst, int len, int rank, int count, Chunk chunk,
                                          Single single) {
  const int misaligned = static_cast<int>((reinterpret_cast<uintptr_t>(dst) >> 2) & 3);
  const int head = std::min(len, (4 - misaligned) & 3);
  const int chunks = (len - head) >> 2;
  const int tail = head + 4 * chunks;
  for (int k = rank; k < chunks; k += count) {
    const int o = head + 4 * k;
    *reinterpret_cast<float4*>(dst + o) = chunk(o);
  }
  const int edges = head + (len - tail);
  for (int e = rank; e < edges; e += count) {
    const int o = e < head ? e : tail + (e - head);
    dst[o] = single(o);
  }
}

__device__ __forceinline__ void store_zeros(float* dst, int len, int rank, int count) {
  store_run(
      dst, len, rank, count, [](int) { return make_float4(0.f, 0.f, 0.f, 0.f); },
      [](int) { return 0.f; });
}

// ---- The generic gather: any rank, stride, padding, dilation, output_padding, groups ----

constexpr int kGenericThreads = 256;
constexpr int64_t kGenericMaxBlocks = int64_t{1} << 20;

// The generic gather's runtime divisions as dividers (common/cuda/int_divider.h), built once on
// the host: the output decode's (each output extent, C_out), a channel's group (C_out / groups)
// and each axis's stride. With plain divisions (64-bit ones among them) the index arithmetic was
// most of the kernel: 8.0 M warp instructions for L1_073 at N 3, 4 -> 7 channels, 5 x 7 x 9, where
// cuDNN's kernel executed 0.44 M (ncu, session 27). read_conv_transpose keeps every size, tap
// offset and channel count below 2^30, so the 32-bit dividers are exact on the sizes and on
// element indices below 2^31 (decode_output's 32-bit branch).
struct GatherDividers {
  Divider<uint32_t> out[kSpatial], out_channels, out_per_group, stride[kSpatial];

  GatherDividers() = default;
  explicit GatherDividers(const ConvTransposeGeometry& g)
      : out_channels(static_cast<uint32_t>(g.out_channels)),
        out_per_group(static_cast<uint32_t>(g.out_per_group())) {
    for (int a = 0; a < kSpatial; ++a) {
      out[a] = Divider<uint32_t>(static_cast<uint32_t>(g.out[a]));
      stride[a] = Divider<uint32_t>(static_cast<uint32_t>(g.stride[a]));
    }
  }
};

// A load through the read-only path on the device (a plain load in host tests).
__host__ __device__ __forceinline__ float load_read_only(const float* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

// axis_input in 32-bit, the stride's division by its divider: the generic gather's inner loops
// (read_conv_transpose keeps o + pad and every size below 2^30, so nothing here overflows).
__host__ __device__ __forceinline__ int axis_input32(int o, int t, const Divider<uint32_t>& stride,
                                                     int pad, int dilation, int in) {
  const int u = o + pad - t * dilation;
  if (u < 0) return -1;
  const uint32_t i = stride.div(static_cast<uint32_t>(u));
  return i * stride.divisor == static_cast<uint32_t>(u) && i < static_cast<uint32_t>(in)
             ? static_cast<int>(i)
             : -1;
}

// y[n, co, o] by gather: every kernel tap that lands on o, the input channels c_begin, c_begin +
// c_step, ... of co's group (all of them by default); dv = GatherDividers(g).
// (The 64-bit form of v1, a 64-bit division per tap and index products per channel, ran 2.7x
// slower: L2_060's generic path at N 39, C_in 1, 0.209 against 0.076 ms.)
__host__ __device__ inline float gather_one(const float* __restrict__ x,
                                            const float* __restrict__ w,
                                            const ConvTransposeGeometry& g,
                                            const GatherDividers& dv, int64_t n, int64_t co,
                                            const int64_t (&o)[kSpatial], int c_begin = 0,
                                            int c_step = 1) {
  const int64_t cin_g = g.in_per_group(), cout_g = g.out_per_group();
  const uint32_t group = dv.out_per_group.div(static_cast<uint32_t>(co));
  const int64_t c_first = int64_t{group} * cin_g, co_local = co - int64_t{group} * cout_g;
  const int64_t x_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t w_taps = g.kernel[0] * g.kernel[1] * g.kernel[2], w_step = cout_g * w_taps;
  const float* x_base = x + (n * g.in_channels + c_first) * x_plane;
  const float* w_base = w + (c_first * cout_g + co_local) * w_taps;
  int k[kSpatial], p[kSpatial], d[kSpatial], in[kSpatial], oo[kSpatial];
  KB_UNROLL
  for (int a = 0; a < kSpatial; ++a) {
    k[a] = static_cast<int>(g.kernel[a]);
    p[a] = static_cast<int>(g.padding[a]), d[a] = static_cast<int>(g.dilation[a]);
    in[a] = static_cast<int>(g.in[a]), oo[a] = static_cast<int>(o[a]);
  }
  float acc = 0.f;
  for (int t0 = 0; t0 < k[0]; ++t0) {
    const int i0 = axis_input32(oo[0], t0, dv.stride[0], p[0], d[0], in[0]);
    for (int t1 = 0; i0 >= 0 && t1 < k[1]; ++t1) {
      const int i1 = axis_input32(oo[1], t1, dv.stride[1], p[1], d[1], in[1]);
      for (int t2 = 0; i1 >= 0 && t2 < k[2]; ++t2) {
        const int i2 = axis_input32(oo[2], t2, dv.stride[2], p[2], d[2], in[2]);
        if (i2 < 0) continue;
        const float* xp = x_base + (int64_t{i0} * in[1] + i1) * in[2] + i2 + c_begin * x_plane;
        const float* wp = w_base + (t0 * k[1] + t1) * k[2] + t2 + c_begin * w_step;
        KB_UNROLL_BY(4)
        for (int64_t c = c_begin; c < cin_g;
             c += c_step, xp += c_step * x_plane, wp += c_step * w_step)
          acc = fmaf(load_read_only(xp), load_read_only(wp), acc);
      }
    }
  }
  return acc;
}

// Element e of y (N, C_out, *S_out) as its sample n, channel co and position o: below 2^31 by
// the 32-bit dividers, else by 64-bit divisions.
__host__ __device__ __forceinline__ void decode_output(int64_t e, const ConvTransposeGeometry& g,
                                                       const GatherDividers& dv, int64_t& n,
                                                       int64_t& co, int64_t (&o)[kSpatial]) {
  if (e <= 0x7fffffff) {
    uint32_t r = static_cast<uint32_t>(e);
    KB_UNROLL
    for (int a = kSpatial - 1; a >= 0; --a) {
      const uint32_t q = dv.out[a].div(r);
      o[a] = r - q * dv.out[a].divisor;
      r = q;
    }
    const uint32_t q = dv.out_channels.div(r);
    n = q, co = r - q * dv.out_channels.divisor;
    return;
  }
  for (int a = kSpatial - 1; a >= 0; --a) {
    o[a] = e % g.out[a];
    e /= g.out[a];
  }
  n = e / g.out_channels, co = e % g.out_channels;
}

// y: (N, C_out, *S_out): `split` consecutive lanes per element (a power of two <= 32), lane r of
// the group summing the input channels c = r, r + split, ... (gather_one), the group's lanes added
// by shuffles; grid-stride over the elements. A template so that each including file may
// instantiate it without a duplicate host stub.
template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    gather_generic_kernel(const float* __restrict__ x, const float* __restrict__ w,
                          float* __restrict__ y, ConvTransposeGeometry g, GatherDividers dv,
                          int split) {
  const int64_t total = g.output_numel();
  const int split_log2 = __ffs(split) - 1;
  const int64_t step = static_cast<int64_t>(gridDim.x) * (kThreads >> split_log2);
  const int lane = static_cast<int>(threadIdx.x) % kWarp, r = lane & (split - 1);
  const unsigned group = (split == kWarp ? 0xffffffffu : (1u << split) - 1u) << (lane - r);
  for (int64_t e = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) >> split_log2;
       e < total; e += step) {
    int64_t n, co, o[kSpatial];
    decode_output(e, g, dv, n, co, o);
    float v = gather_one(x, w, g, dv, n, co, o, r, split);
    for (int off = split / 2; off > 0; off /= 2) v += __shfl_xor_sync(group, v, off);
    if (r == 0) y[e] = v;
  }
}

// Multiply-adds of the layer: every input element meets C_out/groups outputs per kernel tap.
inline double layer_macs(const ConvTransposeGeometry& g) {
  return static_cast<double>(g.batch) * static_cast<double>(g.in_channels) *
         static_cast<double>(g.in[0] * g.in[1] * g.in[2]) * static_cast<double>(g.out_per_group()) *
         static_cast<double>(g.kernel[0] * g.kernel[1] * g.kernel[2]);
}

// Layers so small that a tensor-core path's fixed cost (a weight-split launch, tiles padded to
// 8-32 output channels, a persistent grid) outweighs their work: gather_generic_kernel is faster.
// The shape sweep measured L1_070 and L1_073 at 0.43-0.74x the reference through their tensor-
// core paths on layers of 1-2 M multiply-adds.
// Larger layers too where the path's tiles would mostly compute padding (`waste`, the tiles'
// multiply-adds over the layer's, tile_waste below) of kGenericMinWaste or more, up to
// kGenericMaxMacs x kGenericMinWaste: L1_070's patch GEMM (24-channel tiles, 8-channel chunks)
// at C_out 1, C_in 2 (waste 96, 16.8 M MACs) took 108 us, the gather 39, the reference 81-90;
// at C_out 2, C_in 3 (waste 32) 63 against 47; at waste 6 (C_out 8, C_in 4; C_out 4, C_in 16)
// the patch GEMM was 2-3x faster (session 22). L1_073's gather GEMM stayed faster at waste 8-12.
constexpr double kGenericMaxMacs = 8e6;
constexpr double kGenericMinWaste = 16;
inline bool generic_is_faster(const ConvTransposeGeometry& g, double waste = 1) {
  const double macs = layer_macs(g);
  return macs <= kGenericMaxMacs ||
         (waste >= kGenericMinWaste && macs <= kGenericMaxMacs * kGenericMinWaste);
}

// The padding factor of a path that tiles each group's output channels by co_tile and its input
// channels by ci_tile: the tiles' multiply-adds over the layer's (>= 1).
inline double tile_waste(const ConvTransposeGeometry& g, int64_t co_tile, int64_t ci_tile) {
  const auto padded = [](int64_t n, int64_t tile) {
    return static_cast<double>((n + tile - 1) / tile * tile) / static_cast<double>(n);
  };
  return padded(g.out_per_group(), co_tile) * padded(g.in_per_group(), ci_tile);
}

// Lanes per output for gather_generic_kernel: doubled (up to a warp, at most the group's input
// channels) while the layer's outputs times the lanes stay under ~half the H200's resident
// threads. A layer of few outputs with long channel sums otherwise leaves most SMs idle behind
// one chain of dependent loads per thread (L1_070 at C_out 1, 9,471 outputs of 297 products).
constexpr int64_t kBusyThreads = int64_t{1} << 17;
inline int channel_split(const ConvTransposeGeometry& g) {
  int split = 1;
  while (split < kWarp && 2 * split <= g.in_per_group() && g.output_numel() * split < kBusyThreads)
    split *= 2;
  return split;
}

inline Status launch_generic(const float* x, const float* w, float* y,
                             const ConvTransposeGeometry& g, cudaStream_t stream) {
  const int split = channel_split(g);
  const int64_t blocks = (g.output_numel() * split + kGenericThreads - 1) / kGenericThreads;
  return launch(gather_generic_kernel<kGenericThreads>,
                dim3(static_cast<unsigned>(std::min(blocks, kGenericMaxBlocks))), kGenericThreads,
                0, stream, x, w, y, g, GatherDividers(g), split);
}

// ---- The node a custom variant runs ----

// A custom variant's conv_transpose node `name` (input x_name, weight w_name) as bind() reads it
// at setup: its geometry and where run() finds x and w in ImplArgs. Shared by every custom
// variant that runs one such node on the generic gather or a fast path (RowGatherConvTranspose,
// TensorRowConvTranspose, ../conv_transpose3d_tf32x3's ParityConvTranspose3d's, L2_091,
// L2_093). The names are borrowed (string literals in practice) and must outlive it.
struct ConvTransposeNode {
  const char* name;    // the graph node
  const char* x_name;  // its input x (N, C_in, *S): an input of the problem
  const char* w_name;  // its weight w (C_in, C_out / groups, *K): a parameter
  ConvTransposeGeometry geometry{};
  size_t x = 0, w = 0;  // input_index(x_name), param_index(w_name)

  // Reads geometry, x and w. A node that is missing or that read_conv_transpose rejects: its
  // error, and nothing changed.
  Status bind(const ProblemInstance& p) {
    KB_ASSIGN_OR_RETURN(geometry, read_conv_transpose(p, name));
    x = input_index(p, x_name);
    w = param_index(p, w_name);
    return Status::ok();
  }
  const float* input(const ImplArgs& args) const { return args.inputs[x].data; }
  const float* weight(const ImplArgs& args) const { return args.params[w].data; }
};

// ---- The 2-D row gather (fast path) ----
//
// One block per (n, output row oh, block of co_block output channels of one group):
//   1. the kernel rows th landing on oh with a valid input row ih are its "slots"; with none, the
//      block writes zeros and ends;
//   2. stages per slot x[n, group's channels, ih, :] (zero-padded) and w[group's channels,
//      block's channels, th, :];
//   3. per pass of pass_co channels, each thread takes two column positions qw (q_threads apart)
//      and 4 channels (RowThreadTile), sums
//      every phase r (ow = qw*s_w + r - pad_w) over slots, channels and column taps in registers,
//      and writes the row to shared memory (z) shifted to the output row's 16-byte phase;
//   4. the warps copy z to the output rows with 16-byte stores.

constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / kWarp;
constexpr int kRowMaxCoBlock = 64;  // output channels per block at most
constexpr int kRowMaxPhases = 8;    // row strides the plan takes
constexpr int kRowMaxTaps = 8;      // kernel rows landing on one output row, at most

// z rows start kZMargin<kSw> floats in (16-byte aligned): the column positions a pass computes
// reach kSw - 1 outputs past either end of the output row, and land in the margins unchecked.
template <int kSw>
constexpr int kZMargin = (kSw + 2) / 4 * 4;

// The column taps, fixed at compile time: tap t lands on phase (t*d) mod s at input qw - offset.
template <int kKw, int kSw, int kDw>
struct ColumnTaps {
  static constexpr int phase(int t) { return t * kDw % kSw; }
  static constexpr int offset(int t) { return t * kDw / kSw; }
  static constexpr int kMaxOffset = (kKw - 1) * kDw / kSw;
};

struct RowGatherParams {
  const float* x;  // (N, C_in, H, W)
  const float* w;  // (groups, K_h, C_in / groups, K_w, co_pad): prepare_row_weights's layout
  float* y;        // (N, C_out, H_out, W_out)
  int cin_g, cout_g, groups;
  int in_h, in_w, out_h, out_w;
  int k_h, stride_h, pad_h, dil_h, pad_w;
  int co_block, co_blocks_per_group;  // channels per block (a multiple of the pass), per group
  int co_pad;                         // co_block * co_blocks_per_group: w's channel extent
  int q_min, q_count;                 // column positions qw = (ow + pad_w) / s_w of a row
  int x_len, z_stride;                // staged x row, z row (floats)
  bool x_vec;     // x rows staged by 16-byte copies (the staged span is inside x, 16-byte aligned)
  int row_taps;   // most kernel rows landing on one output row (slots)
  int q_threads;  // threads along qw; kRowThreads / q_threads channel sets
  // Per row phase r = (oh + pad_h) mod stride_h: the kernel rows th landing on it, and the input
  // row each reads, ih = (oh + pad_h) / stride_h - tap_back[r][i] (th ascending).
  int8_t tap_count[kRowMaxPhases];
  int8_t tap_th[kRowMaxPhases][kRowMaxTaps];
  int tap_back[kRowMaxPhases][kRowMaxTaps];
};

struct RowBlock {
  int n, oh, group, co0, co_count;  // channels co0 .. co0 + co_count - 1 of the group
  float* out;                       // y[n, group * cout_g + co0, oh, 0]
  int64_t plane;                    // H_out * W_out: from one channel's row to the next
};

// The grid is (channel blocks of all groups, H_out, N): no index division per block.
__device__ __forceinline__ RowBlock row_block(const RowGatherParams& p) {
  RowBlock b;
  const int cb = static_cast<int>(blockIdx.x);
  b.oh = static_cast<int>(blockIdx.y);
  b.n = static_cast<int>(blockIdx.z);
  b.group = cb / p.co_blocks_per_group;
  b.co0 = cb % p.co_blocks_per_group * p.co_block;
  b.co_count = std::min(p.co_block, p.cout_g - b.co0);
  b.plane = static_cast<int64_t>(p.out_h) * p.out_w;
  const int64_t co = static_cast<int64_t>(b.n) * p.groups * p.cout_g + b.group * p.cout_g + b.co0;
  b.out = p.y + (co * p.out_h + b.oh) * p.out_w;
  return b;
}

// Calls f(slot, th, ih) for each kernel row th that feeds output row oh from input row ih, from
// the plan's phase table (one division per block; the per-tap divisions were ~7% of L1_081's
// instructions).
template <class F>
__device__ __forceinline__ int for_each_row_tap(const RowGatherParams& p, int oh, F f) {
  const int u = oh + p.pad_h, q = u / p.stride_h, r = u - q * p.stride_h;
  int slot = 0;
  for (int i = 0; i < p.tap_count[r]; ++i) {
    const int ih = q - p.tap_back[r][i];
    if (ih >= 0 && ih < p.in_h) f(slot++, p.tap_th[r][i], ih);
  }
  return slot;
}

// The block's output rows as zeros (a row that no kernel row lands on), a warp per channel.
__device__ __forceinline__ void store_zero_rows(const RowGatherParams& p, const RowBlock& b) {
  for (int c = threadIdx.x / kWarp; c < b.co_count; c += kRowWarps) {
    store_zeros(b.out + c * b.plane, p.out_w, threadIdx.x % kWarp, kWarp);
  }
}

// Calls f(r, c) for every r < rows, c < cols, spread over the block's threads with no division
// per cell: a warp takes 32 / cols rows at a time when cols <= 32, else one row along its lanes.
template <class F>
__device__ __forceinline__ void for_each_cell(int rows, int cols, F f) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (cols <= kWarp) {
    const int per = kWarp / cols, r0 = lane / cols, c = lane - r0 * cols;
    if (r0 >= per) return;
    for (int r = warp * per + r0; r < rows; r += kRowWarps * per) f(r, c);
  } else {
    for (int r = warp; r < rows; r += kRowWarps)
      for (int c = lane; c < cols; c += kWarp) f(r, c);
  }
}

// Asynchronously (cp.async, then a commit): xs[slot][ci][k] = x[n, c0 + ci, ih, q_min - kMaxOff
// + k] (zeros outside x; a warp per staged row, lanes along it) and ws[slot][ci][t][co] = the
// prepared w[group][th][ci][t][co0 + co] (16-byte copies of whole channel rows; zeros past the
// group's channels come from the preparation).
template <int kKw, int kMaxOff>
__device__ void stage_slot(const RowGatherParams& p, const RowBlock& b, int slot, int th, int ih,
                           float* ws, float* xs) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t c0 = static_cast<int64_t>(b.group) * p.cin_g;
  const int iw0 = p.q_min - kMaxOff;
  const int64_t c_first = static_cast<int64_t>(b.n) * p.groups * p.cin_g + c0;
  if (p.x_vec) {  // no zero padding: the staged span lies inside the row
    for_each_cell(p.cin_g, p.x_len / 4, [&](int ci, int k4) {
      const float* src = p.x + ((c_first + ci) * p.in_h + ih) * p.in_w + iw0 + 4 * k4;
      __pipeline_memcpy_async(xs + (slot * p.cin_g + ci) * p.x_len + 4 * k4, src,
                              4 * sizeof(float));
    });
  }
  for (int ci = warp; !p.x_vec && ci < p.cin_g; ci += kRowWarps) {
    const float* src = p.x + ((c_first + ci) * p.in_h + ih) * p.in_w;
    float* dst = xs + (slot * p.cin_g + ci) * p.x_len;
    for (int k = lane; k < p.x_len; k += kWarp) {
      const int iw = iw0 + k;
      if (iw >= 0 && iw < p.in_w) {
        __pipeline_memcpy_async(dst + k, src + iw, sizeof(float));
      } else {
        dst[k] = 0.f;
      }
    }
  }
  const int rows = p.cin_g * kKw;
  const float* src = p.w + (static_cast<int64_t>(b.group) * p.k_h + th) * rows * p.co_pad + b.co0;
  float* dst = ws + slot * rows * p.co_block;
  for_each_cell(rows, p.co_block / 4, [&](int row, int c4) {
    __pipeline_memcpy_async(dst + row * p.co_block + 4 * c4,
                            src + static_cast<int64_t>(row) * p.co_pad + 4 * c4, 4 * sizeof(float));
  });
  __pipeline_commit();
}

// A thread's share of a pass: kQ column positions (q_threads apart) x kCo channels.
template <int kQ, int kCo>
struct ThreadTile {
  static_assert(kCo % 4 == 0, "weights are read as float4");
  static constexpr int kQs = kQ, kCos = kCo;
};
// Two positions x 4 channels: a float4 of weights feeds 8 multiply-adds, with fewer shared loads
// per multiply-add than 1 x 8 (L1_081: 5 instead of 7 per 24; L1_075: 9 instead of 12 per 40).
using RowThreadTile = ThreadTile<2, 4>;

// acc[j][r][c]: phase r of column position q_min + qi[j], channel co_l0 + c, over all staged
// rows. A float4 of weights feeds kQ x 4 multiply-adds.
template <int kKw, int kSw, int kDw, class Tile>
__device__ __forceinline__ void accumulate(const RowGatherParams& p, int slots,
                                           const int (&qi)[Tile::kQs], int co_l0, const float* ws,
                                           const float* xs,
                                           float (&acc)[Tile::kQs][kSw][Tile::kCos]) {
  using Taps = ColumnTaps<kKw, kSw, kDw>;
  constexpr int kQ = Tile::kQs, kCo = Tile::kCos;
  const int rows = slots * p.cin_g;  // (slot, ci), in staging order
#pragma unroll 2
  for (int row = 0; row < rows; ++row) {
    const float* xr = xs + row * p.x_len + Taps::kMaxOffset;
    float xv[kQ][Taps::kMaxOffset + 1];
#pragma unroll
    for (int j = 0; j < kQ; ++j)
#pragma unroll
      for (int o = 0; o <= Taps::kMaxOffset; ++o) xv[j][o] = xr[qi[j] - o];
    const float* wr = ws + row * kKw * p.co_block + co_l0;
#pragma unroll
    for (int t = 0; t < kKw; ++t) {
#pragma unroll
      for (int c4 = 0; c4 < kCo; c4 += 4) {
        const float4 w4 = *reinterpret_cast<const float4*>(wr + t * p.co_block + c4);
        const float wv[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int j = 0; j < kQ; ++j)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            float& a = acc[j][Taps::phase(t)][c4 + c];
            a = fmaf(xv[j][Taps::offset(t)], wv[c], a);
          }
      }
    }
  }
}

// z[row][shift + ow] for the pass's channels pass + row, shift = the output row's 16-byte phase.
template <int kKw, int kSw, int kDw, class Tile>
__device__ void compute_pass(const RowGatherParams& p, const RowBlock& b, int slots, int pass,
                             const float* ws, const float* xs, float* z) {
  constexpr int kQ = Tile::kQs, kCo = Tile::kCos;
  const int tq = threadIdx.x % p.q_threads, cs = threadIdx.x / p.q_threads;
  const int co_l0 = pass + cs * kCo;
  // The 16-byte phase of each channel's row, in 32-bit (only the values mod 4 matter).
  const int out_phase = static_cast<int>((reinterpret_cast<uintptr_t>(b.out) >> 2) & 3);
  const int plane4 = static_cast<int>(b.plane & 3);
  int shift[kCo];
#pragma unroll
  for (int c = 0; c < kCo; ++c) shift[c] = (out_phase + (co_l0 + c) * plane4) & 3;
  float* zc = z + cs * kCo * p.z_stride;
  for (int q0 = tq; q0 < p.q_count; q0 += kQ * p.q_threads) {
    int qi[kQ];
#pragma unroll
    for (int j = 0; j < kQ; ++j) qi[j] = std::min(q0 + j * p.q_threads, p.q_count - 1);
    float acc[kQ][kSw][kCo] = {};
    accumulate<kKw, kSw, kDw, Tile>(p, slots, qi, co_l0, ws, xs, acc);
#pragma unroll
    for (int j = 0; j < kQ; ++j) {
      if (q0 + j * p.q_threads >= p.q_count) break;
      // ow0 + r spans [-(kSw - 1), W_out + kSw - 2]: the margins take the outside ones.
      const int ow0 = (p.q_min + qi[j]) * kSw - p.pad_w + kZMargin<kSw>;
#pragma unroll
      for (int r = 0; r < kSw; ++r)
#pragma unroll
        for (int c = 0; c < kCo; ++c) zc[c * p.z_stride + shift[c] + ow0 + r] = acc[j][r][c];
    }
  }
}

template <int kSw>
__device__ __forceinline__ void store_pass(const RowGatherParams& p, const RowBlock& b, int pass,
                                           int pass_co, const float* z) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (int row = warp; row < pass_co && pass + row < b.co_count; row += kRowWarps) {
    float* dst = b.out + (pass + row) * b.plane;
    const float* src =
        z + row * p.z_stride + kZMargin<kSw> + ((reinterpret_cast<uintptr_t>(dst) >> 2) & 3);
    store_run(
        dst, p.out_w, lane, kWarp,
        [src](int o) { return *reinterpret_cast<const float4*>(src + o); },
        [src](int o) { return src[o]; });
  }
}

// Three blocks per SM (<= 85 registers): shared memory allows no more at L1_075 (57 KB), and with
// a bare __launch_bounds__(256) ptxas held L1_075 to 64 registers and spilled (0.422 -> 0.440 ms).
template <int kKw, int kSw, int kDw, class Tile>
__global__ void __launch_bounds__(kRowThreads, 3) row_gather_kernel(RowGatherParams p) {
  const RowBlock b = row_block(p);
  const int slots = for_each_row_tap(p, b.oh, [](int, int, int) {});
  if (slots == 0) return store_zero_rows(p, b);  // no tap lands on this row
  float* ws = dynamic_smem();
  float* xs = ws + p.row_taps * p.cin_g * kKw * p.co_block;
  float* z = xs + (p.row_taps * p.cin_g * p.x_len + 3) / 4 * 4;
  constexpr int kMaxOff = ColumnTaps<kKw, kSw, kDw>::kMaxOffset;
  for_each_row_tap(p, b.oh, [&](int slot, int th, int ih) {
    stage_slot<kKw, kMaxOff>(p, b, slot, th, ih, ws, xs);
  });
  __pipeline_wait_prior(0);
  __syncthreads();
  const int pass_co = kRowThreads / p.q_threads * Tile::kCos;
  for (int pass = 0; pass < b.co_count; pass += pass_co) {
    compute_pass<kKw, kSw, kDw, Tile>(p, b, slots, pass, ws, xs, z);
    __syncthreads();
    store_pass<kSw>(p, b, pass, pass_co, z);
    __syncthreads();
  }
}

// wp[group][th][ci][t][co] = w[group * cin_g + ci, co, th, t] for co < cout_g, else 0: the
// weights in the order a block stages them (whole rows of its channels, 16-byte copies). One
// thread per element of wp; a few microseconds per call (the weights may change between calls).
template <int kKw>
__global__ void __launch_bounds__(kGenericThreads)
    prepare_row_weights_kernel(const float* __restrict__ w, float* __restrict__ wp,
                               RowGatherParams p) {
  const int64_t total = static_cast<int64_t>(p.groups) * p.k_h * p.cin_g * kKw * p.co_pad;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kGenericThreads + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * kGenericThreads) {
    int64_t r = e;
    const int co = static_cast<int>(r % p.co_pad);
    r /= p.co_pad;
    const int t = static_cast<int>(r % kKw);
    r /= kKw;
    const int ci = static_cast<int>(r % p.cin_g);
    r /= p.cin_g;
    const int th = static_cast<int>(r % p.k_h);
    const int64_t group = r / p.k_h;
    wp[e] =
        co < p.cout_g
            ? w[((group * p.cin_g + ci) * p.cout_g + co) * (int64_t{p.k_h} * kKw) + th * kKw + t]
            : 0.f;
  }
}

struct RowGatherPlan {
  RowGatherParams params = {};
  dim3 grid;  // (channel blocks of all groups, H_out, N)
  size_t smem_bytes = 0;
  int64_t weight_floats = 0;  // of the prepared weights (prepare_row_weights_kernel)
};

// The row geometry every row kernel shares: sizes, column positions q_min .. q_min + q_count - 1
// (qw = (ow + pad_w) / s_w over the output row) and the row-tap table; failed_precondition
// saying why when a row kernel with column taps (kKw, kSw, kDw) does not apply to g.
template <int kKw, int kSw, int kDw>
Status fill_row_geometry(const ConvTransposeGeometry& g, RowGatherParams* out) {
  const auto no = [](const std::string& why) { return Status::failed_precondition(why); };
  if (g.rank != 2) return no("not a 2-D layer");
  if (g.kernel[2] != kKw || g.stride[2] != kSw || g.dilation[2] != kDw) {
    return no("column taps differ from the compiled ones");
  }
  const int64_t limit = int64_t{1} << 30;
  for (int64_t v : {g.in[1], g.in[2], g.out[1], g.out[2], g.in_channels, g.out_channels,
                    g.kernel[1] * g.stride[1] * g.dilation[1] + g.padding[1], g.padding[2]}) {
    if (v >= limit) return no("a size needs 64-bit indexing");
  }
  RowGatherParams& p = *out;
  p.cin_g = static_cast<int>(g.in_per_group()), p.cout_g = static_cast<int>(g.out_per_group());
  p.groups = static_cast<int>(g.groups);
  p.in_h = static_cast<int>(g.in[1]), p.in_w = static_cast<int>(g.in[2]);
  p.out_h = static_cast<int>(g.out[1]), p.out_w = static_cast<int>(g.out[2]);
  p.k_h = static_cast<int>(g.kernel[1]), p.stride_h = static_cast<int>(g.stride[1]);
  p.pad_h = static_cast<int>(g.padding[1]), p.dil_h = static_cast<int>(g.dilation[1]);
  p.pad_w = static_cast<int>(g.padding[2]);
  p.q_min = p.pad_w / kSw;
  p.q_count = (p.out_w - 1 + p.pad_w) / kSw - p.q_min + 1;
  p.row_taps = static_cast<int>(max_taps_per_phase(g.kernel[1], g.stride[1], g.dilation[1]));
  if (p.stride_h > kRowMaxPhases || p.row_taps > kRowMaxTaps)
    return no("too many row phases or taps");
  // Kernel row th lands on phase r = (th d) mod s and reads input row q - (th d - r) / s.
  for (int th = 0; th < p.k_h; ++th) {
    const int td = th * p.dil_h, r = td % p.stride_h;
    const int i = p.tap_count[r]++;
    p.tap_th[r][i] = static_cast<int8_t>(th);
    p.tap_back[r][i] = (td - r) / p.stride_h;
  }
  if (p.out_h > 65535 || g.batch > 65535) return no("grid too large");
  return Status::ok();
}

// The launch of row_gather_kernel<kKw, kSw, kDw, Tile> for g, or failed_precondition saying why
// the fast path does not apply (the caller then runs the generic gather).
template <int kKw, int kSw, int kDw, class Tile>
Result<RowGatherPlan> plan_row_gather(const ConvTransposeGeometry& g, int64_t max_smem_bytes) {
  const auto no = [](const std::string& why) { return Status::failed_precondition(why); };
  RowGatherPlan plan;
  RowGatherParams& p = plan.params;
  KB_TRY((fill_row_geometry<kKw, kSw, kDw>(g, &p)));
  const int64_t limit = int64_t{1} << 30;
  p.q_threads = kWarp;
  while (p.q_threads * Tile::kQs < p.q_count && p.q_threads < kRowThreads) p.q_threads *= 2;
  const int pass_co = kRowThreads / p.q_threads * Tile::kCos;
  p.co_block = (std::min(p.cout_g, kRowMaxCoBlock) + pass_co - 1) / pass_co * pass_co;
  p.co_blocks_per_group = (p.cout_g + p.co_block - 1) / p.co_block;
  p.co_pad = p.co_block * p.co_blocks_per_group;
  p.x_len = p.q_count + ColumnTaps<kKw, kSw, kDw>::kMaxOffset;
  const int iw0 = p.q_min - ColumnTaps<kKw, kSw, kDw>::kMaxOffset;
  p.x_vec = iw0 >= 0 && iw0 % 4 == 0 && iw0 + p.x_len <= p.in_w && p.x_len % 4 == 0 &&
            p.in_w % 4 == 0;  // and, per call, x 16-byte aligned (run())
  p.z_stride = (kZMargin<kSw> + p.out_w + kSw + 2 + 3) / 4 * 4;
  const int64_t floats = int64_t{p.row_taps} * p.cin_g * kKw * p.co_block +
                         (int64_t{p.row_taps} * p.cin_g * p.x_len + 3) / 4 * 4 +
                         int64_t{pass_co} * p.z_stride;
  plan.smem_bytes = static_cast<size_t>(floats) * sizeof(float);
  if (floats * static_cast<int64_t>(sizeof(float)) > max_smem_bytes) {
    return no("staged rows exceed shared memory");
  }
  const int64_t co_blocks = int64_t{p.groups} * p.co_blocks_per_group;
  if (co_blocks >= limit) return no("grid too large");
  plan.grid = dim3(static_cast<unsigned>(co_blocks), static_cast<unsigned>(p.out_h),
                   static_cast<unsigned>(g.batch));
  plan.weight_floats = int64_t{p.groups} * p.k_h * p.cin_g * kKw * p.co_pad;
  if (plan.weight_floats >= limit) return no("too many weights");
  return plan;
}

// ---- The custom variant of a 2-D problem ----

// Column positions per row below which a small layer (generic_is_faster) runs the generic gather.
constexpr int kNarrowRow = 16;

// Runs node `node` (input x_name, weight w_name) through row_gather_kernel<kKw, kSw, kDw,
// RowThreadTile> when the plan applies and the layer is not small with narrow rows, else through
// the generic gather.
template <int kKw, int kSw, int kDw>
class RowGatherConvTranspose : public Implementation {
 public:
  RowGatherConvTranspose(const char* node, const char* x_name, const char* w_name)
      : node_{node, x_name, w_name} {}
  RowGatherConvTranspose(const RowGatherConvTranspose&) = delete;
  RowGatherConvTranspose& operator=(const RowGatherConvTranspose&) = delete;
  ~RowGatherConvTranspose() override { KB_CUDA_WARN(cudaFree(prepared_w_)); }

  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    KB_TRY(node_.bind(p));
    Result<int> max_smem = cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    if (!max_smem.is_ok()) return max_smem.status();
    Result<RowGatherPlan> plan =
        plan_row_gather<kKw, kSw, kDw, RowThreadTile>(node_.geometry, max_smem.value());
    // Rows of a few column positions leave most of a block's threads idle behind its staging
    // latency: in a small layer the generic gather is faster there (the sweep measured L1_075 at
    // 0.67x the reference at 11 x 28 x 59 x 7, 7 positions, and 1.5x on the generic gather).
    // With rows of 19-55 positions (L1_081, N = 1) the row gather stayed the faster one.
    fast_ = plan.is_ok() &&
            !(generic_is_faster(node_.geometry) && plan.value().params.q_count < kNarrowRow);
    if (!fast_) return Status::ok();
    plan_ = plan.value();
    KB_CUDA_TRY(cudaFree(prepared_w_));
    prepared_w_ = nullptr;
    KB_CUDA_TRY(cudaMalloc(&prepared_w_, sizeof(float) * static_cast<size_t>(plan_.weight_floats)));
    return allow_shared_memory(row_gather_kernel<kKw, kSw, kDw, RowThreadTile>, plan_.smem_bytes);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = node_.input(args);
    const float* w = node_.weight(args);
    if (!fast_) return launch_generic(x, w, args.output.data, node_.geometry, stream);
    RowGatherParams p = plan_.params;
    p.x = x, p.w = prepared_w_, p.y = args.output.data;
    p.x_vec = p.x_vec && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const int64_t prep_blocks = (plan_.weight_floats + kGenericThreads - 1) / kGenericThreads;
    KB_TRY(launch(prepare_row_weights_kernel<kKw>,
                  dim3(static_cast<unsigned>(std::min(prep_blocks, kGenericMaxBlocks))),
                  kGenericThreads, 0, stream, w, prepared_w_, p));
    return launch(row_gather_kernel<kKw, kSw, kDw, RowThreadTile>, plan_.grid, kRowThreads,
                  plan_.smem_bytes, stream, p);
  }

 private:
  ConvTransposeNode node_;
  bool fast_ = false;
  RowGatherPlan plan_;
  float* prepared_w_ = nullptr;  // owned: plan_.weight_floats, prepare_row_weights_kernel's layout
};

}  // namespace kb::custom::gather

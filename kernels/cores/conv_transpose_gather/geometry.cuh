// The shared ground of the output-stationary ("gather") transposed convolutions (generic.cuh,
// gather.cuh, tensor_rows.cuh, the tensor-core cores under kernels/cores/conv_transpose*):
//
//   - ConvTransposeGeometry: a conv_transpose graph node's sizes and attributes, read from the
//     ProblemInstance (read_conv_transpose) and padded to 3 spatial dims (unit dims first);
//   - the gather form of one axis (axis_input): output o receives kernel tap t from input
//     i = (o + p - t*d) / s when s divides o + p - t*d and 0 <= i < in. Writing o + p = q*s + r
//     (the "phase" r), tap t lands on phase (t*d) mod s at input q - floor(t*d / s): each phase
//     is a dense correlation;
//   - launch helpers (allow_shared_memory, launch) and dynamic_smem (the output rows' 16-byte
//     stores: kernels/cores/aligned_store.cuh).
//
// Everything here lives in namespace kb::custom::gather, so the executor sees its kernels as ours.
// Thread safety: stateless; the host functions may be called from any thread.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/host_device.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/cores/aligned_store.cuh"
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

}  // namespace kb::custom::gather

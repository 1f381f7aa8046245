// The GPU backend's ops: for one graph node, the launches PyTorch eager makes for it in strict
// fp32 (cuDNN with CUDNN_FMA_MATH for convs, cuBLAS without TF32 for GEMMs, one eager kernel per
// elementwise/norm/layout op, kernels/eager/eager_ops.h), planned once at setup.
//
// A node may need temporaries while it runs (eager allocates them inside the op and frees them
// when it returns: the sigmoid of `sigmoid(x) * x`, the terms of kl_div, the attention scores);
// it declares their sizes, and the graph reference's allocator (graph_reference.h) hands it
// buffers that other nodes reuse before and after.
//
// Where eager's way is not one kernel per op: linear is one SGEMM and a bias add (addmm's bias
// term as its own kernel); conv/conv_transpose run through cuDNN (CudnnConv), training-mode
// batch_norm through cuDNN where PyTorch uses it (CudnnBatchNorm),
// tensors over INT_MAX elements in batch chunks as PyTorch's split_batch_dim_to_32bit_out; swish
// is sigmoid then mul (`torch.sigmoid(x) * x`, the suite's source form); kl_div is xlogy, mul,
// sub, sum, divide (ATen's kl_div); multihead_attention is F.multi_head_attention_forward's slow
// path with need_weights=True (self-attention only); permute is one dense copy.
// Ops whose output is a view (reshape) have no GpuNode: the plan aliases their storage.
// Thread safety: a GpuNode is used by one thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/implementation.h"

namespace kb::graph {

// The tensors of one node's call: its inputs in the node's order, its output, its temporaries.
struct NodeIo {
  std::span<const DeviceTensor> in;
  DeviceTensor out;
  std::span<float* const> scratch;
};

struct GpuNode {
  std::vector<int64_t> scratch_elements;  // one temporary buffer per entry, live during run
  std::function<Status(const NodeIo&, cudaStream_t)> run;
  std::shared_ptr<void> state;  // what `run` refers to and must outlive it (cuDNN plans)
};

// Plans `node` of `problem` (shapes resolved, cuDNN algorithm chosen: may allocate a workspace
// and synchronize). Fails with failed_precondition for a configuration the backend cannot run
// as eager does (e.g. a mean over non-trailing dims, cross-attention).
Result<GpuNode> make_gpu_node(const ProblemInstance& problem, const GraphNode& node,
                              cudaStream_t stream);

// nn.MultiheadAttention's forward as F.multi_head_attention_forward runs it (graph_attention.cu).
Result<GpuNode> make_attention_node(const ProblemInstance& problem, const GraphNode& node);

}  // namespace kb::graph

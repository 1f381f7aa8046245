// The golden model of every problem: an interpreter of the spec's `graph:` over the CPU ops of
// kernels/cpu/ops.h, node by node, in PyTorch's semantics. T is the accumulation and storage type
// of every intermediate: double for the golden model, float for the CPU device's fp32 variant.
// Each intermediate is freed right after its last use (kernels/graph/graph_plan.h), so the peak
// memory is that of the live tensors, not of the whole graph.
//
// Every op of common/op_catalog.h is interpreted; configuration comes from the node's attributes
// resolved against the instance's dims, so the model is right for any valid dims.
//
// Thread safety: run_graph is a pure function of its arguments; call it from any thread.
#pragma once

#include "common/host_tensor.h"
#include "common/problem_spec.h"

namespace kb::cpu {

// The output of `problem`'s graph on the fp32 inputs and parameters of `tensors` (by spec name).
template <typename T>
HostTensor<T> run_graph(const ProblemInstance& problem, const TensorSet& tensors);

extern template HostTensor<double> run_graph<double>(const ProblemInstance&, const TensorSet&);
extern template HostTensor<float> run_graph<float>(const ProblemInstance&, const TensorSet&);

}  // namespace kb::cpu

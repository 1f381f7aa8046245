// The reference of a problem that is one convolution or transposed-convolution layer and
// nothing else (L1_054, L1_060, L1_070, L1_073, L1_075, L1_079, L1_081): one CudnnConv call, as
// PyTorch eager runs the layer. The layer is the graph node named in the constructor; its input,
// weight and (optional) bias are that node's inputs, looked up by name in the spec.
//
// Thread safety: as Implementation.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "kernels/device/cudnn_conv.h"
#include "kernels/implementation.h"

namespace kb {

class SingleConvReference : public Implementation {
 public:
  explicit SingleConvReference(std::string node) : node_(std::move(node)) {}

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    const GraphNode* node = p.spec().find_node(node_);
    if (!node || node->inputs.size() < 2) {
      return Status::failed_precondition(p.spec().id + ": no conv node '" + node_ + "'");
    }
    x_ = input_index(p, node->inputs[0]);
    weight_ = param_index(p, node->inputs[1]);
    has_bias_ = node->inputs.size() > 2;
    if (has_bias_) bias_ = param_index(p, node->inputs[2]);
    return conv_.setup(p, node_, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* bias = has_bias_ ? args.params[bias_].data : nullptr;
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, bias, args.output.data, stream);
  }

 private:
  std::string node_;
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, bias_ = 0;
  bool has_bias_ = false;
};

}  // namespace kb

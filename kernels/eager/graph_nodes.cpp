// make_gpu_node (graph_nodes.h): one factory per catalog op, each reading the node's
// attributes and returning the launches eager makes for it.
#include "kernels/eager/graph_nodes.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/eager/cublas_gemm.h"
#include "kernels/eager/cudnn_batch_norm.h"
#include "kernels/eager/cudnn_conv.h"
#include "kernels/eager/eager_ops.h"

namespace kb::graph {
namespace {

using eager::Binary;
using eager::Unary;

GpuNode simple(std::function<Status(const NodeIo&, cudaStream_t)> run) {
  return GpuNode{{}, std::move(run), nullptr};
}

Status unsupported(const ProblemInstance& p, const GraphNode& node, const std::string& why) {
  return Status::failed_precondition(p.spec().id + " node '" + node.name + "' (" + node.op +
                                     "): the GPU reference " + why);
}

// Elementwise ops of one input: op code and its constants, read from the node.
bool unary_op(const ProblemInstance& p, const GraphNode& node, Unary& op, float& a, float& b) {
  static const std::map<std::string, Unary> kPlain = {
      {"relu", Unary::kRelu},    {"sigmoid", Unary::kSigmoid},     {"tanh", Unary::kTanh},
      {"gelu", Unary::kGeluErf}, {"hardswish", Unary::kHardswish}, {"log", Unary::kLog}};
  static const std::map<std::string, Unary> kScalar = {{"add_scalar", Unary::kAddScalar},
                                                       {"mul_scalar", Unary::kMulScalar},
                                                       {"div_scalar", Unary::kDivScalar},
                                                       {"min_scalar", Unary::kMinScalar}};
  const std::string& n = node.name;
  a = b = 0;
  if (auto it = kPlain.find(node.op); it != kPlain.end()) {
    op = it->second;
  } else if (auto it2 = kScalar.find(node.op); it2 != kScalar.end()) {
    op = it2->second;
    a = static_cast<float>(p.number(n, "value"));
  } else if (node.op == "leaky_relu") {
    op = Unary::kLeakyRelu;
    a = static_cast<float>(p.number(n, "negative_slope"));
  } else if (node.op == "hardtanh") {
    op = Unary::kHardtanh;
    a = static_cast<float>(p.number(n, "min_val"));
    b = static_cast<float>(p.number(n, "max_val"));
  } else {
    return false;
  }
  return true;
}

Result<GpuNode> conv_node(const ProblemInstance& p, const GraphNode& node, cudaStream_t stream) {
  auto conv = std::make_shared<CudnnConv>();
  // Batches over INT_MAX elements run in chunks inside CudnnConv, as PyTorch splits them.
  KB_TRY(conv->setup(p, node.name, stream));
  const bool has_bias = node.inputs.size() > 2;
  CudnnConv* c = conv.get();
  return GpuNode{{},
                 [c, has_bias](const NodeIo& io, cudaStream_t s) {
                   const float* bias = has_bias ? io.in[2].data : nullptr;
                   return c->run(io.in[0].data, io.in[1].data, bias, io.out.data, s);
                 },
                 conv};
}

// `torch.sigmoid(x) * x`, the form in the suite's source: two kernels and a temporary.
GpuNode swish_node(const ProblemInstance& p, const GraphNode& node) {
  return GpuNode{{element_count(p.shape_of(node.output))},
                 [](const NodeIo& io, cudaStream_t s) {
                   const DeviceTensor t{io.scratch[0], io.out.shape};
                   KB_TRY(eager::unary(Unary::kSigmoid, io.in[0].data, t.data, t.numel(), s));
                   return eager::binary(Binary::kMul, t, io.in[0], io.out, s);
                 },
                 nullptr};
}

// ATen's kl_div for a non-log target: xlogy(t, t) - t * input, summed, / rows for 'batchmean'.
GpuNode kl_div_node(const ProblemInstance& p, const GraphNode& node) {
  const Shape& shape = p.shape_of(node.inputs[0]);
  const int64_t n = element_count(shape);
  const float rows = static_cast<float>(shape.at(0));
  return GpuNode{{n, n, n, 1},
                 [rows, shape](const NodeIo& io, cudaStream_t s) {
                   const DeviceTensor xlogy{io.scratch[0], shape}, product{io.scratch[1], shape},
                       terms{io.scratch[2], shape};
                   const DeviceTensor& log_input = io.in[0];
                   const DeviceTensor& target = io.in[1];
                   KB_TRY(eager::binary(Binary::kXlogy, target, target, xlogy, s));
                   KB_TRY(eager::binary(Binary::kMul, target, log_input, product, s));
                   KB_TRY(eager::binary(Binary::kSub, xlogy, product, terms, s));
                   KB_TRY(eager::sum_all(terms, io.scratch[3], s));
                   return eager::unary(Unary::kDivScalar, io.scratch[3], io.out.data, 1, s, rows);
                 },
                 nullptr};
}

Result<GpuNode> mean_node(const ProblemInstance& p, const GraphNode& node) {
  const int64_t rank = static_cast<int64_t>(p.shape_of(node.inputs[0]).size());
  const std::vector<int64_t> dims = p.ints(node.name, "dims");
  const int count = static_cast<int>(dims.size());
  for (int64_t d : dims) {
    if (d < 0) d += rank;
    if (d < rank - count || d >= rank) return unsupported(p, node, "reduces trailing dims only");
  }
  return simple([count](const NodeIo& io, cudaStream_t s) {
    return eager::mean_trailing(io.in[0], count, io.out, s);
  });
}

// torch.bmm with allow_tf32 = False: one strided-batched SGEMM.
GpuNode bmm_node(const ProblemInstance& p, const GraphNode& node) {
  const Shape& a = p.shape_of(node.inputs[0]);  // (B, M, K)
  const Shape& b = p.shape_of(node.inputs[1]);  // (B, K, N)
  const GemmShape shape{a[1], b[2], a[2], false, false};
  const int64_t batch = a[0];
  return simple([shape, batch](const NodeIo& io, cudaStream_t s) {
    const int64_t m = shape.m, n = shape.n, k = shape.k;
    return gemm_strided_batched(shape, 1.0f, io.in[0].data, k, m * k, io.in[1].data, n, k * n, 0.0f,
                                io.out.data, n, m * n, batch, s);
  });
}

// F.linear as eager runs it: x viewed as (rows, K) times W^T with cuBLAS's transpose of the stored
// (O, K) weight (allow_tf32 = False). at::linear makes a 2-D or (contiguous) 3-D input with a
// bias one addmm: the bias copied into every row of the output (copy_ of bias.expand), then one
// SGEMM with beta = 1 accumulating onto it. A higher-rank input is matmul, then add_(bias).
GpuNode linear_node(const ProblemInstance& p, const GraphNode& node) {
  const Shape& w = p.shape_of(node.inputs[1]);  // (O, K)
  const int64_t rows = element_count(p.shape_of(node.inputs[0])) / w[1];
  const GemmShape shape{rows, w[0], w[1], false, true};
  const bool has_bias = node.inputs.size() > 2;
  const bool addmm = has_bias && p.shape_of(node.inputs[0]).size() <= 3;
  return simple([shape, has_bias, addmm](const NodeIo& io, cudaStream_t s) {
    if (addmm) {
      KB_TRY(eager::broadcast_rows(io.in[2].data, shape.n, io.out.data, shape.m, s));
      return gemm(shape, 1.0f, io.in[0].data, shape.k, io.in[1].data, shape.k, 1.0f, io.out.data,
                  shape.n, s);
    }
    KB_TRY(gemm(shape, 1.0f, io.in[0].data, shape.k, io.in[1].data, shape.k, 0.0f, io.out.data,
                shape.n, s));
    if (!has_bias) return Status::ok();
    return eager::binary(Binary::kAdd, io.out, io.in[2], io.out, s);
  });
}

int64_t positive_dim(int64_t dim, size_t rank) {
  return dim < 0 ? dim + static_cast<int64_t>(rank) : dim;
}

Result<GpuNode> norm_or_layout_node(const ProblemInstance& p, const GraphNode& node) {
  const std::string& op = node.op;
  const std::string& n = node.name;
  if (op == "batch_norm") {  // training mode: batch statistics, biased variance
    const double eps = p.number(n, "eps");
    const Shape& x = p.shape_of(node.inputs[0]);
    if (CudnnBatchNorm::applies(x, eps)) {  // eager's path: cuDNN
      auto bn = std::make_shared<CudnnBatchNorm>();
      KB_TRY(bn->setup(x, eps));
      CudnnBatchNorm* b = bn.get();
      return GpuNode{{},
                     [b](const NodeIo& io, cudaStream_t s) {
                       return b->run(io.in[0].data, io.in[1].data, io.in[2].data, io.out.data, s);
                     },
                     bn};
    }
    return simple([eps = static_cast<float>(eps)](const NodeIo& io, cudaStream_t s) {
      return eager::batch_norm_train(io.in[0], io.in[1].data, io.in[2].data, eps, io.out, s);
    });
  }
  if (op == "instance_norm") {
    const float eps = static_cast<float>(p.number(n, "eps"));
    return simple([eps](const NodeIo& io, cudaStream_t s) {
      return eager::instance_norm(io.in[0], eps, io.out, s);
    });
  }
  if (op == "group_norm") {
    const float eps = static_cast<float>(p.number(n, "eps"));
    const int64_t groups = p.int_attr(n, "num_groups");
    return simple([eps, groups](const NodeIo& io, cudaStream_t s) {
      return eager::group_norm(io.in[0], groups, io.in[1].data, io.in[2].data, eps, io.out, s);
    });
  }
  if (op == "layer_norm") {
    const float eps = static_cast<float>(p.number(n, "eps"));
    const int64_t normalized = element_count(p.shape_of(node.inputs[1]));
    return simple([eps, normalized](const NodeIo& io, cudaStream_t s) {
      return eager::layer_norm(io.in[0], normalized, io.in[1].data, io.in[2].data, eps, io.out, s);
    });
  }
  if (op == "softmax") {
    const int dim =
        static_cast<int>(positive_dim(p.int_attr(n, "dim"), p.shape_of(node.inputs[0]).size()));
    return simple([dim](const NodeIo& io, cudaStream_t s) {
      return eager::softmax(io.in[0], dim, io.out, s);
    });
  }
  if (op == "channel_shuffle") {
    const int64_t groups = p.int_attr(n, "groups");
    return simple([groups](const NodeIo& io, cudaStream_t s) {
      return eager::channel_shuffle(io.in[0], groups, io.out, s);
    });
  }
  if (op == "permute") {  // eager makes the permuted view dense with one copy where it is read
    std::vector<int> dims;
    for (int64_t d : p.ints(n, "dims")) {
      dims.push_back(static_cast<int>(positive_dim(d, p.shape_of(node.inputs[0]).size())));
    }
    return simple([dims](const NodeIo& io, cudaStream_t s) {
      return eager::permute(io.in[0], dims, io.out, s);
    });
  }
  return unsupported(p, node, "has no such op");
}

Result<GpuNode> pool_node(const ProblemInstance& p, const GraphNode& node) {
  const std::string& n = node.name;
  const std::vector<int64_t> kernel = p.ints(n, "kernel_size");
  const std::vector<int64_t> stride = p.ints(n, "stride");
  const std::vector<int64_t> padding =
      p.has_attr(n, "padding") ? p.ints(n, "padding") : std::vector<int64_t>(kernel.size(), 0);
  const bool is_max = node.op == "max_pool";
  return simple([=](const NodeIo& io, cudaStream_t s) {
    return is_max ? eager::max_pool(io.in[0], kernel, stride, padding, io.out, s)
                  : eager::avg_pool(io.in[0], kernel, stride, padding, io.out, s);
  });
}

}  // namespace

Result<GpuNode> make_gpu_node(const ProblemInstance& p, const GraphNode& node,
                              cudaStream_t stream) {
  const std::string& op = node.op;
  Unary unary{};
  float a = 0, b = 0;
  if (unary_op(p, node, unary, a, b)) {
    return simple([unary, a, b](const NodeIo& io, cudaStream_t s) {
      return eager::unary(unary, io.in[0].data, io.out.data, io.out.numel(), s, a, b);
    });
  }
  if (op == "conv" || op == "conv_transpose") return conv_node(p, node, stream);
  if (op == "swish") return swish_node(p, node);
  if (op == "add" || op == "sub" || op == "mul") {
    const Binary binary = op == "add" ? Binary::kAdd : (op == "sub" ? Binary::kSub : Binary::kMul);
    return simple([binary](const NodeIo& io, cudaStream_t s) {
      return eager::binary(binary, io.in[0], io.in[1], io.out, s);
    });
  }
  if (op == "max_pool" || op == "avg_pool") return pool_node(p, node);
  if (op == "mean") return mean_node(p, node);
  if (op == "bmm") return bmm_node(p, node);
  if (op == "linear") return linear_node(p, node);
  if (op == "kl_div") return kl_div_node(p, node);
  if (op == "multihead_attention") return make_attention_node(p, node);
  return norm_or_layout_node(p, node);
}

}  // namespace kb::graph

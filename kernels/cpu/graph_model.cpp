// The CPU graph interpreter (graph_model.h): one op of kernels/cpu/ops.h per catalog op, the
// node's attributes read from the instance, intermediates freed after their last use.
#include "kernels/cpu/graph_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/ops_internal.h"
#include "kernels/graph/graph_plan.h"

namespace kb::cpu {
namespace {

template <typename T>
using Inputs = std::vector<const HostTensor<T>*>;

// The scalar function of a one-input elementwise op, its constants read from the node; an empty
// function when `node` is not elementwise.
template <typename T>
std::function<T(T)> unary_fn(const ProblemInstance& p, const GraphNode& node) {
  const std::string& op = node.op;
  const std::string& n = node.name;
  if (op == "relu") return relu<T>;
  if (op == "sigmoid") return sigmoid<T>;
  if (op == "tanh") return [](T v) { return std::tanh(v); };
  if (op == "gelu") return gelu_erf<T>;  // F.gelu's default is the erf form
  if (op == "swish") return swish<T>;
  if (op == "hardswish") return hardswish<T>;
  if (op == "log") return [](T v) { return std::log(v); };
  if (op == "leaky_relu") {
    const T slope = T(p.number(n, "negative_slope"));
    return [slope](T v) { return leaky_relu(v, slope); };
  }
  if (op == "hardtanh") {
    const T lo = T(p.number(n, "min_val")), hi = T(p.number(n, "max_val"));
    return [lo, hi](T v) { return hardtanh(v, lo, hi); };
  }
  if (op.ends_with("_scalar")) {
    const T value = T(p.number(n, "value"));
    if (op == "add_scalar") return [value](T v) { return v + value; };
    if (op == "mul_scalar") return [value](T v) { return v * value; };
    if (op == "div_scalar") return [value](T v) { return v / value; };  // true division
    // std::min(v, cap) returns v when v is NaN, as torch.min with a 0-d tensor does.
    if (op == "min_scalar") return [value](T v) { return std::min(v, value); };
  }
  return {};
}

std::vector<int64_t> padding_or_zeros(const ProblemInstance& p, const GraphNode& node,
                                      size_t spatial) {
  if (!p.has_attr(node.name, "padding")) return std::vector<int64_t>(spatial, 0);
  return p.ints(node.name, "padding");
}

// Ops with more structure than an elementwise map.
template <typename T>
HostTensor<T> run_structured(const ProblemInstance& p, const GraphNode& node, const Inputs<T>& in) {
  const std::string& op = node.op;
  const std::string& n = node.name;
  const HostTensor<T>& x = *in[0];
  if (op == "conv" || op == "conv_transpose") {
    const HostTensor<T>* bias = in.size() > 2 ? in[2] : nullptr;
    return op == "conv" ? conv(x, *in[1], bias, conv_params(p, n))
                        : conv_transpose(x, *in[1], bias, conv_params(p, n));
  }
  if (op == "bmm") return bmm(x, *in[1]);
  if (op == "linear") return linear(x, *in[1], in.size() > 2 ? in[2] : nullptr);
  if (op == "add") return add(x, *in[1]);
  if (op == "sub") return sub(x, *in[1]);
  if (op == "mul") return mul(x, *in[1]);
  if (op == "max_pool" || op == "avg_pool") {
    const std::vector<int64_t> kernel = p.ints(n, "kernel_size");
    const std::vector<int64_t> padding = padding_or_zeros(p, node, kernel.size());
    return op == "max_pool" ? max_pool(x, kernel, p.ints(n, "stride"), padding)
                            : avg_pool(x, kernel, p.ints(n, "stride"), padding);
  }
  if (op == "mean") return mean(x, p.ints(n, "dims"), p.flag(n, "keepdim"));
  // The catalog admits training mode only: batch statistics, biased variance.
  if (op == "batch_norm") return batch_norm_train(x, *in[1], *in[2], p.number(n, "eps"));
  if (op == "instance_norm") return instance_norm(x, p.number(n, "eps"));
  if (op == "group_norm") {
    return group_norm(x, p.int_attr(n, "num_groups"), *in[1], *in[2], p.number(n, "eps"));
  }
  if (op == "layer_norm") return layer_norm(x, *in[1], *in[2], p.number(n, "eps"));
  if (op == "softmax") return softmax(x, p.int_attr(n, "dim"));
  if (op == "channel_shuffle") return channel_shuffle(x, p.int_attr(n, "groups"));
  if (op == "kl_div") return kl_div_batchmean(x, *in[1]);  // the catalog's only reduction
  if (op == "reshape") return reshape(x, p.shape_of(node.output));
  if (op == "permute") return permute(x, p.ints(n, "dims"));
  if (op == "multihead_attention") {
    return multihead_attention(x, *in[1], *in[2], *in[3], *in[4], *in[5], *in[6],
                               p.int_attr(n, "num_heads"));
  }
  detail::check_failed("op is in the catalog", "node '" + n + "': the CPU graph interpreter has no op '" + op + "'",
                       __FILE__, __LINE__);
}

template <typename T>
HostTensor<T> run_node(const ProblemInstance& p, const GraphNode& node, const Inputs<T>& in) {
  if (std::function<T(T)> f = unary_fn<T>(p, node)) return map(*in[0], f);
  return run_structured(p, node, in);
}

}  // namespace

template <typename T>
HostTensor<T> run_graph(const ProblemInstance& problem, const TensorSet& tensors) {
  const ProblemSpec& spec = problem.spec();
  const graph::GraphPlan plan = graph::plan_graph(problem);
  // Live tensors by name; inputs and parameters are converted to T on first use.
  std::map<std::string, HostTensor<T>> live;
  auto value = [&](const std::string& name) -> const HostTensor<T>& {
    auto it = live.find(name);
    if (it == live.end()) it = live.emplace(name, cast<T>(tensors.get(name))).first;
    return it->second;
  };
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    const GraphNode& node = spec.graph[i];
    Inputs<T> in;
    for (const std::string& name : node.inputs) in.push_back(&value(name));
    HostTensor<T> out = run_node(problem, node, in);
    live.insert_or_assign(node.output, std::move(out));
    // Free every tensor (of any storage kind: the casts are ours) whose storage is dead now.
    for (auto it = live.begin(); it != live.end();) {
      const graph::Storage& s = plan.storages[plan.storage_of.at(it->first)];
      const bool dead = s.kind != graph::StorageKind::kOutput &&
                        std::max(s.last_use, s.producer) <= static_cast<int>(i);
      it = dead && it->first != spec.output ? live.erase(it) : std::next(it);
    }
  }
  return value(spec.output);
}

template HostTensor<double> run_graph<double>(const ProblemInstance&, const TensorSet&);
template HostTensor<float> run_graph<float>(const ProblemInstance&, const TensorSet&);

}  // namespace kb::cpu

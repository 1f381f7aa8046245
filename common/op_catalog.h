// The op catalog: every op a problem graph may use, with its attribute schema, shape inference
// and cost. The loader validates graph nodes against it; ProblemInstance runs its shape
// inference; the FLOP count of a problem is the sum of its nodes' costs.
//
// Ops (PyTorch semantics; shapes are row-major, N first):
//   bmm                  in [a (B,M,K), b (B,K,N)]                       -> (B,M,N)
//   linear               in [x (*,K), weight (O,K), bias? (O)]           -> (*,O)  (nn.Linear)
//   conv                 in [x (N,C,*S), weight (O,C/groups,*K), bias? (O)]  S, K of rank 1..3
//                        attrs stride, padding, dilation (lists of rank len), groups (int)
//   conv_transpose       in [x (N,C,*S), weight (C,O/groups,*K), bias? (O)]
//                        attrs stride, padding, output_padding, dilation (lists), groups (int)
//   relu sigmoid tanh gelu(erf form) swish(x*sigmoid x) hardswish log     in [x], same shape
//   leaky_relu           attr negative_slope
//   hardtanh             attrs min_val, max_val
//   add_scalar mul_scalar div_scalar min_scalar       attr value
//   add sub mul          in [a, b], NumPy broadcasting (sub: a - b)
//   max_pool avg_pool    attrs kernel_size, stride (lists over the spatial dims), padding? (0)
//   mean                 attrs dims (list), keepdim (bool)
//   batch_norm           in [x, weight, bias]; attrs eps, momentum, training (must be true:
//                        batch statistics, biased variance; running stats are not modelled)
//   instance_norm        in [x]; attr eps (affine=False, track_running_stats=False)
//   group_norm           in [x, weight, bias]; attrs num_groups, eps
//   layer_norm           in [x, weight, bias]; attr eps; normalizes over the trailing dims of
//                        weight's shape
//   softmax              attr dim (negative counts from the end)
//   channel_shuffle      attr groups
//   kl_div               in [log_input, target]; attr reduction ("batchmean") -> scalar ()
//   reshape              attr shape (list); element count must not change
//   permute              attr dims (list)
//   multihead_attention  in [query (L,N,E), key (S,N,E), value (S,N,E), in_proj_weight (3E,E),
//                        in_proj_bias (3E), out_proj_weight (E,E), out_proj_bias (E)];
//                        attr num_heads -> (L,N,E)  (batch_first=False, dropout 0)
//
// FLOPs: multiply-add = 2 (linear: 2*out*K, +1 per output element for the bias; convs: gather form
// out*C/groups*kvol; transposed convs: only taps that land inside the output); elementwise per
// output element: add/mul/min/max/relu/clamp and scalar ops 1, exp/log/erf/tanh 1, sigmoid 4, gelu
// 5, swish 5, hardswish 5, softmax 5, norms as listed in op_catalog.cpp; a conv bias is 1 per
// output element. reshape/permute cost nothing.
//
// Thread safety: the catalog is immutable static data.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/problem_spec.h"
#include "common/status.h"

namespace kb {

enum class AttrKind {
  kNumber,    // a YAML scalar number (int or float)
  kInt,       // an integer shape expression (a one-element expression list in AttrValue)
  kIntList,   // a list of integer shape expressions
  kBool,
  kString,
};

struct AttrSchema {
  std::string_view name;
  AttrKind kind;
  bool required;
};

// What shape inference sees of one node: its input shapes and its attributes resolved.
struct OpCall {
  const GraphNode& node;
  const std::vector<Shape>& inputs;
  const Dims& dims;

  // Resolved attributes; abort if absent (the loader checked presence and kind already),
  // except the *_or forms, which return the default for an absent optional attribute.
  Result<std::vector<int64_t>> ints(std::string_view attr) const;
  Result<std::vector<int64_t>> ints_or(std::string_view attr, std::vector<int64_t> fallback) const;
  Result<int64_t> int_attr(std::string_view attr) const;
  double number(std::string_view attr) const;
  bool flag(std::string_view attr) const;
  std::string string(std::string_view attr) const;
};

struct OpOutput {
  Shape shape;
  double flops = 0;
};

struct OpInfo {
  std::string_view name;
  int min_inputs;
  int max_inputs;
  std::vector<AttrSchema> attrs;
  // Fails with a message that says which shape or attribute does not fit and what was expected
  // (the caller prefixes the file and node).
  Result<OpOutput> (*infer)(const OpCall& call);
};

// nullptr when no op has that name.
const OpInfo* find_op(std::string_view name);
std::vector<std::string_view> op_names();

}  // namespace kb

#include "common/op_catalog.h"
#include "common/op_catalog_internal.h"

#include <algorithm>
#include <set>
#include <utility>
#include <variant>

namespace kb {
namespace op_detail {

Status invalid(std::string message) {
  return Status::invalid_argument(std::move(message));
}

std::string list_to_string(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(values[i]);
  }
  return text + "]";
}

std::string input_label(const OpCall& call, size_t index) {
  std::string label = "in[" + std::to_string(index) + "]";
  if (index < call.node.inputs.size()) label += " (" + call.node.inputs[index] + ")";
  return label;
}

// "in[1] (conv.weight): expected <expected>, got (64, 3, 3)"
Status bad_input(const OpCall& call, size_t index, const std::string& expected) {
  return invalid(input_label(call, index) + ": expected " + expected + ", got " +
                 shape_to_string(call.inputs[index]));
}

Status bad_attr(std::string_view attr, const std::string& expected, const std::string& got) {
  return invalid("attribute '" + std::string(attr) + "': expected " + expected + ", got " + got);
}

double numel(const Shape& shape) {
  return static_cast<double>(element_count(shape));
}

OpOutput elementwise(const Shape& shape, double cost) {
  return {shape, cost * numel(shape)};
}

// An int-list attribute with one entry per spatial dim, each >= min_value.
Result<std::vector<int64_t>> spatial_list(Result<std::vector<int64_t>> values,
                                          std::string_view attr, size_t spatial,
                                          int64_t min_value) {
  if (!values.is_ok()) return values;
  const std::vector<int64_t>& list = values.value();
  if (list.size() != spatial) {
    return bad_attr(attr,
                    "a list of " + std::to_string(spatial) + " integers (one per spatial dim)",
                    std::to_string(list.size()) + " items " + list_to_string(list));
  }
  for (int64_t value : list) {
    if (value < min_value) {
      return bad_attr(attr, "every entry >= " + std::to_string(min_value), list_to_string(list));
    }
  }
  return values;
}

}  // namespace op_detail

namespace {

using namespace op_detail;  // NOLINT: the catalog's own helpers

// FLOPs per element, calibrated so that the full-size problems reproduce the totals of
// docs/problems.md#counts and their "of which elementwise" figures to the printed precision
// (tests/unit/problems/problem_costs_test.cpp). Per output element of the op unless noted:
//
//   op                                          cost   pinned by (per element of the output)
//   conv / conv_transpose bias                  1      L2_001: bias 1 + relu 1 + add 1 (0.78 G)
//   add sub mul *_scalar relu leaky_relu hardtanh 1      L2_031: bias + min + add + mul (1.04 G)
//   log tanh                                    1      L2_010 (tanh), L1_098 (log)
//   sigmoid                                     4      L2_021: 1+1+1 + sigmoid 4 + gn 7 (3.70 G)
//   gelu swish hardswish                        5      L2_007: 1+1+1 + 5 + 4 + 1 (3.07 G)
//   softmax                                     5      L2_091: 1 + 5 + 1+1 + 4 (3.27 G)
//   instance_norm (no affine)                   5      L2_017: 1 + 5 + 1 (1.82 G)
//   batch/group/layer_norm (5, +2 for affine)   7      L2_060: 1 + 5 + 7 + 5 (4.54 G);
//                                                      L2_034: 1 + 7 + 5 + 1 (3.76 G);
//                                                      L3_013 (2.68 G), L3_025 (4.76 G)
//   max_pool avg_pool                           kvol   L2_010: per pooled element pool 4 +
//                                                      hardtanh 1 + mean 1 (1.34 G); L3_013
//   mean                                        1/in   L2_010 (per input element)
//   kl_div (xlogy 2, mul 1, sub 1, sum 1)       5/in   L1_098: log 1 + kl_div 5 (1.61 G)
//   reshape permute channel_shuffle             0
//   multihead_attention: 2*MACs of in_proj, QK^T, PV and out_proj; softmax 5 per attention
//     weight; 1 per in_proj bias add (each q, k and v element). The 1/sqrt(d) scaling and
//     out_proj's bias are not counted: that is what gives L3_031's 289.96 G with elementwise
//     10.78 G (plus its residual add 1 and layer_norm 7 per element).
constexpr int kCostSigmoid = 4;
constexpr int kCostGelu = 5;  // also swish, hardswish
constexpr int kCostSoftmax = 5;
constexpr int kCostNorm = 5;
constexpr int kCostAffineNorm = 7;
constexpr int kCostKlDiv = 5;

using InferFn = Result<OpOutput> (*)(const OpCall&);

[[noreturn]] void attr_bug(const GraphNode& node, std::string_view attr, const char* problem) {
  fatal("op_catalog: node '" + node.name + "' (op " + node.op + "): attribute '" +
        std::string(attr) + "' " + problem);
}

template <typename T>
const T& attr_as(const GraphNode& node, std::string_view attr) {
  auto it = node.attrs.find(std::string(attr));
  if (it == node.attrs.end()) attr_bug(node, attr, "is missing (the loader should have said so)");
  const T* value = std::get_if<T>(&it->second);
  if (value == nullptr) attr_bug(node, attr, "has the wrong kind (the loader should have said so)");
  return *value;
}

// Guards every infer function: the loader checks arity, but shape inference must not index
// past the inputs when called directly, and no op is defined on empty dims.
template <int kMin, int kMax, InferFn kInfer>
Result<OpOutput> checked(const OpCall& call) {
  const int count = static_cast<int>(call.inputs.size());
  if (count < kMin || count > kMax) {
    std::string expected =
        kMin == kMax ? std::to_string(kMin) : std::to_string(kMin) + " to " + std::to_string(kMax);
    return invalid("expected " + expected + " inputs, got " + std::to_string(count));
  }
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    for (int64_t extent : call.inputs[i]) {
      if (extent < 1) return bad_input(call, i, "every dim >= 1");
    }
  }
  return kInfer(call);
}

// Normalizes a possibly negative dim index into [0, rank).
Result<int64_t> normalize_dim(int64_t dim, size_t rank, std::string_view attr) {
  const auto r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) {
    return bad_attr(attr,
                    "a dim in [" + std::to_string(-r) + ", " + std::to_string(r - 1) +
                        "] for a tensor of rank " + std::to_string(r),
                    std::to_string(dim));
  }
  return dim < 0 ? dim + r : dim;
}

Status check_eps(const OpCall& call) {
  double eps = call.number("eps");
  if (eps > 0) return Status::ok();
  return bad_attr("eps", "a positive number", std::to_string(eps));
}

// A per-channel parameter such as a norm's weight: shape (C).
Status check_channel_vector(const OpCall& call, size_t index, int64_t channels) {
  if (call.inputs[index] == Shape{channels}) return Status::ok();
  return bad_input(call, index, shape_to_string({channels}) + ", one per channel");
}

// ---- bmm -----------------------------------------------------------------------------------

Result<OpOutput> infer_bmm(const OpCall& call) {
  const Shape& a = call.inputs[0];
  const Shape& b = call.inputs[1];
  if (a.size() != 3) return bad_input(call, 0, "a rank-3 tensor (B, M, K)");
  if (b.size() != 3) return bad_input(call, 1, "a rank-3 tensor (B, K, N)");
  if (b[0] != a[0] || b[1] != a[2]) {
    return bad_input(call, 1,
                     "(B, K, N) with B = " + std::to_string(a[0]) +
                         " and K = " + std::to_string(a[2]) + " from " + shape_to_string(a));
  }
  Shape out = {a[0], a[1], b[2]};
  return OpOutput{out, 2.0 * numel(out) * static_cast<double>(a[2])};
}

// nn.Linear: y = x W^T + b over the last dim of x.
Result<OpOutput> infer_linear(const OpCall& call) {
  const Shape& x = call.inputs[0];
  const Shape& w = call.inputs[1];
  if (x.empty()) return bad_input(call, 0, "a tensor (*, K) of rank >= 1");
  if (w.size() != 2 || w[1] != x.back()) {
    return bad_input(call, 1,
                     "a weight (O, K) with K = " + std::to_string(x.back()) + " (x's last dim)");
  }
  if (call.inputs.size() > 2 && call.inputs[2] != Shape{w[0]}) {
    return bad_input(call, 2, shape_to_string({w[0]}) + ", one per output feature");
  }
  Shape out = x;
  out.back() = w[0];
  const double bias = call.inputs.size() > 2 ? kCostCheap * numel(out) : 0;
  return OpOutput{out, 2.0 * numel(out) * static_cast<double>(w[1]) + bias};
}

// ---- elementwise ---------------------------------------------------------------------------

template <int kCost>
Result<OpOutput> infer_unary(const OpCall& call) {
  return elementwise(call.inputs[0], kCost);
}

Result<OpOutput> infer_hardtanh(const OpCall& call) {
  const double lo = call.number("min_val");
  const double hi = call.number("max_val");
  if (!(lo < hi)) {
    return bad_attr("max_val", "a number greater than min_val = " + std::to_string(lo),
                    std::to_string(hi));
  }
  return elementwise(call.inputs[0], kCostCheap);
}

Result<OpOutput> infer_div_scalar(const OpCall& call) {
  if (call.number("value") == 0) return bad_attr("value", "a non-zero divisor", "0");
  return elementwise(call.inputs[0], kCostCheap);
}

// NumPy broadcasting: shapes aligned from the right; a dim of 1 stretches.
Result<OpOutput> infer_broadcast(const OpCall& call) {
  const Shape& a = call.inputs[0];
  const Shape& b = call.inputs[1];
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      return invalid("inputs " + shape_to_string(a) + " and " + shape_to_string(b) +
                     " do not broadcast: dim -" + std::to_string(i + 1) + " is " +
                     std::to_string(da) + " vs " + std::to_string(db) +
                     " (expected equal sizes or a 1)");
    }
    out[out.size() - 1 - i] = std::max(da, db);
  }
  return elementwise(out, kCostCheap);
}

// ---- pooling and reductions ----------------------------------------------------------------

Result<OpOutput> infer_mean(const OpCall& call) {
  const Shape& x = call.inputs[0];
  KB_ASSIGN_OR_RETURN(std::vector<int64_t> dims, call.ints("dims"));
  if (dims.empty()) return bad_attr("dims", "at least one dim", "[]");
  std::set<int64_t> reduced;
  for (int64_t dim : dims) {
    KB_ASSIGN_OR_RETURN(int64_t d, normalize_dim(dim, x.size(), "dims"));
    if (!reduced.insert(d).second) {
      return bad_attr("dims", "distinct dims", list_to_string(dims));
    }
  }
  const bool keepdim = call.flag("keepdim");
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (reduced.count(static_cast<int64_t>(i)) == 0) {
      out.push_back(x[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return OpOutput{out, kCostCheap * numel(x)};
}

Result<OpOutput> infer_softmax(const OpCall& call) {
  const Shape& x = call.inputs[0];
  if (x.empty()) return bad_input(call, 0, "a tensor of rank >= 1");
  KB_ASSIGN_OR_RETURN(int64_t dim, call.int_attr("dim"));
  KB_TRY(normalize_dim(dim, x.size(), "dim").status());
  return elementwise(x, kCostSoftmax);
}

Result<OpOutput> infer_kl_div(const OpCall& call) {
  const std::string reduction = call.string("reduction");
  if (reduction != "batchmean") {
    return bad_attr("reduction", "\"batchmean\" (the only reduction modelled)",
                    "\"" + reduction + "\"");
  }
  if (call.inputs[0].empty()) return bad_input(call, 0, "a tensor of rank >= 1 (batch first)");
  if (call.inputs[1] != call.inputs[0]) {
    return bad_input(call, 1, "the shape of log_input " + shape_to_string(call.inputs[0]));
  }
  return OpOutput{Shape{}, kCostKlDiv * numel(call.inputs[0])};
}

// ---- normalizations ------------------------------------------------------------------------

Result<OpOutput> infer_batch_norm(const OpCall& call) {
  const Shape& x = call.inputs[0];
  if (x.size() < 2) return bad_input(call, 0, "(N, C, *S) of rank >= 2");
  if (Status s = check_eps(call); !s.is_ok()) return s;
  const double momentum = call.number("momentum");
  if (momentum < 0 || momentum > 1) {
    return bad_attr("momentum", "a number in [0, 1]", std::to_string(momentum));
  }
  if (!call.flag("training")) {
    return bad_attr("training", "true (batch statistics; running statistics are not modelled)",
                    "false");
  }
  if (numel(x) / static_cast<double>(x[1]) < 2) {
    return bad_input(call, 0, "more than one value per channel (training-mode batch statistics)");
  }
  if (Status s = check_channel_vector(call, 1, x[1]); !s.is_ok()) return s;
  if (Status s = check_channel_vector(call, 2, x[1]); !s.is_ok()) return s;
  return elementwise(x, kCostAffineNorm);
}

Result<OpOutput> infer_instance_norm(const OpCall& call) {
  const Shape& x = call.inputs[0];
  if (x.size() < 3) return bad_input(call, 0, "(N, C, *S) with at least one spatial dim");
  if (Status s = check_eps(call); !s.is_ok()) return s;
  if (numel(x) / static_cast<double>(x[0] * x[1]) < 2) {
    return bad_input(call, 0, "more than one spatial element per (n, c) instance");
  }
  return elementwise(x, kCostNorm);
}

Result<OpOutput> infer_group_norm(const OpCall& call) {
  const Shape& x = call.inputs[0];
  if (x.size() < 2) return bad_input(call, 0, "(N, C, *S) of rank >= 2");
  if (Status s = check_eps(call); !s.is_ok()) return s;
  KB_ASSIGN_OR_RETURN(int64_t groups, call.int_attr("num_groups"));
  if (groups < 1) {
    return bad_attr("num_groups", "an integer >= 1", std::to_string(groups));
  }
  if (Status s = check_groups_divide(x[1], "x's channel count C", groups); !s.is_ok()) {
    return s;
  }
  if (Status s = check_channel_vector(call, 1, x[1]); !s.is_ok()) return s;
  if (Status s = check_channel_vector(call, 2, x[1]); !s.is_ok()) return s;
  return elementwise(x, kCostAffineNorm);
}

Result<OpOutput> infer_layer_norm(const OpCall& call) {
  const Shape& x = call.inputs[0];
  const Shape& w = call.inputs[1];
  if (Status s = check_eps(call); !s.is_ok()) return s;
  const bool trailing = !w.empty() && w.size() <= x.size() &&
                        std::equal(w.begin(), w.end(), x.end() - static_cast<long>(w.size()));
  if (!trailing) {
    return bad_input(call, 1,
                     "a weight whose shape equals the trailing dims of x " + shape_to_string(x) +
                         " (the normalized dims)");
  }
  if (call.inputs[2] != w) return bad_input(call, 2, "the weight's shape " + shape_to_string(w));
  return elementwise(x, kCostAffineNorm);
}

// ---- layout ops ----------------------------------------------------------------------------

Result<OpOutput> infer_channel_shuffle(const OpCall& call) {
  const Shape& x = call.inputs[0];
  if (x.size() < 3) return bad_input(call, 0, "(N, C, *S) of rank >= 3");
  KB_ASSIGN_OR_RETURN(int64_t groups, call.int_attr("groups"));
  if (groups < 1) return bad_attr("groups", "an integer >= 1", std::to_string(groups));
  if (Status s = check_groups_divide(x[1], "x's channel count C", groups); !s.is_ok()) {
    return s;
  }
  return OpOutput{x, 0};
}

Result<OpOutput> infer_reshape(const OpCall& call) {
  KB_ASSIGN_OR_RETURN(std::vector<int64_t> shape, call.ints("shape"));
  for (int64_t extent : shape) {
    if (extent < 1) return bad_attr("shape", "every entry >= 1", list_to_string(shape));
  }
  const Shape out(shape.begin(), shape.end());
  if (element_count(out) != element_count(call.inputs[0])) {
    return bad_attr(
        "shape",
        "a shape of " + std::to_string(element_count(call.inputs[0])) +
            " elements like the input " + shape_to_string(call.inputs[0]),
        list_to_string(shape) + " (" + std::to_string(element_count(out)) + " elements)");
  }
  return OpOutput{out, 0};
}

Result<OpOutput> infer_permute(const OpCall& call) {
  const Shape& x = call.inputs[0];
  KB_ASSIGN_OR_RETURN(std::vector<int64_t> dims, call.ints("dims"));
  const std::string expected = "a permutation of 0.." +
                               std::to_string(static_cast<int64_t>(x.size()) - 1) +
                               " (x has rank " + std::to_string(x.size()) + ")";
  if (dims.size() != x.size()) return bad_attr("dims", expected, list_to_string(dims));
  std::vector<bool> seen(x.size(), false);
  Shape out;
  for (int64_t dim : dims) {
    KB_ASSIGN_OR_RETURN(int64_t d, normalize_dim(dim, x.size(), "dims"));
    if (seen[static_cast<size_t>(d)]) {
      return bad_attr("dims", expected, list_to_string(dims));
    }
    seen[static_cast<size_t>(d)] = true;
    out.push_back(x[static_cast<size_t>(d)]);
  }
  return OpOutput{out, 0};
}

// ---- multihead_attention -------------------------------------------------------------------

Status check_attention_inputs(const OpCall& call) {
  const Shape& q = call.inputs[0];
  if (q.size() != 3) return bad_input(call, 0, "a query (L, N, E) of rank 3");
  const int64_t batch = q[1];
  const int64_t embed = q[2];
  const Shape& k = call.inputs[1];
  if (k.size() != 3 || k[1] != batch || k[2] != embed) {
    return bad_input(
        call, 1,
        "a key (S, N, E) with N = " + std::to_string(batch) + ", E = " + std::to_string(embed));
  }
  if (call.inputs[2] != k)
    return bad_input(call, 2, "a value shaped like the key " + shape_to_string(k));
  const std::vector<std::pair<Shape, const char*>> params = {
      {{3 * embed, embed}, "in_proj_weight (3E, E)"},
      {{3 * embed}, "in_proj_bias (3E)"},
      {{embed, embed}, "out_proj_weight (E, E)"},
      {{embed}, "out_proj_bias (E)"}};
  for (size_t i = 0; i < params.size(); ++i) {
    if (call.inputs[3 + i] != params[i].first) {
      return bad_input(call, 3 + i,
                       std::string(params[i].second) + " = " + shape_to_string(params[i].first));
    }
  }
  return Status::ok();
}

Result<OpOutput> infer_multihead_attention(const OpCall& call) {
  if (Status s = check_attention_inputs(call); !s.is_ok()) return s;
  const Shape& q = call.inputs[0];
  KB_ASSIGN_OR_RETURN(int64_t heads, call.int_attr("num_heads"));
  if (heads < 1 || q[2] % heads != 0) {
    return bad_attr("num_heads", "an integer >= 1 that divides E = " + std::to_string(q[2]),
                    std::to_string(heads));
  }
  const double tokens = static_cast<double>(q[0]);                                 // L
  const double keys = static_cast<double>(call.inputs[1][0]);                      // S
  const double batch = static_cast<double>(q[1]);                                  // N
  const double embed = static_cast<double>(q[2]);                                  // E
  const double projection_macs = (2 * tokens + 2 * keys) * batch * embed * embed;  // q,k,v,out
  const double attention_macs = 2 * batch * tokens * keys * embed;                 // QK^T, PV
  const double softmax = kCostSoftmax * batch * static_cast<double>(heads) * tokens * keys;
  const double bias_adds = (tokens + 2 * keys) * batch * embed;
  return OpOutput{q, 2 * (projection_macs + attention_macs) + softmax + bias_adds};
}

// ---- the table -----------------------------------------------------------------------------

template <int kMin, int kMax, InferFn kInfer>
OpInfo op(std::string_view name, std::vector<AttrSchema> attrs = {}) {
  return OpInfo{name, kMin, kMax, std::move(attrs), &checked<kMin, kMax, kInfer>};
}

constexpr AttrSchema required(std::string_view name, AttrKind kind) {
  return {name, kind, true};
}

const std::vector<OpInfo>& catalog() {
  using K = AttrKind;
  static const std::vector<OpInfo> ops = {
      op<2, 2, infer_bmm>("bmm"),
      op<2, 3, infer_linear>("linear"),
      op<2, 3, infer_conv>("conv",
                           {required("stride", K::kIntList), required("padding", K::kIntList),
                            required("dilation", K::kIntList), required("groups", K::kInt)}),
      op<2, 3, infer_conv_transpose>(
          "conv_transpose", {required("stride", K::kIntList), required("padding", K::kIntList),
                             required("output_padding", K::kIntList),
                             required("dilation", K::kIntList), required("groups", K::kInt)}),
      op<1, 1, infer_unary<kCostCheap>>("relu"),
      op<1, 1, infer_unary<kCostSigmoid>>("sigmoid"),
      op<1, 1, infer_unary<kCostCheap>>("tanh"),
      op<1, 1, infer_unary<kCostGelu>>("gelu"),
      op<1, 1, infer_unary<kCostGelu>>("swish"),
      op<1, 1, infer_unary<kCostGelu>>("hardswish"),
      op<1, 1, infer_unary<kCostCheap>>("log"),
      op<1, 1, infer_unary<kCostCheap>>("leaky_relu", {required("negative_slope", K::kNumber)}),
      op<1, 1, infer_hardtanh>("hardtanh",
                               {required("min_val", K::kNumber), required("max_val", K::kNumber)}),
      op<1, 1, infer_unary<kCostCheap>>("add_scalar", {required("value", K::kNumber)}),
      op<1, 1, infer_unary<kCostCheap>>("mul_scalar", {required("value", K::kNumber)}),
      op<1, 1, infer_div_scalar>("div_scalar", {required("value", K::kNumber)}),
      op<1, 1, infer_unary<kCostCheap>>("min_scalar", {required("value", K::kNumber)}),
      op<2, 2, infer_broadcast>("add"),
      op<2, 2, infer_broadcast>("sub"),
      op<2, 2, infer_broadcast>("mul"),
      op<1, 1, infer_pool>("max_pool", {required("kernel_size", K::kIntList),
                                        required("stride", K::kIntList),
                                        {"padding", K::kIntList, false}}),
      op<1, 1, infer_pool>("avg_pool", {required("kernel_size", K::kIntList),
                                        required("stride", K::kIntList),
                                        {"padding", K::kIntList, false}}),
      op<1, 1, infer_mean>("mean", {required("dims", K::kIntList), required("keepdim", K::kBool)}),
      op<3, 3, infer_batch_norm>("batch_norm",
                                 {required("eps", K::kNumber), required("momentum", K::kNumber),
                                  required("training", K::kBool)}),
      op<1, 1, infer_instance_norm>("instance_norm", {required("eps", K::kNumber)}),
      op<3, 3, infer_group_norm>("group_norm",
                                 {required("num_groups", K::kInt), required("eps", K::kNumber)}),
      op<3, 3, infer_layer_norm>("layer_norm", {required("eps", K::kNumber)}),
      op<1, 1, infer_softmax>("softmax", {required("dim", K::kInt)}),
      op<1, 1, infer_channel_shuffle>("channel_shuffle", {required("groups", K::kInt)}),
      op<2, 2, infer_kl_div>("kl_div", {required("reduction", K::kString)}),
      op<1, 1, infer_reshape>("reshape", {required("shape", K::kIntList)}),
      op<1, 1, infer_permute>("permute", {required("dims", K::kIntList)}),
      op<7, 7, infer_multihead_attention>("multihead_attention", {required("num_heads", K::kInt)}),
  };
  return ops;
}

}  // namespace

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& info : catalog()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::vector<std::string_view> op_names() {
  std::vector<std::string_view> names;
  for (const OpInfo& info : catalog()) names.push_back(info.name);
  return names;
}

// ---- OpCall accessors ----------------------------------------------------------------------

Result<std::vector<int64_t>> OpCall::ints(std::string_view attr) const {
  std::vector<int64_t> values;
  for (const ShapeExpr& expr : attr_as<std::vector<ShapeExpr>>(node, attr)) {
    Result<int64_t> value = expr.evaluate(dims);
    if (!value.is_ok()) {
      return invalid("attribute '" + std::string(attr) + "': " + value.status().message());
    }
    values.push_back(value.value());
  }
  return values;
}

Result<std::vector<int64_t>> OpCall::ints_or(std::string_view attr,
                                             std::vector<int64_t> fallback) const {
  if (node.attrs.count(std::string(attr)) == 0) return fallback;
  return ints(attr);
}

Result<int64_t> OpCall::int_attr(std::string_view attr) const {
  KB_ASSIGN_OR_RETURN(std::vector<int64_t> values, ints(attr));
  if (values.size() != 1) {
    return bad_attr(attr, "one integer", list_to_string(values));
  }
  return values.front();
}

double OpCall::number(std::string_view attr) const {
  return attr_as<double>(node, attr);
}

bool OpCall::flag(std::string_view attr) const {
  return attr_as<bool>(node, attr);
}

std::string OpCall::string(std::string_view attr) const {
  return attr_as<std::string>(node, attr);
}

}  // namespace kb

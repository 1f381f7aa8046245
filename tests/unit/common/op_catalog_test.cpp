// Shape inference, FLOPs and error messages of every op in common/op_catalog.h, on small cases
// worked out by hand, plus the transposed-conv MAC counts of docs/problems.md#counts at full size.
#include "common/op_catalog.h"
#include "tests/support/assert_ok.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace kb {
namespace {

using Attrs = std::map<std::string, AttrValue>;

AttrValue list(std::initializer_list<int64_t> values) {
  std::vector<ShapeExpr> exprs;
  for (int64_t v : values) exprs.push_back(ShapeExpr::constant(v));
  return exprs;
}

AttrValue one(int64_t value) {
  return list({value});
}

AttrValue expr_list(std::initializer_list<const char*> texts) {
  std::vector<ShapeExpr> exprs;
  for (const char* text : texts) exprs.push_back(ShapeExpr::parse(text).value());
  return exprs;
}

// Runs `op`'s shape inference on inputs named in0, in1, ...
Result<OpOutput> infer(const std::string& op, std::vector<Shape> inputs, Attrs attrs = {},
                       const Dims& dims = {}) {
  const OpInfo* info = find_op(op);
  if (info == nullptr) return Status::not_found("no op " + op);
  GraphNode node;
  node.name = "node";
  node.op = op;
  for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back("in" + std::to_string(i));
  node.output = "out";
  node.attrs = std::move(attrs);
  return info->infer(OpCall{node, inputs, dims});
}

Attrs conv_attrs(std::initializer_list<int64_t> stride, std::initializer_list<int64_t> padding,
                 std::initializer_list<int64_t> dilation, int64_t groups) {
  return {{"stride", list(stride)},
          {"padding", list(padding)},
          {"dilation", list(dilation)},
          {"groups", one(groups)}};
}

Attrs conv_transpose_attrs(std::initializer_list<int64_t> stride,
                           std::initializer_list<int64_t> padding,
                           std::initializer_list<int64_t> output_padding,
                           std::initializer_list<int64_t> dilation, int64_t groups) {
  Attrs attrs = conv_attrs(stride, padding, dilation, groups);
  attrs["output_padding"] = list(output_padding);
  return attrs;
}

// Succeeds when `result` failed with a message containing every one of `parts`.
testing::AssertionResult fails_with(const Result<OpOutput>& result,
                                    std::initializer_list<std::string> parts) {
  if (result.is_ok()) {
    return testing::AssertionFailure()
           << "expected an error, got shape " << shape_to_string(result->shape);
  }
  for (const std::string& part : parts) {
    if (result.status().message().find(part) == std::string::npos) {
      return testing::AssertionFailure()
             << "message '" << result.status().message() << "' lacks '" << part << "'";
    }
  }
  return testing::AssertionSuccess();
}

void expect_output(const Result<OpOutput>& result, const Shape& shape, double flops) {
  KB_ASSERT_OK(result);
  EXPECT_EQ(result->shape, shape);
  EXPECT_DOUBLE_EQ(result->flops, flops);
}

// ---- the catalog ---------------------------------------------------------------------------

TEST(OpCatalog, HoldsEveryOpTheHeaderLists) {
  const std::vector<std::string> expected = {"bmm",
                                             "linear",
                                             "conv",
                                             "conv_transpose",
                                             "relu",
                                             "sigmoid",
                                             "tanh",
                                             "gelu",
                                             "swish",
                                             "hardswish",
                                             "log",
                                             "leaky_relu",
                                             "hardtanh",
                                             "add_scalar",
                                             "mul_scalar",
                                             "div_scalar",
                                             "min_scalar",
                                             "add",
                                             "sub",
                                             "mul",
                                             "max_pool",
                                             "avg_pool",
                                             "mean",
                                             "batch_norm",
                                             "instance_norm",
                                             "group_norm",
                                             "layer_norm",
                                             "softmax",
                                             "channel_shuffle",
                                             "kl_div",
                                             "reshape",
                                             "permute",
                                             "multihead_attention"};
  std::vector<std::string> names;
  for (std::string_view name : op_names()) names.emplace_back(name);
  EXPECT_EQ(names, expected);
  for (const std::string& name : expected) {
    const OpInfo* info = find_op(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, name);
    EXPECT_NE(info->infer, nullptr) << name;
  }
  EXPECT_EQ(find_op("matmul"), nullptr);
}

TEST(OpCatalog, SchemasSayWhichAttributesAreRequired) {
  auto schema = [](std::string_view op, std::string_view attr) -> const AttrSchema* {
    for (const AttrSchema& s : find_op(op)->attrs) {
      if (s.name == attr) return &s;
    }
    return nullptr;
  };
  ASSERT_NE(schema("conv_transpose", "output_padding"), nullptr);
  EXPECT_EQ(schema("conv_transpose", "output_padding")->kind, AttrKind::kIntList);
  EXPECT_TRUE(schema("conv", "groups")->required);
  EXPECT_EQ(schema("conv", "groups")->kind, AttrKind::kInt);
  EXPECT_EQ(schema("conv", "output_padding"), nullptr);
  EXPECT_FALSE(schema("max_pool", "padding")->required);
  EXPECT_TRUE(schema("avg_pool", "kernel_size")->required);
  EXPECT_EQ(schema("mean", "keepdim")->kind, AttrKind::kBool);
  EXPECT_EQ(schema("kl_div", "reduction")->kind, AttrKind::kString);
  EXPECT_EQ(schema("leaky_relu", "negative_slope")->kind, AttrKind::kNumber);
  EXPECT_TRUE(find_op("relu")->attrs.empty());
  EXPECT_EQ(find_op("conv")->min_inputs, 2);
  EXPECT_EQ(find_op("conv")->max_inputs, 3);
  EXPECT_EQ(find_op("multihead_attention")->min_inputs, 7);
}

// ---- bmm and conv --------------------------------------------------------------------------

TEST(OpCatalog, BmmIsTwoBmnk) {
  expect_output(infer("bmm", {{2, 3, 4}, {2, 4, 5}}), {2, 3, 5}, 2.0 * 2 * 3 * 5 * 4);
}

TEST(OpCatalog, ConvCountsGatherMacsAndBias) {
  // 5x5 input, 3x3 kernel -> 3x3; MACs = out (1*3*3*3 = 27) * C (2) * kvol (9) = 486.
  expect_output(infer("conv", {{1, 2, 5, 5}, {3, 2, 3, 3}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)),
                {1, 3, 3, 3}, 972);
  expect_output(
      infer("conv", {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)),
      {1, 3, 3, 3}, 972 + 27);
}

TEST(OpCatalog, ConvWithStridePaddingDilationAndGroups) {
  // H: (7 + 2*1 - 2*(3-1) - 1)/2 + 1 = 3.  W: (9 + 0 - 1*(2-1) - 1)/3 + 1 = 3.
  // MACs = out (2*6*3*3 = 108) * C/groups (2) * kvol (6) = 1296.
  expect_output(infer("conv", {{2, 4, 7, 9}, {6, 2, 3, 2}}, conv_attrs({2, 3}, {1, 0}, {2, 1}, 2)),
                {2, 6, 3, 3}, 2592);
}

TEST(OpCatalog, ConvIn1dAnd3d) {
  // 1-D: (10 + 2 - 3)/1 + 1 = 10, 'same' padding.
  expect_output(infer("conv", {{1, 1, 10}, {1, 1, 3}}, conv_attrs({1}, {1}, {1}, 1)), {1, 1, 10},
                2.0 * 10 * 3);
  // L1_060 at reduced depth: kernel (3, 5, 7) applies to (D, H, W) in order.
  expect_output(infer("conv", {{1, 3, 8, 8, 8}, {4, 3, 3, 5, 7}},
                      conv_attrs({1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1)),
                {1, 4, 6, 4, 2}, 2.0 * (4 * 6 * 4 * 2) * 3 * (3 * 5 * 7));
}

TEST(OpCatalog, DepthwiseConv) {
  // L3_025's conv2: groups = C = O, weight (O, 1, 3, 3).
  expect_output(infer("conv", {{1, 6, 4, 4}, {6, 1, 3, 3}}, conv_attrs({1, 1}, {1, 1}, {1, 1}, 6)),
                {1, 6, 4, 4}, 2.0 * 96 * 1 * 9);
}

// ---- conv_transpose ------------------------------------------------------------------------

TEST(OpCatalog, ConvTransposeCountsOnlyTapsInsideTheOutput) {
  // L = 3, K = 3, stride 2, padding 1: out = 2*2 - 2 + 2 + 1 = 5; tap (i, t) lands at 2i + t - 1:
  // i=0: -1 x, 0, 1; i=1: 1, 2, 3; i=2: 3, 4, 5 x -> 7 of 9 taps. MACs = 1*2*3*7 = 42.
  expect_output(
      infer("conv_transpose", {{1, 2, 3}, {2, 3, 3}}, conv_transpose_attrs({2}, {1}, {0}, {1}, 1)),
      {1, 3, 5}, 84);
}

TEST(OpCatalog, ConvTransposeWithDilation) {
  // L1_079's geometry at L = 4: out = 3*2 - 2 + 2*2 + 1 = 9; taps at 2i + 2t - 1:
  // i=0: -1 x, 1, 3; i=1: 1, 3, 5; i=2: 3, 5, 7; i=3: 5, 7, 9 x -> 10 taps.
  expect_output(
      infer("conv_transpose", {{1, 1, 4}, {1, 1, 3}}, conv_transpose_attrs({2}, {1}, {0}, {2}, 1)),
      {1, 1, 9}, 20);
}

TEST(OpCatalog, ConvTransposeWithOutputPadding) {
  // out = (2-1)*2 - 0 + 1*(2-1) + 1 + 1 = 5; taps at 2i + t: 0, 1, 2, 3 all inside; the extra
  // last position gets none.
  expect_output(
      infer("conv_transpose", {{1, 1, 2}, {1, 1, 2}}, conv_transpose_attrs({2}, {0}, {1}, {1}, 1)),
      {1, 1, 5}, 8);
  // L2_091: 64 -> (64-1)*2 - 2 + 3 + 1 + 1 = 129.
  Result<OpOutput> r = infer("conv_transpose", {{1, 1, 64, 64}, {1, 1, 4, 4}},
                             conv_transpose_attrs({2, 2}, {1, 1}, {1, 1}, {1, 1}, 1));
  KB_ASSERT_OK(r);
  EXPECT_EQ(r->shape, (Shape{1, 1, 129, 129}));
}

TEST(OpCatalog, ConvTransposeGroupedWithBias) {
  // weight (C=4, O/groups=3, 2), groups 2 -> O = 6; out = 3 + 1 = 4, every tap inside (6).
  // MACs = N*C*(O/groups)*taps = 2*4*3*6 = 144; bias 2*6*4 = 48.
  expect_output(infer("conv_transpose", {{2, 4, 3}, {4, 3, 2}, {6}},
                      conv_transpose_attrs({1}, {0}, {0}, {1}, 2)),
                {2, 6, 4}, 288 + 48);
}

TEST(OpCatalog, ConvTransposeMatchesABruteForceTapCount) {
  const Shape x = {1, 1, 5, 6};
  const Shape w = {1, 1, 3, 4};
  const int64_t stride[] = {2, 3}, padding[] = {1, 2}, dilation[] = {2, 1};
  Result<OpOutput> r =
      infer("conv_transpose", {x, w}, conv_transpose_attrs({2, 3}, {1, 2}, {1, 2}, {2, 1}, 1));
  KB_ASSERT_OK(r);
  // H: 4*2 - 2 + 2*2 + 1 + 1 = 12; W: 5*3 - 4 + 3 + 2 + 1 = 17.
  ASSERT_EQ(r->shape, (Shape{1, 1, 12, 17}));
  int64_t taps = 1;
  for (int d = 0; d < 2; ++d) {
    int64_t count = 0;
    for (int64_t i = 0; i < x[d + 2]; ++i) {
      for (int64_t t = 0; t < w[d + 2]; ++t) {
        const int64_t o = i * stride[d] - padding[d] + t * dilation[d];
        count += (o >= 0 && o < r->shape[d + 2]) ? 1 : 0;
      }
    }
    taps *= count;
  }
  EXPECT_DOUBLE_EQ(r->flops, 2.0 * static_cast<double>(taps));
}

struct TransposedConvCase {
  const char* id;
  Shape x, w;
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups;
  Shape out;
  int64_t macs;  // docs/problems.md#counts: the valid-tap MAC count
};

TEST(OpCatalog, TransposedConvMacsMatchProblemsMd) {
  const std::vector<TransposedConvCase> cases = {
      {"L1_070",
       {8, 48, 96, 96, 96},
       {48, 24, 3, 3, 3},
       {1, 1, 1},
       {0, 0, 0},
       {0, 0, 0},
       {1, 1, 1},
       1,
       {8, 24, 98, 98, 98},
       220'150'628'352},
      {"L1_073",
       {4, 32, 32, 64, 128},
       {32, 32, 3, 3, 3},
       {2, 2, 2},
       {1, 1, 1},
       {0, 0, 0},
       {1, 1, 1},
       1,
       {4, 32, 63, 127, 255},
       27'945'041'920},
      {"L1_075",
       {16, 32, 128, 256},
       {32, 16, 3, 5},
       {2, 3},
       {1, 2},
       {0, 0},
       {2, 1},
       4,
       {16, 64, 257, 766},
       3'993'042'944},
      {"L1_079",
       {16, 32, 131072},
       {32, 64, 3},
       {2},
       {1},
       {0},
       {2},
       1,
       {16, 64, 262145},
       12'884'836'352},
      {"L1_081",
       {16, 32, 64, 128},
       {32, 64, 3, 3},
       {5, 5},
       {1, 1},
       {0, 0},
       {2, 2},
       1,
       {16, 64, 318, 638},
       2'378'301'440},
      {"L2_010",
       {128, 64, 256, 256},
       {64, 64, 3, 3},
       {1, 1},
       {1, 1},
       {0, 0},
       {1, 1},
       1,
       {128, 64, 256, 256},
       307'629'129'728},
      {"L2_034",
       {32, 32, 16, 32, 32},
       {32, 64, 4, 4, 4},
       {2, 2, 2},
       {1, 1, 1},
       {0, 0, 0},
       {1, 1, 1},
       1,
       {32, 64, 32, 64, 64},
       64'507'871'232},
      {"L2_060",
       {128, 3, 16, 32, 32},
       {3, 16, 3, 3, 3},
       {2, 2, 2},
       {1, 1, 1},
       {0, 0, 0},
       {1, 1, 1},
       1,
       {128, 16, 31, 63, 63},
       2'497'265'664},
      {"L2_091",
       {128, 64, 64, 64},
       {64, 128, 4, 4},
       {2, 2},
       {1, 1},
       {1, 1},
       {1, 1},
       1,
       {128, 128, 129, 129},
       68'183'654'400},
      {"L2_093",
       {128, 64, 64, 64},
       {64, 128, 4, 4},
       {2, 2},
       {0, 0},
       {0, 0},
       {1, 1},
       1,
       {128, 128, 130, 130},
       68'719'476'736},
  };
  auto to_list = [](const std::vector<int64_t>& values) {
    std::vector<ShapeExpr> exprs;
    for (int64_t v : values) exprs.push_back(ShapeExpr::constant(v));
    return AttrValue(exprs);
  };
  for (const TransposedConvCase& c : cases) {
    Attrs attrs = {{"stride", to_list(c.stride)},
                   {"padding", to_list(c.padding)},
                   {"output_padding", to_list(c.output_padding)},
                   {"dilation", to_list(c.dilation)},
                   {"groups", one(c.groups)}};
    SCOPED_TRACE(c.id);
    Result<OpOutput> r = infer("conv_transpose", {c.x, c.w}, attrs);
    KB_ASSERT_OK(r);
    EXPECT_EQ(r->shape, c.out) << c.id;
    EXPECT_EQ(r->flops, 2.0 * static_cast<double>(c.macs)) << c.id;
  }
}

// ---- elementwise ---------------------------------------------------------------------------

TEST(OpCatalog, UnaryOpsKeepTheShapeAndCostTheirTable) {
  const std::vector<std::pair<std::string, double>> costs = {
      {"relu", 1},  {"sigmoid", 4},   {"tanh", 1}, {"gelu", 5},
      {"swish", 5}, {"hardswish", 5}, {"log", 1}};
  for (const auto& [op, cost] : costs) {
    expect_output(infer(op, {{2, 3}}), {2, 3}, 6 * cost);
  }
  expect_output(infer("leaky_relu", {{2, 3}}, {{"negative_slope", 0.01}}), {2, 3}, 6);
  expect_output(infer("hardtanh", {{2, 3}}, {{"min_val", -1.0}, {"max_val", 1.0}}), {2, 3}, 6);
  for (const char* op : {"add_scalar", "mul_scalar", "div_scalar", "min_scalar"}) {
    expect_output(infer(op, {{4, 5}}, {{"value", 0.5}}), {4, 5}, 20);
  }
}

TEST(OpCatalog, BinaryOpsBroadcastLikeNumPy) {
  expect_output(infer("add", {{2, 3, 4}, {3, 1}}), {2, 3, 4}, 24);
  expect_output(infer("mul", {{2, 1, 4}, {5, 1}}), {2, 5, 4}, 40);
  // L2_007: (N, C, D, H, W) + (C, 1, 1, 1).
  expect_output(infer("add", {{2, 3, 2, 2, 2}, {3, 1, 1, 1}}), {2, 3, 2, 2, 2}, 48);
  expect_output(infer("add", {{}, {2, 2}}), {2, 2}, 4);
}

// ---- pooling, reductions, normalizations ---------------------------------------------------

TEST(OpCatalog, PoolsCostTheirWindowPerOutput) {
  expect_output(
      infer("max_pool", {{1, 2, 5, 5}}, {{"kernel_size", list({2, 2})}, {"stride", list({2, 2})}}),
      {1, 2, 2, 2}, 8 * 4);
  // (5 + 2*1 - 3)/2 + 1 = 3.
  expect_output(
      infer("avg_pool", {{1, 2, 5, 5}},
            {{"kernel_size", list({3, 3})}, {"stride", list({2, 2})}, {"padding", list({1, 1})}}),
      {1, 2, 3, 3}, 18 * 9);
  expect_output(infer("avg_pool", {{1, 1, 7}}, {{"kernel_size", list({2})}, {"stride", list({3})}}),
                {1, 1, 2}, 2 * 2);
}

TEST(OpCatalog, MeanReducesTheListedDims) {
  Shape x = {2, 3, 4, 5};
  expect_output(infer("mean", {x}, {{"dims", list({2, 3})}, {"keepdim", true}}), {2, 3, 1, 1}, 120);
  expect_output(infer("mean", {x}, {{"dims", list({2, 3})}, {"keepdim", false}}), {2, 3}, 120);
  expect_output(infer("mean", {x}, {{"dims", list({-1})}, {"keepdim", false}}), {2, 3, 4}, 120);
}

TEST(OpCatalog, NormsKeepTheShape) {
  const Shape x = {2, 4, 3, 5};  // 120 elements
  expect_output(
      infer("batch_norm", {x, {4}, {4}}, {{"eps", 1e-5}, {"momentum", 0.1}, {"training", true}}), x,
      7 * 120);
  expect_output(infer("instance_norm", {x}, {{"eps", 1e-5}}), x, 5 * 120);
  expect_output(infer("group_norm", {x, {4}, {4}}, {{"num_groups", one(2)}, {"eps", 1e-5}}), x,
                7 * 120);
  expect_output(infer("layer_norm", {x, {5}, {5}}, {{"eps", 1e-5}}), x, 7 * 120);
  expect_output(infer("layer_norm", {x, {3, 5}, {3, 5}}, {{"eps", 1e-5}}), x, 7 * 120);
}

TEST(OpCatalog, SoftmaxAcceptsNegativeDims) {
  expect_output(infer("softmax", {{2, 7}}, {{"dim", one(1)}}), {2, 7}, 70);
  expect_output(infer("softmax", {{2, 7}}, {{"dim", one(-2)}}), {2, 7}, 70);
}

TEST(OpCatalog, KlDivIsAScalar) {
  expect_output(infer("kl_div", {{4, 6}, {4, 6}}, {{"reduction", std::string("batchmean")}}), {},
                5 * 24);
}

// ---- layout ops ----------------------------------------------------------------------------

TEST(OpCatalog, LayoutOpsCostNothing) {
  expect_output(infer("channel_shuffle", {{2, 6, 3, 3}}, {{"groups", one(3)}}), {2, 6, 3, 3}, 0);
  const Dims dims = {{"N", 2}, {"C", 3}, {"H", 4}, {"W", 5}};
  expect_output(infer("reshape", {{2, 3, 4, 5}}, {{"shape", expr_list({"N", "C", "H * W"})}}, dims),
                {2, 3, 20}, 0);
  expect_output(infer("permute", {{2, 3, 20}}, {{"dims", list({2, 0, 1})}}), {20, 2, 3}, 0);
  expect_output(infer("permute", {{2, 3, 20}}, {{"dims", list({-1, 0, 1})}}), {20, 2, 3}, 0);
}

// ---- multihead_attention -------------------------------------------------------------------

std::vector<Shape> attention_inputs(int64_t l, int64_t s, int64_t n, int64_t e) {
  return {{l, n, e}, {s, n, e}, {s, n, e}, {3 * e, e}, {3 * e}, {e, e}, {e}};
}

TEST(OpCatalog, MultiheadAttentionCountsProjectionsAttentionAndSoftmax) {
  // L=4, S=6, N=2, E=8, 2 heads (d=4). MACs: q proj 4*2*8*8 = 512, k and v 6*2*64 = 768 each,
  // out proj 512; QK^T = PV = N*heads*L*S*d = 384. Softmax 5*2*2*4*6 = 480; in_proj bias adds
  // (4 + 6 + 6)*2*8 = 256. 2*3328 + 480 + 256 = 7392.
  expect_output(infer("multihead_attention", attention_inputs(4, 6, 2, 8), {{"num_heads", one(2)}}),
                {4, 2, 8}, 7392);
}

TEST(OpCatalog, VisionAttentionTotalsMatchProblemsMd) {
  // L3_031: mha + residual add (1/el) + layer_norm (7/el) = 289.96 GFLOP, elementwise 10.78 G.
  Result<OpOutput> r =
      infer("multihead_attention", attention_inputs(16384, 16384, 2, 128), {{"num_heads", one(4)}});
  KB_ASSERT_OK(r);
  const double macs = 139'586'437'120.0;
  const double tail = 8.0 * 16384 * 2 * 128;
  EXPECT_NEAR((r->flops + tail) / 1e9, 289.96, 0.005);
  EXPECT_NEAR((r->flops + tail - 2 * macs) / 1e9, 10.78, 0.005);
}

// ---- errors: one test per kind, each checking what the message says ------------------------

TEST(OpCatalogErrors, WrongInputCount) {
  EXPECT_TRUE(fails_with(infer("conv", {{1, 2, 5, 5}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)),
                         {"expected 2 to 3 inputs, got 1"}));
  EXPECT_TRUE(fails_with(infer("relu", {{2}, {2}}), {"expected 1 inputs, got 2"}));
}

TEST(OpCatalogErrors, EmptyDim) {
  EXPECT_TRUE(fails_with(infer("relu", {{2, 0}}), {"in[0] (in0)", "every dim >= 1", "(2, 0)"}));
}

TEST(OpCatalogErrors, ConvRank) {
  EXPECT_TRUE(fails_with(infer("conv", {{2, 5}, {3, 2, 3}}, conv_attrs({1}, {0}, {1}, 1)),
                         {"in[0] (in0)", "1 to 3 spatial dims", "got (2, 5)"}));
  EXPECT_TRUE(
      fails_with(infer("conv", {{1, 2, 5, 5}, {3, 2, 3}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)),
                 {"in[1] (in1)", "of rank 4", "got (3, 2, 3)"}));
}

TEST(OpCatalogErrors, ChannelsDisagreeWithWeight) {
  EXPECT_TRUE(
      fails_with(infer("conv", {{1, 4, 5, 5}, {6, 4, 3, 3}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 2)),
                 {"in[1] (in1)", "C/groups = 4/2 = 2", "got (6, 4, 3, 3)"}));
  EXPECT_TRUE(fails_with(
      infer("conv_transpose", {{1, 4, 5}, {8, 2, 3}}, conv_transpose_attrs({1}, {0}, {0}, {1}, 1)),
      {"in[1] (in1)", "with C = 4", "got (8, 2, 3)"}));
}

TEST(OpCatalogErrors, GroupsDoNotDivideChannels) {
  EXPECT_TRUE(
      fails_with(infer("conv", {{1, 6, 5, 5}, {4, 2, 3, 3}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 4)),
                 {"channel count C = 6 is not divisible by groups = 4"}));
  EXPECT_TRUE(
      fails_with(infer("conv", {{1, 6, 5, 5}, {4, 2, 3, 3}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 3)),
                 {"out channels O = 4 is not divisible by groups = 3"}));
  EXPECT_TRUE(fails_with(
      infer("group_norm", {{2, 6, 4}, {6}, {6}}, {{"num_groups", one(4)}, {"eps", 1e-5}}),
      {"C = 6 is not divisible by groups = 4"}));
  EXPECT_TRUE(fails_with(infer("channel_shuffle", {{2, 6, 3, 3}}, {{"groups", one(4)}}),
                         {"C = 6 is not divisible by groups = 4"}));
}

TEST(OpCatalogErrors, KernelLargerThanPaddedInput) {
  EXPECT_TRUE(fails_with(
      infer("conv", {{1, 1, 4, 4}, {1, 1, 3, 3}}, conv_attrs({1, 1}, {0, 0}, {2, 1}, 1)),
      {"spatial dim 0", "kernel's extent (dilation*(K-1)+1 = 5)", "padded input (4 + 2*0 = 4)"}));
  EXPECT_TRUE(fails_with(
      infer("max_pool", {{1, 1, 2, 8}}, {{"kernel_size", list({3, 3})}, {"stride", list({1, 1})}}),
      {"spatial dim 0: the kernel's extent (dilation*(K-1)+1 = 3) is larger than the padded "
       "input (2 + 2*0 = 2)"}));
}

TEST(OpCatalogErrors, OutputPaddingNotBelowStrideOrDilation) {
  EXPECT_TRUE(fails_with(
      infer("conv_transpose", {{1, 1, 5}, {1, 1, 3}}, conv_transpose_attrs({2}, {1}, {2}, {1}, 1)),
      {"attribute 'output_padding'", "smaller than stride (2) or dilation (1)", "got [2]"}));
  // Allowed when it is below the dilation even if not below the stride (PyTorch's rule).
  KB_EXPECT_OK(
      infer("conv_transpose", {{1, 1, 5}, {1, 1, 3}}, conv_transpose_attrs({1}, {0}, {1}, {2}, 1)));
}

TEST(OpCatalogErrors, TransposedOutputNotPositive) {
  EXPECT_TRUE(fails_with(
      infer("conv_transpose", {{1, 1, 1}, {1, 1, 1}}, conv_transpose_attrs({1}, {1}, {0}, {1}, 1)),
      {"spatial dim 0", "= -1 is not positive", "L = 1, K = 1"}));
}

TEST(OpCatalogErrors, ListAttributeLength) {
  EXPECT_TRUE(fails_with(
      infer("conv", {{1, 1, 5, 5}, {1, 1, 3, 3}}, conv_attrs({1, 1, 1}, {0, 0}, {1, 1}, 1)),
      {"attribute 'stride': expected a list of 2 integers (one per spatial dim), got 3 items"}));
  EXPECT_TRUE(fails_with(
      infer("avg_pool", {{1, 1, 5, 5}}, {{"kernel_size", list({2})}, {"stride", list({2, 2})}}),
      {"attribute 'kernel_size'", "a list of 2 integers", "got 1 items [2]"}));
}

TEST(OpCatalogErrors, ListAttributeRange) {
  EXPECT_TRUE(
      fails_with(infer("conv", {{1, 1, 5, 5}, {1, 1, 3, 3}}, conv_attrs({0, 1}, {0, 0}, {1, 1}, 1)),
                 {"attribute 'stride': expected every entry >= 1, got [0, 1]"}));
  EXPECT_TRUE(
      fails_with(infer("conv", {{1, 1, 5, 5}, {1, 1, 3, 3}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 0)),
                 {"attribute 'groups': expected an integer >= 1, got 0"}));
  EXPECT_TRUE(fails_with(
      infer("max_pool", {{1, 1, 5, 5}},
            {{"kernel_size", list({2, 2})}, {"stride", list({2, 2})}, {"padding", list({2, 0})}}),
      {"attribute 'padding'", "at most half of kernel_size [2, 2]"}));
}

TEST(OpCatalogErrors, BiasShape) {
  EXPECT_TRUE(fails_with(
      infer("conv", {{1, 2, 5, 5}, {3, 2, 3, 3}, {2}}, conv_attrs({1, 1}, {0, 0}, {1, 1}, 1)),
      {"in[2] (in2): expected a bias (O) with O = 3, got (2)"}));
  // A transposed conv's O is weight dim 1 times groups.
  EXPECT_TRUE(fails_with(infer("conv_transpose", {{1, 4, 3}, {4, 3, 2}, {3}},
                               conv_transpose_attrs({1}, {0}, {0}, {1}, 2)),
                         {"O = 6"}));
}

TEST(OpCatalogErrors, NormParameterShapes) {
  EXPECT_TRUE(fails_with(infer("layer_norm", {{2, 4, 6}, {4}, {4}}, {{"eps", 1e-5}}),
                         {"in[1] (in1)", "trailing dims of x (2, 4, 6)", "got (4)"}));
  EXPECT_TRUE(fails_with(infer("layer_norm", {{2, 4, 6}, {6}, {4}}, {{"eps", 1e-5}}),
                         {"in[2] (in2): expected the weight's shape (6)"}));
  EXPECT_TRUE(fails_with(infer("batch_norm", {{2, 4, 6}, {6}, {4}},
                               {{"eps", 1e-5}, {"momentum", 0.1}, {"training", true}}),
                         {"in[1] (in1): expected (4), one per channel, got (6)"}));
  EXPECT_TRUE(
      fails_with(infer("instance_norm", {{2, 4}}, {{"eps", 1e-5}}), {"at least one spatial dim"}));
  EXPECT_TRUE(fails_with(infer("instance_norm", {{2, 4, 1, 1}}, {{"eps", 1e-5}}),
                         {"more than one spatial element"}));
}

TEST(OpCatalogErrors, NormAttributes) {
  EXPECT_TRUE(fails_with(infer("batch_norm", {{2, 4}, {4}, {4}},
                               {{"eps", 1e-5}, {"momentum", 0.1}, {"training", false}}),
                         {"attribute 'training': expected true"}));
  EXPECT_TRUE(fails_with(infer("instance_norm", {{2, 4, 3}}, {{"eps", 0.0}}),
                         {"attribute 'eps': expected a positive number"}));
  EXPECT_TRUE(fails_with(infer("batch_norm", {{1, 4}, {4}, {4}},
                               {{"eps", 1e-5}, {"momentum", 0.1}, {"training", true}}),
                         {"more than one value per channel"}));
}

TEST(OpCatalogErrors, ShapesDoNotBroadcast) {
  EXPECT_TRUE(fails_with(infer("add", {{2, 3}, {4}}),
                         {"inputs (2, 3) and (4) do not broadcast: dim -1 is 3 vs 4"}));
}

TEST(OpCatalog, LinearMapsTheLastDimAndCountsTheBiasOncePerOutput) {
  expect_output(infer("linear", {{4, 3, 8}, {5, 8}, {5}}), {4, 3, 5}, 2.0 * 60 * 8 + 60);
  expect_output(infer("linear", {{2, 8}, {5, 8}}), {2, 5}, 2.0 * 10 * 8);
}

TEST(OpCatalog, SubBroadcastsLikeAdd) {
  expect_output(infer("sub", {{2, 3, 4}, {3, 1}}), {2, 3, 4}, 24);
}

TEST(OpCatalogErrors, LinearWeightMustMatchTheLastDim) {
  EXPECT_TRUE(fails_with(infer("linear", {{2, 8}, {5, 7}}), {"a weight (O, K) with K = 8"}));
  EXPECT_TRUE(fails_with(infer("linear", {{2, 8}, {5, 8}, {4}}), {"(5), one per output feature"}));
}

TEST(OpCatalogErrors, BmmInnerDims) {
  EXPECT_TRUE(fails_with(infer("bmm", {{2, 3, 4}, {2, 5, 6}}),
                         {"in[1] (in1): expected (B, K, N) with B = 2 and K = 4"}));
  EXPECT_TRUE(fails_with(infer("bmm", {{3, 4}, {2, 4, 6}}), {"a rank-3 tensor (B, M, K)"}));
}

TEST(OpCatalogErrors, ReshapeElementCount) {
  EXPECT_TRUE(fails_with(
      infer("reshape", {{2, 3, 4}}, {{"shape", list({5, 5})}}),
      {"attribute 'shape': expected a shape of 24 elements", "got [5, 5] (25 elements)"}));
}

TEST(OpCatalogErrors, PermuteNotAPermutation) {
  EXPECT_TRUE(fails_with(infer("permute", {{2, 3, 4}}, {{"dims", list({0, 0, 1})}}),
                         {"expected a permutation of 0..2", "got [0, 0, 1]"}));
  EXPECT_TRUE(fails_with(infer("permute", {{2, 3, 4}}, {{"dims", list({1, 0})}}),
                         {"expected a permutation of 0..2 (x has rank 3), got [1, 0]"}));
}

TEST(OpCatalogErrors, DimOutOfRange) {
  EXPECT_TRUE(fails_with(infer("softmax", {{2, 3}}, {{"dim", one(2)}}),
                         {"attribute 'dim': expected a dim in [-2, 1]", "got 2"}));
  EXPECT_TRUE(fails_with(infer("mean", {{2, 3}}, {{"dims", list({1, -1})}, {"keepdim", true}}),
                         {"attribute 'dims': expected distinct dims, got [1, -1]"}));
}

TEST(OpCatalogErrors, AttentionHeadsAndParameters) {
  EXPECT_TRUE(fails_with(
      infer("multihead_attention", attention_inputs(4, 4, 2, 6), {{"num_heads", one(4)}}),
      {"attribute 'num_heads'", "divides E = 6", "got 4"}));
  std::vector<Shape> inputs = attention_inputs(4, 4, 2, 8);
  inputs[3] = {8, 24};
  EXPECT_TRUE(fails_with(infer("multihead_attention", inputs, {{"num_heads", one(2)}}),
                         {"in[3] (in3): expected in_proj_weight (3E, E) = (24, 8), got (8, 24)"}));
  inputs = attention_inputs(4, 4, 2, 8);
  inputs[1] = {4, 3, 8};
  EXPECT_TRUE(fails_with(infer("multihead_attention", inputs, {{"num_heads", one(2)}}),
                         {"in[1] (in1): expected a key (S, N, E) with N = 2, E = 8"}));
}

TEST(OpCatalogErrors, ScalarAttributes) {
  EXPECT_TRUE(fails_with(infer("hardtanh", {{2}}, {{"min_val", 1.0}, {"max_val", -1.0}}),
                         {"attribute 'max_val': expected a number greater than min_val"}));
  EXPECT_TRUE(fails_with(infer("div_scalar", {{2}}, {{"value", 0.0}}),
                         {"attribute 'value': expected a non-zero divisor"}));
  EXPECT_TRUE(fails_with(infer("kl_div", {{2, 3}, {2, 3}}, {{"reduction", std::string("sum")}}),
                         {"attribute 'reduction': expected \"batchmean\"", "got \"sum\""}));
  EXPECT_TRUE(
      fails_with(infer("kl_div", {{2, 3}, {3, 2}}, {{"reduction", std::string("batchmean")}}),
                 {"in[1] (in1): expected the shape of log_input (2, 3)"}));
}

TEST(OpCatalogErrors, ExpressionThatDoesNotEvaluate) {
  const Dims dims = {{"H", 4}};
  EXPECT_TRUE(fails_with(infer("reshape", {{4}}, {{"shape", expr_list({"H / 3"})}}, dims),
                         {"attribute 'shape'", "4 is not divisible by 3"}));
  EXPECT_TRUE(fails_with(infer("softmax", {{4}}, {{"dim", list({0, 0})}}),
                         {"attribute 'dim': expected one integer, got [0, 0]"}));
}

TEST(OpCallDeathTest, MissingAttributeIsAProgrammingError) {
  EXPECT_DEATH((void)infer("softmax", {{4}}), "attribute 'dim' is missing");
}

}  // namespace
}  // namespace kb
